// make_recompute_decoder (workload/decoder.h): decoding without a cache, for a language model that
// has none (a user's TorchScript module) and as the reference a cached decoder is tested against.
// Every append() runs the model on the whole sequence so far: decoding step t costs a forward pass
// of t tokens.
#include <fmt/format.h>

#include "trainscope/error.h"
#include "workload/decoder.h"
#include "workload/model.h"

namespace trainscope {

namespace {

class RecomputeDecoder final : public Decoder {
 public:
  RecomputeDecoder(Model& m, int64_t context, int64_t vocab, torch::Device d)
      : model_(m), context_(context), vocab_(vocab), device_(d) {}

  void reset(int64_t batch, int64_t max_len) override {
    if (batch < 1 || max_len < 1 || max_len > context_)
      throw_error(ErrorKind::kModel,
                  fmt::format("decoding {} row(s) of up to {} tokens: the batch must be at least 1 and the length "
                              "between 1 and the model's context of {} tokens; shorten the prompt or the output",
                              batch, max_len, context_));
    batch_ = batch;
    max_len_ = max_len;
    seq_ = torch::Tensor();
  }

  torch::Tensor append(const torch::Tensor& tokens) override {
    if (tokens.dim() != 2 || tokens.size(0) != batch_ || tokens.size(1) < 1)
      throw_error(ErrorKind::kModel, fmt::format("decoder input must be token ids [{}, T >= 1]; got {}", batch_,
                                                 fmt::join(tokens.sizes().vec(), "x")));
    if (length() + tokens.size(1) > max_len_)
      throw_error(ErrorKind::kModel, fmt::format("appending {} token(s) after {} exceeds the {} reset() made room for",
                                                 tokens.size(1), length(), max_len_));
    seq_ = seq_.defined() ? torch::cat({seq_, tokens}, 1) : tokens;
    torch::NoGradGuard ng;
    auto out = model_.forward(seq_);
    if (out.dim() != 3 || out.size(0) != batch_ || out.size(1) != seq_.size(1))
      throw_error(ErrorKind::kModel, fmt::format("model '{}' returned {} for token ids {}; a language model returns "
                                                 "logits [B, T, vocab]",
                                                 model_.name(), fmt::join(out.sizes().vec(), "x"),
                                                 fmt::join(seq_.sizes().vec(), "x")));
    return out.select(1, out.size(1) - 1).to(torch::kFloat);
  }

  int64_t length() const override { return seq_.defined() ? seq_.size(1) : 0; }
  int64_t context() const override { return context_; }
  int64_t vocab() const override { return vocab_; }
  torch::Device device() const override { return device_; }
  std::string execution() const override { return "eager, no cache (recomputes the sequence)"; }

 private:
  Model& model_;
  int64_t context_, vocab_;
  torch::Device device_;
  int64_t batch_ = 0, max_len_ = 0;
  torch::Tensor seq_;
};

}  // namespace

std::unique_ptr<Decoder> make_recompute_decoder(Model& model, int64_t context, int64_t vocab,
                                                const torch::Device& device) {
  return std::make_unique<RecomputeDecoder>(model, context, vocab, device);
}

}  // namespace trainscope

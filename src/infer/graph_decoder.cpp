// with_cuda_graphs (infer/graph_decoder.h) where no graph can run: the decoder itself, saying why
// when graphs were asked for. The CUDA wrapper is in graph_decoder_cuda.cpp.
#include <string>

#include "infer/graph_decoder.h"

namespace trainscope {

#if TRAINSCOPE_WITH_CUDA
std::unique_ptr<Decoder> make_cuda_graph_decoder(std::unique_ptr<CapturableDecoder> inner);  // graph_decoder_cuda.cpp
#endif

namespace {

// The inner decoder, its execution() naming why graphs did not apply.
class NoGraphDecoder final : public Decoder {
 public:
  NoGraphDecoder(std::unique_ptr<CapturableDecoder> inner, std::string why) : d_(std::move(inner)), why_(std::move(why)) {}
  void reset(int64_t batch, int64_t max_len) override { d_->reset(batch, max_len); }
  torch::Tensor append(const torch::Tensor& tokens) override { return d_->append(tokens); }
  int64_t length() const override { return d_->length(); }
  int64_t context() const override { return d_->context(); }
  int64_t vocab() const override { return d_->vocab(); }
  torch::Device device() const override { return d_->device(); }
  std::string execution() const override { return d_->execution() + " (" + why_ + ")"; }

 private:
  std::unique_ptr<CapturableDecoder> d_;
  std::string why_;
};

}  // namespace

std::unique_ptr<Decoder> with_cuda_graphs(std::unique_ptr<CapturableDecoder> inner, bool cuda_graphs) {
  if (!cuda_graphs) return inner;
  if (!inner->device().is_cuda()) return std::make_unique<NoGraphDecoder>(std::move(inner), "cuda graphs not applicable on cpu");
#if TRAINSCOPE_WITH_CUDA
  return make_cuda_graph_decoder(std::move(inner));
#else
  return std::make_unique<NoGraphDecoder>(std::move(inner), "cuda graphs need a CUDA build");
#endif
}

}  // namespace trainscope

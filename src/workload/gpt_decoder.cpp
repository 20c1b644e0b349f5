// The built-in GPT's cached decoder (workload/decoder.h, make_gpt_decoder in workload/gpt.h).
//
// Cache: per layer, keys and values as one tensor [2, capacity_batch, heads, capacity_len,
// head_dim] in the model's dtype, zero-filled when allocated (gpt_decode_ops.h's kv_cache). A
// reset() for rows and lengths within the capacity reuses it (rows 0..B-1 of it).
//
// Three attention cases for append() of T tokens after `len` cached ones:
//   len = 0      causal attention over the T tokens themselves (as training), for T > 1;
//   T = 1        the one query attends to all len + 1 cached positions (no mask needed);
//   otherwise    query i (position len + i) attends to positions <= len + i: the causal mask
//                shifted by len (causal_attention_math's triu(S - T + 1), built here for SDPA,
//                whose is_causal aligns the mask to the top left when T != S).
// One query (T = 1) goes through decode_attention, two batched matrix products. step_static()
// attends over the whole capacity with the additive mask "0 where position <= p, else -inf", p a
// device tensor, so its shapes never change and a CUDA graph of it serves every position.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "train/compat.h"
#include "trainscope/error.h"
#include "workload/decoder.h"
#include "workload/gpt_decode_ops.h"
#include "workload/gpt_module.h"

namespace trainscope {

namespace {

using gpt_detail::Gpt;

using gpt_decode::attention;
using gpt_decode::blocks_step;
using gpt_decode::decode_attention;
using gpt_decode::last_logits;

class GptDecoder final : public CapturableDecoder {
 public:
  GptDecoder(Gpt m, torch::Device device) : m_(std::move(m)), shape_(gpt_decode::model_shape(m_)), device_(device) {}

  void reset(int64_t batch, int64_t max_len) override {
    gpt_decode::check_cache_size(batch, max_len, context(), "row", "the batch");
    if (batch > cap_batch_ || max_len > cap_len_) allocate(std::max(batch, cap_batch_), std::max(max_len, cap_len_));
    batch_ = batch;
    max_len_ = max_len;
    len_ = 0;
  }

  torch::Tensor append(const torch::Tensor& tokens) override {
    check_tokens(tokens);
    const int64_t T = tokens.size(1);
    if (len_ + T > max_len_)
      throw_error(ErrorKind::kModel, fmt::format("appending {} token(s) after {} exceeds the {} reset() made room "
                                                 "for; reset with a larger max_len",
                                                 T, len_, max_len_));
    torch::NoGradGuard ng;
    auto pos = torch::arange(len_, len_ + T, torch::TensorOptions().dtype(torch::kLong).device(device_));
    auto x = blocks_step(
        m_, m_->wte(tokens) + m_->wpe(pos),
        [&](int64_t l, const torch::Tensor& q, const torch::Tensor& kv) { return cached_attention(l, q, kv); });
    len_ += T;
    return last_logits(m_, x);
  }

  torch::Tensor step_static(const torch::Tensor& tokens, const torch::Tensor& position) override {
    check_tokens(tokens);
    torch::NoGradGuard ng;
    auto x = m_->wte(tokens) + m_->wpe(position).view({1, 1, shape_.d_model});
    auto bias =
        torch::zeros({1, 1, cap_len_}, torch::TensorOptions().dtype(shape_.dtype).device(device_))
            .masked_fill_(positions_.gt(position).view({1, 1, cap_len_}), -std::numeric_limits<float>::infinity());
    x = blocks_step(m_, x, [&](int64_t l, const torch::Tensor& q, const torch::Tensor& kv) {
      auto cache = kv_[l].narrow(1, 0, batch_);
      cache.index_copy_(3, position, kv);  // keys and values in one kernel
      return decode_attention(q, cache[0], cache[1], &bias);
    });
    position.add_(1);
    return last_logits(m_, x);
  }

  void advanced(int64_t steps) override { len_ += steps; }
  int64_t cache_generation() const override { return generation_; }
  int64_t length() const override { return len_; }
  int64_t context() const override { return m_->context_; }
  int64_t vocab() const override { return shape_.vocab; }
  torch::Device device() const override { return device_; }
  std::string execution() const override { return "eager"; }

 private:
  void allocate(int64_t batch, int64_t len) {
    kv_.clear();  // the old cache goes back before the new one is made
    kv_ = gpt_decode::kv_cache(shape_, batch, len, device_);
    positions_ = torch::arange(len, torch::TensorOptions().dtype(torch::kLong).device(device_));
    cap_batch_ = batch;
    cap_len_ = len;
    ++generation_;
  }

  void check_tokens(const torch::Tensor& tokens) const {
    if (cap_batch_ == 0)
      throw_error(ErrorKind::kModel, "the decoder has no cache yet: call reset(batch, max_len) before append()");
    if (tokens.dim() != 2 || tokens.size(0) != batch_ || tokens.size(1) < 1 || tokens.scalar_type() != torch::kLong)
      throw_error(ErrorKind::kModel,
                  fmt::format("decoder input must be int64 token ids [{}, T >= 1] (the batch of reset()); got {} of "
                              "dtype {}",
                              batch_, fmt::join(tokens.sizes().vec(), "x"), std::string(c10::toString(tokens.scalar_type()))));
  }

  // The new tokens' keys and values (kv [2, B, H, T, hd]) go to positions len_.. of layer l's
  // cache; the queries attend to the cached positions as the file's header says.
  torch::Tensor cached_attention(int64_t l, const torch::Tensor& q, const torch::Tensor& kv) {
    const int64_t T = q.size(2), S = len_ + T;
    auto cache = kv_[l].narrow(1, 0, batch_);
    cache.narrow(3, len_, T).copy_(kv);
    if (len_ == 0 && T > 1) return causal_attention(q, kv[0], kv[1]);  // one token alone: decode_attention
    auto K = cache[0].narrow(2, 0, S), V = cache[1].narrow(2, 0, S);
    if (T == 1) return decode_attention(q, K, V, nullptr);
    auto cols = torch::arange(S, torch::TensorOptions().dtype(torch::kLong).device(device_));
    auto rows = torch::arange(len_, S, torch::TensorOptions().dtype(torch::kLong).device(device_));
    return attention(q, K, V, cols.view({1, S}).le(rows.view({T, 1})));
  }

  Gpt m_;
  gpt_decode::ModelShape shape_;
  torch::Device device_;
  std::vector<torch::Tensor> kv_;  // per layer [2 (keys, values), cap_batch_, heads, cap_len_, head_dim]
  torch::Tensor positions_;  // 0 .. cap_len_ - 1 on the device (step_static's mask)
  int64_t cap_batch_ = 0, cap_len_ = 0, batch_ = 0, max_len_ = 0, len_ = 0, generation_ = 0;
};

}  // namespace

std::unique_ptr<CapturableDecoder> make_gpt_decoder(Model& model, torch::ScalarType dtype) {
  Gpt m = gpt_decode::gpt_for_decoding(model, dtype);
  return std::make_unique<GptDecoder>(m, m->wte->weight.device());
}

}  // namespace trainscope

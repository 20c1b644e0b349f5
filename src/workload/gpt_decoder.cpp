// The built-in GPT's cached decoder (workload/decoder.h, make_gpt_decoder in workload/gpt.h).
//
// Cache: per layer, keys and values as one tensor [2, capacity_batch, heads, capacity_len,
// head_dim] in the model's dtype, zero-filled when allocated (positions not yet written are masked out and must
// hold finite values: a masked NaN would still poison the weighted sum). A reset() for rows and
// lengths within the capacity reuses it (rows 0..B-1 of it).
//
// Three attention cases for append() of T tokens after `len` cached ones:
//   len = 0      causal attention over the T tokens themselves (as training);
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
#include "workload/gpt_module.h"
#include "workload/native_model.h"

namespace trainscope {

namespace {

using gpt_detail::Gpt;

// softmax(q k^T / sqrt(hd) + mask) v with `mask` (bool, true = attend; broadcast to
// [B, H, T, S]) or none: SDPA where LibTorch has it, its definition otherwise.
torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const std::optional<torch::Tensor>& mask) {
#if TRAINSCOPE_HAVE_SDPA
  return at::scaled_dot_product_attention(q, k, v, mask, 0.0, /*is_causal=*/false);
#else
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  if (mask) scores = scores.masked_fill(mask->logical_not(), -std::numeric_limits<float>::infinity());
  return torch::matmul(torch::softmax(scores, -1).to(v.scalar_type()), v);
#endif
}

// Attention of one query per row (decoding: q [B, H, 1, hd]) over S cached keys and values
// (K, V [B, H, S, hd]) with an additive `bias` ([1, 1, S]: 0 to attend, -inf not) or none:
// softmax(q K^T / sqrt(hd) + bias) V as two batched matrix products. Not SDPA: its fused kernels
// tile queries in blocks of 32 to 128, so one query wastes most of each tile, and on float32 the
// memory-efficient kernel runs without tensor cores (on the H200, graph-replayed fp32 decoding of
// GPT-2 was slower than eager through SDPA over the whole cache; bench/RESULTS.md).
torch::Tensor decode_attention(const torch::Tensor& q, const torch::Tensor& K, const torch::Tensor& V,
                               const torch::Tensor* bias) {
  const int64_t B = q.size(0), H = q.size(1), hd = q.size(3);
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  auto q2 = q.reshape({B * H, 1, hd});
  auto kt = K.flatten(0, 1).transpose(1, 2);  // [B*H, hd, S], a view of the cache
  auto scores = bias ? at::baddbmm(*bias, q2, kt, 1.0, scale) : at::bmm(q2, kt).mul_(scale);
  return at::bmm(at::softmax(scores, -1), V.flatten(0, 1)).view({B, H, 1, hd});
}

// The MLP's first layer and its GELU (tanh approximation): on CUDA one cuBLASLt matrix product
// with the bias and GELU in its epilogue (at::_addmm_activation; PyTorch's CUDA path applies the
// tanh approximation, as GPT-2 does, also where it cannot use the epilogue); elsewhere linear then
// gelu(tanh), because the CPU path of _addmm_activation applies the exact (erf) GELU.
torch::Tensor fc_gelu(const torch::nn::Linear& fc, const torch::Tensor& x) {
  if (x.is_cuda())
    return at::_addmm_activation(fc->bias, x.flatten(0, 1), fc->weight.t(), 1, 1, /*use_gelu=*/true)
        .view({x.size(0), x.size(1), -1});
  return torch::gelu(at::linear(x, fc->weight, fc->bias), "tanh");
}

// One block on the new tokens x [B, T, C]: the computation of BlockImpl::forward
// (workload/gpt_module.h) with attention given: attend(q, kv) takes the queries [B, H, T, hd]
// and the new keys and values as one view kv [2, B, H, T, hd] of the QKV product (so the cache
// takes both in one copy) and returns [B, H, T, hd].
template <class Attend>
torch::Tensor block_step(gpt_detail::BlockImpl& b, torch::Tensor x, Attend&& attend) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2), H = b.heads_;
  auto qkv = gpt_detail::BlockImpl::linear(b.c_attn, b.ln_1(x));  // [B, T, 3C]: q | k | v
  auto q = qkv.narrow(2, 0, C).view({B, T, H, C / H}).transpose(1, 2);
  auto kv = qkv.narrow(2, C, 2 * C).view({B, T, 2, H, C / H}).permute({2, 0, 3, 1, 4});
  auto y = attend(q, kv).transpose(1, 2).reshape({B, T, C});
  x = x + gpt_detail::BlockImpl::linear(b.attn_proj, y);
  return x + gpt_detail::BlockImpl::linear(b.mlp_proj, fc_gelu(b.c_fc, b.ln_2(x)));
}

class GptDecoder final : public CapturableDecoder {
 public:
  GptDecoder(Gpt m, torch::Device device) : m_(std::move(m)), device_(device) {
    auto w = m_->wte->weight;
    vocab_ = w.size(0);
    d_model_ = w.size(1);
    dtype_ = w.scalar_type();
    layers_ = static_cast<int64_t>(m_->blocks->size());
    heads_ = layers_ > 0 ? m_->block(0)->heads_ : 1;
  }

  void reset(int64_t batch, int64_t max_len) override {
    if (batch < 1 || max_len < 1 || max_len > context())
      throw_error(ErrorKind::kModel,
                  fmt::format("decoding {} row(s) of up to {} tokens: the batch must be at least 1 and the length "
                              "between 1 and the model's context of {} tokens; shorten the prompt or the output",
                              batch, max_len, context()));
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
    auto x = m_->wte(tokens) + m_->wpe(pos);
    for (int64_t l = 0; l < layers_; ++l)
      x = block_step(*m_->block(static_cast<size_t>(l)), x, [&](const torch::Tensor& q, const torch::Tensor& kv) {
        return cached_attention(l, q, kv);
      });
    len_ += T;
    return logits(x);
  }

  torch::Tensor step_static(const torch::Tensor& tokens, const torch::Tensor& position) override {
    check_tokens(tokens);
    torch::NoGradGuard ng;
    auto x = m_->wte(tokens) + m_->wpe(position).view({1, 1, d_model_});
    auto bias = torch::zeros({1, 1, cap_len_}, torch::TensorOptions().dtype(dtype_).device(device_))
                    .masked_fill_(positions_.gt(position).view({1, 1, cap_len_}), -std::numeric_limits<float>::infinity());
    for (int64_t l = 0; l < layers_; ++l)
      x = block_step(*m_->block(static_cast<size_t>(l)), x, [&](const torch::Tensor& q, const torch::Tensor& kv) {
        auto cache = kv_[l].narrow(1, 0, batch_);
        cache.index_copy_(3, position, kv);  // keys and values in one kernel
        return decode_attention(q, cache[0], cache[1], &bias);
      });
    position.add_(1);
    return logits(x);
  }

  void advanced(int64_t steps) override { len_ += steps; }
  int64_t cache_generation() const override { return generation_; }
  int64_t length() const override { return len_; }
  int64_t context() const override { return m_->context_; }
  int64_t vocab() const override { return vocab_; }
  torch::Device device() const override { return device_; }
  std::string execution() const override { return "eager"; }

 private:
  void allocate(int64_t batch, int64_t len) {
    kv_.clear();  // the old cache goes back before the new one is made
    const int64_t hd = d_model_ / heads_;
    auto opt = torch::TensorOptions().dtype(dtype_).device(device_);
    for (int64_t l = 0; l < layers_; ++l) kv_.push_back(torch::zeros({2, batch, heads_, len, hd}, opt));
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
    if (len_ == 0) return causal_attention(q, kv[0], kv[1]);
    auto K = cache[0].narrow(2, 0, S), V = cache[1].narrow(2, 0, S);
    if (T == 1) return decode_attention(q, K, V, nullptr);
    auto cols = torch::arange(S, torch::TensorOptions().dtype(torch::kLong).device(device_));
    auto rows = torch::arange(len_, S, torch::TensorOptions().dtype(torch::kLong).device(device_));
    return attention(q, K, V, cols.view({1, S}).le(rows.view({T, 1})));
  }

  // Logits [B, vocab] (float32) of the last position of x [B, T, d].
  torch::Tensor logits(const torch::Tensor& x) { return m_->head(x.select(1, x.size(1) - 1)).to(torch::kFloat); }

  Gpt m_;
  torch::Device device_;
  torch::ScalarType dtype_ = torch::kFloat;
  int64_t vocab_ = 0, d_model_ = 0, layers_ = 0, heads_ = 1;
  std::vector<torch::Tensor> kv_;  // per layer [2 (keys, values), cap_batch_, heads, cap_len_, head_dim]
  torch::Tensor positions_;  // 0 .. cap_len_ - 1 on the device (step_static's mask)
  int64_t cap_batch_ = 0, cap_len_ = 0, batch_ = 0, max_len_ = 0, len_ = 0, generation_ = 0;
};

}  // namespace

std::unique_ptr<CapturableDecoder> make_gpt_decoder(Model& model, torch::ScalarType dtype) {
  auto* native = dynamic_cast<NativeModel<Gpt>*>(&model);
  if (!native)
    throw_error(ErrorKind::kModel, fmt::format("model '{}' is not a built-in GPT, so it has no key/value cache; a "
                                               "TorchScript language model decodes by recomputation",
                                               model.name()));
  if (dtype != torch::kFloat && dtype != torch::kBFloat16 && dtype != torch::kHalf)
    throw_error(ErrorKind::kModel, fmt::format("decoding in {} is not supported; use float32, bfloat16 or float16",
                                               std::string(c10::toString(dtype))));
  auto& m = native->module();
  m->eval();
  m->to(dtype);
  return std::make_unique<GptDecoder>(m, m->wte->weight.device());
}

}  // namespace trainscope

// The decoding pieces the built-in GPT's decoders share (workload/gpt_decode_ops.h).
#include "workload/gpt_decode_ops.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "train/compat.h"
#include "trainscope/error.h"
#include "workload/native_model.h"

namespace trainscope::gpt_decode {

gpt_detail::Gpt gpt_for_decoding(Model& model, torch::ScalarType dtype) {
  auto* native = dynamic_cast<NativeModel<gpt_detail::Gpt>*>(&model);
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
  return m;
}

ModelShape model_shape(gpt_detail::Gpt& m) {
  ModelShape s;
  auto w = m->wte->weight;
  s.vocab = w.size(0);
  s.d_model = w.size(1);
  s.dtype = w.scalar_type();
  s.layers = static_cast<int64_t>(m->blocks->size());
  s.heads = s.layers > 0 ? m->block(0)->heads_ : 1;
  return s;
}

void check_cache_size(int64_t rows, int64_t max_len, int64_t context, const char* unit, const char* rows_are) {
  if (rows < 1 || max_len < 1 || max_len > context)
    throw_error(ErrorKind::kModel,
                fmt::format("decoding {} {}(s) of up to {} tokens: {} must be at least 1 and the length between 1 "
                            "and the model's context of {} tokens; shorten the prompt or the output",
                            rows, unit, max_len, rows_are, context));
}

std::vector<torch::Tensor> kv_cache(const ModelShape& shape, int64_t rows, int64_t len, torch::Device device) {
  const int64_t hd = shape.d_model / shape.heads;
  auto opt = torch::TensorOptions().dtype(shape.dtype).device(device);
  std::vector<torch::Tensor> kv;
  for (int64_t l = 0; l < shape.layers; ++l) kv.push_back(torch::zeros({2, rows, shape.heads, len, hd}, opt));
  return kv;
}

torch::Tensor last_logits(gpt_detail::Gpt& m, const torch::Tensor& x) {
  return m->head(x.select(1, x.size(1) - 1)).to(torch::kFloat);
}

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

namespace {

// LibTorch's CPU bmm computes a product of fewer than this many multiply-adds per matrix
// (contraction x rows x columns) in a naive kernel whose grain size, min(GRAIN_SIZE / work, 1),
// opens a parallel region over the batch for every product (aten/src/ATen/native/LinearAlgebra.cpp,
// bmm_out_or_baddbmm_ and baddbmm_cpu_kernel, LibTorch 1.13). With more than one intra-op thread
// each such product waits for the pool's threads to wake, which on a loaded machine costs a
// scheduler slice: tg at depth 0 on 2 threads ran its first 6 tokens (S * 64 < 400) about 15x
// slower than its 7th on the shared 2-core VM (bench/RESULTS.md, "tg at depth 0").
constexpr int64_t kSmallBmmWork = 400;

// decode_attention for a product below kSmallBmmWork on the CPU: the same sums as element-wise
// products reduced over hd and S, which stay on the calling thread below ATen's grain size.
torch::Tensor small_decode_attention(const torch::Tensor& q2, const torch::Tensor& K, const torch::Tensor& V,
                                     const torch::Tensor* bias, double scale) {
  auto scores = (q2 * K.flatten(0, 1)).sum(-1).unsqueeze(1).mul_(scale);  // [B*H, 1, S]
  if (bias) scores = scores + *bias;
  auto p = at::softmax(scores, -1).to(V.scalar_type());
  return (p.transpose(1, 2) * V.flatten(0, 1)).sum(1, /*keepdim=*/true);  // [B*H, 1, hd]
}

}  // namespace

torch::Tensor decode_attention(const torch::Tensor& q, const torch::Tensor& K, const torch::Tensor& V,
                               const torch::Tensor* bias) {
  const int64_t B = q.size(0), H = q.size(1), hd = q.size(3);
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  auto q2 = q.reshape({B * H, 1, hd});
  if (!q.is_cuda() && K.size(2) * hd < kSmallBmmWork)
    return small_decode_attention(q2, K, V, bias, scale).view({B, H, 1, hd});
  auto kt = K.flatten(0, 1).transpose(1, 2);  // [B*H, hd, S], a view of the cache
  auto scores = bias ? at::baddbmm(*bias, q2, kt, 1.0, scale) : at::bmm(q2, kt).mul_(scale);
  return at::bmm(at::softmax(scores, -1), V.flatten(0, 1)).view({B, H, 1, hd});
}

torch::Tensor fc_gelu(const torch::nn::Linear& fc, const torch::Tensor& x) {
  if (x.is_cuda())
    return at::_addmm_activation(fc->bias, x.flatten(0, 1), fc->weight.t(), 1, 1, /*use_gelu=*/true)
        .view({x.size(0), x.size(1), -1});
  return torch::gelu(at::linear(x, fc->weight, fc->bias), "tanh");
}

}  // namespace trainscope::gpt_decode

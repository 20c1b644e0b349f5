#include "workload/gpt.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "train/compat.h"
#include "trainscope/error.h"
#include "workload/gpt_module.h"
#include "workload/native_model.h"

namespace trainscope {

namespace nn = torch::nn;
using gpt_detail::Gpt;

namespace {

struct Preset {
  const char* name;
  int64_t layers, d_model, heads, context;
};
// GPT-2 small and medium as released (Radford et al. 2019, table 2); gpt-mini is nanoGPT's
// character-level Shakespeare shape (6 layers, 384 wide, 6 heads, context 256).
constexpr Preset kPresets[] = {
    {"gpt-mini", 6, 384, 6, 256},
    {"gpt2", 12, 768, 12, 1024},
    {"gpt2-medium", 24, 1024, 16, 1024},
};

}  // namespace

std::vector<std::string> builtin_lm_models() {
  std::vector<std::string> v;
  for (const auto& p : kPresets) v.emplace_back(p.name);
  return v;
}

bool is_builtin_lm(const std::string& name) {
  return std::any_of(std::begin(kPresets), std::end(kPresets), [&](const Preset& p) { return name == p.name; });
}

GptShape gpt_preset(const std::string& name, int64_t vocab) {
  for (const auto& p : kPresets)
    if (name == p.name) return {p.layers, p.d_model, p.heads, p.context, vocab};
  throw_error(ErrorKind::kModel, fmt::format("'{}' is not a built-in language model; use one of {}", name,
                                             fmt::join(builtin_lm_models(), ", ")));
}

std::unique_ptr<Model> make_gpt(const std::string& name, const GptShape& s) {
  if (s.layers < 1 || s.d_model < 1 || s.heads < 1 || s.context < 1 || s.vocab < 2)
    throw_error(ErrorKind::kModel, fmt::format("model '{}': layers {}, width {}, heads {}, context {} and vocabulary {} "
                                               "must be positive (vocabulary at least 2)",
                                               name, s.layers, s.d_model, s.heads, s.context, s.vocab));
  if (s.d_model % s.heads != 0)
    throw_error(ErrorKind::kModel, fmt::format("model '{}': width {} is not divisible by {} heads; choose a width that "
                                               "is a multiple of the heads (--lm-width / --lm-heads)",
                                               name, s.d_model, s.heads));
  return std::make_unique<NativeModel<Gpt>>(name, [s] { return Gpt(s); });
}

torch::Tensor gpt_fused_loss(Model& model, const torch::Tensor& x, const torch::Tensor& y) {
  auto* native = dynamic_cast<NativeModel<Gpt>*>(&model);
  if (!native)
    throw_error(ErrorKind::kModel, fmt::format("model '{}' is not a built-in GPT, so its loss cannot be fused with its "
                                               "output projection; use train.lm_loss = full (--lm-loss full)",
                                               model.name()));
  return native->module()->fused_loss(x, y);
}

bool is_builtin_gpt(Model& model) { return dynamic_cast<NativeModel<Gpt>*>(&model) != nullptr; }

bool linear_gelu_fuses(const torch::Tensor& x) { return x.is_cuda() && !torch::GradMode::is_enabled(); }

torch::Tensor linear_gelu(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  if (!linear_gelu_fuses(x)) return torch::gelu(at::linear(x, w, b), "tanh");
  const auto dtype = compat::autocast_enabled(true) ? compat::autocast_dtype(true) : x.scalar_type();
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);  // the dtype is explicit here
  auto out_shape = x.sizes().vec();
  out_shape.back() = w.size(0);
  return at::_addmm_activation(b.to(dtype), x.reshape({-1, x.size(-1)}).to(dtype), w.to(dtype).t(), 1, 1,
                               /*use_gelu=*/true)
      .view(out_shape);
}

torch::Tensor causal_attention_math(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  const int64_t T = q.size(-2), S = k.size(-2);
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  auto future = torch::ones({T, S}, torch::TensorOptions().dtype(torch::kBool).device(q.device())).triu(S - T + 1);
  scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
  return torch::matmul(torch::softmax(scores, -1).to(v.scalar_type()), v);
}

torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
#if TRAINSCOPE_HAVE_SDPA
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
#else
  return causal_attention_math(q, k, v);
#endif
}

std::string attention_backend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
#if TRAINSCOPE_HAVE_SDPA
  return compat::sdpa_backend_name(q, k, v);
#else
  (void)q, (void)k, (void)v;
  return "math";
#endif
}

int64_t gpt_flop_parameters(const GptShape& s) {
  const int64_t d = s.d_model;
  const int64_t block = 12 * d * d + 13 * d;  // c_attn 3d^2+3d, attn_proj d^2+d, c_fc 4d^2+4d, mlp_proj 4d^2+d, 2 LN 4d
  return s.vocab * d + s.layers * block + 2 * d;
}

double gpt_train_flops_per_token(const GptShape& s, int64_t seq_len) {
  return 6.0 * static_cast<double>(gpt_flop_parameters(s)) +
         12.0 * static_cast<double>(s.layers) * static_cast<double>(s.d_model) * static_cast<double>(seq_len);
}

}  // namespace trainscope

#include "workload/gpt.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "train/compat.h"
#include "trainscope/error.h"
#include "workload/native_model.h"

namespace trainscope {

namespace nn = torch::nn;

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

struct BlockImpl : nn::Module {
  BlockImpl(int64_t d, int64_t heads) : heads_(heads) {
    ln_1 = register_module("ln_1", nn::LayerNorm(nn::LayerNormOptions({d})));
    c_attn = register_module("c_attn", nn::Linear(d, 3 * d));
    attn_proj = register_module("attn_proj", nn::Linear(d, d));
    ln_2 = register_module("ln_2", nn::LayerNorm(nn::LayerNormOptions({d})));
    c_fc = register_module("c_fc", nn::Linear(d, 4 * d));
    mlp_proj = register_module("mlp_proj", nn::Linear(4 * d, d));
  }
  torch::Tensor forward(torch::Tensor x) {
    const int64_t B = x.size(0), T = x.size(1), C = x.size(2);
    auto qkv = c_attn(ln_1(x)).split(C, 2);
    auto heads = [&](const torch::Tensor& t) { return t.view({B, T, heads_, C / heads_}).transpose(1, 2); };
    auto y = causal_attention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2])).transpose(1, 2).reshape({B, T, C});
    x = x + attn_proj(y);
    return x + mlp_proj(torch::gelu(c_fc(ln_2(x)), "tanh"));
  }
  int64_t heads_;
  nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  nn::Linear c_attn{nullptr}, attn_proj{nullptr}, c_fc{nullptr}, mlp_proj{nullptr};
};
TORCH_MODULE(Block);

struct GptImpl : nn::Module {
  explicit GptImpl(const GptShape& s) : context_(s.context) {
    wte = register_module("wte", nn::Embedding(s.vocab, s.d_model));
    wpe = register_module("wpe", nn::Embedding(s.context, s.d_model));
    blocks = register_module("blocks", nn::ModuleList());
    for (int64_t i = 0; i < s.layers; ++i) blocks->push_back(Block(s.d_model, s.heads));
    ln_f = register_module("ln_f", nn::LayerNorm(nn::LayerNormOptions({s.d_model})));
    init_weights(s.layers);
  }
  // GPT-2's initialisation (header): N(0, 0.02), residual projections scaled by 1/sqrt(2L).
  void init_weights(int64_t layers) {
    torch::NoGradGuard ng;
    const double resid_std = 0.02 / std::sqrt(2.0 * static_cast<double>(layers));
    for (auto& p : named_parameters()) {
      const auto& key = p.key();
      auto& t = p.value();
      if (key.find("ln_") != std::string::npos) continue;  // LayerNorm keeps weight 1, bias 0
      if (t.dim() == 1) t.zero_();
      else if (key.find("proj.weight") != std::string::npos) t.normal_(0.0, resid_std);
      else t.normal_(0.0, 0.02);
    }
  }
  torch::Tensor forward(torch::Tensor idx) {
    const int64_t T = idx.size(1);
    TORCH_CHECK(T <= context_, "sequence of ", T, " tokens is longer than the model's context of ", context_);
    auto pos = torch::arange(T, torch::TensorOptions().dtype(torch::kLong).device(idx.device()));
    auto x = wte(idx) + wpe(pos);
    for (auto& b : *blocks) x = b->as<Block>()->forward(x);
    return torch::linear(ln_f(x), wte->weight);  // tied output projection
  }
  int64_t context_;
  nn::Embedding wte{nullptr}, wpe{nullptr};
  nn::ModuleList blocks{nullptr};
  nn::LayerNorm ln_f{nullptr};
};
TORCH_MODULE(Gpt);

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

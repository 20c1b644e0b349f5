#include "workload/vit.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "train/compat.h"
#include "trainscope/error.h"
#include "workload/native_model.h"

namespace trainscope {

namespace nn = torch::nn;

namespace {

struct Preset {
  const char* name;
  int64_t layers, d_model, heads, mlp;
};
// DeiT-S and DeiT-Ti (Touvron et al. 2021, table 1), timm's vit_small_patch16_224 and
// vit_tiny_patch16_224: MLP ratio 4.
constexpr Preset kPresets[] = {
    {"vit-s", 12, 384, 6, 1536},
    {"vit-ti", 12, 192, 3, 768},
};

// The shorter image side from which patches are 16 px (ViT's /16 models); below it 4 px, so that
// 28-32 px images still give 49-64 tokens instead of 1-4. The same threshold as resnet18's
// ImageNet stem (src/workload/models.cpp, kImageNetStemMinSide).
constexpr int64_t kLargePatchMinSide = 64;

// timm builds ViT's LayerNorms with eps 1e-6 (VisionTransformer's default norm_layer).
nn::LayerNorm layer_norm(int64_t d) { return nn::LayerNorm(nn::LayerNormOptions({d}).eps(1e-6)); }

// at::linear, not the module's forward: B x T folds into one matrix product with the bias in its
// epilogue (addmm), as in src/workload/gpt.cpp (the C++ Linear adds the bias separately for 3-D
// inputs).
torch::Tensor linear(const nn::Linear& l, const torch::Tensor& x) { return at::linear(x, l->weight, l->bias); }

// timm's trunc_normal_(t, std=0.02) keeps its default bounds a=-2, b=2, absolute values 100
// standard deviations out: the truncation is a clamp that in practice never changes a value.
void trunc_normal_002(torch::Tensor& t) { t.normal_(0.0, 0.02).clamp_(-2.0, 2.0); }

struct VitBlockImpl : nn::Module {
  VitBlockImpl(int64_t d, int64_t heads, int64_t mlp) : heads_(heads) {
    norm1 = register_module("norm1", layer_norm(d));
    qkv = register_module("qkv", nn::Linear(d, 3 * d));
    proj = register_module("proj", nn::Linear(d, d));
    norm2 = register_module("norm2", layer_norm(d));
    fc1 = register_module("fc1", nn::Linear(d, mlp));
    fc2 = register_module("fc2", nn::Linear(mlp, d));
  }
  torch::Tensor forward(torch::Tensor x) {
    const int64_t B = x.size(0), T = x.size(1), C = x.size(2);
    // [B, T, 3C] -> 3 x [B, heads, T, C / heads]
    auto qkv_heads = linear(qkv, norm1(x)).view({B, T, 3, heads_, C / heads_}).permute({2, 0, 3, 1, 4}).unbind(0);
    auto y = bidirectional_attention(qkv_heads[0], qkv_heads[1], qkv_heads[2]).transpose(1, 2).reshape({B, T, C});
    x = x + linear(proj, y);
    return x + linear(fc2, torch::gelu(linear(fc1, norm2(x))));  // GELU exact (erf), as timm's nn.GELU
  }
  int64_t heads_;
  nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  nn::Linear qkv{nullptr}, proj{nullptr}, fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(VitBlock);

struct VitImpl : nn::Module {
  explicit VitImpl(const VitShape& s) {
    const int64_t tokens = (s.height / s.patch) * (s.width / s.patch) + 1;
    patch_embed = register_module(
        "patch_embed", nn::Conv2d(nn::Conv2dOptions(s.channels, s.d_model, s.patch).stride(s.patch)));
    cls_token = register_parameter("cls_token", torch::zeros({1, 1, s.d_model}));
    pos_embed = register_parameter("pos_embed", torch::zeros({1, tokens, s.d_model}));
    blocks = register_module("blocks", nn::ModuleList());
    for (int64_t i = 0; i < s.layers; ++i) blocks->push_back(VitBlock(s.d_model, s.heads, s.mlp));
    norm = register_module("norm", layer_norm(s.d_model));
    head = register_module("head", nn::Linear(s.d_model, s.classes));
    init_weights();
  }
  // timm's initialisation (vit.h); LayerNorms and the patch convolution keep their defaults.
  void init_weights() {
    torch::NoGradGuard ng;
    trunc_normal_002(pos_embed);
    cls_token.normal_(0.0, 1e-6);
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* l = m->as<nn::Linear>()) {
        trunc_normal_002(l->weight);
        l->bias.zero_();
      }
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    x = patch_embed(x).flatten(2).transpose(1, 2);  // [B, N, d], patches in row-major order
    x = torch::cat({cls_token.expand({x.size(0), -1, -1}), x}, 1) + pos_embed;
    for (auto& b : *blocks) x = b->as<VitBlock>()->forward(x);
    // LayerNorm works per token: normalising the class token alone equals timm's norm-then-pool.
    return linear(head, norm(x.select(1, 0)));
  }
  nn::Conv2d patch_embed{nullptr};
  torch::Tensor cls_token, pos_embed;
  nn::ModuleList blocks{nullptr};
  nn::LayerNorm norm{nullptr};
  nn::Linear head{nullptr};
};
TORCH_MODULE(Vit);

}  // namespace

std::vector<std::string> builtin_vit_models() {
  std::vector<std::string> v;
  for (const auto& p : kPresets) v.emplace_back(p.name);
  return v;
}

bool is_builtin_vit(const std::string& name) {
  return std::any_of(std::begin(kPresets), std::end(kPresets), [&](const Preset& p) { return name == p.name; });
}

int64_t vit_patch_size(int64_t height, int64_t width) { return std::min(height, width) >= kLargePatchMinSide ? 16 : 4; }

VitShape vit_preset(const std::string& name, int64_t channels, int64_t height, int64_t width, int64_t classes) {
  const auto* p = std::find_if(std::begin(kPresets), std::end(kPresets), [&](const Preset& q) { return name == q.name; });
  if (p == std::end(kPresets))
    throw_error(ErrorKind::kModel, fmt::format("'{}' is not a built-in vision transformer; use one of {}", name,
                                               fmt::join(builtin_vit_models(), ", ")));
  const int64_t patch = vit_patch_size(height, width);
  if (height < patch || width < patch || height % patch != 0 || width % patch != 0)
    throw_error(ErrorKind::kModel,
                fmt::format("model '{}' cuts images into {} x {} patches, but the data's images are {} x {} pixels; "
                            "give images whose sides are multiples of {} (e.g. --image-size {} for an image folder, "
                            "data.synthetic_size for synthetic data)",
                            name, patch, patch, height, width, patch,
                            std::max<int64_t>(patch, std::min(height, width) / patch * patch)));
  return {p->layers, p->d_model, p->heads, p->mlp, channels, height, width, patch, classes};
}

std::unique_ptr<Model> make_vit(const std::string& name, const VitShape& s) {
  if (s.layers < 1 || s.d_model < 1 || s.heads < 1 || s.mlp < 1 || s.channels < 1 || s.patch < 1 ||
      s.height < s.patch || s.width < s.patch || s.classes < 1)
    throw_error(ErrorKind::kModel, fmt::format("model '{}': layers {}, width {}, heads {}, MLP {}, channels {}, "
                                               "patch {} and classes {} must be positive and the image ({} x {}) at "
                                               "least one patch",
                                               name, s.layers, s.d_model, s.heads, s.mlp, s.channels, s.patch,
                                               s.classes, s.height, s.width));
  if (s.d_model % s.heads != 0)
    throw_error(ErrorKind::kModel,
                fmt::format("model '{}': width {} is not divisible by {} heads", name, s.d_model, s.heads));
  return std::make_unique<NativeModel<Vit>>(name, [s] { return Vit(s); });
}

int64_t vit_parameter_count(const VitShape& s) {
  const int64_t d = s.d_model, m = s.mlp;
  const int64_t tokens = (s.height / s.patch) * (s.width / s.patch) + 1;
  const int64_t embed = s.channels * s.patch * s.patch * d + d + d + tokens * d;  // conv, cls, pos
  const int64_t block = 4 * d + (3 * d * d + 3 * d) + (d * d + d) + (d * m + m) + (m * d + d);
  return embed + s.layers * block + 2 * d + (d * s.classes + s.classes);
}

double vit_forward_flops(const VitShape& s) {
  const double d = static_cast<double>(s.d_model), m = static_cast<double>(s.mlp);
  const double n = static_cast<double>((s.height / s.patch) * (s.width / s.patch)), t = n + 1;
  const double embed = 2.0 * n * static_cast<double>(s.channels * s.patch * s.patch) * d;
  const double block = 2.0 * t * (4.0 * d * d + 2.0 * d * m) + 2.0 * 2.0 * t * t * d;
  return embed + static_cast<double>(s.layers) * block + 2.0 * d * static_cast<double>(s.classes);
}

torch::Tensor bidirectional_attention_math(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  return torch::matmul(torch::softmax(scores, -1).to(v.scalar_type()), v);
}

torch::Tensor bidirectional_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
#if TRAINSCOPE_HAVE_SDPA
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/false);
#else
  return bidirectional_attention_math(q, k, v);
#endif
}

std::string bidirectional_attention_backend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
#if TRAINSCOPE_HAVE_SDPA
  return compat::sdpa_backend_name(q, k, v, /*is_causal=*/false);
#else
  (void)q, (void)k, (void)v;
  return "math";
#endif
}

}  // namespace trainscope

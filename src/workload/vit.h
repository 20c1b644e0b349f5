// Vision transformers (Dosovitskiy et al. 2021, "An Image is Worth 16x16 Words", arXiv 2010.11929)
// in the DeiT-S / DeiT-Ti shapes (Touvron et al. 2021, arXiv 2012.12877, table 1), built as timm's
// VisionTransformer (vit_small_patch16_224, vit_tiny_patch16_224):
//   patch embedding  Conv2d(C, d, kernel p, stride p) -> N = (H/p)(W/p) tokens of width d;
//   a class token prepended, learned position embeddings [1, N + 1, d] added;
//   `layers` pre-LN blocks: x + proj(attention(qkv(LN(x)))), x + fc2(GELU(fc1(LN(x)))), MLP d -> mlp -> d,
//   GELU exact (erf), LayerNorm eps 1e-6, bidirectional multi-head attention, qkv with bias;
//   a final LayerNorm and a linear head on the class token.
//
// Shapes: forward takes float32 images [B, C, H, W] and returns logits [B, classes]; under autocast
// (the bf16 variant) the matrix products run in bfloat16.
// Patch size: 16 for images of at least 64 px on the shorter side (ViT-S/16 at 224 px: 14 x 14 = 196
// patches), 4 below (28-32 px data: 7 x 7 or 8 x 8 patches), as resnet18's stem switches at 64 px
// (docs/workloads.md).
// Initialisation as timm's (init_weights_vit_timm, VisionTransformer.init_weights): every Linear
// weight trunc_normal(std 0.02, bounds +-2), biases zero, the position embedding
// trunc_normal(std 0.02), the class token N(0, 1e-6), LayerNorm weight 1 and bias 0, the patch
// embedding's convolution LibTorch's default (timm leaves it at PyTorch's).
//
// Errors: an image side that is not a multiple of the patch size, or smaller than it, throws
// Error(kModel) naming the model, the size and the fix.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "workload/model.h"

namespace trainscope {

/// The shape of a ViT for one input shape. mlp: the MLP's hidden width; patch: the side of a
/// square patch in pixels.
struct VitShape {
  int64_t layers = 0, d_model = 0, heads = 0, mlp = 0;
  int64_t channels = 0, height = 0, width = 0, patch = 0, classes = 0;
};

/// Built-in vision transformers, in the order the CLI lists them:
///   vit-s   12 layers, d 384, 6 heads, MLP 1536 (ViT-S / DeiT-S: 22,050,664 parameters at
///           224 px, 1000 classes);
///   vit-ti  12 layers, d 192, 3 heads, MLP 768 (ViT-Ti / DeiT-Ti: 5,717,416).
std::vector<std::string> builtin_vit_models();
bool is_builtin_vit(const std::string& name);

/// The patch side for images of height x width: 16 from 64 px on the shorter side, else 4.
int64_t vit_patch_size(int64_t height, int64_t width);

/// The preset's shape for images of channels x height x width and `classes` outputs. Throws
/// Error(kModel) for a name that is not a built-in ViT, and for a height or width that is not a
/// positive multiple of the patch size (the fix: an image size that is).
VitShape vit_preset(const std::string& name, int64_t channels, int64_t height, int64_t width, int64_t classes);

/// A ViT of `shape` named `name` (weights from LibTorch's global generator). Throws
/// Error(kModel) when d_model is not a multiple of heads or a size is not positive.
std::unique_ptr<Model> make_vit(const std::string& name, const VitShape& shape);

/// Trainable scalars of a ViT, from its shape: patch embedding C p^2 d + d, class token d,
/// position embedding (N + 1) d, per block 2 LayerNorms (4d), qkv 3d^2 + 3d, proj d^2 + d,
/// fc1 d mlp + mlp, fc2 mlp d + d; final LayerNorm 2d; head d classes + classes.
int64_t vit_parameter_count(const VitShape& s);

/// Forward FLOPs of one image, 2 per multiply-accumulate of the matrix products: the patch
/// embedding 2 N C p^2 d; per block the linear layers 2 T (4 d^2 + 2 d mlp) and attention's
/// Q K^T and A V 2 * 2 T^2 d (T = N + 1 tokens); the head 2 d classes. timm's model card gives
/// ViT-S/16 at 224 px 4.6 GMACs, i.e. 9.2 GFLOPs. Element-wise work (softmax, GELU, LayerNorm)
/// is not counted, as count_forward_flops does not count it.
double vit_forward_flops(const VitShape& s);

/// Bidirectional scaled dot-product attention: q [B, H, L, hd], k and v [B, H, S, hd] ->
/// [B, H, L, hd], every position attending to every position, scale 1/sqrt(hd). Through
/// at::scaled_dot_product_attention (is_causal false) where LibTorch has it (>= 2.0), else
/// bidirectional_attention_math.
torch::Tensor bidirectional_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v);

/// The same computed from its definition: softmax(q k^T / sqrt(hd)) v (Vaswani et al. 2017, eq. 1).
torch::Tensor bidirectional_attention_math(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v);

/// Which implementation bidirectional_attention runs on tensors like these: "math" on LibTorch
/// < 2.0, else the backend SDPA picks ("flash", "efficient", "cudnn", "math (sdpa)", "sdpa").
std::string bidirectional_attention_backend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v);

}  // namespace trainscope

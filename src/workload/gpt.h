// GPT-2-family causal language models (Radford et al. 2019, "Language Models are Unsupervised
// Multitask Learners", and the released GPT-2 code): token and learned position embeddings,
// pre-LN transformer blocks (LayerNorm -> causal self-attention -> residual, LayerNorm -> MLP
// d -> 4d -> d with GELU (tanh approximation) -> residual), a final LayerNorm and an output
// projection tied to the token embedding (no bias).
//
// Shapes: forward takes int64 token ids [B, T] (T <= context) and returns float32 logits
// [B, T, vocab]; under autocast (the bf16 variant) the matrix products run in bfloat16.
// Initialisation as GPT-2: every weight matrix and embedding N(0, 0.02), residual output
// projections (attention c_proj, MLP c_proj) N(0, 0.02 / sqrt(2 * layers)), biases zero,
// LayerNorm weight 1 and bias 0.
//
// Errors: a preset name that does not exist, or a shape whose width is not divisible by its
// heads, throws Error(kModel) naming the setting and the fix.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "workload/decoder.h"
#include "workload/model.h"

namespace trainscope {

/// The shape of a GPT model. vocab: output width (token ids must be < vocab); context: the
/// longest sequence (size of the position embedding).
struct GptShape {
  int64_t layers = 0, d_model = 0, heads = 0, context = 0, vocab = 0;
};

/// Built-in language models, in the order the CLI lists them:
///   gpt-mini     6 layers, d 384, 6 heads, context 256 (for CPUs and CI);
///   gpt2         12 layers, d 768, 12 heads, context 1024 (GPT-2 small, 124 M parameters at
///                vocab 50257);
///   gpt2-medium  24 layers, d 1024, 16 heads, context 1024 (GPT-2 medium, 350 M).
std::vector<std::string> builtin_lm_models();
bool is_builtin_lm(const std::string& name);

/// The preset's shape with `vocab` filled in (vocab from the data set). Throws Error(kModel) for
/// a name that is not a built-in language model.
GptShape gpt_preset(const std::string& name, int64_t vocab);

/// A GPT model of `shape` named `name` (weights from LibTorch's global generator). Throws
/// Error(kModel) when d_model is not a multiple of heads or a size is not positive.
std::unique_ptr<Model> make_gpt(const std::string& name, const GptShape& shape);

/// Causal scaled dot-product attention: q, k, v [B, H, T, hd] -> [B, H, T, hd], position t
/// attending to positions <= t, scale 1/sqrt(hd). Through at::scaled_dot_product_attention
/// (is_causal) where LibTorch has it (>= 2.0), else causal_attention_math.
torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v);

/// The same computed from its definition: softmax(q k^T / sqrt(hd) + M) v, M = -inf above the
/// diagonal (Vaswani et al. 2017, eq. 1, with the causal mask of GPT).
torch::Tensor causal_attention_math(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v);

/// Which attention implementation runs on tensors like these: "math" (causal_attention_math on
/// LibTorch < 2.0) or, through SDPA, the backend PyTorch picks: "flash", "efficient",
/// "cudnn", "math (sdpa)", or "sdpa" when the choice cannot be asked.
std::string attention_backend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v);

/// A cached decoder (workload/decoder.h) over built-in GPT `model` (made by make_gpt or
/// make_model, already on its device), computing in `dtype` (kFloat, kBFloat16 or kHalf): the
/// model's weights are converted to it in place and the model is put in eval mode. The decoder
/// shares the model's weights (the model must outlive it). Throws Error(kModel) for a model that is
/// not a built-in GPT (make_recompute_decoder serves those) or another dtype.
std::unique_ptr<CapturableDecoder> make_gpt_decoder(Model& model, torch::ScalarType dtype);

/// The mean cross-entropy (nats per token, float32 scalar) of built-in GPT `model` on token ids x
/// [B, T] against the next tokens y [B, T], as task_loss(model.forward(x), y) computes it
/// (train/task_loss.h) but without the [B*T, vocab] logits: the tied output projection and the
/// loss in chunks of rows, their gradients in the same pass (linear_cross_entropy,
/// workload/fused_lm_loss.h). Throws Error(kModel) for a model that is not a built-in GPT.
torch::Tensor gpt_fused_loss(Model& model, const torch::Tensor& x, const torch::Tensor& y);

/// Whether `model` is a built-in GPT (made by make_gpt), so gpt_fused_loss applies to it.
bool is_builtin_gpt(Model& model);

/// The MLP's first layer: GELU(x W^T + b) with GELU's tanh approximation, as GPT-2 computes it;
/// x [..., in], W [out, in], b [out] -> [..., out]. One operator where linear_gelu_fuses: at::
/// _addmm_activation(use_gelu), one cuBLASLt matrix product with the bias and GELU in its epilogue
/// (CUBLASLT_EPILOGUE_GELU_BIAS; PyTorch's CUDA path applies the tanh approximation also where it
/// cannot use the epilogue), in autocast's dtype while autocast is on. Elsewhere two: at::linear
/// (bias in the matrix product's epilogue) and gelu(tanh).
torch::Tensor linear_gelu(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b);

/// Whether linear_gelu runs as one operator on x: on a CUDA tensor (the CPU kernel of
/// _addmm_activation applies the exact erf GELU, LibTorch 1.13 and 2.x: aten/src/ATen/native/
/// LinearAlgebra.cpp, addmm_activation_out_cpu) while no gradient is recorded (autograd has no
/// derivative for _addmm_activation, neither in 1.13 nor in 2.x: tools/autograd/derivatives.yaml
/// lists none, and its backward throws "derivative for aten::_addmm_activation is not
/// implemented"; a training step keeps linear and gelu, whose backward needs the pre-activation
/// that the fused operator does not return). So evaluation and decoding on a GPU use it.
bool linear_gelu_fuses(const torch::Tensor& x);

/// Parameters N of the PaLM FLOP count: every trainable scalar except the position embedding
/// (the tied output projection counted once, with the token embedding).
int64_t gpt_flop_parameters(const GptShape& s);

/// Training FLOPs per token, 6 N + 12 L d T (Chowdhery et al. 2022, "PaLM", appendix B; as
/// nanoGPT's estimate_mfu): 6 N for the forward and backward matrix products of the
/// parameters, 12 L d T for attention's QK^T and AV over a context of T. Forward alone is a
/// third of it.
double gpt_train_flops_per_token(const GptShape& s, int64_t seq_len);

}  // namespace trainscope

// A language model's output projection and its cross-entropy loss in one pass over chunks of rows,
// so the [N, V] logits of a batch (N = B x T tokens, V the vocabulary: 16384 x 50304 for GPT-2 at
// B16 x T1024, 3.3 GB in float32) never exist at once. The method of Liger Kernel's
// FusedLinearCrossEntropy (Hsu et al. 2024, "Liger Kernel: Efficient Triton Kernels for LLM
// Training", section 3.3) and of llm.c's fused classifier (Karpathy, llm.c train_gpt2.cu,
// fused_classifier): per chunk of rows, the logits in the compute dtype, their log-softmax in
// float32, the loss, and at once the gradient of the mean loss with respect to the logits,
// softmax(z) - onehot(target), divided by N (the derivative of -log softmax(z)[t]), which
// gives the gradients of the hidden states (d_z W) and of the weight (d_z^T h, summed over the
// chunks) before the chunk's logits are freed. Backward then only scales those two by the
// incoming gradient (Liger's design: the three matrix products of the unfused forward and
// backward all run in the forward pass).
#pragma once

#include <torch/torch.h>

namespace trainscope {

/// Rows of one chunk. Its logits take chunk x V elements twice (compute dtype and float32): at
/// GPT-2's V = 50304, 4096 rows are 0.4 GB in bfloat16 plus 0.8 GB in float32, against 3.3 GB
/// for the float32 logits of a B16 x T1024 batch alone; and a 4096-row matrix product still fills
/// a GPU (Liger sizes its chunks so the chunk's logits match the hidden states, about 256 rows at
/// GPT-2's shape, which leaves the products small).
inline constexpr int64_t kLossChunkRows = 4096;

/// Mean cross-entropy, in nats per row, of the logits hidden · weight^T against `targets`:
/// hidden [N, d] floating point, weight [V, d] of the same kind, targets int64 [N] with values in
/// [0, V); N >= 1. Returns a float32 scalar, differentiable with respect to hidden and weight
/// (their gradients come back in their own dtypes). The matrix products run in the compute
/// dtype: under autocast on hidden's device type its dtype (bfloat16 for the bf16 variant, as
/// autocast runs a linear), else hidden's dtype; the log-softmax is float32 per chunk. The rows
/// are taken `chunk_rows` at a time (the last chunk shorter): shapes depend on N alone, there is
/// no host synchronisation, so the loss can be captured in a CUDA graph. The gradients are
/// computed in the forward pass only when gradients are being recorded (GradMode on and hidden
/// or weight requiring them); backward may then run once (its saved gradients are released).
/// No ignore index: every row is a prediction (the training windows hold no padding).
/// Errors: shapes that do not fit, or chunk_rows < 1, throw Error(kModel) naming the shapes.
torch::Tensor linear_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                   const torch::Tensor& targets, int64_t chunk_rows = kLossChunkRows);

}  // namespace trainscope

// A training step's loss and accuracy figures, summed on the device without a host
// synchronisation, so that they can run every step (eager) or inside a captured CUDA graph
// (graph_step.h) and be read once per epoch.
#pragma once

#include <torch/torch.h>

namespace trainscope {

/// A fresh pair of sums on `device`: float64, shape [2] (summed loss, correct count), zeros.
inline torch::Tensor make_step_sums(const torch::Device& device) {
  return torch::zeros({2}, torch::TensorOptions().dtype(torch::kDouble).device(device));
}

/// Adds one step to `sums` (make_step_sums): sums[0] += B x the mean loss (the batch's summed
/// cross-entropy), sums[1] += samples whose argmax over the logits equals the label. loss: a
/// scalar (the batch mean); logits: B x classes; y: B int64 labels; all on sums' device. Nothing
/// is read back to the host. On a CUDA device in a CUDA build one kernel does it
/// (step_sums_kernel.h) where it applies (add_step_sums_fused); elsewhere add_step_sums_aten.
void add_step_sums(const torch::Tensor& sums, const torch::Tensor& loss, const torch::Tensor& logits,
                   const torch::Tensor& y);

/// The fused kernel's half of add_step_sums: true when it ran, false (nothing done) where it
/// does not apply: a build without CUDA, tensors off sums' CUDA device, loss not one float32/64
/// element, logits not a strided B x classes float32/64, bfloat16 or float16 with 1..64 classes
/// (one thread scans a row), y not contiguous int64 of B, sums not a contiguous float64 [2]. A
/// launch error throws c10::Error.
bool add_step_sums_fused(const torch::Tensor& sums, const torch::Tensor& loss, const torch::Tensor& logits,
                         const torch::Tensor& y);

/// The same sums from ATen operations (add, argmax, eq, sum, add: five kernels on a GPU): the
/// path on the CPU, and the reference the fused kernel is tested against.
void add_step_sums_aten(const torch::Tensor& sums, const torch::Tensor& loss, const torch::Tensor& logits,
                        const torch::Tensor& y);

}  // namespace trainscope

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
/// scalar (the batch mean); logits: B x classes; y: B int64 labels; all on sums' device. Four
/// kernels (add, argmax, eq+sum, add); nothing is read back to the host.
inline void add_step_sums(const torch::Tensor& sums, const torch::Tensor& loss, const torch::Tensor& logits,
                          const torch::Tensor& y) {
  torch::NoGradGuard no_grad;
  sums.select(0, 0).add_(loss.detach(), static_cast<double>(y.size(0)));
  sums.select(0, 1).add_(logits.detach().argmax(1).eq(y).sum());
}

}  // namespace trainscope

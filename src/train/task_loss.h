// The training loss of both tasks in one place (docs/language-models.md#measured-as-the-field-measures-it):
// image classification, logits [B, classes] against labels [B], and causal language modelling,
// logits [B, T, V] against the next tokens [B, T], where every token is one prediction (row).
#pragma once

#include <torch/torch.h>

#include "train/step_sums.h"

namespace trainscope {

/// Predictions as rows: logits [B, T, V] -> [B*T, V] (a view when contiguous); [B, C] unchanged.
inline torch::Tensor prediction_rows(const torch::Tensor& logits) {
  return logits.dim() >= 3 ? logits.flatten(0, -2) : logits;
}

/// Targets as rows: next tokens [B, T] -> [B*T]; labels [B] unchanged.
inline torch::Tensor target_rows(const torch::Tensor& y) { return y.dim() >= 2 ? y.flatten() : y; }

/// Mean cross-entropy over the rows (samples, or tokens for a language model): the loss in nats
/// per sample or per token.
inline torch::Tensor task_loss(const torch::Tensor& logits, const torch::Tensor& y) {
  return torch::nn::functional::cross_entropy(prediction_rows(logits), target_rows(y));
}

/// What a step's forward and loss give (graph_step.h's StepForward): the mean loss (float32
/// scalar) and the logits it was computed from, or undefined logits where the loss never made
/// them (a built-in GPT's fused loss, workload/fused_lm_loss.h).
struct StepOutput {
  torch::Tensor loss, logits;
};

/// The step output of logits and their targets: {task_loss(logits, y), logits}.
inline StepOutput loss_of_logits(const torch::Tensor& logits, const torch::Tensor& y) {
  return {task_loss(logits, y), logits};
}

/// Adds one step to the epoch's sums (train/step_sums.h). Classification: the summed loss and
/// the correct count (add_step_sums). A language model: the summed loss over its B*T tokens only;
/// a per-step argmax would read the whole B*T x V logits tensor once more (a few percent of a
/// GPT-2 step), and training-set token accuracy is not a figure language-model users read, so the
/// epoch's train_accuracy_pct stays absent (validation token accuracy is measured), and its logits
/// are not read (they may be undefined: StepOutput). The task is told by y: [B] labels, [B, T] tokens.
inline void add_task_sums(const torch::Tensor& sums, const torch::Tensor& loss, const torch::Tensor& logits,
                          const torch::Tensor& y) {
  if (y.dim() < 2) return add_step_sums(sums, loss, logits, y);
  torch::NoGradGuard no_grad;
  sums.select(0, 0).add_(loss.detach(), static_cast<double>(y.numel()));
}

}  // namespace trainscope

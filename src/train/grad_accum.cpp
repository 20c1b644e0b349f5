// The training recipe's step-level parts (docs/language-models.md#the-training-recipe): gradient
// accumulation over micro-batches (--grad-accum) and the learning rate of each step
// (train/lr_schedule.h).
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "train/task_loss.h"
#include "train/train_loop.h"

namespace trainscope {

// The step's batch of up to grad_accum_ x micro_batch_ samples as micro-batches of micro_batch_:
// each micro-batch's mean loss weighted by its share of the batch's rows, so the summed gradients
// are those of the batch's mean loss (one batch of N x B, as the test
// GradAccum.MicroBatchesEqualOneBatch checks). Phases: "forward" runs from the first forward to
// the last micro-batch's backward (the earlier backwards inside it), "backward" is the last
// backward (with its gradient all-reduce in a data-parallel run: once per optimizer step).
torch::Tensor TrainLoop::accumulated_compute(const torch::Tensor& x, const torch::Tensor& y, int64_t s,
                                             Clock::time_point* host_marks, const torch::Tensor& sums) {
  const int64_t m = x.size(0);
  const int64_t parts = (m + micro_batch_ - 1) / micro_batch_;
  clock_->mark(s, 1);
  host_marks[1] = Clock::now();
  opt_->zero_grad();
  torch::Tensor total;
  for (int64_t k = 0; k < parts; ++k) {
    const int64_t at = k * micro_batch_, len = std::min(micro_batch_, m - at);
    const auto xk = x.narrow(0, at, len), yk = y.narrow(0, at, len);
    auto [loss, logits] = forward_(xk, yk);
    if (global_step_ == cfg_.inject_nan_at_step) loss = loss * std::numeric_limits<float>::quiet_NaN();
    add_task_sums(sums, loss, logits, yk);
    const double share = static_cast<double>(len) / static_cast<double>(m);
    total = total.defined() ? total + loss.detach() * share : loss.detach() * share;
    const bool last = k + 1 == parts;
    if (last) {
      clock_->mark(s, 2);
      host_marks[2] = Clock::now();
      if (dist_) dist_->before_backward(global_step_, local_stop_wish());
    } else if (dist_) {
      dist_->accumulating(true);  // no all-reduce of a partial sum (dist/grad_sync.h)
    }
    (loss * share).backward();
    if (dist_) dist_->accumulating(false);
  }
  if (dist_) dist_->after_backward();
  clock_->mark(s, 3);
  host_marks[3] = Clock::now();
  opt_->step();
  clock_->mark(s, 4);
  host_marks[4] = Clock::now();
  return total;
}

void TrainLoop::apply_learning_rate() {
  if (!schedule_.varies()) return;
  lr_now_ = schedule_.at(global_step_);
  opt_->set_learning_rate(lr_now_);
}

// Before the optimizer is made: the record's recipe fields and the graphs variant's limit. A
// captured step holds one forward and one backward of fixed shapes, so a graphs run with
// --grad-accum > 1 runs eagerly, saying so (variant_note), as a failed capture does.
void TrainLoop::set_up_recipe() {
  grad_accum_ = cfg_.grad_accum;
  micro_batch_ = spec_.batch_size;
  schedule_ = LrSchedule::of(cfg_);
  lr_now_ = schedule_.varies() ? schedule_.at(0) : cfg_.learning_rate;
  r_.grad_accum = grad_accum_;
  r_.lr_schedule = schedule_.describe();
  if (grad_accum_ > 1 && want_graph_) {
    want_graph_ = false;
    r_.variant_note = fmt::format("graphs fell back to eager: --grad-accum {} > 1 (a captured step holds one "
                                  "micro-batch's forward and backward); use --grad-accum 1 with graphs, or a larger "
                                  "batch size",
                                  grad_accum_);
  }
}

}  // namespace trainscope

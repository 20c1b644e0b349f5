// The CUDA-graph training step (docs/variants.md#cuda-graphs): the capture, once, and the replay
// that stands for a step's forward, backward and optimizer.
#include <fmt/format.h>

#include "train/train_loop.h"

namespace trainscope {

// One replay of the captured step: the pinned batch is copied into the graph's static buffers
// (asynchronously) and the graph replayed. Phases: h2d, then the whole replay booked as
// "forward" (backward and optimizer are inside it and read 0; docs/variants.md#cuda-graphs).
void TrainLoop::graph_compute(const torch::Tensor& bx, const torch::Tensor& by, bool filled, int64_t s,
                              Clock::time_point* host_marks) {
  if (!filled) {
    graph_->static_x().copy_(bx, /*non_blocking=*/true);
    graph_->static_y().copy_(by, /*non_blocking=*/true);
  }
  clock_->mark(s, 1);
  host_marks[1] = Clock::now();
  graph_->replay();
  for (int k = 2; k < PhaseClock::kMarks; ++k) clock_->mark(s, k);
  host_marks[2] = host_marks[3] = host_marks[4] = Clock::now();
}

// Captures the training step with this step's batch (graph_step.h). Its warm-up steps train the
// model on that batch (noted); a failed capture leaves the run eager with the reason recorded.
void TrainLoop::try_capture(const torch::Tensor& x, const torch::Tensor& y, int64_t s) {
  constexpr int kCaptureWarmup = 3;  // PyTorch's recipe (graph_step.h)
  std::optional<ResidentSet> set;  // a resident training set: the graph gathers its own batches
  if (resident_) set = ResidentSet{dev_x_, dev_y_, dev_perm_.narrow(0, s * batch_size_, batch_size_)};
  CaptureOutcome out = capture_train_step(*model_, *opt_, forward_, x, y, dev_, kCaptureWarmup, set ? &*set : nullptr);
  if (out.step) {
    graph_ = std::move(out.step);
    r_.notes.push_back(fmt::format("CUDA graph captured at step {}: its {} warm-up steps trained on that step's batch "
                                   "on a side stream (not counted in steps_completed)",
                                   global_step_, kCaptureWarmup));
  } else {
    r_.variant_note = "graphs fell back to eager: " + out.fallback_reason;
  }
}

}  // namespace trainscope

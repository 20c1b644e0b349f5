// A whole training step captured as one CUDA graph (graph_step.h; recipe and limits in
// docs/variants.md#cuda-graphs). Compiled only with TRAINSCOPE_WITH_CUDA.
//
// Sequence (PyTorch's whole-network capture, torch/cuda/graphs.py and the CUDA notes):
//  1. static input buffers cloned from the real warm-up batch, on the caller's stream;
//  2. a side stream from the pool waits for the caller's stream;
//  3. on the side stream: `warmup_steps` eager steps on that batch (they train the model and create
//     the optimizer state, cuBLAS/cuDNN workspaces and algorithm choices outside the capture),
//     then the gradients are set to none so that backward allocates them in the graph's pool;
//  4. capture of forward, loss, backward and optimizer step on the same side stream into a
//     private memory pool (at::cuda::graph_pool_handle), autocast weight-cast cache off;
//  5. the caller's stream waits for the side stream; replay() launches the graph on the caller's
//     current stream.
// A failure inside the capture (c10::Error: a host synchronisation such as .item() in a
// TorchScript forward, an operation CUDA cannot capture) ends the capture, drops the graph and
// the gradients it allocated, and comes back as the fallback reason.
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <exception>
#include <string>

#include "train/graph_capture_cuda.h"
#include "train/graph_step.h"
#include "train/step_sums.h"
#include "train/task_loss.h"

namespace trainscope {

namespace {

using graphs::abandon_capture;
using graphs::error_line;
using graphs::stream_wait;

// The autocast weight-cast cache off for the guard's lifetime, restored after: a cast cached
// during capture would tie the graph to a tensor the cache later drops (PyTorch's
// make_graphed_callables refuses autocast with cache_enabled=True for this reason).
class AutocastCacheOff {
 public:
  AutocastCacheOff() : was_(at::autocast::is_autocast_cache_enabled()) { at::autocast::set_autocast_cache_enabled(false); }
  ~AutocastCacheOff() { at::autocast::set_autocast_cache_enabled(was_); }
  AutocastCacheOff(const AutocastCacheOff&) = delete;
  AutocastCacheOff& operator=(const AutocastCacheOff&) = delete;

 private:
  bool was_;
};

class GraphTrainStep final : public CapturedTrainStep {
 public:
  explicit GraphTrainStep(c10::DeviceIndex dev) : dev_(dev) {}
  // Replays may still be running on the device: let them finish before the pool memory and the
  // static buffers go back to the caching allocator (which does not know the graph uses them).
  ~GraphTrainStep() override {
    try {
      c10::cuda::CUDAGuard g(dev_);
      (void)cudaDeviceSynchronize();
    } catch (const std::exception&) {
    }
  }
  GraphTrainStep(const GraphTrainStep&) = delete;
  GraphTrainStep& operator=(const GraphTrainStep&) = delete;
  torch::Tensor& static_x() override { return x_; }
  torch::Tensor& static_y() override { return y_; }
  void replay() override { graph_->replay(); }
  const torch::Tensor& loss() const override { return loss_; }
  const torch::Tensor& logits() const override { return logits_; }
  torch::Tensor* static_index() override { return index_.defined() ? &index_ : nullptr; }
  void drain_sums(const torch::Tensor& sums) override {
    torch::NoGradGuard ng;
    sums.add_(sums_);
    sums_.zero_();
  }

  // Declared first so it is destroyed last, after the pool tensors below went back to its pool.
  std::unique_ptr<at::cuda::CUDAGraph> graph_;
  torch::Tensor x_, y_, loss_, logits_;
  torch::Tensor index_;         // defined when the graph gathers from a ResidentSet
  torch::Tensor data_x_, data_y_;  // that set
  torch::Tensor sums_;  // the replays' summed loss and correct count (train/step_sums.h)

 private:
  c10::DeviceIndex dev_;
};

// One eager training step: the recipe the graph captures, plus zero_grad (set to none).
void eager_step(StepOptimizer& opt, const StepForward& forward, const torch::Tensor& x, const torch::Tensor& y) {
  opt.zero_grad();
  auto loss = forward(x, y).loss;
  loss.backward();
  opt.step();
}

// Captures forward, loss, backward and optimizer step on the current (side) stream into
// s.graph_. Returns "" or the reason the capture failed (the graph is then discarded and the
// gradients the partial capture allocated are dropped).
std::string capture_into(GraphTrainStep& s, StepOptimizer& opt, const StepForward& forward, c10::DeviceIndex dev) {
  auto pool = at::cuda::graph_pool_handle();
  s.graph_ = std::make_unique<at::cuda::CUDAGraph>();
  try {
    s.graph_->capture_begin(pool);
  } catch (const std::exception& e) {
    std::string why = error_line(e);
    abandon_capture(*s.graph_, dev, pool);  // capture_begin may have started routing to the pool
    s.graph_.reset();
    return "CUDA graph capture could not begin: " + why;
  }
  try {
    if (s.index_.defined()) {  // the batch's gather, inside the graph
      at::index_select_out(s.x_, s.data_x_, 0, s.index_);
      at::index_select_out(s.y_, s.data_y_, 0, s.index_);
    }
    auto [loss, logits] = forward(s.x_, s.y_);
    loss.backward();
    opt.step();
    add_task_sums(s.sums_, loss, logits, s.y_);
    s.graph_->capture_end();
    s.loss_ = loss.detach();
    if (logits.defined()) s.logits_ = logits.detach();
    return "";
  } catch (const std::exception& e) {
    std::string why = error_line(e);
    abandon_capture(*s.graph_, dev, pool);
    opt.zero_grad();  // gradients allocated by the partial capture live in its pool: drop them
    s.graph_.reset();
    return "CUDA graph capture failed (host synchronisation, data-dependent shape or an operation CUDA "
           "cannot capture in the step): " + why;
  }
}

// Why the step cannot be captured at all ("" when it can be tried).
std::string capture_precondition(const StepOptimizer& opt, const torch::Tensor& x, const torch::Tensor& y,
                                 const torch::Device& device, int warmup_steps) {
  if (!device.is_cuda()) return fmt::format("CUDA graphs need a CUDA device; '{}' is not one", device.str());
  if (!opt.capturable())
    return fmt::format("the optimizer '{}' keeps its step count on the host and cannot be captured; ask "
                       "make_optimizer for a capturable one",
                       opt.implementation());
  if (warmup_steps < 1)
    return "CUDA graph capture needs at least 1 warm-up step (optimizer state is created on the first step)";
  if (!x.defined() || !y.defined() || x.device() != device || y.device() != device)
    return fmt::format("the warm-up batch must be on {} (x and y)", device.str());
  // y: B labels, or B x T next tokens of a language model (train/task_loss.h)
  if (x.dim() < 1 || y.dim() < 1 || y.dim() > 2 || x.size(0) != y.size(0) || x.size(0) < 1)
    return "the warm-up batch needs x of shape B x ... and y of shape B or B x T (B >= 1)";
  return "";
}

}  // namespace

CaptureOutcome capture_train_step(Model& model, StepOptimizer& opt, const StepForward& forward,
                                  const torch::Tensor& warm_x, const torch::Tensor& warm_y,
                                  const torch::Device& device, int warmup_steps, const ResidentSet* resident) {
  (void)model;  // the step reaches the model through `forward` and the optimizer's parameters
  CaptureOutcome out;
  // "cuda" means the current CUDA device: name it, so it compares equal to the batch's device.
  const torch::Device where =
      device.is_cuda() && !device.has_index() ? torch::Device(torch::kCUDA, c10::cuda::current_device()) : device;
  out.fallback_reason = capture_precondition(opt, warm_x, warm_y, where, warmup_steps);
  if (!out.fallback_reason.empty()) return out;
  c10::cuda::CUDAGuard device_guard(where);
  const auto dev = where.index();
  auto step = std::make_unique<GraphTrainStep>(dev);
  step->x_ = warm_x.clone();  // static buffers, allocated on the caller's stream
  step->y_ = warm_y.clone();
  step->sums_ = make_step_sums(where);
  if (resident) {
    step->index_ = resident->warm_index.clone();
    step->data_x_ = resident->x;
    step->data_y_ = resident->y;
  }
  auto caller = at::cuda::getCurrentCUDAStream(dev);
  auto side = at::cuda::getStreamFromPool(/*isHighPriority=*/false, dev);
  stream_wait(caller, side);
  {
    c10::cuda::CUDAStreamGuard on_side(side);
    AutocastCacheOff cache_off;
    for (int i = 0; i < warmup_steps; ++i) {
      eager_step(opt, forward, step->x_, step->y_);
      ++out.warmup_steps_run;
    }
    opt.zero_grad();  // set to none: the captured backward allocates the gradients in the pool
    out.fallback_reason = capture_into(*step, opt, forward, dev);
  }
  stream_wait(side, caller);
  if (out.fallback_reason.empty()) out.step = std::move(step);
  return out;
}

}  // namespace trainscope

// A whole training step (forward, loss, backward, optimizer) captured once as a CUDA graph and
// replayed, so a step costs one graph launch instead of hundreds of kernel launches. The recipe
// is PyTorch's "whole-network capture" (docs/variants.md#cuda-graphs): warm-up steps on a side
// stream with real batches, gradients set to none before capture so they live in the graph's
// memory pool, an optimizer whose step counters are device tensors (capturable), static input
// buffers filled by an asynchronous copy from pinned host memory before each replay.
//
// Built with CUDA (TRAINSCOPE_WITH_CUDA) in graph_step_cuda.cpp; without CUDA every capture
// returns the fallback reason "CUDA graphs need a CUDA build of trainscope".
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>

#include "train/optimizer.h"
#include "train/task_loss.h"
#include "workload/model.h"

namespace trainscope {

/// One captured training step. Shapes are fixed at capture: x is B x C x H x W (float32, or the
/// layout/dtype the variant asked for), y is B (int64), both on the device.
class CapturedTrainStep {
 public:
  virtual ~CapturedTrainStep() = default;
  /// The static input buffers the graph reads; fill them (copy_ non_blocking from pinned host
  /// memory) before replay(). Never reallocate them.
  virtual torch::Tensor& static_x() = 0;
  virtual torch::Tensor& static_y() = 0;
  /// Replays forward, loss, backward and the optimizer step on the current stream.
  virtual void replay() = 0;
  /// Outputs of the last replay, device tensors owned by the graph (overwritten by the next
  /// replay): the mean cross-entropy loss (scalar) and the logits (B x classes; undefined where
  /// the step's loss made none, StepOutput).
  virtual const torch::Tensor& loss() const = 0;
  virtual const torch::Tensor& logits() const = 0;
  /// Captured with a ResidentSet: the B int64 indices (into the resident set) the next replay
  /// gathers its batch from; fill it (copy_ from a device tensor) instead of static_x/static_y.
  /// Otherwise nullptr.
  virtual torch::Tensor* static_index() = 0;
  /// Every replay adds its batch's summed loss and correct count to sums inside the graph
  /// (add_step_sums, train/step_sums.h), so the caller launches nothing per step for its
  /// training-loss and -accuracy figures. Adds the sums of the replays since the last call to
  /// `sums` (make_step_sums: float64 [2] on the graph's device) and zeroes the graph's (two
  /// launches; call once per epoch).
  virtual void drain_sums(const torch::Tensor& sums) = 0;
};

/// A training set resident on the device (N x C x H x W float32 and N int64 labels) and the B
/// int64 indices (on the device) of the warm-up batch taken from it. A step captured with one
/// gathers its own batch (index_select into its static buffers), so a replay costs one copy of B
/// indices instead of a gather and two copies (docs/variants.md#cuda-graphs).
struct ResidentSet {
  torch::Tensor x, y, warm_index;
};

/// What capture_train_step produced: a step, or no step and the reason (recorded in the run
/// record as the variant's fallback; the run continues in eager mode).
struct CaptureOutcome {
  std::unique_ptr<CapturedTrainStep> step;
  std::string fallback_reason;  // "" when step is set
  /// Eager warm-up steps that ran (and trained the model) before the capture, whether or not
  /// the capture then succeeded; 0 when a precondition failed first.
  int warmup_steps_run = 0;
};

/// The fallback reason of every capture in a build without CUDA (graph_step_stub.cpp).
inline constexpr const char* kNoCudaBuildReason = "CUDA graphs need a CUDA build of trainscope";

/// The forward-and-loss the graph captures: the loss of batch (x, y) and the logits, where it made
/// them (train/task_loss.h StepOutput; loss_of_logits(forward(x), y) for a plain forward). The
/// trainer passes its own (with autocast/channels_last applied, and a language model's fused loss),
/// so eager and graph steps are one recipe. It runs eagerly for the warm-up steps and once more
/// under capture, so it must not read values back to the host, synchronise, or record timing
/// events (those go around replay()).
using StepForward = std::function<StepOutput(const torch::Tensor& x, const torch::Tensor& y)>;

/// Captures a training step of `model` (on a CUDA `device`, training mode) with optimizer `opt`,
/// which must be capturable (StepOptimizer::capturable()); otherwise returns a fallback reason.
/// warm_x/warm_y: a real batch (device tensors, batch B) used for the warm-up steps on a side
/// stream (`warmup_steps` >= 1, PyTorch uses 3; these steps train the model like any other and
/// are counted by the caller: CaptureOutcome::warmup_steps_run) and copied into the static
/// buffers. Catches errors during capture (host synchronisation in a TorchScript forward,
/// data-dependent shapes) and returns them as the reason with the graph discarded and the
/// gradients set to none; an error in an eager warm-up step propagates (the eager step would
/// fail the same way). The caller's current stream is ordered after all of it (no host wait).
/// After a successful capture the graph owns the gradients and replays the optimizer step: do
/// not call opt.zero_grad()/step() around a replay. An eager step between replays (e.g. a
/// smaller last batch of an epoch) is allowed: capturable optimizers update their state in
/// place, where the graph reads it, and the gradients the eager step replaces are not the
/// memory the graph uses. Memory: the graph's private pool holds the activations, gradients and
/// outputs of one step for as long as the returned step lives; destroying the step waits for
/// the device to finish its replays.
/// `resident`: optional; with it the graph gathers its batch from the resident set (warm_x/warm_y
/// must then be that set's rows at resident->warm_index).
CaptureOutcome capture_train_step(Model& model, StepOptimizer& opt, const StepForward& forward,
                                  const torch::Tensor& warm_x, const torch::Tensor& warm_y,
                                  const torch::Device& device, int warmup_steps = 3,
                                  const ResidentSet* resident = nullptr);

}  // namespace trainscope

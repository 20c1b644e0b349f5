// Optimizers behind one small interface, so the trainer can use LibTorch's own
// (torch::optim::Adam / SGD: a loop of ~10 element-wise kernels per parameter) or, on a CUDA
// device with LibTorch >= 2.0, Adam through at::_fused_adam_ (all parameters in one kernel,
// the kernel behind PyTorch's `Adam(fused=True)`). All implement Kingma & Ba (2015) Adam with
// betas (0.9, 0.999), eps 1e-8, optionally AdamW's decoupled weight decay (below), or SGD with momentum (buffer = grad on the
// first step, then momentum * buffer + grad; no dampening, no Nesterov, no weight decay: the
// update of torch::optim::SGD with trainscope's settings); the record names the one used.
//
// Capturable optimizers (for a step captured in a CUDA graph, train/graph_step.h) keep every
// piece of state on the parameters' device and never read a value back to the host in step():
// Adam's step counts are float32 device tensors incremented on the device and its bias
// corrections 1 - beta^step are computed from them (PyTorch's `capturable=True` recipe,
// torch/optim/adam.py), so a replayed graph uses the right correction at every step. Their
// zero_grad() sets gradients to none (a captured backward then allocates them in the graph's
// memory pool). State is created on the first step(), so that step must run eagerly, before
// any capture.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "trainscope/config.h"

namespace trainscope {

class StepOptimizer {
 public:
  virtual ~StepOptimizer() = default;
  /// Clears the gradients of the parameters (capturable optimizers: sets them to none).
  virtual void zero_grad() = 0;
  /// One update of every parameter that has a gradient.
  virtual void step() = 0;
  /// e.g. "torch::optim::Adam (per-parameter loop)", "at::_fused_adam_ (fused, one kernel)".
  virtual std::string implementation() const = 0;
  /// True when step() may be captured in a CUDA graph after one eager step (see above).
  virtual bool capturable() const { return false; }
  /// The learning rate of the next step() (a schedule, train/lr_schedule.h). Capturable
  /// optimizers keep it in a float32 device tensor from the first call on, filled here outside
  /// any capture, so a replayed step reads the current rate; never called, the rate stays the
  /// host scalar of the config (the arithmetic of a constant rate is unchanged).
  virtual void set_learning_rate(double lr) = 0;
};

/// cfg.optimizer_impl: "auto" (fused Adam on CUDA when available, else LibTorch's),
/// "fused" (error when unavailable), "loop" (always LibTorch's).
/// `capturable` asks for an optimizer whose step() can be captured (StepOptimizer::capturable):
///  - adam: at::_fused_adam_ on CUDA with LibTorch >= 2.0 (unless cfg.optimizer_impl is "loop"),
///    else trainscope's Adam from tensor operations with a device step tensor per parameter;
///  - sgd: trainscope's SGD from foreach tensor operations (same update as torch::optim::SGD).
/// LibTorch's own optimizers are never capturable (torch::optim::Adam keeps its step count on
/// the host and computes the bias corrections there). Errors: Error(kInvalidArgument) for
/// "fused" where it is unavailable (CPU, LibTorch 1.13) or with sgd.
/// cfg.weight_decay > 0 makes Adam AdamW (Loshchilov & Hutter 2019, decoupled: p *= 1 - lr x wd
/// before the Adam update) on the parameters of 2 or more dimensions (matrices and embeddings;
/// biases and LayerNorm are not decayed, as nanoGPT groups them); the fused path adds one foreach
/// kernel, the loop path uses trainscope's tensor-op Adam. Error(kInvalidArgument) with sgd.
/// cfg.grad_clip > 0 clips the gradients' global norm before every step (clip_gradients).
/// With a learning-rate schedule (LrSchedule::of(cfg).varies()) and `capturable`, the fused Adam
/// is used only where it takes the rate as a tensor (LibTorch >= 2.2), else trainscope's Adam.
std::unique_ptr<StepOptimizer> make_optimizer(const TrainConfig& cfg, std::vector<torch::Tensor> params,
                                              const torch::Device& device, bool capturable = false);

/// Scales every gradient by min(1, max_norm / (||g||_2 + 1e-6)), ||g||_2 the L2 norm of all
/// gradients together (torch.nn.utils.clip_grad_norm_), with tensor operations only (no host
/// synchronisation; capturable in a CUDA graph).
void clip_gradients(const std::vector<torch::Tensor>& params, double max_norm);

}  // namespace trainscope

// Optimizers behind one small interface, so the trainer can use LibTorch's own
// (torch::optim::Adam / SGD: a loop of ~10 element-wise kernels per parameter) or, on a CUDA
// device with LibTorch >= 2.0, Adam through at::_fused_adam_ (all parameters in one kernel,
// the kernel behind PyTorch's `Adam(fused=True)`). Both implement Kingma & Ba (2015) with
// betas (0.9, 0.999), eps 1e-8, no weight decay; the record names the one used.
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
  virtual void zero_grad() = 0;
  virtual void step() = 0;
  /// e.g. "torch::optim::Adam (per-parameter loop)", "at::_fused_adam_ (fused, one kernel)".
  virtual std::string implementation() const = 0;
};

/// cfg.optimizer_impl: "auto" (fused Adam on CUDA when available, else LibTorch's),
/// "fused" (error when unavailable), "loop" (always LibTorch's).
std::unique_ptr<StepOptimizer> make_optimizer(const TrainConfig& cfg, std::vector<torch::Tensor> params,
                                              const torch::Device& device);

}  // namespace trainscope

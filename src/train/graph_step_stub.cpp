// graph_step.h without CUDA: nothing can be captured; every request falls back to eager.
#include "train/graph_step.h"

namespace trainscope {

CaptureOutcome capture_train_step(Model&, StepOptimizer&, const StepForward&, const torch::Tensor&,
                                  const torch::Tensor&, const torch::Device&, int, const ResidentSet*) {
  CaptureOutcome out;
  out.fallback_reason = kNoCudaBuildReason;
  return out;
}

}  // namespace trainscope

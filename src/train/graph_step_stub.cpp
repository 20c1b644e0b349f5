// capture_train_step without CUDA (graph_step.h): there is no graph to capture, so every call
// returns the fallback reason and the trainer continues eagerly.
#include "train/graph_step.h"

namespace trainscope {

CaptureOutcome capture_train_step(Model&, StepOptimizer&, const StepForward&, const torch::Tensor&,
                                  const torch::Tensor&, const torch::Device&, int) {
  return {nullptr, "CUDA graphs need a CUDA build of trainscope"};
}

}  // namespace trainscope

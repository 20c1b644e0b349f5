// Small helpers shared by the LibTorch test suites (one copy of each); the torch-free ones are in
// test_helpers.h.
#pragma once

#include <torch/torch.h>

namespace trainscope::test {

/// True where this build has CUDA (TRAINSCOPE_WITH_CUDA) and LibTorch sees a CUDA device.
inline bool gpu_available() {
#ifdef TRAINSCOPE_WITH_CUDA
  return torch::cuda::is_available();
#else
  return false;
#endif
}

/// Why a GPU test skips where gpu_available() is false.
constexpr const char* kNeedsGpu = "needs a CUDA build of trainscope (TRAINSCOPE_WITH_CUDA) and a CUDA device";

}  // namespace trainscope::test

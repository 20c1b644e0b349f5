// Pieces shared by the two CUDA-graph captures (the training step, train/graph_step_cuda.cpp,
// and the inference forward, infer/executor_cuda.cpp). CUDA builds only (TRAINSCOPE_WITH_CUDA).
#pragma once

#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <exception>
#include <string>

#include "train/compat.h"
#include "train/error_text.h"

namespace trainscope::graphs {

/// Makes `later` wait (on the device; the host does not block) for the work queued on `earlier`.
inline void stream_wait(const at::cuda::CUDAStream& earlier, const at::cuda::CUDAStream& later) {
  at::cuda::CUDAEvent ev;
  ev.record(earlier);
  ev.block(later);
}

/// The informative line of an error raised during a capture, without the C++ backtrace: the
/// "CUDA error: ..." line when there is one (the lines after it are generic advice), else the
/// last "RuntimeError: ..." line of a TorchScript interpreter traceback, else the first line.
inline std::string error_line(const std::exception& e) {
  const std::string m = error_without_backtrace(e);
  auto line_at = [&m](size_t pos) {
    auto end = m.find('\n', pos);
    return m.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
  };
  if (auto p = m.find("CUDA error: "); p != std::string::npos) return line_at(p);
  if (auto p = m.rfind("RuntimeError: "); p != std::string::npos) return line_at(p + 14);
  return line_at(0);
}

/// Ends a capture that threw part-way, whatever state it is in, so the device and the caching
/// allocator are usable again: cudaStreamEndCapture through CUDAGraph::capture_end when the
/// current stream of `device` is still capturing (it throws for an invalidated capture:
/// caught), then the allocator's routing to `pool` (compat::end_allocate_to_pool; a second end
/// throws: caught), then the runtime's last error. The graph must then be destroyed, not used.
template <class Pool>
void abandon_capture(at::cuda::CUDAGraph& graph, c10::DeviceIndex device, const Pool& pool) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(at::cuda::getCurrentCUDAStream(device).stream(), &status) == cudaSuccess &&
      status != cudaStreamCaptureStatusNone) {
    try {
      graph.capture_end();
    } catch (const std::exception&) {
    }
  }
  try {
    compat::end_allocate_to_pool(device, pool);
  } catch (const std::exception&) {
  }
  (void)cudaGetLastError();
}

}  // namespace trainscope::graphs

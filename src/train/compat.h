// Every difference between the LibTorch versions trainscope builds against (Debian's 1.13,
// CPU-only, and 2.x with CUDA from a PyTorch wheel) lives in this one file.
#pragma once

#include <ATen/autocast_mode.h>
#include <ATen/record_function.h>
#include <torch/torch.h>
#include <torch/version.h>
#include <c10/core/Allocator.h>

#include <string>

namespace trainscope::compat {

inline std::string torch_version() { return TORCH_VERSION; }

/// Name of an operator seen by a RecordFunction callback ("aten::addmm").
inline const char* op_name(const at::RecordFunction& fn) { return fn.name(); }

/// True when a LibTorch error is an allocation failure. 1.13 throws c10::CUDAOutOfMemoryError
/// (renamed c10::OutOfMemoryError in 2.x); both derive from c10::Error and say "out of memory".
inline bool is_out_of_memory(const c10::Error& e) {
  std::string m = e.what();
  // CUDA's "out of memory", and the CPU allocator's "can't allocate memory" (DefaultCPUAllocator)
  return m.find("out of memory") != std::string::npos || m.find("OutOfMemory") != std::string::npos ||
         m.find("can't allocate memory") != std::string::npos;
}


// ---- profile (operator profiler) ----
// c10::MemoryReportingInfoBase::reportMemoryUsage takes the allocator totals as int64_t in
// 1.13 and as size_t in 2.x; take the type from the declaration itself.
template <class T> struct ReportMemoryUsageArgs;
template <class C, class R, class P, class A, class T, class U, class D>
struct ReportMemoryUsageArgs<R (C::*)(P, A, T, U, D)> { using Total = T; };
using MemTotal = ReportMemoryUsageArgs<decltype(&c10::MemoryReportingInfoBase::reportMemoryUsage)>::Total;
// ---- end profile

// ---- optimizers (train/optimizer.cpp) ----
// at::_fused_adam_ with float32 device step tensors (the kernel behind PyTorch's
// Adam(fused=True), capturable in a CUDA graph): used from LibTorch 2.0 on, in CUDA builds only.
// 1.13 declares an older CUDA-only variant that trainscope does not use.
#if defined(TRAINSCOPE_WITH_CUDA) && TORCH_VERSION_MAJOR >= 2
#define TRAINSCOPE_HAVE_FUSED_ADAM 1
#else
#define TRAINSCOPE_HAVE_FUSED_ADAM 0
#endif
// at::_fused_adamw_ (decoupled weight decay; PyTorch's AdamW(fused=True)): LibTorch 2.1 on.
#if defined(TRAINSCOPE_WITH_CUDA) && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1))
#define TRAINSCOPE_HAVE_FUSED_ADAMW 1
#else
#define TRAINSCOPE_HAVE_FUSED_ADAMW 0
#endif
// at::_fused_adam_ with the learning rate as a device tensor (its .tensor_lr overload) and
// at::_foreach_mul_ by a tensor: LibTorch 2.2 on. A learning-rate schedule then changes the rate
// of a captured step by filling that tensor (train/lr_schedule.h).
#if TRAINSCOPE_HAVE_FUSED_ADAM && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 2))
#define TRAINSCOPE_HAVE_FUSED_ADAM_TENSOR_LR 1
#else
#define TRAINSCOPE_HAVE_FUSED_ADAM_TENSOR_LR 0
#endif
// ---- end optimizers
// ---- attention (workload/gpt.cpp, workload/vit.cpp) ----
// at::scaled_dot_product_attention from LibTorch 2.0; its backend choice (for causal attention,
// GPT's, or bidirectional, ViT's) is asked through at::_fused_sdp_choice, whose value is the
// sdp::SDPBackend enum
// (aten/src/ATen/native/transformers/sdp_utils_cpp.h: math 0, flash 1, efficient 2, cudnn 3,
// overrideable 4).
#if TORCH_VERSION_MAJOR >= 2
#define TRAINSCOPE_HAVE_SDPA 1
inline std::string sdpa_backend_name(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                     bool is_causal = true) {
  try {
    switch (at::_fused_sdp_choice(q, k, v, {}, 0.0, is_causal)) {
      case 0: return "math (sdpa)";
      case 1: return "flash";
      case 2: return "efficient";
      case 3: return "cudnn";
      default: return "sdpa";
    }
  } catch (const c10::Error&) {
    return "sdpa";
  }
}
#else
#define TRAINSCOPE_HAVE_SDPA 0
#endif
// ---- end attention
// ---- variants (autocast)
// 1.13 and 2.0-2.3 have one switch and dtype per device kind (at::autocast::set_enabled for
// CUDA, set_cpu_enabled for the CPU, set_autocast_{gpu,cpu}_dtype); 2.4 and later take the
// device type (aten/src/ATen/autocast_mode.h: set_autocast_enabled(at::DeviceType, bool),
// set_autocast_dtype(at::DeviceType, at::ScalarType)) and deprecate the old names.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
inline at::DeviceType autocast_device(bool cuda) { return cuda ? at::kCUDA : at::kCPU; }
inline bool autocast_enabled(bool cuda) { return at::autocast::is_autocast_enabled(autocast_device(cuda)); }
inline void set_autocast_enabled(bool cuda, bool on) { at::autocast::set_autocast_enabled(autocast_device(cuda), on); }
inline at::ScalarType autocast_dtype(bool cuda) { return at::autocast::get_autocast_dtype(autocast_device(cuda)); }
inline void set_autocast_dtype(bool cuda, at::ScalarType t) { at::autocast::set_autocast_dtype(autocast_device(cuda), t); }
#else
inline bool autocast_enabled(bool cuda) { return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled(); }
inline void set_autocast_enabled(bool cuda, bool on) {
  if (cuda) at::autocast::set_enabled(on);
  else at::autocast::set_cpu_enabled(on);
}
inline at::ScalarType autocast_dtype(bool cuda) {
  return cuda ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
}
inline void set_autocast_dtype(bool cuda, at::ScalarType t) {
  if (cuda) at::autocast::set_autocast_gpu_dtype(t);
  else at::autocast::set_autocast_cpu_dtype(t);
}
#endif
// ---- end variants

}  // namespace trainscope::compat

// ---- CUDA graphs (train/graph_step_cuda.cpp, infer/executor_cuda.cpp) ----
#ifdef TRAINSCOPE_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>

namespace trainscope::compat {

/// After a capture that failed part-way: stops the caching allocator from routing allocations to
/// the graph's pool `pool` (what CUDAGraph::capture_end does after a successful capture; older
/// LibTorch versions skip it when cudaStreamEndCapture fails, and a stale entry would trip the
/// allocator's "no capture underway" assertion in emptyCache). Throws c10::Error when the pool
/// is not being recorded to (newer versions already ended it): callers catch and ignore that.
/// LibTorch 2.2+ has endAllocateToPool(device, pool); before that the allocator was told
/// through CUDAGraph-internal capture ids, so this does nothing there.
template <class Pool>
void end_allocate_to_pool(c10::DeviceIndex device, const Pool& pool) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 2)
  c10::cuda::CUDACachingAllocator::endAllocateToPool(device, pool);
#else
  (void)device;
  (void)pool;
#endif
}

}  // namespace trainscope::compat
#endif
// ---- end CUDA graphs

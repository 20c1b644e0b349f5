// Every difference between the LibTorch versions trainscope builds against (Debian's 1.13,
// CPU-only, and 2.x with CUDA from a PyTorch wheel) lives in this one file.
#pragma once

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
  return m.find("out of memory") != std::string::npos || m.find("OutOfMemory") != std::string::npos;
}


// ---- profile (operator profiler) ----
// c10::MemoryReportingInfoBase::reportMemoryUsage takes the allocator totals as int64_t in
// 1.13 and as size_t in 2.x; take the type from the declaration itself.
template <class T> struct ReportMemoryUsageArgs;
template <class C, class R, class P, class A, class T, class U, class D>
struct ReportMemoryUsageArgs<R (C::*)(P, A, T, U, D)> { using Total = T; };
using MemTotal = ReportMemoryUsageArgs<decltype(&c10::MemoryReportingInfoBase::reportMemoryUsage)>::Total;
// ---- end profile

}  // namespace trainscope::compat

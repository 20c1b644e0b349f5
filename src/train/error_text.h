// An exception's message as trainscope quotes it in errors, notes and records. Shared by the
// CUDA-graph captures (graph_capture_cuda.h) and data-parallel code (dist/).
#pragma once

#include <c10/util/Exception.h>

#include <exception>
#include <string>

namespace trainscope {

/// ex.what(), or for a c10::Error its message without the C++ stack trace LibTorch appends.
inline std::string error_without_backtrace(const std::exception& ex) {
  const auto* ce = dynamic_cast<const c10::Error*>(&ex);
  return ce ? ce->what_without_backtrace() : ex.what();
}

}  // namespace trainscope

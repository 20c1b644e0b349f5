// The failure classifier: what a run that threw keeps in its record (status, error_kind,
// failure_reason), by the kind of exception.
#include <fmt/format.h>

#include <algorithm>
#include <new>

#include <torch/csrc/jit/runtime/jit_exception.h>

#include "matrix/matrix.h"
#include "train/compat.h"
#include "train/device.h"
#include "trainscope/error.h"

namespace trainscope::matrix_detail {

std::string first_line(std::string why) {
  why.erase(0, std::min(why.size(), why.find_first_not_of("\n ")));
  why = why.substr(0, why.find('\n'));
  while (!why.empty() && (why.back() == '.' || why.back() == ' ' || why.back() == ':')) why.pop_back();
  return why;
}

std::string last_line(const std::string& why) {
  size_t end = why.find_last_not_of("\n ");
  if (end == std::string::npos) return "";
  const size_t start = why.rfind('\n', end);
  return why.substr(start == std::string::npos ? 0 : start + 1, end + 1 - (start == std::string::npos ? 0 : start + 1));
}

// The failure of a run as its record keeps it: an Error's own kind, the device running out of
// memory, a model's own exception (TorchScript `raise`), LibTorch's error; "internal" only for
// what is none of these. Returns true for an Error(kIo): the run folder is gone or full, and the
// matrix stops after this run's record.
bool record_failure(const std::exception_ptr& failure, const RunSpec& spec, RunRecord& rec) {
  rec.status = RunStatus::kFailed;
  try {
    std::rethrow_exception(failure);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kIo) {
      rec.error_kind = std::string(to_string(e.kind()));
      rec.failure_reason = fmt::format("{}; the run's measurements are kept, its checkpoint is not", e.what());
      return true;
    }
    rec.status = e.kind() == ErrorKind::kInterrupted ? RunStatus::kInterrupted : RunStatus::kFailed;
    rec.error_kind = std::string(to_string(e.kind()));
    rec.failure_reason = e.what();
  } catch (const c10::Error& e) {
    if (compat::is_out_of_memory(e) && spec.device != "cpu") {
      auto ms = device_memory_stats(torch::Device(spec.device));
      rec.error_kind = "out_of_memory";
      rec.failure_reason = fmt::format(
          "{} ran out of memory at batch size {} (peak allocated {:.2f} GiB of {:.2f} GiB); use a smaller batch",
          spec.device, spec.batch_size, ms.peak_allocated_bytes.value_or(0) / 1073741824.0,
          ms.total_bytes.value_or(0) / 1073741824.0);
      release_device_cache(torch::Device(spec.device));
    } else if (compat::is_out_of_memory(e)) {
      rec.error_kind = "out_of_memory";
      rec.failure_reason = fmt::format("host memory exhausted at batch size {}: {}; use a smaller batch",
                                       spec.batch_size, first_line(e.what_without_backtrace()));
    } else {
      rec.error_kind = "libtorch";
      rec.failure_reason = e.what_without_backtrace();
    }
  } catch (const std::bad_alloc&) {
    rec.error_kind = "out_of_memory";
    rec.failure_reason = fmt::format("host memory exhausted at batch size {}", spec.batch_size);
  } catch (const torch::jit::JITException& e) {  // its message comes last, after the interpreter's trace
    rec.error_kind = std::string(to_string(ErrorKind::kModel));
    rec.failure_reason = fmt::format("model '{}' raised an exception: {}", spec.model, last_line(e.what()));
  } catch (const std::exception& e) {
    rec.error_kind = "internal";
    rec.failure_reason = e.what();
  }
  return false;
}

}  // namespace trainscope::matrix_detail

// trainscope error policy (written down once; docs/design.md#one-error-policy).
//
// * Bad input (flags, TOML, data files, checkpoints) and unavailable resources throw
//   trainscope::Error with a kind and a message that names the input, what was wrong and
//   what to do about it. Callers at a boundary (the CLI, the matrix runner) catch it.
// * Hardware and file readers that are expected to fail on some machines (NVML, RAPL,
//   hwmon, /proc) do not throw; they return std::optional / a Status the caller must check.
// * Broken invariants (bugs) stop loudly with file:line through TS_CHECK.
// * LibTorch's c10::Error is caught at the run boundary and becomes a failed run record.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace trainscope {

enum class ErrorKind {
  kInvalidArgument,  // a command-line value or API argument is out of range
  kInvalidConfig,    // a TOML configuration file is malformed or has unknown keys
  kDataFormat,       // a data-set file is corrupt, truncated or inconsistent
  kIo,               // a file or folder cannot be read or written
  kDevice,           // a requested device does not exist or cannot be used
  kModel,            // unknown model name, bad TorchScript file, shape mismatch
  kCheckpoint,       // a checkpoint is unreadable or belongs to another model
  kNumerical,        // NaN/Inf loss
  kOutOfMemory,      // device or host allocation failed
  kInterrupted,      // SIGINT/SIGTERM
  kInternal,         // a bug: broken invariant
  kDistributed,      // another rank of a data-parallel run died, hung or disagrees (docs/distributed.md)
};

/// Stable lower-case name of a kind ("data_format", ...), used in run records.
std::string_view to_string(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

[[noreturn]] void throw_error(ErrorKind kind, const std::string& message);
[[noreturn]] void check_failed(const char* expr, const char* file, int line, const std::string& message);

}  // namespace trainscope

/// Invariant check: a failure is a bug in trainscope, reported with file:line.
#define TS_CHECK(cond, msg)                                                  \
  do {                                                                       \
    if (!(cond)) ::trainscope::check_failed(#cond, __FILE__, __LINE__, msg); \
  } while (0)

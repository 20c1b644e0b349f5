// Backends that record a profiling window (RecordFunction on any LibTorch; Kineto with CUDA).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "profile/profile_data.h"
#include "trainscope/config.h"

namespace trainscope::profile {

class Recorder {
 public:
  virtual ~Recorder() = default;
  /// Turns recording on with results discarded (warm-up steps of the schedule).
  virtual void warmup() = 0;
  /// From now on, events are kept.
  virtual void activate() = 0;
  /// Stops recording and appends the window's events to `out`. Returns "" or a warning.
  virtual std::string deactivate(ProfileData& out) = 0;
  /// Thread id as this backend labels the events of the calling thread.
  virtual uint64_t current_tid() const = 0;
  virtual const char* backend() const = 0;
  /// Saves the backend's native traces (Kineto: <stem>.pt.trace.json); returns the files written.
  virtual std::vector<std::string> save_native(const std::string& stem, std::string* warning) {
    (void)stem;
    (void)warning;
    return {};
  }
  /// Marks a training step for the backend's own trace (Kineto: ProfilerStep#N annotation).
  virtual void step_begin(int64_t step) { (void)step; }
  virtual void step_end() {}
};

std::unique_ptr<Recorder> make_record_function_recorder(const ProfileConfig& c, std::chrono::steady_clock::time_point origin);
#ifdef TRAINSCOPE_WITH_CUDA
std::unique_ptr<Recorder> make_kineto_recorder(const ProfileConfig& c, const std::string& device,
                                               std::chrono::steady_clock::time_point origin);
#endif

}  // namespace trainscope::profile

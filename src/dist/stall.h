// Stall detection of a run (docs/distributed.md#faults): a step that has not finished within
// the timeout is reported as stalled, with the telemetry of the last 5 s, while it is still
// stalled (a hung collective or user model cannot be interrupted from outside the step).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace trainscope {
namespace dist {

class StallWatch {
 public:
  /// `telemetry_now` (may be empty) returns a short text of the run device's recent telemetry.
  /// `report` prints the stall message (the console's notice). timeout_s > 0.
  StallWatch(std::string run_id, double timeout_s, std::function<std::string()> telemetry_now,
             std::function<void(const std::string&)> report);
  ~StallWatch();  // stops the watcher thread
  StallWatch(const StallWatch&) = delete;
  StallWatch& operator=(const StallWatch&) = delete;

  /// Testing (--inject-fault hang --inject-fault-rank 0 in a single process): step `step` takes
  /// 2.5 timeouts.
  void inject_slow_step(int64_t step) { inject_step_ = step; }
  /// Names what is watched when it is not a training step ("the pre-flight forward pass of
  /// model 'x.pt'"): the stall message then says it instead of "step N".
  void set_what(std::string what) { what_ = std::move(what); }
  /// Work outside the training steps that runs a model (an evaluation on the test set, the
  /// inference measurement): `what` names it in the stall message; progress() is a sign of
  /// life within it (a batch or query returned) that restarts the timeout; work_end() when it
  /// returned. A stall reported before progress() or work_end() gets "it went on / finished
  /// after N s" in its note.
  void work_begin(std::string what);
  /// What the stall message tells the user to do (set before the watch starts); the default
  /// speaks of a matrix: Ctrl-C, the deadline after it, --resume.
  void set_advice(std::string advice) { advice_ = std::move(advice); }
  void progress();
  void work_end();
  /// A step began (0-based global index) / finished: progress.
  void step_begin(int64_t step);
  void step_end(int64_t step);
  /// The stall messages reported during the run (for the record's notes); each says how long
  /// the step had been running, and whether it finished later.
  std::vector<std::string> notes() const;

 private:
  void watch();
  void close_stall_locked(const char* how);  // "finished" / "went on": completes a reported stall's note

  std::string run_id_, what_;
  std::string advice_ =
      "Ctrl-C stops the matrix; when the work does not return within --dist-timeout after it, the process exits, "
      "keeping the runs finished before and what this one measured: --resume runs the rest";
  std::chrono::milliseconds timeout_;
  std::function<std::string()> telemetry_now_;
  std::function<void(const std::string&)> report_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  int64_t step_ = -1, inject_step_ = -1;
  bool in_step_ = false, reported_ = false;
  std::chrono::steady_clock::time_point since_;
  std::vector<std::string> notes_;
  std::thread thread_;
};

}  // namespace dist
}  // namespace trainscope

// Progress display: a one-line bar with steps/s and ETA on a terminal (stderr), nothing when
// stderr is not a terminal (CI logs, pipes). docs/design.md#progress-only-on-a-terminal
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace trainscope {

class ProgressBar {
 public:
  /// enabled=false or stderr not a tty: every call is a no-op.
  explicit ProgressBar(bool enabled);
  ~ProgressBar();
  /// Starts a new task: `label` like "cpu cnn b64 epoch 1/1", `total` steps (0 = unknown).
  void begin(const std::string& label, int64_t total);
  /// Reports `done` steps; redraws at most every 200 ms.
  void update(int64_t done);
  /// Clears the line.
  void end();

 private:
  bool enabled_;
  std::string label_;
  int64_t total_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace trainscope

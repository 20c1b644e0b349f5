// The one Ctrl-C / SIGTERM policy of every sub-command (README.md#exit-status): the first signal
// sets the flag returned here and prints `message` ("finishing the current step ..."); the
// command then stops after the work in progress, keeps what was measured and exits 130. A second
// signal exits at once with 130.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace trainscope::cli {

/// Installs the handler for SIGINT and SIGTERM; `message` must outlive the command (a literal).
const std::atomic<bool>& install_interrupt_handler(const char* message);
/// Puts the default handlers back (the command is done).
void restore_interrupt_defaults();

/// The work in progress is acted on at its next step, which a model that hangs never reaches:
/// while this lives, once `stop` is set (the first signal), the process prints `message` and
/// exits with 130 unless the object is destroyed (the work returned) within `seconds`. Whatever
/// was written before (each finished run's results) stays; `before_exit` (may be empty) runs
/// first, to write what the hung work measured so far (MatrixRescue, trainscope/runner.h), and
/// is given kBeforeExitSeconds: a writer that hangs too does not keep the process alive.
class StopDeadline {
 public:
  static constexpr double kBeforeExitSeconds = 15;
  StopDeadline(const std::atomic<bool>& stop, double seconds, std::string message,
               std::function<void()> before_exit = {});
  ~StopDeadline();
  StopDeadline(const StopDeadline&) = delete;
  StopDeadline& operator=(const StopDeadline&) = delete;

 private:
  void watch(const std::atomic<bool>& stop, double seconds);
  void run_before_exit();
  std::string message_;
  std::function<void()> before_exit_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace trainscope::cli

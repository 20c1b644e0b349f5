// The child process of `trainscope measure` (include/trainscope/measure.h): spawned with its
// output and the step pipe on pipes, watched by one poll loop, signals forwarded.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace trainscope::measure {

struct ChildSpec {
  std::vector<std::string> argv;          // argv[0] already resolved to a path
  std::vector<std::string> env;           // "NAME=value" entries set on top of ours ("NAME=" alone removes NAME)
  std::string stdout_path, stderr_path;   // the program's output is written here
  bool echo = true;                       // and to our stdout/stderr
  bool step_pipe = true;                  // TRAINSCOPE_STEP_FD in the child's environment
};

struct ChildEvents {
  std::function<void(int pid)> on_start;                   // the child runs
  std::function<void(const std::string& chunk)> on_steps;  // step-pipe bytes as they come
  std::function<void()> on_tick;                           // about every tick_ms
  int tick_ms = 100;
  /// Called on every tick: true asks the loop to stop the child (SIGTERM, SIGKILL after 5 s).
  std::function<bool()> should_stop;
};

struct ChildExit {
  int exit_code = 0;
  std::optional<int> signal;
  std::string exec_error;  // non-empty when exec itself failed (errno text)
};

/// argv[0] as a path: itself when it holds '/', else the first executable PATH entry; throws
/// Error(kInvalidArgument) naming the command when there is none.
std::string resolve_command(const std::string& name);

/// Runs the child to its end. Throws Error(kIo) when the output files or pipes cannot be made.
ChildExit run_child(const ChildSpec& spec, const ChildEvents& events);

}  // namespace trainscope::measure

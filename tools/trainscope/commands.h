// Sub-command registry of the trainscope CLI. Each sub-command lives in its own
// cmd_<name>.cpp, turns its flags into a plain config struct and calls the library
// (the library never sees argv; docs/design.md#the-library-never-sees-argv).
#pragma once

#include <CLI/CLI.hpp>

namespace trainscope::cli {

/// Exit statuses shared by all sub-commands (documented in README.md#exit-status).
enum ExitStatus : int {
  kExitOk = 0,
  kExitRunFailed = 3,     // at least one run of a matrix failed; the others were measured
  kExitRegression = 4,    // `compare` found a regression beyond the threshold
  kExitInterrupted = 130, // SIGINT/SIGTERM: partial results were written (interrupt.h)
  kExitUsage = 2,         // bad flags, config or input; nothing was run
  kExitIoError = 5,       // a matrix could not write its run folder; the finished runs are kept
  kExitInternal = 6,      // an internal error (a bug); a matrix keeps its finished runs
};

/// The command line as typed, for provenance (set by main).
inline std::string& command_line() {
  static std::string s;
  return s;
}

// Each adds its sub-command to `app`; when the sub-command runs it stores its exit status.
void add_run_command(CLI::App& app, int& exit_status);
void add_devices_command(CLI::App& app, int& exit_status);
void add_monitor_command(CLI::App& app, int& exit_status);   // cmd_monitor.cpp
void add_infer_command(CLI::App& app, int& exit_status);     // cmd_infer.cpp
void add_history_commands(CLI::App& app, int& exit_status);  // cmd_history.cpp: history, compare, report
void add_settings_command(CLI::App& app, int& exit_status);  // cmd_settings.cpp
void add_analyze_command(CLI::App& app, int& exit_status);   // cmd_analyze.cpp
void add_measure_command(CLI::App& app, int& exit_status);   // cmd_measure.cpp

}  // namespace trainscope::cli

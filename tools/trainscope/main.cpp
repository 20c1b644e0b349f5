// trainscope CLI entry point: registers the sub-commands and maps errors to exit statuses.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "commands.h"
#include "trainscope/error.h"
#include "trainscope/build_info.h"

int main(int argc, char** argv) {
  using namespace trainscope;
  // Line-buffered stdout, so tables and notes (stderr) keep their order in a redirected log.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  CLI::App app{"trainscope: measure what training and inference cost on the CPU and on NVIDIA GPUs, and why"};
  app.set_version_flag("--version", std::string("trainscope ") + TRAINSCOPE_VERSION + " (" + TRAINSCOPE_GIT_COMMIT + ")");
  app.require_subcommand(1);
  int exit_status = cli::kExitOk;
  for (int i = 0; i < argc; ++i) cli::command_line() += (i ? " " : "") + std::string(argv[i]);
  cli::add_run_command(app, exit_status);
  cli::add_devices_command(app, exit_status);
  // Sub-commands of other components register here (one line each):
  cli::add_monitor_command(app, exit_status);
  cli::add_infer_command(app, exit_status);
  cli::add_history_commands(app, exit_status);
  cli::add_settings_command(app, exit_status);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : cli::kExitUsage;
  } catch (const Error& e) {
    fmt::print(stderr, "trainscope: error ({}): {}\n", to_string(e.kind()), e.what());
    if (e.kind() == ErrorKind::kInterrupted) return cli::kExitInterrupted;
    return e.kind() == ErrorKind::kInternal ? cli::kExitInternal : cli::kExitUsage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "trainscope: internal error: {}\n", e.what());
    return cli::kExitInternal;
  }
  return exit_status;
}

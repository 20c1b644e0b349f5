// `trainscope devices`: the devices trainscope can train on, with names.
#include <fmt/core.h>

#include "commands.h"
#include "trainscope/runner.h"

namespace trainscope::cli {

void add_devices_command(CLI::App& app, int& exit_status) {
  auto* sub = app.add_subcommand("devices", "List the devices trainscope can train on");
  sub->callback([&exit_status] {
    for (const auto& [id, name] : list_devices()) fmt::print("{:<8} {}\n", id, name);
    exit_status = kExitOk;
  });
}

}  // namespace trainscope::cli

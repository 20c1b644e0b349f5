// `trainscope settings`: the settings table (trainscope/settings.h) with every TOML key, `run`
// flag, default and valid range; --markdown prints the table of docs/configuration.md.
#include <fmt/core.h>

#include <memory>

#include "commands.h"
#include "trainscope/settings.h"

namespace trainscope::cli {

void add_settings_command(CLI::App& app, int& exit_status) {
  auto markdown = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("settings", "Every setting: TOML key, `run` flag, default, valid values and meaning");
  sub->add_flag("--markdown", *markdown, "the table as Markdown, as docs/configuration.md holds it");
  sub->callback([markdown, &exit_status] {
    fmt::print("{}", *markdown ? settings_markdown() : settings_text());
    exit_status = kExitOk;
  });
}

}  // namespace trainscope::cli

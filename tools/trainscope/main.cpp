// trainscope CLI entry point: registers the sub-commands and maps errors to exit statuses.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "commands.h"
#include "settings_cli.h"
#include "common/text.h"
#include "trainscope/error.h"
#include "trainscope/build_info.h"
#include "trainscope/git_commit.h"
#include "trainscope/settings.h"

namespace {

// The command `first` names, or nullptr; `names` gets every command's name.
CLI::App* find_command(CLI::App& app, const std::string& first, std::vector<std::string>& names) {
  CLI::App* sub = nullptr;
  for (CLI::App* s : app.get_subcommands([](CLI::App*) { return true; })) {
    names.push_back(s->get_name());
    if (s->get_name() == first) sub = s;
  }
  return sub;
}

// "unknown option --modles (did you mean --models?)" for each unknown long option of `sub` in
// argv, joined by "; "; "" when there is none (the error was about something else).
std::string unknown_options(const CLI::App& sub, int argc, char** argv) {
  std::vector<std::string> options, out;
  for (const CLI::Option* o : sub.get_options())
    for (const auto& l : o->get_lnames()) options.push_back("--" + l);
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i], name = arg.substr(0, arg.find('='));
    if (name == "--") break;  // what follows is positional
    if (name.rfind("--", 0) != 0 || sub.get_option_no_throw(name)) continue;
    const std::string n = trainscope::nearest_spelling(name, options);
    out.push_back("unknown option " + name + (n.empty() ? "" : " (did you mean " + n + "?)"));
  }
  return fmt::format("{}", fmt::join(out, "; "));
}

// The first element of a comma-separated value that is not a number of CLI11's `type` (INT,
// UINT, FLOAT); none for a value without commas or a type this does not check.
std::optional<std::string> bad_list_item(const std::string& value, const std::string& type) {
  if (value.find(',') == std::string::npos || (type != "INT" && type != "UINT" && type != "FLOAT")) return std::nullopt;
  for (size_t b = 0, e = 0; b <= value.size(); b = e + 1) {
    e = std::min(value.find(',', b), value.size());
    const std::string item = value.substr(b, e - b);
    char* end = nullptr;
    (void)std::strtod(item.c_str(), &end);
    const bool number = !item.empty() && end && *end == '\0';
    if (!number || (type != "FLOAT" && item.find_first_of(".eE") != std::string::npos)) return item;
  }
  return std::nullopt;
}

// CLI11's "Could not convert: --max-steps = abc" in the words of the option's type: "--max-steps
// takes a whole number, not 'abc'", and the setting's unit when a unit was written after the number
// ("--telemetry-interval takes a number, not '1s'; write the number alone: its unit is s"); "" for
// any other message.
std::string unconvertible_value(const CLI::App& sub, const std::string& what) {
  const std::string head = "Could not convert: ";
  const auto eq = what.find(" = ");
  if (what.rfind(head, 0) != 0 || eq == std::string::npos) return "";
  const std::string name = what.substr(head.size(), eq - head.size()), value = what.substr(eq + 3);
  const CLI::Option* opt = sub.get_option_no_throw(name);
  const std::string type = opt ? opt->get_type_name() : "";
  const std::string kind = type == "INT"     ? "a whole number"
                           : type == "UINT"  ? "a whole number >= 0"
                           : type == "FLOAT" ? "a number"
                           : type.empty()                   ? "a value of its type"
                                                            : "a value of type " + type;
  if (auto item = bad_list_item(value, type))  // a list option: "64,abc"
    return fmt::format("{}: '{}' in '{}' is not {}", name, *item, value, kind);
  // "1s", "500ms": a number with a unit written after it; the unit is the option's setting's (the
  // settings table), also for an option a command names its own way (infer --budget)
  const trainscope::Setting* setting = trainscope::cli::setting_of_option(opt);
  const std::string unit = setting ? setting->unit : "";
  const bool unit_written = !value.empty() && (std::isdigit(static_cast<unsigned char>(value[0])) || value[0] == '.') &&
                            std::isalpha(static_cast<unsigned char>(value.back()));
  return fmt::format("{} takes {}, not '{}'{}", name, kind, value,
                     unit_written && !unit.empty() ? fmt::format("; write the number alone: its unit is {}", unit) : "");
}

// A usage error CLI11 found, worded as trainscope's other errors: the prefix, a "did you mean"
// for a misspelt command or long option, and where the options are listed.
std::string usage_error(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  const std::string first = argc > 1 ? argv[1] : "";
  std::vector<std::string> commands;
  const CLI::App* sub = find_command(app, first, commands);
  std::string msg = e.what();
  if (sub) {
    if (auto unknown = unknown_options(*sub, argc, argv); !unknown.empty()) msg = unknown;
    else if (auto bad = unconvertible_value(*sub, msg); !bad.empty()) msg = bad;
  } else if (first.empty()) {
    msg = fmt::format("name a command: {}", fmt::join(commands, ", "));
  } else if (first[0] == '-') {  // an unknown option before any command
    msg += fmt::format("; name a command first: {}", fmt::join(commands, ", "));
  } else {
    msg = fmt::format("unknown command '{}'; commands: {}", first, fmt::join(commands, ", "));
    if (auto n = trainscope::nearest_spelling(first, commands); !n.empty()) msg += fmt::format(" (did you mean '{}'?)", n);
  }
  return fmt::format("trainscope: error (usage): {}\nRun 'trainscope {}--help' for the {}.\n", msg,
                     sub ? sub->get_name() + " " : "", sub ? "options" : "commands");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trainscope;
  // Line-buffered stdout, so tables and notes (stderr) keep their order in a redirected log.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // `trainscope run | head` closes the pipe early: a write then fails with EPIPE, which the
  // console turns into "console lost" while the matrix goes on, instead of SIGPIPE ending it.
  std::signal(SIGPIPE, SIG_IGN);
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
  cli::add_analyze_command(app, exit_status);
  cli::add_measure_command(app, exit_status);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::fputs(fmt::format("{}", usage_error(app, e, argc, argv)).c_str(), stderr);
    return cli::kExitUsage;
  } catch (const Error& e) {
    std::fputs(fmt::format("trainscope: error ({}): {}\n", to_string(e.kind()), e.what()).c_str(), stderr);
    if (e.kind() == ErrorKind::kInterrupted) return cli::kExitInterrupted;
    return e.kind() == ErrorKind::kInternal ? cli::kExitInternal : cli::kExitUsage;
  } catch (const std::exception& e) {
    std::fputs(fmt::format("trainscope: internal error: {}\n", e.what()).c_str(), stderr);
    return cli::kExitInternal;
  }
  return exit_status;
}

// `trainscope measure [options] -- CMD ARGS...`: runs the user's own program unchanged and
// measures it (docs/measure.md). Its options are its own (the settings table is run's); the
// program's exit status becomes trainscope's.
#include <fmt/core.h>

#include <memory>

#include "commands.h"
#include "common/text.h"
#include "trainscope/measure.h"

namespace trainscope::cli {
namespace {

struct MeasureArgs {
  measure::MeasureConfig config;
  std::string out = "trainscope-runs", name;
  double items_per_step = 0;
  bool no_hook = false, no_telemetry = false, quiet = false;
};

int run_measure(MeasureArgs& a, const std::vector<std::string>& command) {
  measure::MeasureConfig& c = a.config;
  c.command = command;
  if (!c.command.empty() && c.command.front() == "--") c.command.erase(c.command.begin());
  c.out_dir = a.out + "/" + (a.name.empty() ? "measure-" + utc_timestamp(UtcFormat::kFolder) : a.name);
  if (a.items_per_step > 0) c.items_per_step = a.items_per_step;
  c.python_hook = !a.no_hook;
  c.telemetry = !a.no_telemetry;
  c.echo_output = !a.quiet;
  c.command_line = command_line();
  const measure::MeasureResult r = measure::measure_command(c);
  fmt::print(stderr, "{}", measure::render_summary(r, c));
  return r.exit_code;
}

}  // namespace

void add_measure_command(CLI::App& app, int& exit_status) {
  auto a = std::make_shared<MeasureArgs>();
  auto* sub = app.add_subcommand("measure", "Run your own program (python3 train.py ...) unchanged and measure it: "
                                            "steps, steps/s, telemetry; its exit status is trainscope's");
  sub->add_option("-o,--out", a->out, "folder that holds the run folders")->capture_default_str();
  sub->add_option("--run-name", a->name, "name of the run folder under --out (default measure-<UTC time>)");
  sub->add_option("--items-per-step", a->items_per_step, "samples (or tokens) per optimizer step: items/s and energy per item")
      ->check(CLI::PositiveNumber);
  sub->add_option("--warmup-steps", a->config.warmup_steps, "first steps left out of the steady window")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->capture_default_str();
  sub->add_option("--stall-timeout", a->config.stall_timeout_s,
                  "seconds without a step (once steps began) after which the program is stopped as stalled; 0: never")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_option("--device", a->config.device, "telemetry device of the headline: cpu, gpu0, ... (default gpu0 when a GPU is seen)");
  sub->add_option("--telemetry-interval", a->config.telemetry_options.interval_s, "telemetry sampling period (s)")
      ->check(CLI::Range(0.001, 1.0))
      ->capture_default_str();
  sub->add_flag("--no-hook", a->no_hook, "do not put the Python step hook on the program's PYTHONPATH");
  sub->add_flag("--no-telemetry", a->no_telemetry, "no telemetry sampler");
  sub->add_flag("--quiet", a->quiet, "the program's output only into the run folder, not to the console");
  sub->prefix_command();  // everything from the first positional (or after --) is the program's
  sub->callback([a, sub, &exit_status] { exit_status = run_measure(*a, sub->remaining()); });
}

}  // namespace trainscope::cli

// `trainscope measure [options] -- CMD ARGS...`: runs the user's own program unchanged and
// measures it (docs/measure.md). Its options are its own (the settings table is run's); the
// program's exit status becomes trainscope's.
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "commands.h"
#include "common/text.h"
#include "trainscope/console_table.h"
#include "trainscope/history.h"
#include "trainscope/measure.h"

namespace trainscope::cli {
namespace {

struct MeasureArgs {
  measure::MeasureConfig config;
  std::string out = "trainscope-runs", name, profile_steps, history_db, devices_text;
  std::vector<std::string> devices;
  double items_per_step = 0;
  bool no_hook = false, no_telemetry = false, quiet = false, no_history = false;
};

// A history notice goes to stderr (the database is optional: the measurement stands without it).
class NoticePrinter final : public Reporter {
 public:
  void notice(const std::string& m) override { fmt::print(stderr, "trainscope: note: {}\n", m); }
};

// The measured runs as one matrix of the history database (as `run` records its cells).
void record_history(const MeasureArgs& a, const std::vector<measure::MeasureResult>& results) {
  if (a.no_history || results.empty()) return;
  NoticePrinter notices;
  HistoryReporter h(a.history_db.empty() ? a.out + "/history.sqlite" : a.history_db, &notices);
  const std::string dir = std::filesystem::absolute(a.config.out_dir).string();
  h.start(results.front().provenance, dir, results.size());
  for (const measure::MeasureResult& r : results) {
    h.run_started(r.record);
    h.run_finished(r.record);
  }
}

// trainscope's status: the first program's that did not exit 0 (0 when all did).
int exit_status_of(const std::vector<measure::MeasureResult>& results) {
  for (const measure::MeasureResult& r : results)
    if (r.exit_code != 0) return r.exit_code;
  return 0;
}

int run_measure(MeasureArgs& a, const std::vector<std::string>& command) {
  measure::MeasureConfig& c = a.config;
  c.command = program_args().empty() ? command : program_args();
  c.out_dir = a.out + "/" + (a.name.empty() ? "measure-" + utc_timestamp(UtcFormat::kFolder) : a.name);
  if (a.items_per_step > 0) c.items_per_step = a.items_per_step;
  if (!a.profile_steps.empty()) c.profile_steps = measure::parse_profile_steps(a.profile_steps);
  c.python_hook = !a.no_hook;
  c.telemetry = !a.no_telemetry;
  c.echo_output = !a.quiet;
  c.command_line = command_line();
  for (size_t at = 0; !a.devices_text.empty() && at <= a.devices_text.size();) {
    const size_t comma = std::min(a.devices_text.find(',', at), a.devices_text.size());
    a.devices.push_back(a.devices_text.substr(at, comma - at));
    at = comma + 1;
  }
  std::vector<measure::MeasureResult> results;
  if (a.devices.empty()) {
    results.push_back(measure::measure_command(c));
    fmt::print(stderr, "{}", measure::render_summary(results.back(), c));
  } else {
    results = measure::measure_devices(c, a.devices);
    std::vector<RunRecord> records;
    for (size_t i = 0; i < results.size(); ++i) {
      measure::MeasureConfig ci = c;
      ci.run_device = a.devices[i];
      fmt::print(stderr, "\n[{}]{}", a.devices[i], measure::render_summary(results[i], ci));
      records.push_back(results[i].record);
    }
    fmt::print("\n{}\nresults: {}/results.json, {}/results.csv\n", format_matrix_table(records), c.out_dir, c.out_dir);
  }
  record_history(a, results);
  return exit_status_of(results);
}

void add_measure_options(CLI::App* sub, MeasureArgs& a) {
  sub->add_option("-o,--out", a.out, "folder that holds the run folders")->capture_default_str();
  sub->add_option("--run-name", a.name, "name of the run folder under --out (default measure-<UTC time>)");
  sub->add_option("--items-per-step", a.items_per_step,
                  "samples (or tokens) per optimizer step: items/s and energy per item (else the program's own "
                  "trainscope.step(items=n))")
      ->check(CLI::PositiveNumber);
  sub->add_option("--warmup-steps", a.config.warmup_steps, "first steps left out of the steady window")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->capture_default_str();
  sub->add_option("--stall-timeout", a.config.stall_timeout_s,
                  "seconds without a step (once steps began) after which the program is stopped as stalled; 0: never")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_option("--profile-steps", a.profile_steps,
                  "A-B: run torch.profiler in the program for its steps A..B (1-based, after the steady window) and "
                  "analyse the trace");
  sub->add_option("--devices", a.devices_text,
                  "cpu,cuda:0: run the program once per device ({device} in its arguments replaced, TRAINSCOPE_DEVICE "
                  "set) and compare them");
  sub->add_option("--device", a.config.device, "telemetry device of the headline: cpu, gpu0, ... (default gpu0 when a GPU is seen)");
  sub->add_option("--telemetry-interval", a.config.telemetry_options.interval_s, "telemetry sampling period (s)")
      ->check(CLI::Range(0.001, 1.0))
      ->capture_default_str();
  sub->add_option("--history-db", a.history_db, "history database the runs are recorded in (default <out>/history.sqlite)");
  sub->add_flag("--no-history", a.no_history, "do not record the runs in the history database");
  sub->add_flag("--no-hook", a.no_hook, "do not put the Python step hook on the program's PYTHONPATH");
  sub->add_flag("--no-telemetry", a.no_telemetry, "no telemetry sampler");
  sub->add_flag("--quiet", a.quiet, "the program's output only into the run folder, not to the console");
}

}  // namespace

void add_measure_command(CLI::App& app, int& exit_status) {
  auto a = std::make_shared<MeasureArgs>();
  auto* sub = app.add_subcommand("measure", "Run your own program (python3 train.py ...) unchanged and measure it: "
                                            "steps, steps/s, telemetry; its exit status is trainscope's");
  add_measure_options(sub, *a);
  // without --: everything from the first word that is no option of measure is the program's
  sub->prefix_command();
  sub->allow_extras();
  sub->callback([a, sub, &exit_status] { exit_status = run_measure(*a, sub->remaining()); });
}

}  // namespace trainscope::cli

// `trainscope measure -- CMD ARGS...`: runs the user's own program unchanged and measures it
// (docs/measure.md). Torch-free: the program is a child process; a Python start-up hook
// (sitecustomize on its PYTHONPATH) reports the end of every optimizer step over a pipe.
//
// Shapes and units
// * Times are steady_clock nanoseconds since the moment measure_command started (the clock of
//   the telemetry samples, docs/design.md#one-clock). The hook writes CLOCK_MONOTONIC
//   nanoseconds (Python's time.monotonic_ns(), the clock of std::chrono::steady_clock on
//   Linux), converted on arrival.
// * A step ends when an optimizer's step() returns. Step i's time is end[i] - end[i-1]; the first
//   step has no start and never counts.
// * The steady window: the steps after the first `warmup_steps` (at least 1), from the end of
//   step warmup_steps - 1 to the end of the last step. steps_per_s = window steps / window time;
//   items_per_s = steps_per_s * items_per_step; without --items-per-step, the items the program
//   reported itself (trainscope.step(items=n)) for the window's steps / window time.
// * A profiled window (profile_steps A-B, 1-based steps as reported): the hook runs torch.profiler
//   from the end of step A-1 to the end of step B; the steady window then ends at the end of step
//   A-1 (the profiler's cost stays out of the headline, as in `run`), so A >= warmup_steps + 2.
//   The trace (<run>/profile/*.pt.trace.json[.gz]) is read by trace::analyze_trace.
// * Devices (measure_devices): each run replaces "{device}" in the command's arguments by the
//   device ("cpu", "cuda", "cuda:N") and sets TRAINSCOPE_DEVICE to it.
//
// Errors
// * A command that cannot be found or executed, an output folder that cannot be written, and
//   options out of range throw Error(kInvalidArgument / kIo) before the program starts.
// * Everything the program does (exit status, signal, no steps, a stall) is a result, not an
//   error: MeasureResult says what happened and keeps what was measured.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/provenance.h"
#include "trainscope/run_record.h"
#include "trainscope/telemetry.h"
#include "trainscope/trace_analysis.h"

namespace trainscope::measure {

struct MeasureConfig {
  std::vector<std::string> command;   // argv; argv[0] is looked up in PATH unless it holds a '/'
  std::string out_dir;                // the run folder (created)
  std::optional<double> items_per_step;  // samples (tokens, ...) per step, > 0
  int64_t warmup_steps = 5;           // >= 1
  double stall_timeout_s = 0;         // > 0: no step for this long once steps began: a stall, the
                                      // program is stopped (SIGTERM, then SIGKILL after 5 s)
  bool python_hook = true;            // put the sitecustomize hook on the program's PYTHONPATH
  bool echo_output = true;            // the program's stdout/stderr also go to ours
  bool telemetry = true;
  TelemetryOptions telemetry_options;
  std::string device;                 // telemetry device of the headline: "cpu", "gpu0"; "" = gpu0
                                      // when NVML sees a GPU, else cpu
  double tree_interval_s = 0.5;       // period of the process-tree readings (/proc scan), > 0
  std::string command_line;           // trainscope's own, for the provenance
  std::string proc_root = "/proc";
  std::optional<std::pair<int64_t, int64_t>> profile_steps;  // A-B, 1-based, inclusive
  std::string run_device;  // "" or a --devices entry: replaces {device}, sets TRAINSCOPE_DEVICE
};

/// Step-time statistics of a window, ms.
struct StepStats {
  int64_t steps = 0;
  double mean_ms = 0, p50_ms = 0, p95_ms = 0, max_ms = 0;
};

/// One reading of the program's process tree (/proc: the program and its descendants).
struct TreeSample {
  int64_t t_ns = 0;
  double cpu_pct = -1;  // CPU time / wall time since the previous reading, 100 = one core; -1 first
  int64_t rss_bytes = 0, threads = 0, processes = 0;
};

/// The process tree over a window.
struct TreeSummary {
  int64_t samples = 0;
  std::optional<double> cpu_pct_mean, cpu_pct_max;
  std::optional<int64_t> rss_bytes_max, threads_max, processes_max;
};

struct MeasureResult {
  std::string run_dir;
  int exit_code = 0;            // the program's, or 128 + signal when a signal ended it
  std::optional<int> signal;    // the signal that ended it
  bool stalled = false;
  std::string outcome;          // one line: "exited 0", "killed by signal 9 (Killed)", "stalled: ..."
  int64_t start_ns = 0, end_ns = 0;   // the program's start and end
  std::vector<int64_t> step_end_ns;   // every reported step's end
  std::vector<int64_t> step_items;    // items the program reported for each step (-1: none given)
  int64_t items_reported = 0;         // sum of items the program reported itself (trainscope.step)
  std::optional<double> items_per_step;  // --items-per-step, else the window's reported mean
  // steady window (absent when fewer than warmup_steps + 1 steps were reported)
  std::optional<int64_t> window_start_ns, window_end_ns;
  StepStats window;
  std::optional<double> steps_per_s, items_per_s;
  std::optional<TelemetrySection> telemetry;  // over the window (or the whole run without one)
  std::vector<TreeSample> tree;               // the program's process tree, about every 0.5 s
  TreeSummary tree_window;                    // over the same window as telemetry
  std::vector<trace::TraceAnalysis> profile;  // the profiled window's traces, analysed
  std::vector<std::string> notes;
  Provenance provenance;                      // of the host, with trainscope's command line
  RunRecord record;                           // what results.json holds (measure_record)
};

/// Runs `config.command` to its end and measures it; writes into config.out_dir: stdout.log,
/// stderr.log (the program's output), steps.csv, process_tree.csv, telemetry.csv.gz, measure.json,
/// results.json and results.csv (measure_record). `on_start`
/// (optional) is called with the child's pid once it runs. Signals SIGINT, SIGTERM, SIGHUP and
/// SIGQUIT sent to this process are forwarded to the program (a terminal's Ctrl-C reaches both
/// directly and is not sent twice); the handlers are restored on return.
MeasureResult measure_command(const MeasureConfig& config);

/// measure_command once per device, one after another: each in <out_dir>/<device> ("cuda:0" ->
/// "cuda0"), with run_device set; then results.json/results.csv of all of them in out_dir (the
/// cells `compare`, `report` and the matrix table compare). Throws Error(kInvalidArgument) for a
/// device that is not cpu, cuda or cuda:N, or a device named twice, before anything runs.
std::vector<MeasureResult> measure_devices(const MeasureConfig& config, const std::vector<std::string>& devices);

/// "A-B" or "A" (1-based steps, A <= B) as a profile window; throws Error(kInvalidArgument)
/// naming the text and the form expected.
std::pair<int64_t, int64_t> parse_profile_steps(const std::string& text);

/// The run record of a measurement (what `run` writes per cell, so results.json, `report` and
/// `compare` read it): run id "<device>-<program>-b<items per step>-r0", the program's name as
/// model ("train" for python3 train.py), status ok only for exit 0 without a stall, the steady
/// window as the headline window, items/s as steady_samples_per_s, the telemetry section, the
/// process tree's peak RSS as peak_rss_bytes. Trainer-only fields stay absent.
RunRecord measure_record(const MeasureResult& r, const MeasureConfig& c, const std::string& device_name,
                         int64_t clock_origin_unix_ns);

/// The summary printed after a measurement (steps, window, rates, telemetry, files).
std::string render_summary(const MeasureResult& r, const MeasureConfig& config);

/// Parses the hook's lines "step <monotonic_ns> <items>" (items -1: not given); appends each
/// step's end, converted by subtracting `origin_mono_ns`, to `ends`, adds its items (when > 0)
/// to `*items`, and appends them (-1 when not given) to `*step_items` when given.
/// Malformed lines are counted in the return value and skipped.
int parse_step_lines(const std::string& text, int64_t origin_mono_ns, std::vector<int64_t>& ends, int64_t* items,
                     std::vector<int64_t>* step_items = nullptr);

/// The steady window of `r.step_end_ns` (see above), over the steps up to `last_step` (1-based;
/// absent: all); fills window_*, window, steps_per_s, items_per_step, items_per_s of `r` (items
/// from `items_per_step`, else from r.step_items when every window step reported some) and a
/// note when there are too few steps.
void steady_window(MeasureResult& r, int64_t warmup_steps, std::optional<double> items_per_step,
                   std::optional<int64_t> last_step = std::nullopt);

}  // namespace trainscope::measure

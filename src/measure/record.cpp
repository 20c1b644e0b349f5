// The run record of a measured program (include/trainscope/measure.h, measure_record): the same
// RunRecord `run` writes, so results.json/results.csv, `report` and `compare` read a measured
// program as they read a trained cell. Fields that only trainscope's own trainer knows (data set,
// accuracy, phases, epochs) stay at their "not measured" defaults.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "measure/profile.h"
#include "trainscope/measure.h"

namespace trainscope::measure {
namespace {

// "train" for python3 train.py, "-m pkg.mod" -> "pkg.mod", else the executable's name.
std::string program_name(const std::vector<std::string>& cmd) {
  namespace fs = std::filesystem;
  for (size_t i = 1; i < cmd.size(); ++i) {
    if (cmd[i] == "-m" && i + 1 < cmd.size()) return cmd[i + 1];
    if (cmd[i].size() > 3 && cmd[i].compare(cmd[i].size() - 3, 3, ".py") == 0) return fs::path(cmd[i]).stem().string();
  }
  return cmd.empty() ? "program" : fs::path(cmd[0]).filename().string();
}

// "gpu0" -> "cuda:0" (NVML index; CUDA's numbering is the same unless CUDA_VISIBLE_DEVICES reorders).
std::string run_device(const std::string& telemetry_device) {
  if (telemetry_device.rfind("gpu", 0) == 0) return "cuda:" + telemetry_device.substr(3);
  return "cpu";
}

// The profiled steps A..B (1-based; 0-based A-1..B-1 in the record) and their mean time.
void fill_profiled(MeasurementWindow& m, const MeasureResult& r, const MeasureConfig& c) {
  const int64_t n = static_cast<int64_t>(r.step_end_ns.size());
  if (!c.profile_steps || n < c.profile_steps->first) return;
  const int64_t first = c.profile_steps->first - 1, last = std::min(c.profile_steps->second, n) - 1;
  m.profiled_first_step = first, m.profiled_last_step = last;
  m.profiled_steps = last - first + 1;
  m.profiled_step_ms_mean = static_cast<double>(r.step_end_ns[static_cast<size_t>(last)] -
                                                r.step_end_ns[static_cast<size_t>(first - 1)]) *
                            1e-6 / static_cast<double>(m.profiled_steps);
}

void fill_window(RunRecord& rec, const MeasureResult& r, const MeasureConfig& c) {
  fill_profiled(rec.measurement, r, c);
  if (!r.window_start_ns) return;
  MeasurementWindow& m = rec.measurement;
  const int64_t n = c.profile_steps ? c.profile_steps->first - 1 : static_cast<int64_t>(r.step_end_ns.size());
  m.headline_first_step = n - r.window.steps, m.headline_last_step = n - 1;
  m.headline_steps = r.window.steps;
  m.headline_samples = r.items_per_step ? static_cast<int64_t>(*r.items_per_step * static_cast<double>(r.window.steps)) : 0;
  m.headline_start_ns = *r.window_start_ns, m.headline_end_ns = *r.window_end_ns;
  m.headline_time_s = static_cast<double>(*r.window_end_ns - *r.window_start_ns) * 1e-9;
  m.headline_step_ms_mean = r.window.mean_ms;
}

}  // namespace

RunRecord measure_record(const MeasureResult& r, const MeasureConfig& c, const std::string& device_name,
                         int64_t clock_origin_unix_ns) {
  RunRecord rec;
  rec.device = !c.run_device.empty() ? c.run_device : run_device(r.telemetry ? r.telemetry->headline.device : "cpu");
  rec.device_name = device_name;
  rec.model = program_name(c.command);
  const std::optional<double> items = c.items_per_step ? c.items_per_step : r.items_per_step;
  rec.batch_size = items ? static_cast<int64_t>(*items + 0.5) : 0;
  rec.run_id = fmt::format("{}-{}-b{}-r0", rec.device, rec.model, rec.batch_size);
  const bool ok = r.exit_code == 0 && !r.stalled;
  rec.status = ok ? RunStatus::kOk : RunStatus::kFailed;
  if (!ok) rec.error_kind = "program", rec.failure_reason = "the program " + r.outcome;
  rec.warmup_steps = c.warmup_steps;
  rec.steps_completed = static_cast<int64_t>(r.step_end_ns.size());
  rec.train_time_s = static_cast<double>(r.end_ns - r.start_ns) * 1e-9;
  rec.steady_samples_per_s = r.items_per_s;
  rec.start_ns = r.start_ns, rec.end_ns = r.end_ns;
  rec.clock_origin_unix_ns = clock_origin_unix_ns;
  if (r.tree_window.rss_bytes_max) rec.peak_rss_bytes = *r.tree_window.rss_bytes_max;
  fill_window(rec, r, c);
  rec.telemetry = r.telemetry;
  rec.profile = profile_section(r, c);
  if (rec.profile && r.telemetry) rec.profile->step_breakdown.device = rec.device;
  rec.notes = r.notes;
  rec.notes.push_back("measured program: " + fmt::format("{}", fmt::join(c.command, " ")));
  return rec;
}

}  // namespace trainscope::measure

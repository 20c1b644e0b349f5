// render_summary (include/trainscope/measure.h): what `trainscope measure` prints at the end.
#include <fmt/core.h>

#include <array>

#include "common/text.h"
#include "trainscope/measure.h"

namespace trainscope::measure {
namespace {

std::string opt(const std::optional<double>& v, const char* unit) {
  return v ? fmt::format("{} {}", format_number(*v), unit) : "—";
}

std::string telemetry_lines(const TelemetrySection& t) {
  const TelemetryHeadline& h = t.headline;
  std::string s = fmt::format("telemetry ({}, {} window):", h.device.empty() ? "no device matched" : h.device, h.window);
  if (h.util_pct_mean) s += fmt::format(" util {}", opt(h.util_pct_mean, "%"));
  if (h.sm_activity_pct_mean) s += fmt::format(", SM activity {}", opt(h.sm_activity_pct_mean, "%"));
  if (h.process_mem_bytes_max) s += fmt::format(", program's GPU memory max {}", opt(*h.process_mem_bytes_max / 1e9, "GB"));
  if (h.mem_used_bytes_max) s += fmt::format(" (device's {})", opt(*h.mem_used_bytes_max / 1e9, "GB"));
  if (h.power_w_mean) s += fmt::format(", power {}", opt(h.power_w_mean, "W"));
  if (h.package_power_w_mean) s += fmt::format(", CPU package {}", opt(h.package_power_w_mean, "W"));
  if (h.energy_j) s += fmt::format(", energy {}", opt(h.energy_j, "J"));
  if (h.joules_per_sample) s += fmt::format(" ({} per item)", opt(h.joules_per_sample, "J"));
  if (h.cpu_util_pct_mean) s += fmt::format(", host CPU {}", opt(h.cpu_util_pct_mean, "%"));
  if (h.host_mem_used_bytes_max) s += fmt::format(", host memory max {}", opt(*h.host_mem_used_bytes_max / 1e9, "GB"));
  return s + "\n";
}

// "profiled steps 20-24 (5 in the trace): per step Kernel 1.2 ms, CPU Exec 3.4 ms, ..."
std::string profile_lines(const MeasureResult& r, const MeasureConfig& c) {
  if (!c.profile_steps) return "";
  std::string s = fmt::format("profiled steps {}-{}", c.profile_steps->first, c.profile_steps->second);
  if (r.profile.empty()) return s + ": no trace (see the notes)\n";
  std::array<int64_t, trace::kCategoryCount> sum{};
  int64_t steps = 0;
  for (const trace::TraceAnalysis& a : r.profile) {
    for (size_t k = 0; k < sum.size(); ++k) sum[k] += a.total_ns[k];
    steps += static_cast<int64_t>(a.steps.size());
  }
  s += fmt::format(" ({} in {}): mean step", count_of(steps, "step"), count_of(static_cast<long long>(r.profile.size()), "trace"));
  for (int k = 0; k < trace::kCategoryCount && steps > 0; ++k)
    if (sum[static_cast<size_t>(k)] > 0)
      s += fmt::format(" {} {}", trace::category_name(static_cast<trace::Category>(k)),
                       format_duration(static_cast<double>(sum[static_cast<size_t>(k)]) * 1e-9 / static_cast<double>(steps)));
  return s + fmt::format("; tables: {}/profile/analysis.md\n", r.run_dir);
}

}  // namespace

std::string render_summary(const MeasureResult& r, const MeasureConfig& c) {
  std::string s = fmt::format("\ntrainscope measure: the program {} after {}; {} reported\n", r.outcome,
                              format_duration(static_cast<double>(r.end_ns - r.start_ns) * 1e-9),
                              count_of(static_cast<long long>(r.step_end_ns.size()), "step"));
  if (r.steps_per_s) {
    s += fmt::format("steady window: {} after {} warm-up, {}: {} steps/s", count_of(r.window.steps, "step"),
                     c.warmup_steps, format_duration(static_cast<double>(*r.window_end_ns - *r.window_start_ns) * 1e-9),
                     format_rate(*r.steps_per_s));
    if (r.items_per_s)
      s += fmt::format(", {} items/s ({} items per step{})", format_rate(*r.items_per_s), format_number(*r.items_per_step),
                       c.items_per_step ? "" : ", as the program reported");
    s += fmt::format("\nstep time: mean {}, p50 {}, p95 {}, max {}\n", format_duration(r.window.mean_ms / 1e3),
                     format_duration(r.window.p50_ms / 1e3), format_duration(r.window.p95_ms / 1e3),
                     format_duration(r.window.max_ms / 1e3));
  }
  if (const TreeSummary& t = r.tree_window; t.samples > 0)
    s += fmt::format("program (process tree, {} readings): CPU mean {} (100 % = one core), max {}; RSS max {}; "
                     "threads max {}; processes max {}\n",
                     t.samples, opt(t.cpu_pct_mean, "%"), opt(t.cpu_pct_max, "%"),
                     t.rss_bytes_max ? format_number(static_cast<double>(*t.rss_bytes_max) / 1e6) + " MB" : "—",
                     t.threads_max.value_or(0), t.processes_max.value_or(0));
  if (r.telemetry) s += telemetry_lines(*r.telemetry);
  s += profile_lines(r, c);
  for (const std::string& n : r.notes) s += "note: " + n + "\n";
  s += fmt::format("files: {}/ (measure.json, steps.csv, process_tree.csv, stdout.log, stderr.log{})\n", r.run_dir,
                   r.telemetry ? ", telemetry.csv.gz" : "");
  return s;
}

}  // namespace trainscope::measure

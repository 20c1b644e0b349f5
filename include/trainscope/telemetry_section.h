// The telemetry section of a run record (trainscope/record_sections.h): a run's headline figures
// (TelemetryHeadline, one telemetry_<field> column each in results.csv) and the per-device
// summary of its window, filled by TelemetrySampler::run_section (trainscope/telemetry.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/fields.h"  // Better, kLiteral, JsonText, OptD, OptI

namespace trainscope {

/// Fewest readings behind a mean or maximum that is presented as one: below it, statistics are
/// kept but marked too_few_samples and shown as "n=3, too few" (docs/telemetry.md#energy).
inline constexpr int64_t kMinStatsSamples = 5;
/// A headline window whose stolen share (stolen_share_pct: steal over busy + steal, the share
/// of the time this VM's CPUs had work that the hypervisor gave to other guests) exceeds this
/// earns the run a note: the steps waited about that long, unevenly. 2 % is trainscope's
/// choice, below the 3 % of the self-perturbation flag (docs/profiling.md#measurement-protocol).
inline constexpr double kStealNotePct = 2.0;
inline bool too_few_samples(int64_t count) { return count < kMinStatsSamples; }

/// Statistics of one metric of one device over a window (trainscope/telemetry.h). Percentiles
/// are nearest-rank; update_period_s is the mean time between changes of the reading.
struct MetricStats {
  int64_t count = 0, dropped = 0;
  bool too_few_samples = false;  // count < kMinStatsSamples: mean/p50/p95/max are not presented plainly
  std::map<std::string, int64_t> drop_reasons;  // reason -> readings dropped
  OptD mean, p50, p95, max, update_period_s;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("count", s.count, Better::kNone);
    v("too_few_samples", s.too_few_samples, Better::kNone);
    v("dropped", s.dropped, Better::kNone);
    v("drop_reasons", s.drop_reasons, Better::kNone);
    v("mean", s.mean, Better::kNone);
    v("p50", s.p50, Better::kNone);
    v("p95", s.p95, Better::kNone);
    v("max", s.max, Better::kNone);
    v("update_period_s", s.update_period_s, Better::kNone);
  }
};

/// Energy of one device over a window, from a cumulative counter ("counter": NVML total energy,
/// RAPL package + DRAM) and by integrating power readings ("power_integration": trapezoid rule
/// over the readings, src/telemetry/sampler.cpp). energy_j is one of them, counter first; where
/// both exist, both are kept and sources_diff_* compare them (counter - power integration).
struct EnergySummary {
  OptD energy_j;
  std::string energy_method;                  // "counter" | "power_integration": the source of energy_j
  OptD counter_energy_j;                      // the counters' sum; null without a usable counter
  OptD power_integration_energy_j;            // integrated power_field; null without >= 2 power readings
  OptD sources_diff_j;                        // counter_energy_j - power_integration_energy_j
  OptD sources_diff_pct;                      // 100 * sources_diff_j / counter_energy_j (null if that is 0)
  std::map<std::string, double> components_j; // counter: per RAPL domain / counter
  OptD counter_update_period_s;               // of energy_j's source (power readings for power_integration)
  bool short_window = false;                  // the window is shorter than that update period
  std::string power_field;                    // the power metric integrated ("" when none)
  OptD covered_s;                             // power integration: time covered by readings
  OptD joules_per_sample;                     // energy_j / samples processed
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("energy_j", s.energy_j, Better::kLower);
    v("energy_method", s.energy_method, Better::kNone);
    v("counter_energy_j", s.counter_energy_j, Better::kNone);
    v("power_integration_energy_j", s.power_integration_energy_j, Better::kNone);
    v("sources_diff_j", s.sources_diff_j, Better::kNone);
    v("sources_diff_pct", s.sources_diff_pct, Better::kNone);
    v("components_j", s.components_j, Better::kNone);
    v("counter_update_period_s", s.counter_update_period_s, Better::kNone);
    v("short_window", s.short_window, Better::kNone);
    v("power_field", s.power_field, Better::kNone);
    v("covered_s", s.covered_s, Better::kNone);
    v("joules_per_sample", s.joules_per_sample, Better::kLower);
  }
};

struct DeviceTelemetry {
  std::map<std::string, MetricStats> metrics;  // metric ("power_w") -> stats (JSON key "fields")
  std::optional<EnergySummary> energy;         // absent: neither energy counter nor power reading
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("fields", s.metrics, Better::kNone);
    v("energy", s.energy, Better::kNone);
  }
  const MetricStats* metric(const std::string& m) const {
    auto it = metrics.find(m);
    return it == metrics.end() ? nullptr : &it->second;
  }
};

/// One telemetry source as probed (nvml, proc, rapl, hwmon).
struct TelemetrySourceInfo {
  std::string name, reason;  // reason: "" when available
  bool available = false;
  std::vector<std::string> fields_supported;
  JsonText details;          // source-specific (NVML: driver and NVML versions, lost GPUs)
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("name", s.name, Better::kNone);
    v("available", s.available, Better::kNone);
    v("reason", s.reason, Better::kNone);
    v("fields_supported", s.fields_supported, Better::kNone);
    v("details", s.details, Better::kNone);
  }
};

/// Summary of a window [t0_ns, t1_ns] of the matrix clock. devices: "cpu", "process", "gpu<N>"
/// (NVML index), sensors (trainscope/telemetry.h names them).
struct TelemetrySummary {
  int64_t t0_ns = 0, t1_ns = 0;
  double duration_s = 0;
  std::vector<TelemetrySourceInfo> sources;
  std::map<std::string, DeviceTelemetry> devices;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("t0_ns", s.t0_ns, Better::kNone);
    v("t1_ns", s.t1_ns, Better::kNone);
    v("duration_s", s.duration_s, Better::kNone);
    v("sources", s.sources, Better::kNone);
    v("devices", s.devices, Better::kNone);
  }
  const DeviceTelemetry* device(const std::string& d) const {
    auto it = devices.find(d);
    return it == devices.end() ? nullptr : &it->second;
  }
  /// Statistics of (device, metric), or nullptr.
  const MetricStats* metric(const std::string& d, const std::string& m) const {
    const auto* x = device(d);
    return x ? x->metric(m) : nullptr;
  }
};

/// Headline numbers of a run's window: the run's device (GPU: NVML gpu<N>; CPU: "cpu" with
/// RAPL package power) plus host-wide figures. Means and peaks of TelemetrySummary fields.
struct TelemetryHeadline {
  std::string device;  // telemetry device of the run ("gpu0", "cpu"); "" when none matched
  /// The window these figures cover: "headline" (the run's unprofiled headline steps,
  /// RunRecord::measurement) or "run" (the whole run, when it had no headline window).
  std::string window;
  OptD util_pct_mean, util_pct_max, sm_activity_pct_mean, sm_activity_pct_max, sm_occupancy_pct_mean,
      sm_occupancy_pct_max, tensor_activity_pct_mean, tensor_activity_pct_max, mem_util_pct_mean, mem_util_pct_max,
      power_w_mean, power_w_max, power_avg_w_mean, power_avg_w_max, power_instant_w_mean, power_instant_w_max,
      temp_c_mean, temp_c_max, sm_clock_mhz_mean, sm_clock_mhz_max, package_power_w_mean, package_power_w_max;
  OptD mem_used_bytes_max, process_mem_bytes_max;
  OptI clocks_event_reasons_mask_max;  // NVML clocks event reasons, max over the window (a bit set)
  OptD power_limit_w;                  // NVML enforced power limit of the run's GPU
  OptD energy_j, joules_per_sample;
  std::string energy_method;
  std::optional<bool> energy_short_window;
  OptD energy_power_integration_j;  // EnergySummary::power_integration_energy_j, beside a counter's energy_j
  OptD energy_sources_diff_pct;     // EnergySummary::sources_diff_pct
  /// Fewest readings behind the run device's means and maxima above (the metrics present);
  /// stats_too_few_samples: that count is below kMinStatsSamples.
  OptI stats_samples_min;
  std::optional<bool> stats_too_few_samples;
  OptD cpu_util_pct_mean, cpu_util_pct_max, process_cpu_pct_mean, process_rss_bytes_max, host_mem_used_bytes_max,
      cpu_temp_c_max;
  OptD cpu_steal_pct_mean;  // % of the VM's CPU time its hypervisor gave to others (/proc/stat steal)
  template <class S, class V>
  static void fields(S& s, V&& v) {
    constexpr Better H = Better::kHigher, L = Better::kLower, N = Better::kNone;
    v("device", s.device, N);
    v("window", s.window, N);
    v("util_pct_mean", s.util_pct_mean, H);
    v("util_pct_max", s.util_pct_max, H);
    v("sm_activity_pct_mean", s.sm_activity_pct_mean, H);
    v("sm_activity_pct_max", s.sm_activity_pct_max, H);
    v("sm_occupancy_pct_mean", s.sm_occupancy_pct_mean, H);
    v("sm_occupancy_pct_max", s.sm_occupancy_pct_max, H);
    v("tensor_activity_pct_mean", s.tensor_activity_pct_mean, H);
    v("tensor_activity_pct_max", s.tensor_activity_pct_max, H);
    v("mem_util_pct_mean", s.mem_util_pct_mean, H);
    v("mem_util_pct_max", s.mem_util_pct_max, H);
    v("power_w_mean", s.power_w_mean, L);
    v("power_w_max", s.power_w_max, L);
    v("power_avg_w_mean", s.power_avg_w_mean, L);
    v("power_avg_w_max", s.power_avg_w_max, L);
    v("power_instant_w_mean", s.power_instant_w_mean, L);
    v("power_instant_w_max", s.power_instant_w_max, L);
    v("temp_c_mean", s.temp_c_mean, L);
    v("temp_c_max", s.temp_c_max, L);
    v("sm_clock_mhz_mean", s.sm_clock_mhz_mean, H);
    v("sm_clock_mhz_max", s.sm_clock_mhz_max, H);
    v("package_power_w_mean", s.package_power_w_mean, L);
    v("package_power_w_max", s.package_power_w_max, L);
    v("mem_used_bytes_max", s.mem_used_bytes_max, L);
    v("process_mem_bytes_max", s.process_mem_bytes_max, L);
    v("clocks_event_reasons_mask_max", s.clocks_event_reasons_mask_max, N);
    v("power_limit_w", s.power_limit_w, N);
    v("energy_j", s.energy_j, L);
    v("joules_per_sample", s.joules_per_sample, L);
    v("energy_method", s.energy_method, N);
    v("energy_short_window", s.energy_short_window, N);
    v("energy_power_integration_j", s.energy_power_integration_j, N);
    v("energy_sources_diff_pct", s.energy_sources_diff_pct, N);
    v("stats_samples_min", s.stats_samples_min, N);
    v("stats_too_few_samples", s.stats_too_few_samples, N);
    v("cpu_util_pct_mean", s.cpu_util_pct_mean, N);
    v("cpu_util_pct_max", s.cpu_util_pct_max, N);
    v("cpu_steal_pct_mean", s.cpu_steal_pct_mean, N);
    v("process_cpu_pct_mean", s.process_cpu_pct_mean, N);
    v("process_rss_bytes_max", s.process_rss_bytes_max, L);
    v("host_mem_used_bytes_max", s.host_mem_used_bytes_max, L);
    v("cpu_temp_c_max", s.cpu_temp_c_max, L);
  }
};

struct TelemetrySection {
  TelemetryHeadline headline;
  TelemetrySummary summary;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("headline", s.headline, Better::kNone);
    v("summary", s.summary, Better::kNone);
  }
};

}  // namespace trainscope

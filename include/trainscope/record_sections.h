// Typed sections of a run record: telemetry (headline + per-device summary), operator profile
// (op table, totals, step breakdown, GPU activity, profiler overhead) and inference results
// (single-stream, offline, server, max-QPS search, per-scenario telemetry).
//
// Shapes and units
// * Units are in field names (_s, _ms, _us, _ns, _bytes, _w, _j, _pct, _c, _mhz, _per_s).
// * A value that was not measured is std::nullopt (null in results.json, an empty CSV cell),
//   never 0.
// * Every struct lists its fields ONCE, in `fields(s, v)`: v(name, member, Better) for each
//   field in results.json order. That one list drives JSON write and read
//   (src/results/record_json.h), the CSV headline columns (trainscope/run_record.h csv_header)
//   and run_metrics() below. Adding a field there adds it everywhere.
// * Opaque, source-specific details (e.g. NVML driver versions) are kept as JSON text
//   (JsonText): no consumer reads a measurement from them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/fields.h"  // Better, kLiteral, JsonText, OptD, OptI

namespace trainscope {

// ------------------------------------------------------------------------------ telemetry

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

// ------------------------------------------------------------------------------ profile

struct ProfileSchedule {
  int64_t skip_first = 0, wait = 0, warmup = 0, active = 0, repeat = 0;
  bool record_shapes = false, profile_memory = false, with_flops = false;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("skip_first", s.skip_first, Better::kNone);
    v("wait", s.wait, Better::kNone);
    v("warmup", s.warmup, Better::kNone);
    v("active", s.active, Better::kNone);
    v("repeat", s.repeat, Better::kNone);
    v("record_shapes", s.record_shapes, Better::kNone);
    v("profile_memory", s.profile_memory, Better::kNone);
    v("with_flops", s.with_flops, Better::kNone);
  }
};

struct ProfileWindowSpan {
  int64_t first_step = 0, last_step = 0;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("first_step", s.first_step, Better::kNone);
    v("last_step", s.last_step, Better::kNone);
  }
};

struct ProfileWindow {
  std::vector<ProfileWindowSpan> windows;
  int64_t active_steps = 0, run_steps = 0;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("windows", s.windows, Better::kNone);
    v("active_steps", s.active_steps, Better::kNone);
    v("run_steps", s.run_steps, Better::kNone);
  }
};

/// One operator (by name) over the profiled window; device_* absent without device events.
struct OpRow {
  std::string name;
  int64_t calls = 0;
  double cpu_total_us = 0, cpu_self_us = 0, cpu_self_pct = 0;
  OptD device_total_us, device_self_us, device_self_pct;
  int64_t mem_alloc_bytes = 0, mem_freed_bytes = 0, mem_net_bytes = 0;
  OptD flops, tflops_per_s;   // FLOPs as counted by workload/model.h op_flops
  std::string input_shapes;   // the most frequent shapes ("" when not recorded)
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("name", s.name, Better::kNone);
    v("calls", s.calls, Better::kNone);
    v("cpu_total_us", s.cpu_total_us, Better::kNone);
    v("cpu_self_us", s.cpu_self_us, Better::kNone);
    v("cpu_self_pct", s.cpu_self_pct, Better::kNone);
    v("device_total_us", s.device_total_us, Better::kNone);
    v("device_self_us", s.device_self_us, Better::kNone);
    v("device_self_pct", s.device_self_pct, Better::kNone);
    v("mem_alloc_bytes", s.mem_alloc_bytes, Better::kNone);
    v("mem_freed_bytes", s.mem_freed_bytes, Better::kNone);
    v("mem_net_bytes", s.mem_net_bytes, Better::kNone);
    v("flops", s.flops, Better::kNone);
    v("tflops_per_s", s.tflops_per_s, Better::kNone);
    v("input_shapes", s.input_shapes, Better::kNone);
  }
};

struct OpTableTotals {
  int64_t operators = 0, events = 0, threads = 0;
  double cpu_self_us = 0, cpu_busy_us = 0;
  OptD device_busy_sum_us;
  int64_t mem_alloc_outside_ops_bytes = 0, mem_freed_outside_ops_bytes = 0;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("operators", s.operators, Better::kNone);
    v("events", s.events, Better::kNone);
    v("cpu_self_us", s.cpu_self_us, Better::kNone);
    v("cpu_busy_us", s.cpu_busy_us, Better::kNone);
    v("device_busy_sum_us", s.device_busy_sum_us, Better::kNone);
    v("mem_alloc_outside_ops_bytes", s.mem_alloc_outside_ops_bytes, Better::kNone);
    v("mem_freed_outside_ops_bytes", s.mem_freed_outside_ops_bytes, Better::kNone);
    v("threads", s.threads, Better::kNone);
  }
};

/// Mean ms per phase over the profiled steps (host spans) and their shares of the phase sum.
struct PhaseMs {
  OptD data_ms, h2d_ms, forward_ms, backward_ms, optimizer_ms, step_ms;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("data_ms", s.data_ms, Better::kNone);
    v("h2d_ms", s.h2d_ms, Better::kNone);
    v("forward_ms", s.forward_ms, Better::kNone);
    v("backward_ms", s.backward_ms, Better::kNone);
    v("optimizer_ms", s.optimizer_ms, Better::kNone);
    v("step_ms", s.step_ms, Better::kNone);
  }
};
struct PhasePct {
  OptD data_pct, h2d_pct, forward_pct, backward_pct, optimizer_pct;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("data_pct", s.data_pct, Better::kNone);
    v("h2d_pct", s.h2d_pct, Better::kNone);
    v("forward_pct", s.forward_pct, Better::kNone);
    v("backward_pct", s.backward_pct, Better::kNone);
    v("optimizer_pct", s.optimizer_pct, Better::kNone);
  }
};

/// The trainer's phase means (trainscope/run_record.h PhaseBreakdown) copied into the profile.
struct DevicePhases {
  double data_ms = 0, h2d_ms = 0, forward_ms = 0, backward_ms = 0, optimizer_ms = 0, step_ms = 0;
  int64_t steps = 0;
  std::string method;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("data_ms", s.data_ms, Better::kNone);
    v("h2d_ms", s.h2d_ms, Better::kNone);
    v("forward_ms", s.forward_ms, Better::kNone);
    v("backward_ms", s.backward_ms, Better::kNone);
    v("optimizer_ms", s.optimizer_ms, Better::kNone);
    v("step_ms", s.step_ms, Better::kNone);
    v("steps", s.steps, Better::kNone);
    v("method", s.method, Better::kNone);
  }
};

/// One GPU's activity over the profiled window (device events).
struct GpuActivity {
  double window_ms = 0, busy_ms = 0, idle_ms = 0, busy_pct = 0, idle_pct = 0;
  std::map<std::string, double> kernel_ms_by_category, kernel_pct_by_category;  // compute, memcpy_h2d, ...
  int64_t kernels = 0;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("window_ms", s.window_ms, Better::kNone);
    v("busy_ms", s.busy_ms, Better::kNone);
    v("idle_ms", s.idle_ms, Better::kNone);
    v("busy_pct", s.busy_pct, Better::kNone);
    v("idle_pct", s.idle_pct, Better::kNone);
    v("kernel_ms_by_category", s.kernel_ms_by_category, Better::kNone);
    v("kernel_pct_by_category", s.kernel_pct_by_category, Better::kNone);
    v("kernels", s.kernels, Better::kNone);
  }
};

struct StepBreakdown {
  std::string device;
  int64_t profiled_steps = 0;
  PhaseMs phases_host_ms;
  PhasePct phases_pct;  // share of the sum of the five phases, sums to 100 %
  std::string phases_method;
  std::optional<DevicePhases> phases_device_ms;
  std::optional<std::map<std::string, GpuActivity>> gpu;  // "cuda:0" -> activity; absent on the CPU
  std::string gpu_absent_reason;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("device", s.device, Better::kNone);
    v("profiled_steps", s.profiled_steps, Better::kNone);
    v("phases_host_ms", s.phases_host_ms, Better::kNone);
    v("phases_pct", s.phases_pct, Better::kNone);
    v("phases_method", s.phases_method, Better::kNone);
    v("phases_device_ms", s.phases_device_ms, Better::kNone);
    v("gpu", s.gpu, Better::kNone);
    v("gpu_absent_reason", s.gpu_absent_reason, Better::kNone);
  }
};

/// Mean step time inside the profiled windows against steps outside (the profiler's cost).
struct ProfilerOverhead {
  int64_t window_steps = 0, outside_steps = 0;
  OptD window_step_ms_mean, outside_step_ms_mean, window_step_ms_median, outside_step_ms_median, overhead_pct;
  std::string overhead_absent_reason, method;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("window_steps", s.window_steps, Better::kNone);
    v("outside_steps", s.outside_steps, Better::kNone);
    v("window_step_ms_mean", s.window_step_ms_mean, Better::kNone);
    v("outside_step_ms_mean", s.outside_step_ms_mean, Better::kNone);
    v("window_step_ms_median", s.window_step_ms_median, Better::kNone);
    v("outside_step_ms_median", s.outside_step_ms_median, Better::kNone);
    v("overhead_pct", s.overhead_pct, Better::kNone);
    v("overhead_absent_reason", s.overhead_absent_reason, Better::kNone);
    v("method", s.method, Better::kNone);
  }
};

struct TraceInfo {
  int64_t bytes_uncompressed = 0, events = 0, dropped_events = 0, max_bytes = 0;
  bool truncated = false;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("bytes_uncompressed", s.bytes_uncompressed, Better::kNone);
    v("events", s.events, Better::kNone);
    v("dropped_events", s.dropped_events, Better::kNone);
    v("truncated", s.truncated, Better::kNone);
    v("max_bytes", s.max_bytes, Better::kNone);
  }
};

/// Files of the profile, relative to the run folder ("" when not written).
struct ProfileFiles {
  std::string ops_csv, trace;
  std::vector<std::string> kineto_traces;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("ops_csv", s.ops_csv, Better::kNone);
    v("trace", s.trace, Better::kNone);
    v("kineto_traces", s.kineto_traces, Better::kNone);
  }
};

/// The record's profile section (trainscope/profile.h RunProfiler::finish).
struct ProfileSection {
  std::string backend;  // "kineto" | "record_function"
  ProfileSchedule schedule;
  ProfileWindow window;
  std::vector<OpRow> op_table;  // sorted by self CPU time, then self device time
  OpTableTotals op_table_totals;
  StepBreakdown step_breakdown;
  ProfilerOverhead overhead;
  std::optional<TraceInfo> trace;
  ProfileFiles files;
  std::vector<std::string> warnings;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("backend", s.backend, Better::kNone);
    v("schedule", s.schedule, Better::kNone);
    v("window", s.window, Better::kNone);
    v("op_table", s.op_table, Better::kNone);
    v("op_table_totals", s.op_table_totals, Better::kNone);
    v("step_breakdown", s.step_breakdown, Better::kNone);
    v("overhead", s.overhead, Better::kNone);
    v("trace", s.trace, Better::kNone);
    v("files", s.files, Better::kNone);
    v("warnings", s.warnings, Better::kNone);
  }
};

// ------------------------------------------------------------------------------ inference

/// Power and energy of one scenario's window (absent_reason says why when missing). The figures
/// are the training headline's (TelemetryHeadline, trainscope/telemetry.h telemetry_headline)
/// of the scenario's window: energy_j from the counter where there is one, beside it the
/// power-integration energy and the sources' difference; stats_* mark a window whose means rest on
/// fewer than kMinStatsSamples readings.
struct ScenarioTelemetry {
  std::string device, absent_reason;
  OptD window_s, power_w_mean, package_power_w_mean, energy_j, joules_per_sample;
  std::string energy_method;
  std::optional<bool> short_window;
  OptD energy_power_integration_j;  // EnergySummary::power_integration_energy_j, beside a counter's energy_j
  OptD energy_sources_diff_pct;     // EnergySummary::sources_diff_pct
  OptI stats_samples_min;           // fewest readings behind the device's means above
  std::optional<bool> stats_too_few_samples;  // stats_samples_min < kMinStatsSamples
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("device", s.device, Better::kNone);
    v("window_s", s.window_s, Better::kNone);
    v("power_w_mean", s.power_w_mean, Better::kLower);
    v("package_power_w_mean", s.package_power_w_mean, Better::kLower);
    v("energy_j", s.energy_j, Better::kLower);
    v("joules_per_sample", s.joules_per_sample, Better::kLower);
    v("energy_method", s.energy_method, Better::kNone);
    v("short_window", s.short_window, Better::kNone);
    v("absent_reason", s.absent_reason, Better::kNone);
    v("energy_power_integration_j", s.energy_power_integration_j, Better::kNone);
    v("energy_sources_diff_pct", s.energy_sources_diff_pct, Better::kNone);
    v("stats_samples_min", s.stats_samples_min, Better::kNone);
    v("stats_too_few_samples", s.stats_too_few_samples, Better::kNone);
  }
};

/// Latency percentiles of a set of queries (ms); exact type-7 percentiles.
struct LatencyFields {
  int64_t queries = 0;
  OptD p50_ms, p90_ms, p99_ms, max_ms, mean_ms;
  bool too_few_queries = false;
  std::string too_few_reason;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("queries", s.queries, Better::kNone);
    v("p50_ms", s.p50_ms, Better::kLower);
    v("p90_ms", s.p90_ms, Better::kLower);
    v("p99_ms", s.p99_ms, Better::kLower);
    v("max_ms", s.max_ms, Better::kLower);
    v("mean_ms", s.mean_ms, Better::kLower);
    v("too_few_queries", s.too_few_queries, Better::kNone);
    v("too_few_reason", s.too_few_reason, Better::kNone);
  }
};

/// Percentiles of one part of a single-stream query on a GPU (CUDA events).
struct SplitPart {
  OptD p50_ms, p99_ms, mean_ms;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("p50_ms", s.p50_ms, Better::kLower);
    v("p99_ms", s.p99_ms, Better::kLower);
    v("mean_ms", s.mean_ms, Better::kLower);
  }
};
struct LatencySplit {
  std::optional<SplitPart> h2d_ms, compute_ms, d2h_ms;
  std::string method;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("h2d_ms", s.h2d_ms, Better::kNone);
    v("compute_ms", s.compute_ms, Better::kNone);
    v("d2h_ms", s.d2h_ms, Better::kNone);
    v("method", s.method, Better::kNone);
  }
};

struct SingleStreamResult {
  LatencyFields latency;  // written flat into the scenario object
  int64_t warmup_queries = 0;
  double budget_s = 0, wall_s = 0;
  bool interrupted = false;
  std::optional<LatencySplit> split;
  ScenarioTelemetry telemetry;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    LatencyFields::fields(s.latency, v);
    v("warmup_queries", s.warmup_queries, Better::kNone);
    v("budget_s", s.budget_s, Better::kNone);
    v("wall_s", s.wall_s, Better::kNone);
    v("interrupted", s.interrupted, Better::kNone);
    v("split", s.split, Better::kNone);
    v("telemetry", s.telemetry, Better::kNone);
  }
};

struct OfflineBatch {
  int64_t batch_size = 0, batches = 0, samples = 0;
  OptD samples_per_s, wall_s;
  std::string error_kind, error;  // "out_of_memory" when the batch did not fit
  std::optional<ScenarioTelemetry> telemetry;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("batch_size", s.batch_size, Better::kNone);
    v("samples_per_s", s.samples_per_s, Better::kHigher);
    v("batches", s.batches, Better::kNone);
    v("samples", s.samples, Better::kNone);
    v("wall_s", s.wall_s, Better::kNone);
    v("error_kind", s.error_kind, Better::kNone);
    v("error", s.error, Better::kNone);
    v("telemetry", s.telemetry, Better::kNone);
  }
};

struct OfflineResult {
  std::vector<OfflineBatch> per_batch;
  double budget_s_per_batch = 0;
  OptD best_samples_per_s;
  OptI best_batch_size;
  bool interrupted = false;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("per_batch", s.per_batch, Better::kNone);
    v("budget_s_per_batch", s.budget_s_per_batch, Better::kNone);
    v("best_samples_per_s", s.best_samples_per_s, Better::kHigher);
    v("best_batch_size", s.best_batch_size, Better::kNone);
    v("interrupted", s.interrupted, Better::kNone);
  }
};

/// One server run at one rate: latency includes queueing (trainscope/inference.h).
struct ServerRun {
  LatencyFields latency;  // written flat
  double qps = 0, target_p99_ms = 0;
  OptD achieved_qps;
  int64_t queries_issued = 0, served = 0;
  bool meets_target = false, stopped_early = false, interrupted = false;
  std::string stop_reason;
  std::optional<ScenarioTelemetry> telemetry;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    LatencyFields::fields(s.latency, v);
    v("qps", s.qps, Better::kNone);
    v("target_p99_ms", s.target_p99_ms, Better::kNone);
    v("achieved_qps", s.achieved_qps, Better::kNone);
    v("queries_issued", s.queries_issued, Better::kNone);
    v("meets_target", s.meets_target, Better::kNone);
    v("served", s.served, Better::kNone);
    v("stopped_early", s.stopped_early, Better::kNone);
    v("stop_reason", s.stop_reason, Better::kNone);
    v("interrupted", s.interrupted, Better::kNone);
    v("telemetry", s.telemetry, Better::kNone);
  }
};

struct MaxQpsSearch {
  std::string method, absent_reason;
  double initial_upper_qps = 0;
  OptD max_qps_meeting_target, first_failing_qps;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("method", s.method, Better::kNone);
    v("initial_upper_qps", s.initial_upper_qps, Better::kNone);
    v("max_qps_meeting_target", s.max_qps_meeting_target, Better::kHigher);
    v("first_failing_qps", s.first_failing_qps, Better::kNone);
    v("absent_reason", s.absent_reason, Better::kNone);
  }
};

struct ServerResult {
  double target_p99_ms = 0, budget_s_per_rate = 0;
  int64_t max_batch = 1;
  std::string worker, arrivals;
  std::vector<ServerRun> runs;
  OptD qps;                                 // the configured rate (server_qps > 0)
  std::optional<bool> meets_target;         // at `qps`; absent when interrupted or not run
  std::optional<MaxQpsSearch> find_max_qps;
  OptD max_qps_meeting_target;
  bool interrupted = false;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("target_p99_ms", s.target_p99_ms, Better::kNone);
    v("max_batch", s.max_batch, Better::kNone);
    v("budget_s_per_rate", s.budget_s_per_rate, Better::kNone);
    v("worker", s.worker, Better::kNone);
    v("arrivals", s.arrivals, Better::kNone);
    v("runs", s.runs, Better::kNone);
    v("qps", s.qps, Better::kNone);
    v("meets_target", s.meets_target, Better::kNone);
    v("find_max_qps", s.find_max_qps, Better::kNone);
    v("max_qps_meeting_target", s.max_qps_meeting_target, Better::kHigher);
    v("interrupted", s.interrupted, Better::kNone);
  }
};

/// The record's inference section (trainscope/inference.h). error/error_kind set: it failed.
struct InferenceSection {
  std::string device, grad_mode, timer, percentile_method;
  /// How the forward passes ran: "eager", "cuda_graph_replay", or eager with the reason CUDA
  /// graphs were not used (src/infer/executor.h InferenceExecutor::execution lists the values).
  std::string execution;
  int64_t intra_op_threads = 0, inter_op_threads = 0, samples_in_pool = 0;
  bool eval_mode = false;
  std::vector<std::string> notes;
  std::optional<SingleStreamResult> single_stream;
  std::optional<OfflineResult> offline;
  std::optional<ServerResult> server;
  std::string error_kind, error;
  bool failed() const { return !error.empty() || !error_kind.empty(); }
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("device", s.device, Better::kNone);
    v("intra_op_threads", s.intra_op_threads, Better::kNone);
    v("inter_op_threads", s.inter_op_threads, Better::kNone);
    v("grad_mode", s.grad_mode, Better::kNone);
    v("eval_mode", s.eval_mode, Better::kNone);
    v("samples_in_pool", s.samples_in_pool, Better::kNone);
    v("timer", s.timer, Better::kNone);
    v("execution", s.execution, Better::kNone);
    v("percentile_method", s.percentile_method, Better::kNone);
    v("notes", s.notes, Better::kNone);
    v("single_stream", s.single_stream, Better::kNone);
    v("offline", s.offline, Better::kNone);
    v("server", s.server, Better::kNone);
    v("error_kind", s.error_kind, Better::kNone);
    v("error", s.error, Better::kNone);
  }
};

// ------------------------------------------------------------------------------ input pipeline

/// How a run got its training batches (docs/input-pipeline.md): "memory" (decoded once, one
/// gather per batch) or "stream" (worker threads read, decode and transform each epoch).
/// Stream figures are over the whole run (all epochs, warm-up included). Sources: per-worker
/// wall time around each batch (busy), CLOCK_THREAD_CPUTIME_ID (loader CPU), getrusage(2)
/// RUSAGE_SELF minus the loader's CPU (the rest of the process: the trainer's threads,
/// telemetry). CPU percentages: 100 = one core busy for the whole training time.
struct InputPipelineSection {
  std::string mode;                    // "memory" | "stream"
  std::string cache_reason;            // why (data.cache_data, the budget)
  OptI decoded_bytes, budget_bytes;    // folder: float32 train+test sets decoded; data.cache_budget_gib
  OptI workers;                        // stream: decode threads
  std::string workers_reason;          // how the number was chosen
  OptI cores;                          // online logical CPUs
  OptI intra_op_threads;               // the trainer's
  std::string augment;                 // stream: the training transform
  OptI prefetch_batches;               // stream: the queue's bound (finished batches waiting)
  OptI queue_max_depth;                // stream: the most finished batches ever waiting (<= prefetch_batches)
  OptD queue_depth_mean;               // stream: over the samples below
  std::vector<double> queue_depth_t_s; // stream: sample times (s since the stream started), one per batch taken
  std::vector<int64_t> queue_depth;    // stream: finished batches waiting at those times
  OptI images_decoded, bad_images, changed_files;
  std::vector<std::string> problems;   // "path: what" of bad or changed files (first 20)
  OptD wall_s;                         // stream: since the stream started
  OptD worker_busy_s;                  // stream: summed over workers
  OptD worker_busy_pct;                // stream: mean worker's busy_s / wall_s
  OptD decode_per_s_per_worker;        // stream: images / busy second, mean over workers
  OptD data_wait_s;                    // stream: the trainer's total wait for batches
  OptD loader_cpu_pct;                 // stream: the workers' CPU, 100 = one core
  OptD trainer_cpu_pct;                // the rest of the process' CPU over the same time, 100 = one core
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("mode", s.mode, Better::kNone);
    v("cache_reason", s.cache_reason, Better::kNone);
    v("decoded_bytes", s.decoded_bytes, Better::kNone);
    v("budget_bytes", s.budget_bytes, Better::kNone);
    v("workers", s.workers, Better::kNone);
    v("workers_reason", s.workers_reason, Better::kNone);
    v("cores", s.cores, Better::kNone);
    v("intra_op_threads", s.intra_op_threads, Better::kNone);
    v("augment", s.augment, Better::kNone);
    v("prefetch_batches", s.prefetch_batches, Better::kNone);
    v("queue_max_depth", s.queue_max_depth, Better::kNone);
    v("queue_depth_mean", s.queue_depth_mean, Better::kNone);
    v("queue_depth_t_s", s.queue_depth_t_s, Better::kNone);
    v("queue_depth", s.queue_depth, Better::kNone);
    v("images_decoded", s.images_decoded, Better::kNone);
    v("bad_images", s.bad_images, Better::kLower);
    v("changed_files", s.changed_files, Better::kNone);
    v("problems", s.problems, Better::kNone);
    v("wall_s", s.wall_s, Better::kNone);
    v("worker_busy_s", s.worker_busy_s, Better::kNone);
    v("worker_busy_pct", s.worker_busy_pct, Better::kNone);
    v("decode_per_s_per_worker", s.decode_per_s_per_worker, Better::kHigher);
    v("data_wait_s", s.data_wait_s, Better::kLower);
    v("loader_cpu_pct", s.loader_cpu_pct, Better::kNone);
    v("trainer_cpu_pct", s.trainer_cpu_pct, Better::kNone);
  }
};

// ------------------------------------------------------------------------------ distributed
// Data-parallel runs (docs/distributed.md; filled by src/dist/). Times are host steady-clock
// ms per optimizer step, means over the steps after the warm-up steps.

/// One rank's own figures. comm_ms: from the first gradient bucket's all-reduce launch to the
/// last bucket's completion; comm_overlap_ms: the part of that before backward() returned;
/// comm_wait_ms: the time the rank waited for the all-reduces after backward() returned (the
/// exposed communication). On NCCL ranks completion is not seen by the host, so comm_ms and
/// comm_overlap_ms are null and comm_wait_ms is the host wait.
struct RankSummary {
  int64_t rank = 0, local_rank = 0;
  std::string host, device, telemetry_device;
  std::string status;          // "ok", "failed", "interrupted", "missing" (no record reached rank 0)
  std::string failure_reason;  // "" when ok
  int64_t steps_completed = 0;
  OptD steady_samples_per_s, step_ms, forward_ms, backward_ms, optimizer_ms;
  OptD comm_ms, comm_overlap_ms, comm_wait_ms;
  OptD power_w_mean, util_pct_mean, sm_activity_pct_mean, mem_used_bytes_max;  // its telemetry headline
  template <class S, class V>
  static void fields(S& s, V&& v) {
    constexpr Better H = Better::kHigher, L = Better::kLower, N = Better::kNone;
    v("rank", s.rank, N);
    v("local_rank", s.local_rank, N);
    v("host", s.host, N);
    v("device", s.device, N);
    v("telemetry_device", s.telemetry_device, N);
    v("status", s.status, N);
    v("failure_reason", s.failure_reason, N);
    v("steps_completed", s.steps_completed, N);
    v("steady_samples_per_s", s.steady_samples_per_s, H);
    v("step_ms", s.step_ms, L);
    v("forward_ms", s.forward_ms, L);
    v("backward_ms", s.backward_ms, L);
    v("optimizer_ms", s.optimizer_ms, L);
    v("comm_ms", s.comm_ms, L);
    v("comm_overlap_ms", s.comm_overlap_ms, H);
    v("comm_wait_ms", s.comm_wait_ms, L);
    v("power_w_mean", s.power_w_mean, N);
    v("util_pct_mean", s.util_pct_mean, N);
    v("sm_activity_pct_mean", s.sm_activity_pct_mean, N);
    v("mem_used_bytes_max", s.mem_used_bytes_max, N);
  }
};

/// The data-parallel section of a run record (rank 0's record holds every rank).
/// Imbalance ratios are max/min over the ranks that reported the figure (1 = balanced).
/// comm_share_pct = mean over ranks of comm_wait_ms / step_ms x 100 (the exposed share).
/// global_samples_per_s = sum of the ranks' steady samples/s.
struct DistributedSection {
  std::string backend;         // "gloo" | "nccl"
  std::string launcher;        // "trainscope" | "torchrun" | "slurm" | "env"
  int64_t world_size = 1, local_world_size = 1;
  double bucket_mb = 0;        // gradient bucket cap, MB (1e6 bytes)
  int64_t buckets = 0;         // gradient buckets of the model
  int64_t shard_samples = 0;   // training samples per rank per epoch (padded: docs/distributed.md)
  std::vector<RankSummary> ranks;
  OptD global_samples_per_s, step_time_imbalance, power_imbalance, util_imbalance, memory_imbalance;
  OptD comm_share_pct;
  /// global_samples_per_s / (world_size x the steady samples/s of a one-process run of the same
  /// model, per-rank batch size, device kind and data set) x 100, the newest such run in the
  /// history database (scaling_baseline names it: "<run folder>: <run id>"); null without one.
  OptD scaling_efficiency_pct;
  std::string scaling_baseline;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    constexpr Better H = Better::kHigher, L = Better::kLower, N = Better::kNone;
    v("backend", s.backend, N);
    v("launcher", s.launcher, N);
    v("world_size", s.world_size, N);
    v("local_world_size", s.local_world_size, N);
    v("bucket_mb", s.bucket_mb, N);
    v("buckets", s.buckets, N);
    v("shard_samples", s.shard_samples, N);
    v("ranks", s.ranks, N);
    v("global_samples_per_s", s.global_samples_per_s, H);
    v("step_time_imbalance", s.step_time_imbalance, L);
    v("power_imbalance", s.power_imbalance, L);
    v("util_imbalance", s.util_imbalance, L);
    v("memory_imbalance", s.memory_imbalance, L);
    v("comm_share_pct", s.comm_share_pct, L);
    v("scaling_efficiency_pct", s.scaling_efficiency_pct, H);
    v("scaling_baseline", s.scaling_baseline, N);
  }
};

// ------------------------------------------------------------------------------ metrics

struct RunRecord;

/// A numeric metric of a run, for compare/history: the value (nullopt = not measured).
struct RunMetric {
  std::string name;  // "steady_samples_per_s", "util_pct_mean", "inference_p50_ms", ...
  std::string unit;  // from the name's suffix: "samples/s", "%", "ms", "W", "J", "bytes", ...
  bool higher_is_better = false;
  std::function<std::optional<double>(const RunRecord&)> value;
};

/// Every numeric metric a run record carries with a direction: the record's own figures, the
/// telemetry headline fields, and the inference headline figures. Names are unique.
const std::vector<RunMetric>& run_metrics();
/// The metric named `name`, or nullptr.
const RunMetric* find_run_metric(const std::string& name);

}  // namespace trainscope

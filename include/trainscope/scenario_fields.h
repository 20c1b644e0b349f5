// The pieces every inference scenario's results are made of: a scenario window's power and energy
// (ScenarioTelemetry) and the latency percentiles of a set of queries (LatencyFields). The
// inference section (trainscope/inference_section.h) and the generation section
// (trainscope/generation_section.h) both use them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "trainscope/fields.h"  // Better, OptD, OptI

namespace trainscope {

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

}  // namespace trainscope

// The metric registry: the numeric figures of a run record that have a direction, for compare and
// the history (src/results/run_metrics.cpp): the record's own figures, the telemetry headline's
// (from TelemetryHeadline::fields, trainscope/telemetry_section.h) and the inference headline's.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace trainscope {

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

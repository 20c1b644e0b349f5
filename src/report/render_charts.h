// The data report.html's charts are drawn from (private to src/report): one JSON object, DATA,
// that the page script (src/report/assets/report.js) reads.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trainscope/report.h"

namespace trainscope::report_detail {

/// Speed-up, throughput, batch scaling, energy, latency, telemetry series, epoch starts, step
/// breakdown and top operators; each chart with the sentence shown when it has nothing to draw.
nlohmann::json chart_data(const ReportInput& in, const Analysis& a, const std::vector<CounterSeries>& series,
                          const std::string& telemetry_absent_reason);

}  // namespace trainscope::report_detail

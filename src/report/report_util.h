// Helpers shared by the report's analysis, renderers and history (private to src/report).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/text.h"
#include "trainscope/console_table.h"
#include "trainscope/report.h"

namespace trainscope::report_detail {

bool is_gpu(const std::string& device);
std::optional<int> cuda_index(const std::string& device);
// The shared number and duration formatters (src/common/text.h) under the report's short names.
inline std::string fmt_num(double v) { return format_number(v); }
std::string fmt_bytes(double b);   // binary units
inline std::string fmt_time(double s) { return format_duration(s); }
/// "median unit (±half-spread unit, n=N)" or "—" when not measured; value scaled by `scale`.
std::string fmt_stat(const Stat& s, const std::string& unit, double scale = 1);
/// "" when the telemetry source (nvml, proc, rapl, hwmon) was available in some run, else its reason.
std::string source_reason(const std::vector<RunRecord>& runs, const std::string& source);

/// Speed-up = GPU cell's median steady samples/s / CPU cell's (trainscope/report.h); the one
/// place it is computed (the report and the console table use it).
std::optional<double> speedup(const Cell& gpu, const Cell& cpu);
const Cell* find_cell(const std::vector<Cell>& cells, const std::string& device, const std::string& model,
                      int64_t batch_size);

/// The advice rules (src/report/advice.cpp) over the cells, comparisons and GPU balance.
void add_advice(const ReportInput& in, const AdviceThresholds& t, Analysis& a);
void build_answers(const ReportInput& in, Analysis& a);

}  // namespace trainscope::report_detail

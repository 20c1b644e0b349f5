// Pieces the report's renderings share (private to src/report): console text, report.md
// (render_markdown.cpp) and report.html (render_html.cpp, render_charts.cpp) say the same things
// in the same words through them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trainscope/report.h"

namespace trainscope::report_detail {

/// "ok/failed", and the not-applicable runs when there are any: "0/0, 1 not applicable".
std::string runs_cell(const Cell& c);
/// The number with its unit, or "—" when absent.
std::string opt_num(const std::optional<double>& v, const std::string& unit = "");
/// One provenance line per source folder (several when folders from other hosts were merged),
/// each followed by `sep`.
std::string provenance_lines(const ReportInput& in, const std::string& sep);
/// Runs whose own instruments cost trainscope more than 3 % (run_record.h MeasurementWindow,
/// docs/profiling.md#measurement-protocol), one sentence each.
std::vector<std::string> instrumentation_flags(const ReportInput& in);
/// Data-parallel runs' per-rank tables (dist/rank_table.h), "" when there are none.
std::string distributed_tables(const ReportInput& in);

/// The terms the report defines, {term, definition}, in the order both renderings list them.
inline constexpr const char* kDefinitions[][2] = {
    {"speed-up", "GPU steady-state training samples/s divided by the CPU's, same model and batch size (> 1: GPU faster)"},
    {"noise", "a difference no larger than the combined spread (max − min over repeats) of the two cells"},
    {"GPU utilisation", "NVML utilization.gpu: share of the sample period during which at least one kernel ran; "
                        "100 % can still leave most SMs idle"},
    {"SM activity", "NVML GPM SM activity: average share of streaming multiprocessors with a warp resident; the "
                    "measure of how full the GPU really is"},
    {"CPU util (machine)", "/proc/stat: share of all the machine's logical CPUs busy, every process counted"},
    {"process CPU", "/proc/self/stat: the cores this process kept busy on average (process_cpu_pct_mean / 100); "
                    "below the run's intra-op threads on a busy machine, other processes took the rest"},
    {"peak allocated / reserved", "CUDA caching allocator: memory held by tensors / memory the allocator took from "
                                  "the device"},
    {"energy per epoch", "joules per sample × training-set size (the device's energy counter, or power integrated "
                         "over time)"},
};

/// The page's style sheet and script (src/report/assets/report.css, report.js), embedded at build
/// time as Chart.js is (src/report/sources.cmake). The script draws every chart from DATA and
/// marks each canvas with data-rendered="1" once pixels were drawn (the end-to-end test reads the
/// attribute from the DOM).
const std::string& page_css();
const std::string& page_script();

}  // namespace trainscope::report_detail

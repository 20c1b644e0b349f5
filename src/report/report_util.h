// Helpers shared by the report's analysis, renderers and history (private to src/report).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/text.h"
#include "trainscope/console_table.h"
#include "trainscope/report.h"
#include "trainscope/variants.h"

namespace trainscope::report_detail {

/// The Variant a recorded variant name stands for; eager when it does not parse (a hand-edited
/// record), so a report never fails on it.
Variant variant_of_label(const std::string& variant);
/// The variant name without its threadsN part ("bf16+threads8" -> "bf16", "threads8" -> "eager"):
/// the recipe a GPU run can share with a CPU run of any thread count.
std::string without_threads(const std::string& variant);

bool is_gpu(const std::string& device);
/// <dir>/inference.json and every other <dir>/inference*.json, sorted by name: what `trainscope
/// infer --run <dir>` wrote there (load_run_folder and the report at the end of a run read them).
std::vector<std::string> inference_files(const std::string& dir);
std::optional<int> cuda_index(const std::string& device);
// The shared number and duration formatters (src/common/text.h) under the report's short names.
inline std::string fmt_num(double v) { return format_number(v); }
std::string fmt_bytes(double b);   // binary units
inline std::string fmt_time(double s) { return format_duration(s); }
/// "median unit (±half-spread unit, n=N)" or "—" when not measured; value scaled by `scale`.
std::string fmt_stat(const Stat& s, const std::string& unit, double scale = 1);
/// "" when the telemetry source (nvml, proc, rapl, hwmon) was available in some run, else its reason.
std::string source_reason(const std::vector<RunRecord>& runs, const std::string& source);
/// Why no run recorded telemetry: "the sampler could not start: <error>" from a run's
/// RunRecord::kSamplerFailedNote, else telemetry off. no_telemetry_reason: the same after
/// "no telemetry was recorded: ".
std::string no_telemetry_cause(const std::vector<RunRecord>& runs);
std::string no_telemetry_reason(const std::vector<RunRecord>& runs);

/// Speed-up = GPU cell's median steady samples/s / CPU cell's (trainscope/report.h); the one
/// place it is computed (the report and the console table use it).
std::optional<double> speedup(const Cell& gpu, const Cell& cpu);
/// The cell of (device, model, batch size); with `host` non-empty only that host's. Across hosts
/// the first match is returned (callers that compare hosts pass the host).
const Cell* find_cell(const std::vector<Cell>& cells, const std::string& device, const std::string& model,
                      int64_t batch_size, const std::string& host = "");
/// Shared by the renderings (src/report/render_parts.cpp): the speed-up column text ("6.24×",
/// "1× (baseline)", "—"), a device telemetry Stat marked "n=3, too few" when too few readings
/// were behind it, HTML escaping, and `code` spans to <code>.
std::string speedup_of(const Analysis& a, const Cell& c);
std::string fmt_device_stat(const Cell& c, const Stat& s, const std::string& unit);
std::string html_escape(const std::string& in);
std::string md_inline(const std::string& s);
/// The opening of the report (src/report/summary.cpp): per model, one table of every device
/// (and batch size), then the cross-host comparisons and the batch-size scaling; and the advice
/// one item per rule. Markdown, console text and HTML (tables only: the page script draws the
/// charts from DATA).
std::string md_summary(const Analysis& a);
std::string console_summary(const Analysis& a);
std::string html_summary(const Analysis& a);
std::string md_advice(const Analysis& a);
std::string console_advice(const Analysis& a);
std::string html_advice(const Analysis& a);
/// The cells of each (host, device, model, data set, seed), sorted by batch size (failed cells too).
std::vector<std::vector<const Cell*>> batch_series(const Analysis& a);
/// "cuda:0 on gpuhost" when the analysis spans several hosts, else the device.
std::string where_label(const Analysis& a, const Cell& c);
/// The batch-size scaling (trainscope/batch_sweep.h replayed) and the per-cell verdicts.
void build_batch_scaling(const ReportInput& in, const AdviceThresholds& t, Analysis& a);
void build_verdicts(const AdviceThresholds& t, Analysis& a);
/// The run settings that change a run's figures (accuracy, times) but not its workload identity
/// (workload_of): test-set and training-set size, requested epochs, how the run ended ("max steps
/// 300", "time budget", "complete"), warm-up steps, optimizer, learning rate, telemetry, intra-op
/// threads. Each value set with more than one member, per setting: "test samples: 1000, 10000"
/// (one group: the runs a report cell pools) or "test samples: A 10000; B 1000" (two groups: the
/// sides of `compare`, over the cells both sides have). Empty when every setting agrees.
std::vector<std::string> settings_that_differ(const std::vector<std::vector<const RunRecord*>>& groups);

/// The name both lists below give intra-op threads, which is a run setting and a provenance
/// field; compare drops the settings line when the provenances name it already.
inline constexpr const char* kIntraOpThreadsName = "intra-op threads";

/// What differs between two provenances besides the workload ("LibTorch: 1.13.0 vs 2.1.0",
/// threads, CPU, CUDA runtime, trainscope build), and a host's one-line description.
std::vector<std::string> provenance_differences(const Provenance& p, const Provenance& q);
std::string host_line(const Provenance& p);
/// Cross-host comparisons of a merged input (trainscope/report.h HostComparison).
void compare_hosts(const ReportInput& in, Analysis& a);

/// The advice rules (src/report/advice.cpp) over the cells, comparisons and GPU balance.
void add_advice(const ReportInput& in, const AdviceThresholds& t, Analysis& a);
void build_answers(const ReportInput& in, Analysis& a);

}  // namespace trainscope::report_detail

// The comparison of two sets of runs (run folders or history entries, trainscope/history.h)
// that gates a CI job on a regression.
//
// A cell (device, model, batch size) regressed when the median of the metric over its repeats
// got worse by more than threshold_pct and the difference is not noise (noise: the min..max
// ranges of the two sides overlap, trainscope/report.h within_noise). With one repeat on a side
// there is no spread, so noise cannot be told apart: such a verdict is marked (single_repeat)
// and the rendering says so. Errors: an unknown metric or a negative threshold throws
// Error(kInvalidArgument).
//
// A language model's generation (inference.json, trainscope/generation_section.h) is compared
// by the same rule on three metrics: gen_tokens_per_s (each pp/tg test per device, label and
// batch, trainscope/report.h generation_label; higher is better; a side's values are the test's
// repetitions, so its median and min..max are theirs), tpot_p99_ms and ttft_p99_ms (each server
// rate; lower is better; one value per side, so a verdict is single_repeat). Cells are kept
// apart by the invocation they are from (inference.json, inference-graphs.json) when a side holds
// several; the sides' dtype, server batching, max batch, request lengths and intra-op threads
// that differ are "differs:" lines (setting_differences) with a warning, as for training runs.
//
// An image model's inference.json (trainscope/inference_run.h, runs without generation) is
// compared on the record's inference metrics (inference_samples_per_s: the offline scenario's best
// samples/s; inference_p50_ms, inference_p99_ms: single-stream latency), one value per side and
// cell (model, device), so a verdict is single_repeat.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trainscope/report.h"
#include "trainscope/run_record.h"

namespace trainscope {

struct MetricInfo {
  std::string name;            // "steady_samples_per_s", "mean_epoch_time_s", ..., "gen_tokens_per_s"
  bool higher_is_better = true;
};
/// Known metrics: the run record's (run_metrics()), then the generation metrics above; unknown
/// names throw Error(kInvalidArgument) listing these.
const std::vector<MetricInfo>& compare_metrics();
/// Value of a metric in a record (nullopt: not measured; always for a generation metric, whose
/// values are in inference.json).
std::optional<double> metric_value(const RunRecord& r, const std::string& metric);

struct CompareRow {
  std::string device;
  std::string model;                 // model_label (trainscope/report.h): "cnn [bf16]", "mlp ×2 ranks"
  int64_t batch_size = 0;
  /// How the cell was batched when a number does not say it: a generation server rate's serving
  /// ("fcfs", "cont x32"; "fcfs | cont x32" when the sides differ), an image inference metric's
  /// ("offline best", "1"); "" prints batch_size.
  std::string batch_label;
  /// Which `infer` invocation (trainscope/inference_run.h inference_source) a generation cell is
  /// from, when a side holds several inference*.json; cells of other sources are never paired.
  std::string source;
  Stat a, b;
  std::optional<double> delta_pct;   // (b - a) / a * 100
  bool noise = false;                // inside the combined spread of a and b
  bool regression = false;           // worse beyond threshold and not noise
  bool improvement = false;
  bool single_repeat = false;        // a side has one measured repeat: no spread, noise unknown
  /// Why there is no delta: "not compared: the targets differ (A: 40 %; B: 75 %); ..." (a
  /// time-to-accuracy metric compares only at one --target-accuracy), or "not measured (B: target
  /// 75 % not reached (best 62.3 %))"; "" when compared.
  std::string why_not;
};
struct CompareResult {
  std::string metric;
  bool higher_is_better = true;
  double threshold_pct = 5;
  std::vector<CompareRow> rows;      // cells present on both sides
  std::vector<std::string> only_in_a, only_in_b;
  bool regressed = false;            // any row is a regression
  /// Differences between the two sides that make the comparison questionable (data set,
  /// complete vs stopped runs); printed as warnings, they do not change the verdict.
  std::vector<std::string> warnings;
  /// Run settings that differ between the sides' runs of the compared cells ("test samples: A
  /// 10000; B 1000", "end: A complete; B max steps 300"; src/report/report_util.h
  /// settings_that_differ), printed as "differs:" lines beside the provenance's.
  std::vector<std::string> setting_differences;
  /// compare_inputs: each side's host (Provenance::host and its description) and what differs
  /// between the two provenances besides the workload (LibTorch version, threads, CPU, ...).
  std::string host_a, host_b;
  std::vector<std::string> provenance_differences;
};
/// Pairs cells by device and workload identity (trainscope/report.h WorkloadId: model with its
/// variant and world size, data set, batch size, seed) and compares the median of `metric` over repeats; a cell on one side only is
/// listed as not comparable (only_in_a / only_in_b), never compared.
/// A row regressed when B is worse than A by more than threshold_pct and the difference is not noise.
CompareResult compare_runs(const std::vector<RunRecord>& a, const std::vector<RunRecord>& b,
                           const std::string& metric = "steady_samples_per_s", double threshold_pct = 5);
/// compare_runs on two run sets that keep their provenance (folders from different hosts): the
/// result names both hosts and lists the provenance differences. A generation metric compares
/// their inference documents (compare_generation) under the `infer` invocations' provenance; a
/// side without training runs compares its image-inference runs (inference_records).
CompareResult compare_inputs(const ReportInput& a, const ReportInput& b,
                             const std::string& metric = "steady_samples_per_s", double threshold_pct = 5);
/// compare on generation metrics: cells (label and test or server rate, device, batch) of the
/// two sides' inference.json documents; a side without generation results is a warning.
/// Throws Error(kInvalidArgument) for a metric that is not a generation metric.
CompareResult compare_generation(const std::vector<InferenceDocument>& a, const std::vector<InferenceDocument>& b,
                                 const std::string& metric = "gen_tokens_per_s", double threshold_pct = 5);
/// The metric `compare` gates on when none is given: gen_tokens_per_s when a side holds no
/// training runs and both hold generation results; inference_samples_per_s when a side holds no
/// training runs and both hold image-inference runs; else steady_samples_per_s.
std::string default_compare_metric(const ReportInput& a, const ReportInput& b);
/// An image model's inference runs (the documents' runs that did not fail, hold an inference
/// section and no generation) as run records compare_runs can pair: model, device, data set and
/// the inference section; batch size 0 (the scenarios are not one batch size).
std::vector<RunRecord> inference_records(const std::vector<InferenceDocument>& docs);
std::string render_compare(const CompareResult& c, const std::string& label_a, const std::string& label_b);

}  // namespace trainscope

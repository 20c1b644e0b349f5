// The comparison report: from the run records of one `trainscope run` (or runs taken from the
// history database) to comparisons (each GPU against the CPU, batch against batch, GPU against
// GPU), plain-sentence answers to the study's research questions RQ1..RQ5, advice from rules
// that cite the measurement that fired them, and three renderings: console text, report.md
// (diffable) and report.html (one self-contained file with Chart.js inline).
//
// Shapes and units
// * A Cell is one (device, workload: model with its variant and world size, batch size, ...) over
//   its repeats. Every metric is a Stat: median
//   and spread (max - min) over the repeats that measured it; n = 0 means "not measured" and the
//   renderings print the reason instead of a number (never 0).
// * A difference between two cells is "noise" when it is no larger than the combined spread of
//   the two cells (|a - b| <= spread_a + spread_b, i.e. the min..max ranges overlap). With a single
//   repeat per cell the spread is 0 and no difference is called noise; the report says so.
// * Speed-up = GPU steady samples/s / CPU steady samples/s (> 1: the GPU is faster).
//
// Errors: load_run_folder throws trainscope::Error(kIo / kDataFormat) naming the file. Absent or
// malformed optional sections (telemetry, profile, inference) are read defensively: a value that
// is missing or has the wrong type is treated as not measured.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/batch_sweep.h"
#include "trainscope/inference_run.h"
#include "trainscope/provenance.h"
#include "trainscope/reporter.h"
#include "trainscope/run_record.h"
#include "trainscope/telemetry.h"

namespace trainscope {

/// Median and spread of one metric over the repeats of a cell.
struct Stat {
  int n = 0;                 // repeats that measured it (0 = not measured)
  double median = 0, min = 0, max = 0;
  bool ok() const { return n > 0; }
  double spread() const { return max - min; }
};
Stat make_stat(const std::vector<double>& values);
/// True when a and b are both measured, at least one has several repeats, and their min..max
/// ranges overlap (the difference is within the run-to-run spread).
bool within_noise(const Stat& a, const Stat& b);

/// How reports, compare, history and the progress lines name a workload's model: the model, then
/// " ×N ranks" for a data-parallel run (world_size > 1, docs/distributed.md: its batch is per
/// rank), then the variant as model_with_variant writes it (trainscope/variants.h): "mlp",
/// "cnn [bf16]", "mlp ×2 ranks", "cnn ×2 ranks [bf16]". split_model_variant inverts the last step.
std::string model_label(const std::string& model, const std::string& variant, int64_t world_size);

/// The workload identity: what makes runs the same experiment on any machine. Runs with equal
/// identities are comparable across hosts; anything else that differs (LibTorch version,
/// threads, CPU) is reported as a difference, never used to pair runs. The one place it is
/// defined: a new dimension is one more field here (or, as the variant and the world size, part
/// of the model label) and one line in workload_of.
struct WorkloadId {
  std::string model;            // model_label(model, variant, world_size): "mlp ×2 ranks [bf16]"
  std::string dataset;          // RunRecord::dataset ("" when not recorded)
  int64_t batch_size = 0;       // samples
  uint64_t seed = 0;
  bool operator==(const WorkloadId&) const = default;
};
WorkloadId workload_of(const RunRecord& r);
/// A sort key (model, batch, data set, seed) and a label: "`mlp` b64 (fashion-mnist, seed 1)".
std::string workload_key(const WorkloadId& w);
std::string workload_label(const WorkloadId& w);

/// One (host, device, workload): all repeats that finished with status ok.
struct Cell {
  std::string device, device_name;
  std::string model;             // workload.model: the model label with variant and world size
  int64_t batch_size = 0;
  WorkloadId workload;
  std::string host;              // Provenance::host of the runs' folder
  std::string verdict;           // one line: how this cell compares within its model (analyze)
  int runs_ok = 0, runs_failed = 0;  // runs_failed: every run that did not end ok (interrupted too)
  int runs_interrupted = 0;      // of runs_failed: stopped by Ctrl-C/SIGTERM, not failed
  int runs_not_applicable = 0;   // status not_applicable: the variant does not apply here (variants.h)
  std::string not_applicable;    // their reason, e.g. "not applicable on cpu: graphs needs a CUDA device"
  std::vector<std::string> run_ids;
  int64_t epochs_requested = 0;
  /// Tokens a sample holds: a language model's sequence length (its samples are windows), 1 for
  /// images. The summary shows tokens/s and energy per token for language models.
  int64_t tokens_per_sample = 1;
  Stat samples_per_s;            // steady-state training samples/s
  Stat epoch_time_s;             // mean epoch time (measured, or steps_per_epoch*batch/samples_per_s)
  Stat time_for_epochs_s;        // time for epochs_requested epochs
  /// --target-accuracy (docs/variants.md#time-to-accuracy): training time and device energy until
  /// the test accuracy first reached target_pct, over the repeats that reached it.
  Stat time_to_target_s, energy_to_target_j;
  std::optional<double> target_pct;
  int runs_target_missed = 0;
  bool time_for_epochs_is_estimate = false;
  bool epoch_time_is_estimate = false;  // no full epoch ran: steps_per_epoch x batch / samples/s
  Stat test_accuracy_pct;
  Stat gpu_util_pct_mean, gpu_util_pct_max;        // NVML utilisation.gpu (coarse: any kernel running)
  Stat sm_activity_pct_mean, sm_activity_pct_max;  // NVML GPM SM activity (fraction of SMs busy)
  Stat cpu_util_pct_mean;        // whole machine, /proc/stat
  Stat process_cpu_cores;        // this process: cores busy on average (telemetry process_cpu_pct_mean / 100, /proc/self/stat)
  Stat device_peak_allocated_bytes, device_peak_reserved_bytes;
  Stat gpu_mem_used_bytes_max;   // NVML, whole device (all processes)
  Stat rss_bytes_max;            // host resident memory of this process
  Stat power_w_mean, power_w_max, temp_c_max;   // the run's device (GPU: NVML; CPU: RAPL/hwmon)
  Stat energy_per_epoch_j, energy_per_sample_j;
  Stat data_share_pct, h2d_share_pct;           // of the step time (rec.phases)
  Stat latency_p50_ms, latency_p99_ms;          // inference single stream
  Stat inference_samples_per_s;                 // inference offline best
  std::optional<uint64_t> clocks_event_reasons_mask;  // OR of the runs' per-run maximum
  std::optional<double> power_limit_w;
  std::optional<int64_t> device_memory_total_bytes;
  /// Fewest readings behind a run's device telemetry means/maxima (util, SM activity, power,
  /// temperature; TelemetryHeadline::stats_samples_min), over the runs; below kMinStatsSamples
  /// (trainscope/record_sections.h) those columns are shown marked "n=3, too few".
  std::optional<int64_t> telemetry_samples_min;
  std::vector<std::string> absent_reasons;      // notes of the runs (why a value is missing)
  /// Run settings in which the cell's ok runs differ ("test samples: 1000, 10000"): a report over
  /// folders run with different settings pools them, and its medians mix them (a note says so).
  std::vector<std::string> settings_differ;
};

/// A GPU cell against the CPU cell of the same workload (same host when it has one, else the
/// CPU of another host: a laptop CPU against a cloud GPU).
struct DeviceComparison {
  std::string model, gpu_device;
  /// The CPU cell's model label: `model`, its eager form for a GPU-only variant, or the CPU's
  /// fastest measured thread count of it ("mlp [threads8]", docs/variants.md#cpu-threads).
  std::string cpu_model;
  std::string gpu_host, cpu_host;
  int64_t batch_size = 0;
  std::optional<double> speedup;          // gpu samples/s / cpu samples/s
  bool noise = false;                     // samples/s ranges overlap
  std::optional<double> cpu_time_for_epochs_s, gpu_time_for_epochs_s;
  std::optional<double> accuracy_diff_pct;  // gpu - cpu, percentage points
  std::optional<double> cpu_energy_per_sample_j, gpu_energy_per_sample_j;
};

/// Two batch sizes of one (device, model).
struct BatchComparison {
  std::string device, model;
  int64_t batch_a = 0, batch_b = 0;      // batch_a < batch_b
  std::optional<double> samples_per_s_ratio;   // b / a
  bool noise = false;
  std::optional<double> util_a_pct, util_b_pct;
  std::optional<double> mem_a_bytes, mem_b_bytes;  // GPU peak allocated (GPU) or RSS (CPU)
};

/// Per-GPU load while one run trained, from the run's telemetry devices "gpu<N>" (NVML index):
/// for GPU runs and runs on several processes (world_size > 1), whenever telemetry saw two or
/// more GPUs, so an idle second GPU is visible as in the study.
struct GpuBalance {
  std::string run_id, run_device;
  bool multi_gpu_run = false;       // the run trained on several GPUs (RunRecord::world_size > 1)
  struct Entry {
    std::string gpu;                // "gpu0"
    std::optional<double> util_pct_mean, power_w_mean, power_w_max, mem_used_bytes_max;
  };
  std::vector<Entry> gpus;
};

/// Thresholds of the advice rules (docs/report.md#advice-rules gives their sources).
struct AdviceThresholds {
  /// batch_size: a larger measured batch is recommended when it raised samples/s by at least
  /// this much over the smallest one; also the gain of the replayed sweep rule
  /// (trainscope/batch_sweep.h, whose default it takes).
  double batch_gain_pct = BatchSweepRule{}.min_gain_pct;
  double low_gpu_util_pct = 50;     // mean NVML utilisation below this: the GPU waits
  double low_sm_activity_pct = 30;  // mean SM activity below this: kernels too small to fill it
  double data_share_pct = 20;       // data loading above this share of the step
  double h2d_share_pct = 15;        // host-to-device copies above this share of the step
  double memory_headroom_pct = 50;  // batch_sweep: one batch size ran and peak reserved stayed below this share
  double unbalanced_power_ratio = 0.5;  // least-loaded GPU power below this fraction of the most
  /// cpu_contention: a CPU run's process used fewer cores than this fraction of its intra-op
  /// threads (telemetry process_cpu_pct_mean / 100) ...
  double cpu_contention_core_ratio = 0.75;
  double busy_machine_pct = 80;     // ... while the machine's mean CPU utilisation was at least this
  double other_load_cores = 0.5;    // ... and other processes held at least this many cores
  /// noisy_headline: profile_step_time_ratio below this (the profiled steps, which do extra work,
  /// ran more than 3 % faster than the headline steps; a smaller gap is timer and scheduling noise
  /// of the same order as the 3 % self-perturbation flag, docs/profiling.md#measurement-protocol).
  double noisy_headline_ratio = 0.97;
};

/// One firing of a rule on one cell (or run). The renderings group them: one item per rule
/// (AdviceItem), listing every cell it fired on.
struct Advice {
  std::string rule;        // "low_utilisation", "data_loading", "h2d_copies", "batch_size",
                           // "batch_sweep", "cpu_faster", "throttling", "unbalanced_gpus",
                           // "cpu_oversubscribed", "cpu_contention", "noisy_headline", "variant_gain",
                           // "variant_untried"
                           // (docs/variants.md)
  std::string device, model, host;
  int64_t batch_size = 0;  // 0: not about one batch size
  std::string advice;      // what to do
  std::string evidence;    // the measurement that fired the rule, with its number and source
};

/// One rule's advice: what to do (the distinct advice texts of its firings, usually one) and
/// every cell it fired on with the measurement ("where: evidence").
struct AdviceItem {
  std::string rule;
  std::vector<std::string> advice;
  std::vector<std::string> fired_on;
};
std::vector<AdviceItem> group_advice(const std::vector<Advice>& advice);

/// Batch-size scaling of one (host, device, model, data, seed): the measured batch sizes in
/// order, the saturation point and why a sweep would stop there (the rule of
/// trainscope/batch_sweep.h replayed on the measurements).
struct BatchScaling {
  std::string host, device, model;
  std::vector<int64_t> batch_sizes;
  std::vector<std::optional<double>> samples_per_s, test_accuracy_pct;
  /// Why a batch has no samples/s: "failed" (its runs failed) or "no steady steps" (its runs
  /// finished, every step inside the warm-up); "" when measured.
  std::vector<std::string> absent;
  std::optional<int64_t> saturation_batch;
  std::string stop_reason;  // "" when the measured batches still rose at the largest one
};

struct Answer {
  std::string id;          // "RQ1".."RQ5", "simple_network"
  std::string question;
  std::vector<std::string> sentences;
};

struct ReportSource {
  Provenance provenance;
  std::string run_dir;
};
struct ReportInput {
  Provenance provenance;   // the first source's when several were merged
  std::vector<RunRecord> runs;
  std::string run_dir;     // "" when built from history without a folder
  /// Several folders (trainscope report A B ...), merged by merge_inputs: one source per folder
  /// and run_source[i] the source of runs[i]. Empty for one folder: every run has `provenance`.
  std::vector<ReportSource> sources;
  std::vector<size_t> run_source;
  /// The inference*.json of each folder (`trainscope infer --run <folder>`), or the
  /// file given (`compare A.json B.json`): a language model's generation results feed RQ5, the
  /// report's generation tables and compare's generation metrics (docs/generation.md#outputs).
  std::vector<InferenceDocument> inference;
};
/// The runs of several folders (possibly from different hosts) as one input, each run keeping
/// its folder's provenance. Throws Error(kInvalidArgument) when `parts` is empty.
ReportInput merge_inputs(const std::vector<ReportInput>& parts);
const Provenance& provenance_of(const ReportInput& in, size_t run_index);

/// The same workloads measured on two hosts (sources[0] against sources[k]).
struct HostComparison {
  std::string host_a, host_b;             // "host (date, CPU, GPUs)"
  /// Anything other than the workload that differs: LibTorch version, intra-op threads, CPU,
  /// trainscope version, data sets. Printed with the comparison; never used to pair runs.
  std::vector<std::string> differences;
  struct Row {
    std::string workload;                 // workload_label
    std::string device_a, device_b;       // the fastest device of the workload on each host
    Stat samples_per_s_a, samples_per_s_b;
    std::optional<double> ratio;          // b / a (> 1: host b faster)
    bool noise = false;
  };
  std::vector<Row> rows;
  std::vector<std::string> not_comparable;  // "label: only on host X" for workloads on one side
};

struct Analysis {
  std::vector<Cell> cells;
  std::vector<DeviceComparison> device_comparisons;
  std::vector<BatchComparison> batch_comparisons;
  std::vector<GpuBalance> balance;
  std::vector<Answer> answers;
  /// Why the summary's energy and CPU utilisation cells read "—": one "reading: reason" line
  /// per reading absent from some measured cell whose telemetry source gave no reading at all
  /// (its reason: unavailable, not probed, telemetry off).
  std::vector<std::string> summary_absences;
  std::vector<Advice> advice;
  /// Advice rules that read telemetry and could not look at some ok runs because those recorded
  /// none: "cpu_contention, for 3 CPU runs: <no_telemetry_cause>"; empty when every rule could.
  std::vector<std::string> advice_not_checked;
  std::vector<BatchScaling> batch_scaling;
  std::vector<HostComparison> host_comparisons;
  bool multi_host = false;          // the runs come from several hosts (cells name them)
  std::vector<std::string> notes;   // e.g. "single repeat: no spread, no difference is called noise"
  bool has_gpu = false, has_cpu = false, has_repeats = false;
};

/// The speed-up shown for one (device, model, batch size), decided in one place for the report
/// and the console table: a GPU's DeviceComparison::speedup (noise flagged); for "cpu" the
/// baseline (value 1) only when a GPU ran the same workload with a measured speed-up; otherwise
/// absent (shown as "—").
struct ShownSpeedup {
  std::optional<double> value;
  bool baseline = false;  // the CPU row of a compared workload
  bool noise = false;
};
/// With `host` (runs from several hosts) only that host's GPU cell, or that host's CPU as the
/// baseline, is meant; "" matches any host.
ShownSpeedup shown_speedup(const Analysis& a, const std::string& device, const std::string& model, int64_t batch_size,
                           const std::string& host = "");

/// Reads <dir>/results.json, and every <dir>/inference*.json by name (ReportInput::inference:
/// inference.json of `infer --run`, and others written there with -o, e.g. a --graphs invocation's).
/// Throws Error(kIo) when results.json is missing, Error(kDataFormat) naming the file when either
/// is malformed.
ReportInput load_run_folder(const std::string& dir);

/// How the report, compare and the history name a generation measurement: the model with its
/// compute type (trainscope/inference_run.h generation_dtype) and its decoding, "eager" or "cuda
/// graphs" (Decoder::execution() beginning with "cuda_graph", docs/generation.md):
/// "gpt-mini [float32, eager]", "gpt2 [bfloat16, cuda graphs]". Measurements with the same label,
/// device, test and batch are the same experiment (compare pairs them).
std::string generation_execution_kind(const std::string& execution);
std::string generation_label(const std::string& model, const std::string& dtype, const std::string& execution);

Analysis analyze(const ReportInput& in, const AdviceThresholds& t = {});

/// Time series for the HTML charts, from <run_dir>/telemetry.csv.gz (or telemetry.csv): only the
/// metrics charted (util/SM activity, power, temperature, memory), each thinned to at most
/// `max_points` by keeping min/max-preserving buckets. Missing file: empty, with a reason in *why.
/// `keep(device, metric)` picks other metrics instead; max_points 0 = all points. The reading is
/// trainscope/telemetry.h read_telemetry_series; this picks the charted metrics.
std::vector<CounterSeries> load_telemetry_series(
    const std::string& run_dir, size_t max_points = 800, std::string* why = nullptr,
    const std::function<bool(const std::string& device, const std::string& metric)>& keep = {});

std::string render_console(const ReportInput& in, const Analysis& a);
std::string render_markdown(const ReportInput& in, const Analysis& a);
std::string render_html(const ReportInput& in, const Analysis& a, const std::vector<CounterSeries>& series,
                        const std::string& telemetry_absent_reason = "");

/// The embedded Chart.js (third_party/chartjs/chart.umd.min.js) and its version line.
const std::string& chartjs_source();
std::string chartjs_version();

struct ReportFiles {
  std::string markdown_path, html_path;
};
/// Analyses `in` and writes report.md and report.html into `out_dir` (atomically). Throws Error(kIo).
ReportFiles write_report(const ReportInput& in, const std::string& out_dir, const AdviceThresholds& t = {});

/// The reporter (trainscope/reporter.h) that writes report.md + report.html in the run folder at
/// finish. A report that cannot be written is a notice through notices->notice (may be null): the
/// measurements are in results.json already. After finish, written() tells whether the files
/// exist and input() holds what they were built from (the CLI prints the console summary from it).
class ReportFilesReporter final : public Reporter {
 public:
  explicit ReportFilesReporter(Reporter* notices) : notices_(notices) {}
  void start(const Provenance& p, const std::string& run_dir, size_t planned_runs) override;
  void finish(const std::vector<RunRecord>& runs) override;
  bool written() const { return written_; }
  const ReportInput& input() const { return input_; }
  const std::string& markdown_path() const { return markdown_path_; }
  const std::string& html_path() const { return html_path_; }

 private:
  Reporter* notices_;
  ReportInput input_;
  bool written_ = false;
  std::string markdown_path_, html_path_;
};

}  // namespace trainscope

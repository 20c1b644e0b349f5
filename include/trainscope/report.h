// The comparison report: from the run records of one `trainscope run` (or runs taken from the
// history database) to comparisons (each GPU against the CPU, batch against batch, GPU against
// GPU), plain-sentence answers to the study's research questions RQ1..RQ5, advice from rules
// that cite the measurement that fired them, and three renderings: console text, report.md
// (diffable) and report.html (one self-contained file with Chart.js inline).
//
// Shapes and units
// * A Cell is one (device, model, batch size) over its repeats. Every metric is a Stat: median
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

#include "trainscope/provenance.h"
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

/// One (device, model, batch size): all repeats that finished with status ok.
struct Cell {
  std::string device, device_name, model;
  int64_t batch_size = 0;
  int runs_ok = 0, runs_failed = 0;
  std::vector<std::string> run_ids;
  int64_t epochs_requested = 0;
  Stat samples_per_s;            // steady-state training samples/s
  Stat epoch_time_s;             // mean epoch time (measured, or steps_per_epoch*batch/samples_per_s)
  Stat time_for_epochs_s;        // time for epochs_requested epochs
  bool time_for_epochs_is_estimate = false;
  bool epoch_time_is_estimate = false;  // no full epoch ran: steps_per_epoch x batch / samples/s
  Stat test_accuracy_pct;
  Stat gpu_util_pct_mean, gpu_util_pct_max;        // NVML utilisation.gpu (coarse: any kernel running)
  Stat sm_activity_pct_mean, sm_activity_pct_max;  // NVML GPM SM activity (fraction of SMs busy)
  Stat cpu_util_pct_mean;        // whole machine, /proc/stat
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
};

/// A GPU cell against the CPU cell of the same model and batch size.
struct DeviceComparison {
  std::string model, gpu_device;
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
  double low_gpu_util_pct = 50;     // mean NVML utilisation below this: the GPU waits
  double low_sm_activity_pct = 30;  // mean SM activity below this: kernels too small to fill it
  double data_share_pct = 20;       // data loading above this share of the step
  double h2d_share_pct = 15;        // host-to-device copies above this share of the step
  double memory_headroom_pct = 50;  // peak reserved below this share of device memory
  double unbalanced_power_ratio = 0.5;  // least-loaded GPU power below this fraction of the most
  double memory_safety_fraction = 0.9;  // share of device memory a batch estimate may fill
  /// cpu_contention: a CPU run's process used fewer cores than this fraction of its intra-op
  /// threads (telemetry process_cpu_pct_mean / 100) ...
  double cpu_contention_core_ratio = 0.75;
  double busy_machine_pct = 80;     // ... while the machine's mean CPU utilisation was at least this
  double other_load_cores = 0.5;    // ... and other processes held at least this many cores
  /// noisy_headline: profile_step_time_ratio below this (the profiled steps, which do extra work,
  /// ran faster than the headline steps) or a negative profile_cost_pct.
  double noisy_headline_ratio = 1.0;
};

struct Advice {
  std::string rule;        // "low_utilisation", "data_loading", "h2d_copies", "memory_headroom",
                           // "cpu_faster", "throttling", "unbalanced_gpus", "cpu_contention",
                           // "noisy_headline"
  std::string device, model;
  int64_t batch_size = 0;  // 0: not about one batch size
  std::string advice;      // what to do
  std::string evidence;    // the measurement that fired the rule, with its number and source
};

struct Answer {
  std::string id;          // "RQ1".."RQ5", "simple_network"
  std::string question;
  std::vector<std::string> sentences;
};

struct ReportInput {
  Provenance provenance;
  std::vector<RunRecord> runs;
  std::string run_dir;     // "" when built from history without a folder
};

struct Analysis {
  std::vector<Cell> cells;
  std::vector<DeviceComparison> device_comparisons;
  std::vector<BatchComparison> batch_comparisons;
  std::vector<GpuBalance> balance;
  std::vector<Answer> answers;
  std::vector<Advice> advice;
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
ShownSpeedup shown_speedup(const Analysis& a, const std::string& device, const std::string& model, int64_t batch_size);

/// Reads <dir>/results.json. Throws Error(kIo) when missing, Error(kDataFormat) when malformed.
ReportInput load_run_folder(const std::string& dir);

Analysis analyze(const ReportInput& in, const AdviceThresholds& t = {});

/// Time series for the HTML charts, from <run_dir>/telemetry.csv.gz (or telemetry.csv): only the
/// metrics charted (util/SM activity, power, temperature, memory), each thinned to at most
/// `max_points` by keeping min/max-preserving buckets. Missing file: empty, with a reason in *why.
/// `keep(device, metric)` picks other metrics instead (the TensorBoard reporter); max_points 0 = all points.
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

}  // namespace trainscope

// The run record: one schema for every run of a matrix, shared by all reporters (console,
// JSON, CSV, SQLite, HTML). Units are in field names (_s, _ms, _bytes, _w, _j, _pct,
// _samples_per_s). A value that could not be measured is std::nullopt (null in JSON, empty in
// CSV), never 0; `notes` say why where it is not obvious.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trainscope/language_model_section.h"
#include "trainscope/provenance.h"
#include "trainscope/record_sections.h"

namespace trainscope {

/// Mean time per training step spent in each phase (ms). On a GPU, h2d/forward/backward/
/// optimizer come from CUDA events on the compute stream; data is host time (gathering the
/// batch into pinned memory). On the CPU all phases are steady_clock intervals.
struct PhaseBreakdown {
  double data_ms = 0, h2d_ms = 0, forward_ms = 0, backward_ms = 0, optimizer_ms = 0;
  double step_ms = 0;             // mean wall time per step (host, steady clock)
  int64_t steps = 0;              // steps averaged (warm-up excluded)
  std::string method;             // "steady_clock" | "cuda_events"
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("data_ms", s.data_ms, Better::kLower);
    v("h2d_ms", s.h2d_ms, Better::kLower);
    v("forward_ms", s.forward_ms, Better::kLower);
    v("backward_ms", s.backward_ms, Better::kLower);
    v("optimizer_ms", s.optimizer_ms, Better::kLower);
    v("step_ms", s.step_ms, Better::kLower);
    v("steps", s.steps, Better::kNone);
    v("method", s.method, Better::kNone, kLiteral);
  }
};

struct EpochRecord {
  int64_t epoch = 0;              // 1-based
  int64_t steps = 0;
  int64_t samples = 0;
  double train_loss = 0;          // mean cross-entropy over the epoch's steps
  std::optional<double> train_accuracy_pct;  // absent for a language model (train/task_loss.h)
  std::optional<double> test_accuracy_pct;
  std::optional<double> test_loss;
  double epoch_time_s = 0;        // training wall time of the epoch (evaluation excluded)
  double eval_time_s = 0;
  double samples_per_s = 0;       // samples / epoch_time_s (warm-up included)
  bool complete = true;           // false when stopped early by max_steps / time budget
  int64_t profiled_steps = 0;     // steps of this epoch the profiler touched: epoch_time_s includes its cost
  int64_t start_ns = 0, end_ns = 0;  // training part of the epoch, matrix clock (ns)
  std::optional<double> energy_j;    // all measured devices of the run's kind, from telemetry
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("epoch", s.epoch, Better::kNone);
    v("steps", s.steps, Better::kNone);
    v("samples", s.samples, Better::kNone);
    v("train_loss", s.train_loss, Better::kLower);
    v("train_accuracy_pct", s.train_accuracy_pct, Better::kHigher);
    v("test_accuracy_pct", s.test_accuracy_pct, Better::kHigher);
    v("test_loss", s.test_loss, Better::kLower);
    v("epoch_time_s", s.epoch_time_s, Better::kLower);
    v("eval_time_s", s.eval_time_s, Better::kLower);
    v("samples_per_s", s.samples_per_s, Better::kHigher);
    v("complete", s.complete, Better::kNone);
    v("profiled_steps", s.profiled_steps, Better::kNone);
    v("start_ns", s.start_ns, Better::kNone);
    v("end_ns", s.end_ns, Better::kNone);
    v("energy_j", s.energy_j, Better::kLower);
  }
};

/// The measurement protocol (docs/profiling.md#measurement-protocol): which steps fed the
/// headline figures and which the profiler touched, and what trainscope's own instruments cost.
/// Steps are 0-based global steps, -1 = none; times are matrix-clock ns; step times are host
/// wall time per step (ms). Headline = the steps after the warm-up steps and before the first
/// step the profiler touches (its warm-up included); nothing after a profiling window feeds it.
struct MeasurementWindow {
  int64_t headline_first_step = -1, headline_last_step = -1;
  int64_t headline_steps = 0, headline_samples = 0;
  int64_t headline_start_ns = 0, headline_end_ns = 0;  // first and last instant of the window
  double headline_time_s = 0;     // training time inside the window (evaluation between epochs excluded)
  int64_t profiled_first_step = -1, profiled_last_step = -1;  // profiler warm-up + active steps
  int64_t profiled_steps = 0;
  int64_t profile_skip_first = -1;     // the schedule's skip_first as run (-1: no profiler)
  bool profile_skip_first_auto = false;  // placed at the end of the planned steps
  std::optional<double> headline_step_ms_mean, profiled_step_ms_mean, after_profile_step_ms_mean;
  /// Median profiled step time / median headline step time, each over the window's last 4096
  /// steps: typical steps compared, so a few slow headline steps (an epoch's first) do not
  /// read as a faster profiler.
  std::optional<double> profile_step_time_ratio;
  /// Time the profiler added to the run's training time, % = 100 * profiled_steps *
  /// (profiled_step_ms_mean - headline_step_ms_mean) / train_time.
  std::optional<double> profile_cost_pct;
  std::optional<double> sampler_cpu_pct_mean;   // telemetry thread CPU, 100 = one core (sampler/cpu_pct)
  std::optional<double> sampler_cpu_share_pct;  // sampler_cpu_pct_mean / intra_op_threads
  std::string sampler_scheduling;  // the sampler thread's policy, "SCHED_BATCH, nice +10" ("" without telemetry)
  /// sampler_cpu_pct_mean > 3 (of one core: the bound on the sampler's cost to a step whose
  /// threads wait for each other, docs/telemetry.md#cost-to-the-workload) or profile_cost_pct > 3.
  bool instrumentation_over_3pct = false;
  template <class S, class V>
  static void fields(S& s, V&& v) {  // one list for JSON (src/results/record_json.h) and CSV
    constexpr Better N = Better::kNone, L = Better::kLower;
    v("headline_first_step", s.headline_first_step, N);
    v("headline_last_step", s.headline_last_step, N);
    v("headline_steps", s.headline_steps, N);
    v("headline_samples", s.headline_samples, N);
    v("headline_start_ns", s.headline_start_ns, N);
    v("headline_end_ns", s.headline_end_ns, N);
    v("headline_time_s", s.headline_time_s, N);
    v("profiled_first_step", s.profiled_first_step, N);
    v("profiled_last_step", s.profiled_last_step, N);
    v("profiled_steps", s.profiled_steps, N);
    v("profile_skip_first", s.profile_skip_first, N);
    v("profile_skip_first_auto", s.profile_skip_first_auto, N);
    v("headline_step_ms_mean", s.headline_step_ms_mean, L);
    v("profiled_step_ms_mean", s.profiled_step_ms_mean, L);
    v("after_profile_step_ms_mean", s.after_profile_step_ms_mean, L);
    v("profile_step_time_ratio", s.profile_step_time_ratio, L);
    v("profile_cost_pct", s.profile_cost_pct, L);
    v("sampler_cpu_pct_mean", s.sampler_cpu_pct_mean, L);
    v("sampler_cpu_share_pct", s.sampler_cpu_share_pct, L);
    v("sampler_scheduling", s.sampler_scheduling, N);
    v("instrumentation_over_3pct", s.instrumentation_over_3pct, N);
  }
};

/// The training loss the trainer read at one of its NaN checks (every train.nan_check_interval
/// steps: its only per-step host synchronisation), for per-step curves (trainscope/tensorboard.h).
struct LossCheck {
  int64_t step = 0;   // optimizer steps done when it was read (1-based: the step that produced it)
  int64_t t_ns = 0;   // matrix clock
  double loss = 0;    // that step's batch cross-entropy (finite: a non-finite loss fails the run)
  std::optional<double> learning_rate;  // the rate that step used (src/train/lr_schedule.h); absent in older records
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("step", s.step, Better::kNone);
    v("t_ns", s.t_ns, Better::kNone);
    v("loss", s.loss, Better::kLower);
    v("learning_rate", s.learning_rate, Better::kNone);
  }
};

/// kNotApplicable: the cell's variant does not apply to its device or model (variants.h); the
/// record holds the reason in variant_note and no measurements.
enum class RunStatus { kOk, kFailed, kInterrupted, kRunning, kNotApplicable };
std::string to_string(RunStatus s);
RunStatus run_status_from_string(const std::string& s);
/// "failed: out of memory ...", or the reason alone when it already says the status ("not
/// applicable: channels_last needs ..."), or the status alone when there is no reason.
std::string status_with_reason(RunStatus s, const std::string& reason);

/// Time-to-accuracy of a run with --target-accuracy (docs/variants.md#time-to-accuracy): the
/// training time, samples and energy until the test accuracy first reached the target.
/// Evaluation time is excluded from the time (the run's clock pauses while it evaluates).
struct TimeToAccuracy {
  double target_pct = 0;          // the requested test accuracy, %
  bool reached = false;
  std::optional<double> time_s;   // training time until the evaluation that reached it
  std::optional<int64_t> samples; // training samples until then
  std::optional<int64_t> steps;   // optimizer steps until then
  std::optional<double> energy_j; // of the run's device over that training time, from telemetry
  std::optional<double> best_accuracy_pct;  // highest test accuracy seen (the one reached, or the best miss)
  int64_t evaluations = 0;        // test-set evaluations done
  int64_t end_ns = 0;             // matrix clock when the training that reached it ended (0: not reached)
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("target_pct", s.target_pct, Better::kNone);
    v("reached", s.reached, Better::kNone);
    v("time_s", s.time_s, Better::kLower);
    v("samples", s.samples, Better::kLower);
    v("steps", s.steps, Better::kLower);
    v("energy_j", s.energy_j, Better::kLower);
    v("best_accuracy_pct", s.best_accuracy_pct, Better::kHigher);
    v("evaluations", s.evaluations, Better::kNone);
    v("end_ns", s.end_ns, Better::kNone);
  }
};

struct RunRecord {
  // identity
  std::string run_id;             // "<device>-<model>-b<batch>-r<repeat>[-<variant>]", unique in a matrix
  std::string device;             // "cpu", "cuda:0"
  std::string device_name;        // CPU model or GPU name
  std::string model;              // "mlp", "cnn", "resnet18", "vgg11", or a TorchScript path
  int64_t batch_size = 0;
  int64_t repeat = 0;
  /// Processes (ranks, one per GPU on GPU runs) the run trained with: 1, or the data-parallel
  /// world size (docs/distributed.md). The unbalanced-GPU advice looks at runs with world_size > 1.
  int64_t world_size = 1;
  RunStatus status = RunStatus::kRunning;
  std::string error_kind;         // trainscope::to_string(ErrorKind) when failed
  std::string failure_reason;     // human-readable, names the step/batch/memory where known

  // workload
  std::string dataset;            // e.g. "fashion-mnist"
  int64_t train_samples = 0, test_samples = 0;
  std::vector<int64_t> input_shape;  // C, H, W
  int64_t num_classes = 0;
  std::optional<int64_t> parameters;
  std::optional<double> forward_flops_per_sample;  // see model.h for how they are counted
  std::string optimizer;
  std::string optimizer_impl;     // which implementation ran (train/optimizer.h)
  std::optional<bool> cudnn_benchmark;  // CUDA runs: cuDNN autotuning on (TrainConfig); absent on the CPU
  double learning_rate = 0;       // the peak rate of a schedule
  /// How the rate moved over the steps (src/train/lr_schedule.h): "constant 0.001", "linear
  /// warm-up over 100 steps to 0.0006, cosine decay to 6e-05 at step 5000"; "" in older records.
  std::string lr_schedule;
  /// Micro-batches per optimizer step (--grad-accum): an optimizer step trains grad_accum x
  /// batch_size samples; batch_size is the micro-batch, the one a forward pass holds in memory.
  int64_t grad_accum = 1;
  uint64_t seed = 0;
  int64_t intra_op_threads = 0;
  int64_t epochs_requested = 0;
  int64_t warmup_steps = 0;

  // measurements
  int64_t epochs_completed = 0;   // full epochs
  int64_t steps_completed = 0;
  int64_t steps_per_epoch = 0;
  double train_time_s = 0;        // measured training wall time, evaluation excluded
  std::optional<double> steady_samples_per_s;       // after warm-up
  std::optional<double> mean_epoch_time_s;          // over complete epochs
  /// Time to train `epochs_requested` epochs. Measured when all epochs ran; otherwise an
  /// estimate = steps_per_epoch * epochs_requested * batch / steady_samples_per_s (+ eval).
  std::optional<double> time_for_requested_epochs_s;
  bool time_for_requested_epochs_is_estimate = false;
  bool stopped_early = false;
  std::string stop_reason;        // "max_steps", "time_budget", "" when complete
  std::optional<double> final_train_loss;
  std::optional<double> final_train_accuracy_pct;
  std::optional<double> test_accuracy_pct;   // after the last (possibly partial) epoch
  std::optional<PhaseBreakdown> phases;
  std::optional<int64_t> peak_rss_bytes;             // host, from getrusage
  std::optional<int64_t> device_peak_allocated_bytes; // CUDA caching allocator
  std::optional<int64_t> device_peak_reserved_bytes;
  std::vector<EpochRecord> epochs;
  int64_t start_ns = 0, end_ns = 0;  // steady clock, ns since the matrix started
  std::string checkpoint_path;       // relative to the run folder; "" when none was written
  std::vector<std::string> notes;    // why a value is absent, warnings
  /// The note (then the error) of a run whose telemetry was on but whose sampler could not start;
  /// the report tells it from --no-telemetry by it.
  static constexpr const char* kSamplerFailedNote = "no telemetry: the sampler could not start: ";
  MeasurementWindow measurement;     // which steps fed the headline, which were profiled

  // sections filled by other components (trainscope/record_sections.h; null when absent)
  std::optional<TelemetrySection> telemetry;  // TelemetrySampler::run_section
  std::optional<ProfileSection> profile;      // RunProfiler::finish
  std::optional<InferenceSection> inference;  // trainscope/inference.h
  std::optional<InputPipelineSection> input_pipeline;  // how batches were made (src/train/batch_source.h)

  // variants, MFU, time-to-accuracy (trainscope/variants.h, train/mfu.h)
  std::string variant = "eager";     // canonical variant name (variants.h); part of the run id unless eager
  /// Why the variant did not run as asked: "not applicable on cpu: ..." (status not_applicable),
  /// or the CUDA-graph capture's fallback reason (the run continued eagerly); "" = ran as asked.
  std::string variant_note;
  std::optional<double> train_flops_per_s;  // 3 x forward_flops_per_sample x steady_samples_per_s
  std::optional<double> mfu_pct;            // train_flops_per_s / the device's peak at mfu_precision
  std::optional<double> peak_flops_per_s;   // the peak used (train/mfu.h table)
  std::string mfu_precision;                // "fp32", "tf32", "bf16"
  std::string mfu_note;                     // why mfu_pct is absent ("" when set)
  std::optional<TimeToAccuracy> time_to_accuracy;  // with --target-accuracy
  // wall clock and per-step loss (trainscope/tensorboard.h)
  /// Unix time (ns, system clock) of the matrix clock's zero in the session that measured this
  /// run: start_ns, end_ns and telemetry times + this = wall time. 0 = unknown (older records).
  int64_t clock_origin_unix_ns = 0;
  std::vector<LossCheck> loss_checks;  // one per NaN check, in step order
  std::optional<DistributedSection> distributed;  // data-parallel runs (docs/distributed.md)
  // task (docs/language-models.md): what a sample is and how throughput is counted
  std::string task = "classification";   // | "causal_lm"
  std::string throughput_unit = "samples/s";  // | "tokens/s": the headline figure's unit
  std::optional<LanguageModelSection> language_model;  // causal_lm runs

  /// The JSON keys of a run in results.json (src/results/record_json.h). error_kind,
  /// failure_reason, stop_reason and checkpoint_path are null when empty; absent sections and
  /// phases are null. The fields marked kCsv are the columns of results.csv, in this order
  /// (csv_header() below); results.json sorts its keys, so the order is the CSV's alone.
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("run_id", s.run_id, Better::kNone, kLiteral, kCsv);
    v("device", s.device, Better::kNone, kLiteral, kCsv);
    v("device_name", s.device_name, Better::kNone, kLiteral, kCsv);
    v("model", s.model, Better::kNone, kLiteral, kCsv);
    v("batch_size", s.batch_size, Better::kNone, kCsv);
    v("repeat", s.repeat, Better::kNone, kCsv);
    v("status", s.status, Better::kNone, kCsv);
    v("error_kind", s.error_kind, Better::kNone, kCsv);
    v("failure_reason", s.failure_reason, Better::kNone, kCsv);
    v("dataset", s.dataset, Better::kNone, kLiteral, kCsv);
    v("train_samples", s.train_samples, Better::kNone, kCsv);
    v("test_samples", s.test_samples, Better::kNone, kCsv);
    v("input_shape", s.input_shape, Better::kNone);
    v("num_classes", s.num_classes, Better::kNone);
    v("parameters", s.parameters, Better::kNone, kCsv);
    v("forward_flops_per_sample", s.forward_flops_per_sample, Better::kNone, kCsv);
    v("optimizer", s.optimizer, Better::kNone, kLiteral, kCsv);
    v("optimizer_impl", s.optimizer_impl, Better::kNone, kLiteral);
    v("cudnn_benchmark", s.cudnn_benchmark, Better::kNone);
    v("learning_rate", s.learning_rate, Better::kNone, kCsv);
    v("lr_schedule", s.lr_schedule, Better::kNone);
    v("grad_accum", s.grad_accum, Better::kNone);
    v("seed", s.seed, Better::kNone, kCsv);
    v("intra_op_threads", s.intra_op_threads, Better::kNone, kCsv);
    v("epochs_requested", s.epochs_requested, Better::kNone, kCsv);
    v("warmup_steps", s.warmup_steps, Better::kNone);
    v("epochs_completed", s.epochs_completed, Better::kNone, kCsv);
    v("steps_completed", s.steps_completed, Better::kNone, kCsv);
    v("steps_per_epoch", s.steps_per_epoch, Better::kNone, kCsv);
    v("train_time_s", s.train_time_s, Better::kLower, kCsv);
    v("steady_samples_per_s", s.steady_samples_per_s, Better::kHigher, kCsv);
    v("mean_epoch_time_s", s.mean_epoch_time_s, Better::kLower, kCsv);
    v("time_for_requested_epochs_s", s.time_for_requested_epochs_s, Better::kLower, kCsv);
    v("time_for_requested_epochs_is_estimate", s.time_for_requested_epochs_is_estimate, Better::kNone, kCsv);
    v("stopped_early", s.stopped_early, Better::kNone, kCsv);
    v("stop_reason", s.stop_reason, Better::kNone, kCsv);
    v("final_train_loss", s.final_train_loss, Better::kLower, kCsv);
    v("final_train_accuracy_pct", s.final_train_accuracy_pct, Better::kHigher, kCsv);
    v("test_accuracy_pct", s.test_accuracy_pct, Better::kHigher, kCsv);
    v("phases", s.phases, Better::kNone, kLiteral, kCsv);
    v("peak_rss_bytes", s.peak_rss_bytes, Better::kLower, kCsv);
    v("device_peak_allocated_bytes", s.device_peak_allocated_bytes, Better::kLower, kCsv);
    v("device_peak_reserved_bytes", s.device_peak_reserved_bytes, Better::kLower, kCsv);
    v("epochs", s.epochs, Better::kNone);
    v("start_ns", s.start_ns, Better::kNone);
    v("end_ns", s.end_ns, Better::kNone);
    v("checkpoint_path", s.checkpoint_path, Better::kNone);
    v("notes", s.notes, Better::kNone);
    v("measurement", s.measurement, Better::kNone);
    v("inference", s.inference, Better::kNone, kLiteral, kCsv);
    v("world_size", s.world_size, Better::kNone, kCsv);
    v("telemetry", s.telemetry, Better::kNone, kLiteral, kCsv);
    v("profile", s.profile, Better::kNone, kLiteral);
    // variants, MFU, time-to-accuracy
    v("variant", s.variant, Better::kNone, kLiteral, kCsv);
    v("variant_note", s.variant_note, Better::kNone, kCsv);
    v("train_flops_per_s", s.train_flops_per_s, Better::kHigher, kCsv);
    v("mfu_pct", s.mfu_pct, Better::kHigher, kCsv);
    v("peak_flops_per_s", s.peak_flops_per_s, Better::kNone);
    v("mfu_precision", s.mfu_precision, Better::kNone, kCsv);
    v("mfu_note", s.mfu_note, Better::kNone);
    v("time_to_accuracy", s.time_to_accuracy, Better::kNone, kCsv);
    v("clock_origin_unix_ns", s.clock_origin_unix_ns, Better::kNone);
    v("loss_checks", s.loss_checks, Better::kNone);
    v("input_pipeline", s.input_pipeline, Better::kNone, kLiteral);
    v("distributed", s.distributed, Better::kNone, kLiteral);
    v("task", s.task, Better::kNone, kLiteral, kCsv);
    v("throughput_unit", s.throughput_unit, Better::kNone, kLiteral, kCsv);
    v("language_model", s.language_model, Better::kNone, kLiteral, kCsv);
  }
};

/// The flat CSV columns (one row per run): the fields RunRecord::fields() marks kCsv, in its
/// order. A scalar field is one column of its name; a section stands for selected scalar
/// columns: the phases as phase_<field> (the step count left out), every telemetry headline field
/// as telemetry_<field> (TelemetryHeadline::fields), the inference headline figures
/// (infer_single_stream_p50_ms, infer_single_stream_p99_ms, infer_offline_samples_per_s) and
/// time-to-accuracy's (target_accuracy_pct, target_reached, time_to_target_s,
/// samples_to_target, energy_to_target_j).
std::vector<std::string> csv_header();
std::vector<std::string> csv_row(const RunRecord& r);

/// results.json content: {"provenance": {...}, "schema_version": N, "runs": [...]}.
std::string results_json(const Provenance& p, const std::vector<RunRecord>& runs);
/// results.csv content: provenance "# key: value" lines, a header, one row per run.
std::string results_csv(const Provenance& p, const std::vector<RunRecord>& runs);

}  // namespace trainscope

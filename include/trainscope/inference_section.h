// The inference section of a run record (trainscope/record_sections.h): single-stream, offline and
// server scenarios, the max-QPS search and each scenario's telemetry (trainscope/inference.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/fields.h"  // Better, kLiteral, JsonText, OptD, OptI

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

/// Percentiles of one part of a single-stream query on a GPU (CUDA events).
struct SplitPart {
  OptD p50_ms, p99_ms, mean_ms;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("p50_ms", s.p50_ms, Better::kLower);
    v("p99_ms", s.p99_ms, Better::kLower);
    v("mean_ms", s.mean_ms, Better::kLower);
  }
};
struct LatencySplit {
  std::optional<SplitPart> h2d_ms, compute_ms, d2h_ms;
  std::string method;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("h2d_ms", s.h2d_ms, Better::kNone);
    v("compute_ms", s.compute_ms, Better::kNone);
    v("d2h_ms", s.d2h_ms, Better::kNone);
    v("method", s.method, Better::kNone);
  }
};

struct SingleStreamResult {
  LatencyFields latency;  // written flat into the scenario object
  int64_t warmup_queries = 0;
  double budget_s = 0, wall_s = 0;
  bool interrupted = false;
  std::optional<LatencySplit> split;
  ScenarioTelemetry telemetry;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    LatencyFields::fields(s.latency, v);
    v("warmup_queries", s.warmup_queries, Better::kNone);
    v("budget_s", s.budget_s, Better::kNone);
    v("wall_s", s.wall_s, Better::kNone);
    v("interrupted", s.interrupted, Better::kNone);
    v("split", s.split, Better::kNone);
    v("telemetry", s.telemetry, Better::kNone);
  }
};

struct OfflineBatch {
  int64_t batch_size = 0, batches = 0, samples = 0;
  OptD samples_per_s, wall_s;
  std::string error_kind, error;  // "out_of_memory" when the batch did not fit
  std::optional<ScenarioTelemetry> telemetry;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("batch_size", s.batch_size, Better::kNone);
    v("samples_per_s", s.samples_per_s, Better::kHigher);
    v("batches", s.batches, Better::kNone);
    v("samples", s.samples, Better::kNone);
    v("wall_s", s.wall_s, Better::kNone);
    v("error_kind", s.error_kind, Better::kNone);
    v("error", s.error, Better::kNone);
    v("telemetry", s.telemetry, Better::kNone);
  }
};

struct OfflineResult {
  std::vector<OfflineBatch> per_batch;
  double budget_s_per_batch = 0;
  OptD best_samples_per_s;
  OptI best_batch_size;
  bool interrupted = false;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("per_batch", s.per_batch, Better::kNone);
    v("budget_s_per_batch", s.budget_s_per_batch, Better::kNone);
    v("best_samples_per_s", s.best_samples_per_s, Better::kHigher);
    v("best_batch_size", s.best_batch_size, Better::kNone);
    v("interrupted", s.interrupted, Better::kNone);
  }
};

/// One server run at one rate: latency includes queueing (trainscope/inference.h).
struct ServerRun {
  LatencyFields latency;  // written flat
  double qps = 0, target_p99_ms = 0;
  OptD achieved_qps;
  int64_t queries_issued = 0, served = 0;
  bool meets_target = false, stopped_early = false, interrupted = false;
  std::string stop_reason;
  std::optional<ScenarioTelemetry> telemetry;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    LatencyFields::fields(s.latency, v);
    v("qps", s.qps, Better::kNone);
    v("target_p99_ms", s.target_p99_ms, Better::kNone);
    v("achieved_qps", s.achieved_qps, Better::kNone);
    v("queries_issued", s.queries_issued, Better::kNone);
    v("meets_target", s.meets_target, Better::kNone);
    v("served", s.served, Better::kNone);
    v("stopped_early", s.stopped_early, Better::kNone);
    v("stop_reason", s.stop_reason, Better::kNone);
    v("interrupted", s.interrupted, Better::kNone);
    v("telemetry", s.telemetry, Better::kNone);
  }
};

struct MaxQpsSearch {
  std::string method, absent_reason;
  double initial_upper_qps = 0;
  OptD max_qps_meeting_target, first_failing_qps;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("method", s.method, Better::kNone);
    v("initial_upper_qps", s.initial_upper_qps, Better::kNone);
    v("max_qps_meeting_target", s.max_qps_meeting_target, Better::kHigher);
    v("first_failing_qps", s.first_failing_qps, Better::kNone);
    v("absent_reason", s.absent_reason, Better::kNone);
  }
};

struct ServerResult {
  double target_p99_ms = 0, budget_s_per_rate = 0;
  int64_t max_batch = 1;
  std::string worker, arrivals;
  std::vector<ServerRun> runs;
  OptD qps;                                 // the configured rate (server_qps > 0)
  std::optional<bool> meets_target;         // at `qps`; absent when interrupted or not run
  std::optional<MaxQpsSearch> find_max_qps;
  OptD max_qps_meeting_target;
  bool interrupted = false;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("target_p99_ms", s.target_p99_ms, Better::kNone);
    v("max_batch", s.max_batch, Better::kNone);
    v("budget_s_per_rate", s.budget_s_per_rate, Better::kNone);
    v("worker", s.worker, Better::kNone);
    v("arrivals", s.arrivals, Better::kNone);
    v("runs", s.runs, Better::kNone);
    v("qps", s.qps, Better::kNone);
    v("meets_target", s.meets_target, Better::kNone);
    v("find_max_qps", s.find_max_qps, Better::kNone);
    v("max_qps_meeting_target", s.max_qps_meeting_target, Better::kHigher);
    v("interrupted", s.interrupted, Better::kNone);
  }
};

/// The record's inference section (trainscope/inference.h). error/error_kind set: it failed.
struct InferenceSection {
  std::string device, grad_mode, timer, percentile_method;
  /// How the forward passes ran: "eager", "cuda_graph_replay", or eager with the reason CUDA
  /// graphs were not used (src/infer/executor.h InferenceExecutor::execution lists the values).
  std::string execution;
  int64_t intra_op_threads = 0, inter_op_threads = 0, samples_in_pool = 0;
  bool eval_mode = false;
  std::vector<std::string> notes;
  std::optional<SingleStreamResult> single_stream;
  std::optional<OfflineResult> offline;
  std::optional<ServerResult> server;
  std::string error_kind, error;
  bool failed() const { return !error.empty() || !error_kind.empty(); }
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("device", s.device, Better::kNone);
    v("intra_op_threads", s.intra_op_threads, Better::kNone);
    v("inter_op_threads", s.inter_op_threads, Better::kNone);
    v("grad_mode", s.grad_mode, Better::kNone);
    v("eval_mode", s.eval_mode, Better::kNone);
    v("samples_in_pool", s.samples_in_pool, Better::kNone);
    v("timer", s.timer, Better::kNone);
    v("execution", s.execution, Better::kNone);
    v("percentile_method", s.percentile_method, Better::kNone);
    v("notes", s.notes, Better::kNone);
    v("single_stream", s.single_stream, Better::kNone);
    v("offline", s.offline, Better::kNone);
    v("server", s.server, Better::kNone);
    v("error_kind", s.error_kind, Better::kNone);
    v("error", s.error, Better::kNone);
  }
};

}  // namespace trainscope

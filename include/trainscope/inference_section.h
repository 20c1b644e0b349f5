// The inference section of a run record (trainscope/record_sections.h): single-stream, offline and
// server scenarios, the max-QPS search and each scenario's telemetry (trainscope/inference.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/fields.h"  // Better, kLiteral, JsonText, OptD, OptI
#include "trainscope/generation_section.h"
#include "trainscope/scenario_fields.h"  // ScenarioTelemetry, LatencyFields

namespace trainscope {

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
  /// A language model's token generation (trainscope/generation_section.h); absent otherwise.
  std::optional<GenerationSection> generation;
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
    v("generation", s.generation, Better::kNone);
    v("error_kind", s.error_kind, Better::kNone);
    v("error", s.error, Better::kNone);
  }
};

}  // namespace trainscope

// Inference measurements after training (or on a checkpoint): the scenarios of MLPerf
// Inference's LoadGen (Reddi et al. 2020, "MLPerf Inference Benchmark", section 3):
//
// * single-stream: one sample per query, the next query issued when the previous result is
//   on the host. Latency per query after `warmup_queries` untimed queries.
// * offline: every sample available at once; throughput (samples/s) at each batch size.
// * server: queries (one sample each) arrive as a Poisson process at `qps` (seeded exponential
//   inter-arrival times); a single worker serves them in arrival order (taking up to
//   `server_max_batch` waiting queries at once); latency = result on host - arrival, so it
//   includes queueing. The target is met when p99 <= target_p99_ms.
//
// Percentiles are exact: type 7 of Hyndman & Fan (1996) (linear interpolation between closest
// ranks, rank = p/100 * (n-1); NumPy's default), over every timed query (trainscope/stats.h).
// Fewer than `min_queries` timed queries sets "too_few_queries": true with a reason; the numbers
// are still reported, but flagged.
//
// JSON layout (RunRecord::inference and the runs of inference.json); units are in the names,
// a value that could not be measured is null/absent with a reason in "notes":
//   {"device", "intra_op_threads", "inter_op_threads", "grad_mode": "inference_mode"|"no_grad",
//    "eval_mode": true, "samples_in_pool", "timer": "steady_clock"|"cuda_events",
//    "execution": "eager"|"cuda_graph_replay"|"eager (<why CUDA graphs were not used>)",
//    "single_stream": {"queries", "warmup_queries", "budget_s", "wall_s", "p50_ms", "p90_ms",
//                      "p99_ms", "max_ms", "mean_ms", "too_few_queries", "too_few_reason",
//                      "split": {"h2d_ms": {p50_ms,p99_ms,mean_ms}, "compute_ms": {...},
//                                "d2h_ms": {...}} (GPU only), "telemetry": {...}},
//    "offline": {"per_batch": [{"batch_size", "samples_per_s", "batches", "samples", "wall_s",
//                               "telemetry"}], "best_samples_per_s", "best_batch_size"},
//    "server": {"qps", "target_p99_ms", "max_batch", "runs": [{"qps", "achieved_qps",
//               "queries", "p50_ms", "p90_ms", "p99_ms", "max_ms", "mean_ms", "meets_target",
//               "too_few_queries", ...}], "max_qps_meeting_target" (with find_max_qps)},
//    "notes": [...]}
//   telemetry: {"device", "power_w_mean", "energy_j", "joules_per_sample", "energy_method"} or
//   {"absent_reason": "..."}.
#pragma once

#include <atomic>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/record_sections.h"

namespace trainscope {

/// What to measure (the CLI and the matrix fill it from InferenceConfig and flags).
struct InferenceOptions {
  bool single_stream = true, offline = true, server = false;
  double single_stream_budget_s = 2.0;  // timed part; a hard stop at 5x the budget
  int64_t min_queries = 200;            // fewer timed queries: too_few_queries
  int64_t warmup_queries = 20;          // untimed, before each scenario
  std::vector<int64_t> offline_batch_sizes = {1, 64, 256};
  double offline_budget_s = 1.0;        // per batch size
  double server_qps = 0;                // >0: run the server scenario at this rate
  double server_target_p99_ms = 10;
  double server_budget_s = 2.0;         // per rate: queries = max(min_queries, qps * budget)
  int64_t server_max_batch = 1;         // queries the worker may take at once
  bool find_max_qps = false;            // bisection over the rate for the highest passing one
  uint64_t seed = 42;                   // arrival process
  /// CUDA devices: capture the forward once per batch size as a CUDA graph and replay it (the
  /// record's `execution` says what ran); ignored on the CPU ("not applicable on cpu").
  bool cuda_graphs = false;
  /// Ctrl-C (may be null): every scenario checks it between queries (and while waiting for an
  /// arrival, at least every 50 ms) and ends early; the result then says "interrupted": true.
  const std::atomic<bool>* stop_requested = nullptr;
  /// A sign of progress (may be empty): called wherever stop_requested is checked, so between
  /// queries; a stall watch restarts its timeout there (src/dist/stall.h).
  std::function<void()> on_progress;
  /// Server scenario: one rate ends after max(5 x server_budget_s, kServerMinCapS) seconds even
  /// when fewer than min_queries were served (then too_few_queries says so).
  static constexpr double kServerMinCapS = 30;
};

/// Latency percentiles of one scenario (milliseconds; trainscope/record_sections.h
/// LatencyFields: queries, p50/p90/p99/max/mean_ms, too_few_queries, too_few_reason).
using LatencySummary = LatencyFields;

/// Summarises latencies (ms, any order) by exact type-7 percentiles. Empty input gives absent
/// values and too_few_queries. `min_queries` below 1 is treated as 1.
LatencySummary summarize_latencies(const std::vector<double>& latencies_ms, int64_t min_queries);

/// Arrival times (seconds from 0, increasing) of `count` queries of a Poisson process with
/// rate `qps` (> 0): cumulative sums of exponential(qps) inter-arrival times drawn from a
/// mt19937_64 seeded with `seed`. Throws Error(kInvalidArgument) for qps <= 0 or count < 0.
std::vector<double> poisson_arrivals(double qps, int64_t count, uint64_t seed);

/// Result of a server run from per-query arrival and completion times (s): latency includes
/// queueing. Exposed so tests can check the arithmetic without a clock.
ServerRun server_summary(double qps, const std::vector<double>& arrival_s, const std::vector<double>& done_s,
                         double target_p99_ms, int64_t min_queries);

}  // namespace trainscope

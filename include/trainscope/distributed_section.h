// The data-parallel section of a run record (trainscope/record_sections.h): every rank's figures
// and their imbalance (docs/distributed.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/fields.h"  // Better, kLiteral, JsonText, OptD, OptI

namespace trainscope {

// Data-parallel runs (docs/distributed.md; filled by src/dist/). Times are host steady-clock
// ms per optimizer step, means over the steps after the warm-up steps.

/// One rank's own figures. comm_ms: from the first gradient bucket's all-reduce launch to the
/// last bucket's completion; comm_overlap_ms: the part of that before backward() returned;
/// comm_wait_ms: the time the rank waited for the all-reduces after backward() returned (the
/// exposed communication). On NCCL ranks completion is not seen by the host, so comm_ms and
/// comm_overlap_ms are null and comm_wait_ms is the host wait.
struct RankSummary {
  int64_t rank = 0, local_rank = 0;
  std::string host, device, telemetry_device;
  std::string status;          // "ok", "failed", "interrupted", "missing" (no record reached rank 0)
  std::string failure_reason;  // "" when ok
  int64_t steps_completed = 0;
  OptD steady_samples_per_s, step_ms, forward_ms, backward_ms, optimizer_ms;
  OptD comm_ms, comm_overlap_ms, comm_wait_ms;
  OptD power_w_mean, util_pct_mean, sm_activity_pct_mean, mem_used_bytes_max;  // its telemetry headline
  template <class S, class V>
  static void fields(S& s, V&& v) {
    constexpr Better H = Better::kHigher, L = Better::kLower, N = Better::kNone;
    v("rank", s.rank, N);
    v("local_rank", s.local_rank, N);
    v("host", s.host, N);
    v("device", s.device, N);
    v("telemetry_device", s.telemetry_device, N);
    v("status", s.status, N);
    v("failure_reason", s.failure_reason, N);
    v("steps_completed", s.steps_completed, N);
    v("steady_samples_per_s", s.steady_samples_per_s, H);
    v("step_ms", s.step_ms, L);
    v("forward_ms", s.forward_ms, L);
    v("backward_ms", s.backward_ms, L);
    v("optimizer_ms", s.optimizer_ms, L);
    v("comm_ms", s.comm_ms, L);
    v("comm_overlap_ms", s.comm_overlap_ms, H);
    v("comm_wait_ms", s.comm_wait_ms, L);
    v("power_w_mean", s.power_w_mean, N);
    v("util_pct_mean", s.util_pct_mean, N);
    v("sm_activity_pct_mean", s.sm_activity_pct_mean, N);
    v("mem_used_bytes_max", s.mem_used_bytes_max, N);
  }
};

/// The data-parallel section of a run record (rank 0's record holds every rank).
/// Imbalance ratios are max/min over the ranks that reported the figure (1 = balanced).
/// comm_share_pct = mean over ranks of comm_wait_ms / step_ms x 100 (the exposed share).
/// global_samples_per_s = sum of the ranks' steady samples/s.
struct DistributedSection {
  std::string backend;         // "gloo" | "nccl"
  std::string launcher;        // "trainscope" | "torchrun" | "slurm" | "env"
  int64_t world_size = 1, local_world_size = 1;
  double bucket_mb = 0;        // gradient bucket cap, MB (1e6 bytes)
  int64_t buckets = 0;         // gradient buckets of the model
  int64_t shard_samples = 0;   // training samples per rank per epoch (padded: docs/distributed.md)
  std::vector<RankSummary> ranks;
  OptD global_samples_per_s, step_time_imbalance, power_imbalance, util_imbalance, memory_imbalance;
  OptD comm_share_pct;
  /// global_samples_per_s / (world_size x the steady samples/s of a one-process run of the same
  /// model, per-rank batch size, device kind and data set) x 100, the newest such run in the
  /// history database (scaling_baseline names it: "<run folder>: <run id>"); null without one.
  OptD scaling_efficiency_pct;
  std::string scaling_baseline;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    constexpr Better H = Better::kHigher, L = Better::kLower, N = Better::kNone;
    v("backend", s.backend, N);
    v("launcher", s.launcher, N);
    v("world_size", s.world_size, N);
    v("local_world_size", s.local_world_size, N);
    v("bucket_mb", s.bucket_mb, N);
    v("buckets", s.buckets, N);
    v("shard_samples", s.shard_samples, N);
    v("ranks", s.ranks, N);
    v("global_samples_per_s", s.global_samples_per_s, H);
    v("step_time_imbalance", s.step_time_imbalance, L);
    v("power_imbalance", s.power_imbalance, L);
    v("util_imbalance", s.util_imbalance, L);
    v("memory_imbalance", s.memory_imbalance, L);
    v("comm_share_pct", s.comm_share_pct, L);
    v("scaling_efficiency_pct", s.scaling_efficiency_pct, H);
    v("scaling_baseline", s.scaling_baseline, N);
  }
};

}  // namespace trainscope

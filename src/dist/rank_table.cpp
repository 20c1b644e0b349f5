#include "dist/rank_table.h"

#include <fmt/format.h>

#include "common/text.h"

namespace trainscope {
namespace dist {

namespace {

// A table cell: the figure in `fmt_spec`, or "—" when it was not measured.
std::string cell(const std::optional<double>& v, const char* fmt_spec = "{:.2f}") {
  return v ? fmt::format(fmt::runtime(fmt_spec), *v) : "—";
}

std::string rank_line(const RankSummary& k) {
  return fmt::format("{:>4}  {:<14} {:<8} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>6}  {}\n", k.rank,
                     k.host.substr(0, 14), k.device, k.steady_samples_per_s ? format_rate(*k.steady_samples_per_s) : "—",
                     cell(k.step_ms), cell(k.forward_ms), cell(k.backward_ms), cell(k.optimizer_ms), cell(k.comm_ms),
                     cell(k.comm_overlap_ms), cell(k.comm_wait_ms), cell(k.power_w_mean, "{:.0f}"),
                     cell(k.util_pct_mean, "{:.0f}"),
                     k.status == "ok" ? "ok" : k.status + (k.failure_reason.empty() ? "" : ": " + k.failure_reason));
}

}  // namespace

std::string format_rank_table(const RunRecord& r) {
  if (!r.distributed) return "";
  const DistributedSection& d = *r.distributed;
  std::string out = fmt::format("ranks of {} ({}, {} rank(s), {} gradient bucket(s) of <= {} MB; ms per step):\n",
                                r.run_id, d.backend, d.world_size, d.buckets, d.bucket_mb);
  out += fmt::format("{:>4}  {:<14} {:<8} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>6}  {}\n", "rank",
                     "host", "device", "samples/s", "step", "forward", "backward", "optim", "comm", "overlap",
                     "wait", "power W", "util %", "status");
  for (const auto& k : d.ranks) out += rank_line(k);
  out += fmt::format("imbalance max/min: step time {}, power {}, utilisation {}, memory {}; exposed communication {} % "
                     "of the step; all ranks {} samples/s\n",
                     cell(d.step_time_imbalance), cell(d.power_imbalance), cell(d.util_imbalance),
                     cell(d.memory_imbalance), cell(d.comm_share_pct, "{:.1f}"),
                     d.global_samples_per_s ? format_rate(*d.global_samples_per_s) : "—");
  if (d.scaling_efficiency_pct)
    out += fmt::format("scaling efficiency {:.1f} % of {} x the one-process run {}\n", *d.scaling_efficiency_pct,
                       d.world_size, d.scaling_baseline);
  return out;
}

bool is_scaling_baseline(const RunRecord& candidate, const RunRecord& run) {
  const auto& b = candidate;
  return b.status == RunStatus::kOk && b.world_size == 1 && b.steady_samples_per_s && *b.steady_samples_per_s > 0 &&
         b.model == run.model && b.batch_size == run.batch_size && b.variant == run.variant && b.dataset == run.dataset &&
         (b.device == "cpu") == (run.device == "cpu") &&
         (run.device != "cpu" || b.intra_op_threads == run.intra_op_threads || b.intra_op_threads == 0 ||
          run.intra_op_threads == 0);
}

}  // namespace dist
}  // namespace trainscope

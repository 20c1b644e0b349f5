// finish_run_record (dist/context.h): a rank's summary of a run, gathered on rank 0, and the
// figures across ranks (definitions: record_sections.h DistributedSection, docs/distributed.md).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "dist/context.h"
#include "dist/rank_table.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/history.h"

namespace trainscope {
namespace dist {

namespace {

std::string this_host() {
  char host[256] = "";
  ::gethostname(host, sizeof(host));
  return host;
}

RankSummary summary_of(const RunRecord& rec, const Context& c) {
  RankSummary s;
  if (rec.distributed && !rec.distributed->ranks.empty()) s = rec.distributed->ranks.front();  // comm figures
  s.rank = c.rank();
  s.local_rank = c.env().local_rank;
  s.host = this_host();
  s.device = rec.device;
  s.status = to_string(rec.status);
  s.failure_reason = rec.failure_reason;
  s.steps_completed = rec.steps_completed;
  s.steady_samples_per_s = rec.steady_samples_per_s;
  if (rec.phases) {
    s.step_ms = rec.phases->step_ms;
    s.forward_ms = rec.phases->forward_ms;
    s.backward_ms = rec.phases->backward_ms;
    s.optimizer_ms = rec.phases->optimizer_ms;
  }
  if (rec.telemetry) {
    const auto& h = rec.telemetry->headline;
    s.telemetry_device = h.device;
    s.power_w_mean = h.power_w_mean;
    s.util_pct_mean = h.util_pct_mean;
    s.sm_activity_pct_mean = h.sm_activity_pct_mean;
    s.mem_used_bytes_max = h.mem_used_bytes_max;
  }
  return s;
}

// max/min of a figure over the ranks that have it (null with fewer than two, or a zero minimum).
template <class F>
std::optional<double> imbalance(const std::vector<RankSummary>& ranks, F get) {
  std::vector<double> v;
  for (const auto& r : ranks)
    if (auto x = get(r)) v.push_back(*x);
  if (v.size() < 2) return std::nullopt;
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return *lo > 0 ? std::optional<double>(*hi / *lo) : std::nullopt;
}

void across_ranks(DistributedSection& d) {
  const auto& rs = d.ranks;
  d.step_time_imbalance = imbalance(rs, [](const RankSummary& r) { return r.step_ms; });
  d.power_imbalance = imbalance(rs, [](const RankSummary& r) { return r.power_w_mean; });
  d.util_imbalance = imbalance(rs, [](const RankSummary& r) { return r.util_pct_mean; });
  d.memory_imbalance = imbalance(rs, [](const RankSummary& r) { return r.mem_used_bytes_max; });
  double sps = 0, share = 0;
  int n_sps = 0, n_share = 0;
  for (const auto& r : rs) {
    if (r.steady_samples_per_s) sps += *r.steady_samples_per_s, ++n_sps;
    if (r.comm_wait_ms && r.step_ms && *r.step_ms > 0) share += 100.0 * *r.comm_wait_ms / *r.step_ms, ++n_share;
  }
  if (n_sps == static_cast<int>(rs.size())) d.global_samples_per_s = sps;
  if (n_share > 0) d.comm_share_pct = share / n_share;
}

// The newest one-process run of the same model, per-rank batch, device kind and data set in the
// history database; scaling efficiency against it (record_sections.h).
void scaling_from_history(const std::string& db, const RunRecord& rec, DistributedSection& d) {
  if (db.empty() || !file_exists(db) || !d.global_samples_per_s) return;
  try {
    HistoryDb h(db);
    for (const auto& row : h.list(500)) {  // newest first
      if (row.status != "ok" || row.model != rec.model || row.batch_size != rec.batch_size) continue;
      auto in = h.load_run(row.id);
      if (in.runs.empty() || !is_scaling_baseline(in.runs.front(), rec)) continue;
      if (!in.provenance.host.empty() && in.provenance.host != this_host()) continue;  // another machine
      const RunRecord& b = in.runs.front();
      d.scaling_efficiency_pct =
          100.0 * *d.global_samples_per_s / (static_cast<double>(d.world_size) * *b.steady_samples_per_s);
      d.scaling_baseline = row.run_dir + ": " + row.run_id;
      return;
    }
  } catch (const std::exception&) {
    // no usable history: the efficiency stays null
  }
}

}  // namespace

void finish_run_record(RunRecord& rec) {
  Context* c = current();
  if (!c) return;
  DistributedSection d = rec.distributed.value_or(DistributedSection{});
  d.backend = c->backend();
  d.launcher = c->env().launcher;
  d.world_size = c->world();
  d.local_world_size = c->env().local_world_size;
  d.bucket_mb = c->config().bucket_mb;
  try {
    d.ranks = c->gather(rec.run_id, summary_of(rec, *c));
  } catch (const std::exception& e) {  // the store is gone: keep this rank's own figures
    d.ranks = {summary_of(rec, *c)};
    rec.notes.push_back(fmt::format("the other ranks' figures are absent: {}", e.what()));
  }
  rec.world_size = c->world();
  if (c->rank() == 0) {
    across_ranks(d);
    scaling_from_history(c->history_db, rec, d);
    for (const auto& r : d.ranks)
      if (r.status != "ok" && rec.status == RunStatus::kOk) {
        rec.status = RunStatus::kFailed;
        rec.error_kind = std::string(to_string(ErrorKind::kDistributed));
        rec.failure_reason = fmt::format("rank {} {}: {}", r.rank, r.status, r.failure_reason);
      }
  }
  rec.distributed = std::move(d);
}

}  // namespace dist
}  // namespace trainscope

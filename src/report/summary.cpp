// The report's opening: batch-size scaling (the sweep rule of trainscope/batch_sweep.h replayed on
// the measured cells), one-line verdicts per cell, and advice grouped one item per rule.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "report/report_util.h"
#include "trainscope/batch_sweep.h"

namespace trainscope {

using namespace report_detail;

std::vector<AdviceItem> group_advice(const std::vector<Advice>& advice) {
  std::vector<AdviceItem> out;
  for (const auto& x : advice) {
    auto it = std::find_if(out.begin(), out.end(), [&](const AdviceItem& i) { return i.rule == x.rule; });
    if (it == out.end()) it = out.insert(out.end(), AdviceItem{x.rule, {}, {}});
    if (std::find(it->advice.begin(), it->advice.end(), x.advice) == it->advice.end()) it->advice.push_back(x.advice);
    it->fired_on.push_back(x.evidence);
  }
  return out;
}

namespace report_detail {

namespace {

// The failed runs of a cell's (host, device, workload): out of memory, and the first reason.
void failures_of(const ReportInput& in, const Cell& c, BatchSweepPoint& p) {
  for (size_t i = 0; i < in.runs.size(); ++i) {
    const RunRecord& r = in.runs[i];
    if (r.status != RunStatus::kFailed || r.device != c.device || !(workload_of(r) == c.workload) ||
        provenance_of(in, i).host != c.host)
      continue;
    if (r.error_kind == "out_of_memory") p.out_of_memory = true;
    if (p.failure.empty()) p.failure = r.failure_reason.empty() ? r.error_kind : r.failure_reason;
  }
}

}  // namespace

void build_batch_scaling(const ReportInput& in, const AdviceThresholds& t, Analysis& a) {
  BatchSweepRule rule;
  rule.min_gain_pct = t.batch_gain_pct;
  for (const auto& series : batch_series(a)) {
    if (series.size() < 2) continue;
    BatchScaling s;
    s.host = series.front()->host;
    s.device = series.front()->device;
    s.model = series.front()->model;
    std::vector<BatchSweepPoint> points;
    BatchSweepStep step;
    for (const Cell* c : series) {
      BatchSweepPoint p;
      p.batch_size = c->batch_size;
      if (c->samples_per_s.ok()) p.samples_per_s = c->samples_per_s.median;
      failures_of(in, *c, p);
      // Runs that finished with every step inside the warm-up: the sweep rule's data-set stop.
      p.too_few_steps = !p.samples_per_s && c->runs_ok > 0;
      if (p.too_few_steps && p.failure.empty()) p.failure = "every step inside the warm-up";
      s.absent.push_back(p.samples_per_s ? "" : p.too_few_steps ? "no steady steps" : "failed");
      points.push_back(p);
      s.batch_sizes.push_back(c->batch_size);
      s.samples_per_s.push_back(p.samples_per_s);
      s.test_accuracy_pct.push_back(c->test_accuracy_pct.ok() ? std::optional<double>(c->test_accuracy_pct.median)
                                                              : std::nullopt);
      // Replays the sweep over the measured batches: the first stop is the sweep's stop.
      if (step.stop_kind.empty()) step = next_batch_size(points, rule, points.front().batch_size);
    }
    if (!step.stop_kind.empty() && step.stop_kind != "data_set" && step.stop_kind != "limit") s.stop_reason = step.stop_reason;
    s.saturation_batch = saturation_batch(points, rule);
    a.batch_scaling.push_back(std::move(s));
  }
}

namespace {

std::string verdict_of(const AdviceThresholds& t, const Analysis& a, const Cell& c) {
  if (c.runs_ok == 0 && c.runs_failed == 0 && c.runs_not_applicable > 0) return c.not_applicable;
  if (c.runs_ok == 0 && c.runs_interrupted == c.runs_failed)  // Ctrl-C is no failure of the cell
    return c.runs_failed == 1 ? std::string("its run was interrupted before it ended")
                              : fmt::format("all {} runs were interrupted before they ended", c.runs_failed);
  if (c.runs_ok == 0) return c.runs_failed == 1 ? std::string("its run failed") : fmt::format("all {} runs failed", c.runs_failed);
  if (!c.samples_per_s.ok()) return "no steady throughput measured";
  double best = 0;
  const Cell* fastest = nullptr;
  std::optional<double> least_energy;
  int measured = 0;  // cells of the model with a steady throughput
  for (const auto& o : a.cells) {
    if (o.model != c.model || o.runs_ok == 0 || !o.samples_per_s.ok()) continue;
    ++measured;
    if (o.samples_per_s.median > best) best = o.samples_per_s.median, fastest = &o;
    if (o.energy_per_sample_j.ok() && (!least_energy || o.energy_per_sample_j.median < *least_energy))
      least_energy = o.energy_per_sample_j.median;
  }
  std::string v;
  if (measured == 1)  // nothing to be fastest against (e.g. a CPU-only variant's one row)
    v = fmt::format("the only cell measured for `{}`", c.model);
  else if (fastest == &c)
    v = fmt::format("fastest for `{}`", c.model);
  else if (fastest && within_noise(c.samples_per_s, fastest->samples_per_s))
    v = "within noise of the fastest";
  else
    v = fmt::format("{}× slower than {} b{}", fmt_num(best / c.samples_per_s.median), where_label(a, *fastest),
                    fastest->batch_size);
  const ShownSpeedup sp = shown_speedup(a, c.device, c.model, c.batch_size, c.host);
  if (!sp.baseline && sp.value && *sp.value < 1 && !sp.noise) v += "; slower than the CPU";
  if (c.energy_per_sample_j.ok() && least_energy && c.energy_per_sample_j.median <= *least_energy)
    v += "; least energy/sample";
  if (is_gpu(c.device) && c.sm_activity_pct_mean.ok() && c.sm_activity_pct_mean.median < t.low_sm_activity_pct)
    v += fmt::format("; GPU mostly idle (SM {} %)", fmt_num(c.sm_activity_pct_mean.median));
  return v;
}

}  // namespace

void build_verdicts(const AdviceThresholds& t, Analysis& a) {
  for (auto& c : a.cells) c.verdict = verdict_of(t, a, c);
}

}  // namespace report_detail

}  // namespace trainscope

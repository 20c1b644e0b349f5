// The batch-size sweep rule of `--batch-sizes auto` (trainscope/batch_sweep.h).
#include "trainscope/batch_sweep.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/text.h"

namespace trainscope {

std::optional<int64_t> saturation_batch(const std::vector<BatchSweepPoint>& done, const BatchSweepRule& rule) {
  double best = 0;
  for (const auto& p : done)
    if (p.samples_per_s) best = std::max(best, *p.samples_per_s);
  if (!(best > 0)) return std::nullopt;
  std::optional<int64_t> out;
  for (const auto& p : done)
    if (p.samples_per_s && *p.samples_per_s >= best / (1 + rule.min_gain_pct / 100) && (!out || p.batch_size < *out))
      out = p.batch_size;
  return out;
}

namespace {

BatchSweepStep stop(const std::vector<BatchSweepPoint>& done, const BatchSweepRule& rule, std::string kind,
                    std::string reason) {
  BatchSweepStep s;
  s.stop_kind = std::move(kind);
  s.stop_reason = std::move(reason);
  s.saturation_batch = saturation_batch(done, rule);
  return s;
}

}  // namespace

BatchSweepStep next_batch_size(const std::vector<BatchSweepPoint>& done, const BatchSweepRule& rule, int64_t start) {
  BatchSweepStep s;
  if (done.empty()) {
    s.next = std::max<int64_t>(start, 1);
    return s;
  }
  const BatchSweepPoint& last = done.back();
  if (last.out_of_memory)
    return stop(done, rule, "memory", fmt::format("memory ran out at batch {} ({})", last.batch_size, last.failure));
  if (!last.samples_per_s && last.too_few_steps)
    return stop(done, rule, "data_set",
                fmt::format("the data set ran out of steady steps: the run at batch {} trained {} (no steady "
                            "throughput), and a larger batch leaves fewer steps",
                            last.batch_size, last.failure));
  if (!last.samples_per_s)
    return stop(done, rule, "failed",
                fmt::format("the run at batch {} failed ({})", last.batch_size,
                            last.failure.empty() ? "no steady throughput measured" : last.failure));
  if (done.size() >= 2 && done[done.size() - 2].samples_per_s && *done[done.size() - 2].samples_per_s > 0) {
    const BatchSweepPoint& prev = done[done.size() - 2];
    const double gain = (*last.samples_per_s / *prev.samples_per_s - 1) * 100;
    if (gain < rule.min_gain_pct)
      return stop(done, rule, "saturated",
                  fmt::format("throughput stopped rising: batch {} gave {} samples/s, {}{} % over batch {} ({} "
                              "samples/s), below the {} % a doubling must gain",
                              last.batch_size, format_number(*last.samples_per_s), gain >= 0 ? "+" : "",
                              format_number(gain), prev.batch_size, format_number(*prev.samples_per_s),
                              format_number(rule.min_gain_pct)));
  }
  const int64_t next = last.batch_size * 2;
  if (rule.train_samples > 0 && next > rule.train_samples)
    return stop(done, rule, "data_set",
                fmt::format("the data set ran out: batch {} would exceed the {} training samples", next,
                            rule.train_samples));
  if (next > rule.max_batch)
    return stop(done, rule, "limit",
                fmt::format("batch {} would exceed batch_sweep.max_batch ({})", next, rule.max_batch));
  s.next = next;
  return s;
}

BatchSweepResult run_batch_sweep(int64_t start, const BatchSweepRule& rule,
                                 const std::function<BatchSweepPoint(int64_t)>& measure) {
  BatchSweepResult r;
  for (r.last = next_batch_size(r.points, rule, start); r.last.next; r.last = next_batch_size(r.points, rule, start)) {
    BatchSweepPoint p = measure(*r.last.next);
    if (p.batch_size == 0) break;  // interrupted: the step still names the batch it wanted
    r.points.push_back(std::move(p));
  }
  return r;
}

}  // namespace trainscope

// Steps extended to the GPU work their runtime calls launched (kineto tb_plugin,
// torch_tb_profiler/profiler/step_parser.py, _update_steps_consider_device_side), from the
// correlations sorter: runtime calls and GPU events meet there by correlation id, so no index
// over all events is held.
#include <fmt/core.h>

#include <algorithm>
#include <climits>

#include "trace/streams.h"

namespace trainscope::trace {
namespace {

// The step whose host span holds a runtime call, as the plugin's two-way merge assigns it: the
// calls, by start, go to the first step whose end (or an earlier step's) is after their start,
// and count only when they lie wholly inside that step.
class StepOfCall {
 public:
  explicit StepOfCall(const std::vector<Step>& steps) : steps_(steps) {
    int64_t hi = LLONG_MIN;
    for (const Step& s : steps) ends_.push_back(hi = std::max(hi, s.end_ns));
  }
  // The step's index, or -1 when the call lies in none.
  int operator()(int64_t ts, int64_t end) const {
    const auto it = std::upper_bound(ends_.begin(), ends_.end(), ts);
    if (it == ends_.end()) return -1;
    const auto i = static_cast<size_t>(it - ends_.begin());
    return ts < steps_[i].start_ns || end > steps_[i].end_ns ? -1 : static_cast<int>(i);
  }

 private:
  const std::vector<Step>& steps_;
  std::vector<int64_t> ends_;  // the largest end of the steps up to each
};

// One correlation id's records as they pass: its first runtime call's start, the steps its
// runtime calls lie in, and its GPU work.
struct Group {
  int64_t corr = 0;
  int64_t runtime_ts = kNoRuntime;
  std::vector<int> steps;
  Launched gpu;
};

void close_group(const Group& g, DeviceWork& w) {
  if (g.corr < 0 || g.gpu.count == 0 || g.steps.empty()) return;
  for (int i : g.steps) {
    Launched& l = w.per_step[static_cast<size_t>(i)];
    l.start = std::min(l.start, g.gpu.start), l.end = std::max(l.end, g.gpu.end), l.count += g.gpu.count;
  }
  ++w.matched;
}

// The end of the GPU work of correlations no step launched that ended before `first_gpu` (a
// second pass over the correlations sorter).
int64_t unmatched_before(TraceStreams& s, const StepOfCall& step_of, int64_t first_gpu) {
  int64_t end = LLONG_MIN, corr = 0;
  bool any = false, matched = false;
  auto in = s.correlations.read();
  for (CorrRec r{}; in.next(r);) {
    if (!any || r.corr != corr) corr = r.corr, matched = false, any = true;
    if (r.runtime) matched = matched || step_of(r.ts, r.end) >= 0;
    else if (!(matched && corr >= 0) && r.end < first_gpu) end = std::max(end, r.end);
  }
  return end;
}

// The plugin drops trailing steps without GPU work, and the last one with GPU work when it
// launched fewer than 80 % of the events of the step before it (the profiler may have missed
// its kernels).
size_t steps_to_keep(const std::vector<Launched>& dev) {
  size_t i = dev.size();
  while (i > 0 && dev[i - 1].count == 0) --i;
  if (i == 0) return dev.size();
  size_t keep = i;
  if (i >= 2 && dev[i - 2].count * 0.8 > dev[i - 1].count) keep = i - 1;
  return keep;
}

}  // namespace

DeviceWork join_correlations(TraceStreams& s, const std::vector<Step>& steps) {
  DeviceWork w;
  w.per_step.resize(steps.size());
  const StepOfCall step_of(steps);
  Group g;
  bool any = false;
  auto in = s.correlations.read();
  for (CorrRec r{}; in.next(r);) {
    if (!any || r.corr != g.corr) {
      if (any) close_group(g, w);
      g = Group{r.corr, kNoRuntime, {}, {}};
      any = true;
    }
    if (r.runtime) {
      if (g.runtime_ts == kNoRuntime) g.runtime_ts = r.ts;
      if (const int i = step_of(r.ts, r.end); i >= 0) g.steps.push_back(i);
      continue;
    }
    g.gpu.start = std::min(g.gpu.start, r.ts), g.gpu.end = std::max(g.gpu.end, r.end), ++g.gpu.count;
    s.idle.add(IdleRec{r.stream, r.ts, r.end, r.corr >= 0 ? g.runtime_ts : kNoRuntime, r.seq, r.device});
  }
  if (any) close_group(g, w);
  return w;
}

std::vector<Step> device_steps(std::vector<Step> steps, const DeviceWork& work, TraceStreams& s,
                               std::vector<std::string>& notes) {
  if (steps.empty()) return steps;
  if (steps.size() == 1 && steps[0].name == "0") notes.push_back("no ProfilerStep#N annotations: one step over the whole trace");
  if (work.matched == 0) return steps;
  const std::vector<Launched>& dev = work.per_step;
  int64_t prev_end = steps[0].start_ns;
  if (dev[0].count > 0) prev_end = std::max(prev_end, unmatched_before(s, StepOfCall(steps), dev[0].start));
  for (size_t i = 0; i < steps.size(); ++i) {
    const int64_t start = std::max(prev_end, steps[i].start_ns);
    const int64_t end = std::max({steps[i].end_ns, dev[i].count ? dev[i].end : int64_t{LLONG_MIN}, start});
    steps[i].start_ns = start, steps[i].end_ns = end;
    prev_end = end;
  }
  if (const size_t keep = steps.size() > 1 ? steps_to_keep(dev) : steps.size(); keep < steps.size()) {
    notes.push_back(fmt::format("left out the last {} step(s): they launched no or too little GPU work (the "
                                "profiler may have missed their kernels)",
                                steps.size() - keep));
    steps.resize(keep);
  }
  return steps;
}

}  // namespace trainscope::trace

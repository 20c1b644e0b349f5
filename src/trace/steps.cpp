// Steps and their breakdown into the profiler plugin's categories (kineto tb_plugin,
// torch_tb_profiler/profiler/step_parser.py and overall_parser.py).
#include <algorithm>
#include <climits>
#include <fmt/core.h>
#include <unordered_map>
#include <unordered_set>

#include "trace/analysis.h"

namespace trainscope::trace {
namespace {

bool is_host(Kind k) { return k == Kind::kOperator || k == Kind::kDataLoader || k == Kind::kPython || k == Kind::kStep; }

// The host-side steps, sorted; one step "0" over all host events when there are no annotations.
std::vector<Step> host_steps(const EventStore& store) {
  std::vector<Step> steps;
  int64_t lo = LLONG_MAX, hi = LLONG_MIN;
  for (const Event& e : store.events) {
    if (e.kind == Kind::kStep) steps.push_back(Step{store.names[e.name], e.ts_ns, e.end_ns(), {}});
    if (is_host(e.kind)) lo = std::min(lo, e.ts_ns), hi = std::max(hi, e.end_ns());
  }
  if (steps.empty() && lo <= hi) steps.push_back(Step{"0", lo, hi, {}});
  std::stable_sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.start_ns < b.start_ns; });
  return steps;
}

// GPU work per correlation id: first start, last end, count.
struct Launched {
  int64_t start = LLONG_MAX, end = LLONG_MIN;
  int count = 0;
};

// Per step: the GPU work launched by runtime calls lying wholly inside its host span (the
// plugin's two-way merge); `matched` gets the correlations used.
std::vector<Launched> device_spans(const EventStore& store, const std::vector<Step>& steps,
                                   std::unordered_set<int64_t>& matched) {
  std::unordered_map<int64_t, Launched> by_corr;
  for (const Event& e : store.events) {
    if (!is_gpu(e.kind) || e.correlation < 0) continue;
    Launched& l = by_corr[e.correlation];
    l.start = std::min(l.start, e.ts_ns), l.end = std::max(l.end, e.end_ns()), ++l.count;
  }
  std::vector<const Event*> runtime;
  for (const Event& e : store.events)
    if (e.kind == Kind::kRuntime) runtime.push_back(&e);
  std::sort(runtime.begin(), runtime.end(), [](const Event* a, const Event* b) { return a->ts_ns < b->ts_ns; });
  std::vector<Launched> out(steps.size());
  size_t r = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    while (r < runtime.size() && runtime[r]->ts_ns < steps[i].end_ns) {
      const Event& rt = *runtime[r++];
      if (rt.ts_ns < steps[i].start_ns || rt.end_ns() > steps[i].end_ns) continue;
      auto it = by_corr.find(rt.correlation);
      if (rt.correlation < 0 || it == by_corr.end()) continue;
      out[i].start = std::min(out[i].start, it->second.start), out[i].end = std::max(out[i].end, it->second.end);
      out[i].count += it->second.count;
      matched.insert(rt.correlation);
    }
  }
  return out;
}

// The end of GPU work launched outside every step that ended before the first step's GPU work.
int64_t unmatched_before(const EventStore& store, const std::unordered_set<int64_t>& matched, int64_t first_gpu) {
  int64_t end = LLONG_MIN;
  for (const Event& e : store.events)
    if (is_gpu(e.kind) && !matched.count(e.correlation) && e.end_ns() < first_gpu) end = std::max(end, e.end_ns());
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

std::vector<Step> find_steps(const EventStore& store, std::vector<std::string>& notes) {
  std::vector<Step> steps = host_steps(store);
  if (steps.empty()) return steps;
  if (steps.size() == 1 && steps[0].name == "0") notes.push_back("no ProfilerStep#N annotations: one step over the whole trace");
  std::unordered_set<int64_t> matched;
  const std::vector<Launched> dev = device_spans(store, steps, matched);
  if (matched.empty()) return steps;
  int64_t prev_end = steps[0].start_ns;
  if (dev[0].count > 0) prev_end = std::max(prev_end, unmatched_before(store, matched, dev[0].start));
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

std::vector<bool> communication_names(const EventStore& store) {
  std::vector<bool> comm(store.names.size(), false);
  for (size_t i = 0; i < store.names.size(); ++i) {
    std::string n = store.names[i];
    for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    comm[i] = n.find("nccl") != std::string::npos;
  }
  return comm;
}

RoleRanges role_ranges(const EventStore& store, const std::vector<bool>& comm) {
  RoleRanges roles;
  auto add = [&](Category c, const Event& e) { roles[static_cast<int>(c)].emplace_back(e.ts_ns, e.end_ns()); };
  for (const Event& e : store.events) {
    switch (e.kind) {
      case Kind::kKernel: add(comm[e.name] ? Category::kCommunication : Category::kKernel, e); break;
      case Kind::kMemcpy: add(Category::kMemcpy, e); break;
      case Kind::kMemset: add(Category::kMemset, e); break;
      case Kind::kRuntime: add(Category::kRuntime, e); break;
      case Kind::kDataLoader: add(Category::kDataLoader, e); break;
      case Kind::kOperator:
      case Kind::kPython: add(Category::kCpuExec, e); break;
      case Kind::kStep: break;
    }
  }
  for (Ranges& r : roles) r = merge_ranges(std::move(r));
  return roles;
}

void break_down(std::vector<Step>& steps, const RoleRanges& roles) {
  for (Step& s : steps) {
    Ranges slots{{s.start_ns, s.end_ns}};
    if (s.end_ns <= s.start_ns) slots.clear();
    for (size_t c = 0; c < roles.size(); ++c) {
      const Ranges taken = intersect_ranges(slots, clip_ranges(roles[c], s.start_ns, s.end_ns));
      s.category_ns[c] = ranges_sum(taken);
      slots = subtract_ranges(slots, taken);
    }
    s.category_ns[static_cast<int>(Category::kOther)] = ranges_sum(slots);
  }
}

std::optional<CommOverlap> comm_overlap(const std::vector<Step>& steps, const RoleRanges& roles) {
  const Ranges& kernel = roles[static_cast<int>(Category::kKernel)];
  const Ranges& comm = roles[static_cast<int>(Category::kCommunication)];
  if (comm.empty()) return std::nullopt;
  const Ranges both = intersect_ranges(kernel, comm);
  CommOverlap o;
  for (const Step& s : steps) {
    const int64_t comp = ranges_sum(clip_ranges(kernel, s.start_ns, s.end_ns));
    const int64_t cm = ranges_sum(clip_ranges(comm, s.start_ns, s.end_ns));
    const int64_t ov = ranges_sum(clip_ranges(both, s.start_ns, s.end_ns));
    o.computation_ns += comp, o.communication_ns += cm, o.overlap_ns += ov;
    o.other_ns += s.duration_ns() + ov - comp - cm;
  }
  return o;
}

}  // namespace trainscope::trace

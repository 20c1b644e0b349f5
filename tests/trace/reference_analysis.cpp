// The analysis as trainscope did it before it bounded its memory (git history:
// src/trace/steps.cpp, tables.cpp, analyze.cpp before "analyze: bounded memory"): every event in
// one array, indexes over all of them. Kept as the tests' oracle; one change: its sorts keep file
// order for equal keys (std::stable_sort), the order the bounded analysis defines.
#include "reference_analysis.h"

#include <fmt/core.h>

#include <algorithm>
#include <climits>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace trainscope::trace::reference {
using RoleRanges = std::array<Ranges, kCategoryCount - 1>;

namespace {

struct EventStore {
  TraceInfo info;
  std::vector<Event> events;
  std::vector<std::string> step_names;  // a step event's name indexes these
  const std::string& name_of(const Event& e) const { return e.kind == Kind::kStep ? step_names[e.name] : info.names[e.name]; }
};

bool is_host(Kind k) { return k == Kind::kOperator || k == Kind::kDataLoader || k == Kind::kPython || k == Kind::kStep; }

// The host-side steps, sorted; one step "0" over all host events when there are no annotations.
std::vector<Step> host_steps(const EventStore& store) {
  std::vector<Step> steps;
  int64_t lo = LLONG_MAX, hi = LLONG_MIN;
  for (const Event& e : store.events) {
    if (e.kind == Kind::kStep) steps.push_back(Step{store.name_of(e), e.ts_ns, e.end_ns(), {}});
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
  std::stable_sort(runtime.begin(), runtime.end(), [](const Event* a, const Event* b) { return a->ts_ns < b->ts_ns; });
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
  std::vector<bool> comm(store.info.names.size(), false);
  for (size_t i = 0; i < store.info.names.size(); ++i) {
    std::string n = store.info.names[i];
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


bool is_operator(Kind k) { return k == Kind::kOperator || k == Kind::kDataLoader; }

// Adds each operator's self time (its duration minus its direct children's on the same
// thread) to rows[name]; `ops` are one thread's operators.
void add_self_times(std::vector<const Event*>& ops, std::vector<OperatorRow>& rows) {
  std::stable_sort(ops.begin(), ops.end(), [](const Event* a, const Event* b) {
    return a->ts_ns != b->ts_ns ? a->ts_ns < b->ts_ns : a->dur_ns > b->dur_ns;
  });
  std::vector<std::pair<const Event*, int64_t>> stack;  // open operator, its children's time
  auto pop = [&] {
    const auto [e, children] = stack.back();
    stack.pop_back();
    rows[e->name].self_ns += std::max<int64_t>(0, e->dur_ns - children);
  };
  for (const Event* e : ops) {
    while (!stack.empty() && stack.back().first->end_ns() <= e->ts_ns) pop();
    if (!stack.empty()) stack.back().second += e->dur_ns;
    stack.emplace_back(e, 0);
  }
  while (!stack.empty()) pop();
}


std::vector<OperatorRow> operator_rows(const EventStore& store) {
  std::vector<OperatorRow> rows(store.info.names.size());
  std::unordered_map<uint32_t, std::vector<const Event*>> by_thread;
  std::unordered_map<int64_t, uint32_t> op_of_external;  // External id -> operator name
  for (const Event& e : store.events) {
    if (!is_operator(e.kind)) continue;
    OperatorRow& r = rows[e.name];
    ++r.calls, r.total_ns += e.dur_ns;
    by_thread[e.thread].push_back(&e);
    if (e.external_id >= 0) op_of_external[e.external_id] = e.name;
  }
  for (auto& [thread, ops] : by_thread) add_self_times(ops, rows);
  for (const Event& e : store.events) {
    if (!is_gpu(e.kind) || e.external_id < 0) continue;
    if (auto it = op_of_external.find(e.external_id); it != op_of_external.end()) rows[it->second].device_ns += e.dur_ns;
  }
  std::vector<OperatorRow> out;
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].calls > 0) {
      rows[i].name = store.info.names[i];
      out.push_back(std::move(rows[i]));
    }
  return out;
}

std::vector<KernelRow> kernel_rows(const EventStore& store) {
  std::vector<KernelRow> rows(store.info.names.size());
  for (const Event& e : store.events) {
    if (e.kind != Kind::kKernel) continue;
    KernelRow& r = rows[e.name];
    r.min_ns = r.calls ? std::min(r.min_ns, e.dur_ns) : e.dur_ns;
    r.max_ns = std::max(r.max_ns, e.dur_ns);
    ++r.calls, r.total_ns += e.dur_ns;
  }
  std::vector<KernelRow> out;
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].calls > 0) {
      rows[i].name = store.info.names[i];
      out.push_back(std::move(rows[i]));
    }
  return out;
}

std::vector<StreamIdle> stream_idle(const EventStore& store, int64_t consecutive_kernel_delay_ns) {
  std::unordered_map<int64_t, int64_t> runtime_ts;  // correlation -> runtime call's start
  std::map<std::pair<int, int64_t>, std::vector<const Event*>> streams;
  for (const Event& e : store.events) {
    if (e.kind == Kind::kRuntime && e.correlation >= 0) runtime_ts.emplace(e.correlation, e.ts_ns);
    if (is_gpu(e.kind)) streams[{e.device, e.stream}].push_back(&e);
  }
  std::vector<StreamIdle> out;
  for (auto& [key, evs] : streams) {
    std::stable_sort(evs.begin(), evs.end(), [](const Event* a, const Event* b) { return a->ts_ns < b->ts_ns; });
    StreamIdle s;
    s.device = key.first, s.stream = key.second;
    Ranges busy;
    for (size_t i = 0; i < evs.size(); ++i) {
      busy.emplace_back(evs[i]->ts_ns, evs[i]->end_ns());
      if (i == 0) continue;
      const int64_t prev_end = evs[i - 1]->end_ns(), gap = evs[i]->ts_ns - prev_end;
      if (gap <= 0) continue;
      const auto rt = runtime_ts.find(evs[i]->correlation);
      if (evs[i]->correlation >= 0 && rt != runtime_ts.end() && rt->second > prev_end) s.host_wait_ns += gap;
      else if (gap < consecutive_kernel_delay_ns) s.kernel_wait_ns += gap;
      else s.other_ns += gap;
    }
    s.busy_ns = ranges_sum(merge_ranges(std::move(busy)));
    out.push_back(s);
  }
  return out;
}

template <class Row, class Key>
std::vector<Row> top_rows(std::vector<Row> rows, int top, Key key) {
  std::sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    return key(a) != key(b) ? key(a) > key(b) : a.name < b.name;
  });
  if (top >= 0 && rows.size() > static_cast<size_t>(top)) rows.resize(static_cast<size_t>(top));
  return rows;
}

EventStore read_all(const std::string& path) {
  EventStore store;
  read_events(path, store.info, [&](const Event& e, const std::string& name) {
    store.events.push_back(e);
    if (e.kind != Kind::kStep) return;
    store.events.back().name = static_cast<uint32_t>(store.step_names.size());
    store.step_names.push_back(name);
  });
  return store;
}

}  // namespace

TraceAnalysis analyze_in_memory(const std::string& path, const AnalyzeOptions& options) {
  const EventStore store = read_all(path);
  TraceAnalysis a;
  a.path = path;
  a.schema = store.info.schema;
  a.rank = store.info.rank, a.world_size = store.info.world_size, a.backend = store.info.backend;
  a.devices = store.info.devices;
  a.events = static_cast<int64_t>(store.events.size());
  const RoleRanges roles = role_ranges(store, communication_names(store));
  a.steps = find_steps(store, a.notes);
  break_down(a.steps, roles);
  for (const Step& s : a.steps) {
    a.steps_ns += s.duration_ns();
    for (int c = 0; c < kCategoryCount; ++c) a.total_ns[c] += s.category_ns[c];
  }
  a.overlap = comm_overlap(a.steps, roles);
  a.operators = top_rows(operator_rows(store), options.top, [](const OperatorRow& r) { return r.self_ns; });
  std::vector<KernelRow> kernels = kernel_rows(store);
  for (const KernelRow& k : kernels) a.kernel_ns += k.total_ns;
  a.kernels = top_rows(std::move(kernels), options.top, [](const KernelRow& r) { return r.total_ns; });
  a.idle = stream_idle(store, options.consecutive_kernel_delay_ns);
  if (store.info.schema == "legacy")
    a.notes.push_back("legacy trace (PyTorch without Kineto): CPU operators only, times to the microsecond");
  return a;
}

}  // namespace trainscope::trace::reference

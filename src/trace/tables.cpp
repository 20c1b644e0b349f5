// Operator and kernel tables, and GPU idle time per stream (Holistic Trace Analysis's split).
#include <algorithm>
#include <climits>
#include <map>
#include <unordered_map>

#include "trace/analysis.h"

namespace trainscope::trace {
namespace {

bool is_operator(Kind k) { return k == Kind::kOperator || k == Kind::kDataLoader; }

// Adds each operator's self time (its duration minus its direct children's on the same
// thread) to rows[name]; `ops` are one thread's operators.
void add_self_times(std::vector<const Event*>& ops, std::vector<OperatorRow>& rows) {
  std::sort(ops.begin(), ops.end(), [](const Event* a, const Event* b) {
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

}  // namespace

std::vector<OperatorRow> operator_rows(const EventStore& store) {
  std::vector<OperatorRow> rows(store.names.size());
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
      rows[i].name = store.names[i];
      out.push_back(std::move(rows[i]));
    }
  return out;
}

std::vector<KernelRow> kernel_rows(const EventStore& store) {
  std::vector<KernelRow> rows(store.names.size());
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
      rows[i].name = store.names[i];
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
    std::sort(evs.begin(), evs.end(), [](const Event* a, const Event* b) { return a->ts_ns < b->ts_ns; });
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

}  // namespace trainscope::trace

// Operator and kernel tables, and GPU idle time per stream (Holistic Trace Analysis's split),
// from the sums and sorters of TraceStreams (streams.h): one pass each over the operators by
// thread (self time), the operators and GPU events by External id (device time) and the GPU
// events by stream (idle time), holding no more than one thread's open operators or one event.
#include <algorithm>
#include <climits>

#include "trace/streams.h"

namespace trainscope::trace {
namespace {

// Adds each operator's self time (its duration minus its direct children's on the same
// thread) to its name's row: the operators come by thread and start, a parent before the
// children that start with it.
void add_self_times(TraceStreams& s) {
  std::vector<std::pair<OpRec, int64_t>> stack;  // open operator, its children's time
  auto pop = [&] {
    const auto [e, children] = stack.back();
    stack.pop_back();
    s.ops[e.name].self_ns += std::max<int64_t>(0, e.dur - children);
  };
  auto in = s.operators.read();
  for (OpRec e{}; in.next(e);) {
    if (!stack.empty() && stack.back().first.thread != e.thread)
      while (!stack.empty()) pop();
    while (!stack.empty() && stack.back().first.ts + stack.back().first.dur <= e.ts) pop();
    if (!stack.empty()) stack.back().second += e.dur;
    stack.emplace_back(e, 0);
  }
  while (!stack.empty()) pop();
}

// Adds the GPU events carrying an operator's External id to that operator's device time (the
// last operator of the id in the file, as an index of id to name keeps it).
void add_device_times(TraceStreams& s) {
  int64_t ext = 0;
  bool any = false, has_op = false;
  uint32_t name = 0;
  auto in = s.externals.read();
  for (ExtRec r{}; in.next(r);) {
    if (!any || r.ext != ext) ext = r.ext, has_op = false, any = true;
    if (!r.gpu) name = r.name, has_op = true;
    else if (has_op) s.ops[name].device_ns += r.dur;
  }
}

template <class Row>
std::vector<Row> named_rows(std::vector<Row> rows, const TraceInfo& info) {
  std::vector<Row> out;
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].calls > 0) {
      rows[i].name = info.names[i];
      out.push_back(std::move(rows[i]));
    }
  return out;
}

// One stream's idle split and busy union as its events pass, by start.
class StreamSweep {
 public:
  StreamSweep(int device, int64_t stream, int64_t delay) : delay_(delay) { s_.device = device, s_.stream = stream; }
  void add(const IdleRec& r) {
    if (r.end > r.ts) {
      if (busy_open_ && r.ts <= busy_end_) busy_end_ = std::max(busy_end_, r.end);
      else close_busy(), busy_start_ = r.ts, busy_end_ = r.end, busy_open_ = true;
    }
    const int64_t gap = r.ts - prev_end_;
    if (!first_ && gap > 0) {
      if (r.runtime_ts != kNoRuntime && r.runtime_ts > prev_end_) s_.host_wait_ns += gap;
      else if (gap < delay_) s_.kernel_wait_ns += gap;
      else s_.other_ns += gap;
    }
    prev_end_ = r.end, first_ = false;
  }
  StreamIdle done() {
    close_busy();
    return s_;
  }

 private:
  void close_busy() {
    if (busy_open_) s_.busy_ns += busy_end_ - busy_start_;
    busy_open_ = false;
  }
  StreamIdle s_;
  int64_t delay_, prev_end_ = 0, busy_start_ = 0, busy_end_ = 0;
  bool first_ = true, busy_open_ = false;
};

}  // namespace

std::vector<OperatorRow> operator_rows(TraceStreams& s) {
  add_self_times(s);
  add_device_times(s);
  return named_rows(s.ops, s.info);
}

std::vector<KernelRow> kernel_rows(const TraceStreams& s) { return named_rows(s.kernels, s.info); }

std::vector<StreamIdle> stream_idle(TraceStreams& s, int64_t consecutive_kernel_delay_ns) {
  std::vector<StreamIdle> out;
  std::optional<StreamSweep> cur;
  int device = 0;
  int64_t stream = 0;
  auto in = s.idle.read();
  for (IdleRec r{}; in.next(r);) {
    if (!cur || r.device != device || r.stream != stream) {
      if (cur) out.push_back(cur->done());
      device = r.device, stream = r.stream;
      cur.emplace(device, stream, consecutive_kernel_delay_ns);
    }
    cur->add(r);
  }
  if (cur) out.push_back(cur->done());
  return out;
}

}  // namespace trainscope::trace

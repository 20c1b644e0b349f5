// What analyze_trace (include/trainscope/trace_analysis.h) keeps of a trace while reading it, so
// that its memory does not grow with the trace: the figures that add up event by event (counts,
// each name's operator and kernel totals, the host span, the step annotations) are summed at
// once; the parts that join events by id or need them in time order get compact records in
// sorters (spill.h) that keep at most a budget in memory and the rest in a temporary file:
//   roles         each category's time ranges, by start (the steps' breakdown, breakdown.cpp)
//   correlations  runtime calls and GPU events by correlation id (steps' GPU work, steps.cpp)
//   idle          GPU events by stream and start, with their runtime call's start (tables.cpp)
//   operators     operators by thread and start (self time, tables.cpp)
//   externals     operators and GPU events by External id (device time, tables.cpp)
// Each record carries the event's position in the file (seq), so equal keys keep file order.
#pragma once

#include <array>
#include <climits>
#include <memory>
#include <string>
#include <vector>

#include "trace/events.h"
#include "trace/spill.h"
#include "trainscope/trace_analysis.h"

namespace trainscope::trace {

/// IdleRec::runtime_ts of a GPU event without a runtime call of its correlation.
inline constexpr int64_t kNoRuntime = LLONG_MIN;

struct RangeRec {
  int64_t start, end;
};
struct RangeLess {
  bool operator()(const RangeRec& a, const RangeRec& b) const {
    return a.start != b.start ? a.start < b.start : a.end < b.end;
  }
};

/// A runtime call with a correlation id, or a GPU event (any correlation, -1: none).
struct CorrRec {
  int64_t corr, seq, ts, end, stream;
  int32_t device;
  uint8_t runtime;  // 1: a runtime call
};
/// By correlation; in one correlation the runtime calls first, then file order.
struct CorrLess {
  bool operator()(const CorrRec& a, const CorrRec& b) const {
    if (a.corr != b.corr) return a.corr < b.corr;
    if (a.runtime != b.runtime) return a.runtime > b.runtime;
    return a.seq < b.seq;
  }
};

/// A GPU event with the start of the first runtime call of its correlation (or kNoRuntime).
struct IdleRec {
  int64_t stream, ts, end, runtime_ts, seq;
  int32_t device;
};
/// By device, stream, start, then file order (stream_idle's order).
struct IdleLess {
  bool operator()(const IdleRec& a, const IdleRec& b) const {
    if (a.device != b.device) return a.device < b.device;
    if (a.stream != b.stream) return a.stream < b.stream;
    return a.ts != b.ts ? a.ts < b.ts : a.seq < b.seq;
  }
};

/// An operator on its thread.
struct OpRec {
  int64_t ts, dur, seq;
  uint32_t thread, name;
};
/// By thread, start, the longer first (the parent before the child it starts with), file order.
struct OpLess {
  bool operator()(const OpRec& a, const OpRec& b) const {
    if (a.thread != b.thread) return a.thread < b.thread;
    if (a.ts != b.ts) return a.ts < b.ts;
    return a.dur != b.dur ? a.dur > b.dur : a.seq < b.seq;
  }
};

/// An operator or a GPU event with an External id.
struct ExtRec {
  int64_t ext, seq, dur;
  uint32_t name;
  uint8_t gpu;  // 1: a GPU event (dur counts), 0: an operator (name counts)
};
/// By External id; in one id the operators first, then file order.
struct ExtLess {
  bool operator()(const ExtRec& a, const ExtRec& b) const {
    if (a.ext != b.ext) return a.ext < b.ext;
    return a.gpu != b.gpu ? a.gpu < b.gpu : a.seq < b.seq;
  }
};

using RangeSorter = Sorter<RangeRec, RangeLess>;

/// The sums and sorters of one trace, filled by add() for each event read_events() gives.
class TraceStreams {
 public:
  /// `budget_bytes`: the memory the sorters' buffers may take, split evenly among them
  /// (AnalyzeOptions::memory_budget_bytes).
  explicit TraceStreams(int64_t budget_bytes);
  void add(const Event& e, const std::string& name);

  TraceInfo info;
  HeldCount held;
  int64_t events = 0;
  std::vector<Step> annotations;  // ProfilerStep#N spans as read (file order)
  int64_t host_lo = LLONG_MAX, host_hi = LLONG_MIN;
  std::vector<OperatorRow> ops;    // by name index; calls 0: no operator of that name
  std::vector<KernelRow> kernels;  // by name index; calls 0: no kernel of that name
  int64_t communication_ranges = 0;  // communication kernels of non-zero duration
  std::array<std::unique_ptr<RangeSorter>, kCategoryCount - 1> roles;  // Category order, not Other
  Sorter<CorrRec, CorrLess> correlations;
  Sorter<IdleRec, IdleLess> idle;  // filled by join_correlations (steps.cpp)
  Sorter<OpRec, OpLess> operators;
  Sorter<ExtRec, ExtLess> externals;

 private:
  void add_role(Category c, const Event& e);
  void add_operator(const Event& e, int64_t seq);
  void add_kernel(const Event& e);
  void add_gpu(const Event& e, int64_t seq);
  bool is_communication(uint32_t name);
  std::vector<int8_t> comm_;  // per name index: -1 not yet known, 0 no, 1 a communication kernel
};

/// The host-side steps (annotations, or one step "0" over the host events), sorted by start.
std::vector<Step> host_steps(const TraceStreams& s);

/// The GPU work launched by each step's runtime calls (steps.cpp).
struct Launched {
  int64_t start = LLONG_MAX, end = LLONG_MIN;
  int count = 0;
};
struct DeviceWork {
  std::vector<Launched> per_step;
  int64_t matched = 0;  // correlations whose runtime call lies in a step and that have GPU work
};
/// Joins runtime calls and GPU events by correlation: each host step's GPU work, and the idle
/// sorter's records (each GPU event with its runtime call's start).
DeviceWork join_correlations(TraceStreams& s, const std::vector<Step>& steps);
/// The steps extended to their GPU work (find_steps of the plugin's step_parser.py); notes get
/// what was assumed or left out.
std::vector<Step> device_steps(std::vector<Step> steps, const DeviceWork& work, TraceStreams& s,
                               std::vector<std::string>& notes);

/// Fills each step's category_ns (the plugin's priority rule) and returns the communication
/// overlap over the steps, or nullopt without communication kernels (breakdown.cpp).
std::optional<CommOverlap> break_down(std::vector<Step>& steps, TraceStreams& s);

std::vector<OperatorRow> operator_rows(TraceStreams& s);  // all, unsorted
std::vector<KernelRow> kernel_rows(const TraceStreams& s);  // all, unsorted
std::vector<StreamIdle> stream_idle(TraceStreams& s, int64_t consecutive_kernel_delay_ns);

}  // namespace trainscope::trace

// TraceStreams (streams.h): each event read is summed where it adds up, and given to the sorters
// of the analyses that join or order events.
#include <algorithm>
#include <cctype>

#include "trace/streams.h"

namespace trainscope::trace {
namespace {

constexpr int kSorters = kCategoryCount - 1 + 4;  // the roles', correlations, idle, operators, externals

// One sorter's share of the budget, in records of `bytes` each.
size_t cap_of(int64_t budget_bytes, size_t bytes) {
  return static_cast<size_t>(std::max<int64_t>(1, budget_bytes / kSorters / static_cast<int64_t>(bytes)));
}

bool is_host(Kind k) { return k == Kind::kOperator || k == Kind::kDataLoader || k == Kind::kPython || k == Kind::kStep; }

}  // namespace

TraceStreams::TraceStreams(int64_t budget_bytes)
    : correlations(cap_of(budget_bytes, sizeof(CorrRec)), held),
      idle(cap_of(budget_bytes, sizeof(IdleRec)), held),
      operators(cap_of(budget_bytes, sizeof(OpRec)), held),
      externals(cap_of(budget_bytes, sizeof(ExtRec)), held) {
  for (auto& r : roles) r = std::make_unique<RangeSorter>(cap_of(budget_bytes, sizeof(RangeRec)), held);
}

void TraceStreams::add(const Event& e, const std::string& name) {
  const int64_t seq = events++;
  if (is_host(e.kind)) host_lo = std::min(host_lo, e.ts_ns), host_hi = std::max(host_hi, e.end_ns());
  switch (e.kind) {
    case Kind::kStep: annotations.push_back(Step{name, e.ts_ns, e.end_ns(), {}}); break;
    case Kind::kOperator:
    case Kind::kDataLoader:
      add_role(e.kind == Kind::kDataLoader ? Category::kDataLoader : Category::kCpuExec, e);
      add_operator(e, seq);
      break;
    case Kind::kPython: add_role(Category::kCpuExec, e); break;
    case Kind::kRuntime:
      add_role(Category::kRuntime, e);
      if (e.correlation >= 0) correlations.add(CorrRec{e.correlation, seq, e.ts_ns, e.end_ns(), -1, -1, 1});
      break;
    case Kind::kKernel:
      add_role(is_communication(e.name) ? Category::kCommunication : Category::kKernel, e);
      add_kernel(e);
      add_gpu(e, seq);
      break;
    case Kind::kMemcpy:
      add_role(Category::kMemcpy, e);
      add_gpu(e, seq);
      break;
    case Kind::kMemset:
      add_role(Category::kMemset, e);
      add_gpu(e, seq);
      break;
  }
}

// Ranges of no length are left out, as merge_ranges leaves them out.
void TraceStreams::add_role(Category c, const Event& e) {
  if (e.dur_ns <= 0) return;
  if (c == Category::kCommunication) ++communication_ranges;
  roles[static_cast<size_t>(c)]->add(RangeRec{e.ts_ns, e.end_ns()});
}

void TraceStreams::add_operator(const Event& e, int64_t seq) {
  if (ops.size() <= e.name) ops.resize(e.name + 1);
  OperatorRow& r = ops[e.name];
  ++r.calls, r.total_ns += e.dur_ns;
  operators.add(OpRec{e.ts_ns, e.dur_ns, seq, e.thread, e.name});
  if (e.external_id >= 0) externals.add(ExtRec{e.external_id, seq, 0, e.name, 0});
}

void TraceStreams::add_kernel(const Event& e) {
  if (kernels.size() <= e.name) kernels.resize(e.name + 1);
  KernelRow& r = kernels[e.name];
  r.min_ns = r.calls ? std::min(r.min_ns, e.dur_ns) : e.dur_ns;
  r.max_ns = std::max(r.max_ns, e.dur_ns);
  ++r.calls, r.total_ns += e.dur_ns;
}

void TraceStreams::add_gpu(const Event& e, int64_t seq) {
  correlations.add(CorrRec{e.correlation, seq, e.ts_ns, e.end_ns(), e.stream, e.device, 0});
  if (e.external_id >= 0) externals.add(ExtRec{e.external_id, seq, e.dur_ns, 0, 1});
}

// A communication kernel's name contains "nccl", any case (HTA's rule).
bool TraceStreams::is_communication(uint32_t name) {
  if (comm_.size() <= name) comm_.resize(name + 1, -1);
  if (comm_[name] < 0) {
    std::string n = info.names[name];
    for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    comm_[name] = n.find("nccl") != std::string::npos ? 1 : 0;
  }
  return comm_[name] == 1;
}

std::vector<Step> host_steps(const TraceStreams& s) {
  std::vector<Step> steps = s.annotations;
  if (steps.empty() && s.host_lo <= s.host_hi) steps.push_back(Step{"0", s.host_lo, s.host_hi, {}});
  std::stable_sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.start_ns < b.start_ns; });
  return steps;
}

}  // namespace trainscope::trace

// Operator table, step breakdown and overhead from recorded profile events.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "common/text.h"
#include "profile/profile_data.h"
#include "results/record_json.h"
#include "trainscope/stats.h"

namespace trainscope::profile {

const char* to_string(DeviceCategory c) {
  switch (c) {
    case DeviceCategory::kCompute: return "compute";
    case DeviceCategory::kMemcpyH2D: return "memcpy_h2d";
    case DeviceCategory::kMemcpyD2H: return "memcpy_d2h";
    case DeviceCategory::kMemcpyD2D: return "memcpy_d2d";
    case DeviceCategory::kMemset: return "memset";
    case DeviceCategory::kCommunication: return "communication";
  }
  return "compute";
}

DeviceCategory classify_device_event(const std::string& n) {
  // CUPTI names as Kineto writes them: "Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (...)",
  // "Memcpy DtoD (...)", "Memcpy PtoP (...)", "Memset (Device)"; NCCL kernels start with "nccl".
  if (n.rfind("Memcpy", 0) == 0) {
    if (n.find("HtoD") != std::string::npos) return DeviceCategory::kMemcpyH2D;
    if (n.find("DtoH") != std::string::npos) return DeviceCategory::kMemcpyD2H;
    return DeviceCategory::kMemcpyD2D;
  }
  if (n.rfind("Memset", 0) == 0) return DeviceCategory::kMemset;
  if (n.find("nccl") != std::string::npos) return DeviceCategory::kCommunication;
  return DeviceCategory::kCompute;
}

std::vector<Nested> nest_intervals(const std::vector<std::pair<int64_t, int64_t>>& iv, const std::vector<int>& rank) {
  std::vector<size_t> order(iv.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (iv[a].first != iv[b].first) return iv[a].first < iv[b].first;
    int64_t la = iv[a].second - iv[a].first, lb = iv[b].second - iv[b].first;
    if (la != lb) return la > lb;
    int ra = a < rank.size() ? rank[a] : 0, rb = b < rank.size() ? rank[b] : 0;
    return ra < rb;
  });
  std::vector<Nested> out;
  out.reserve(iv.size());
  std::vector<int> stack;
  for (size_t i : order) {
    Nested n;
    n.index = i;
    n.t0_ns = iv[i].first;
    n.t1_ns = std::max(iv[i].second, iv[i].first);
    while (!stack.empty() && out[static_cast<size_t>(stack.back())].t1_ns <= n.t0_ns) stack.pop_back();
    if (!stack.empty()) {
      const auto& p = out[static_cast<size_t>(stack.back())];
      // Equal start, equal end: a zero-length parent cannot hold anything; keep them siblings.
      if (p.t1_ns <= n.t0_ns) stack.pop_back();
    }
    if (!stack.empty()) {
      const auto& p = out[static_cast<size_t>(stack.back())];
      n.parent = stack.back();
      if (n.t1_ns > p.t1_ns) {
        n.t1_ns = p.t1_ns;
        n.clipped = true;
      }
    }
    out.push_back(n);
    stack.push_back(static_cast<int>(out.size() - 1));
  }
  return out;
}

namespace {

struct Row {
  std::string name;
  int64_t calls = 0;
  int64_t cpu_total_ns = 0, cpu_self_ns = 0, dev_total_ns = 0, dev_self_ns = 0;
  int64_t alloc = 0, freed = 0;
  double flops = 0;
  bool has_flops = false;
  std::map<std::string, int64_t> shapes;
};

double us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

// Table rows sorted by self CPU time, then self device time, then name.
std::vector<OpRow> op_rows(const std::map<std::string, Row>& rows, bool device_events, int64_t cpu_self_sum,
                           int64_t dev_sum) {
  std::vector<const Row*> sorted;
  for (const auto& [k, r] : rows) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(), [](const Row* a, const Row* b) {
    if (a->cpu_self_ns != b->cpu_self_ns) return a->cpu_self_ns > b->cpu_self_ns;
    if (a->dev_self_ns != b->dev_self_ns) return a->dev_self_ns > b->dev_self_ns;
    return a->name < b->name;
  });
  std::vector<OpRow> out;
  for (const Row* r : sorted) {
    OpRow j;
    j.name = r->name;
    j.calls = r->calls;
    j.cpu_total_us = us(r->cpu_total_ns);
    j.cpu_self_us = us(r->cpu_self_ns);
    j.cpu_self_pct = cpu_self_sum > 0 ? 100.0 * static_cast<double>(r->cpu_self_ns) / static_cast<double>(cpu_self_sum) : 0.0;
    if (device_events) {
      j.device_total_us = us(r->dev_total_ns);
      j.device_self_us = us(r->dev_self_ns);
      j.device_self_pct = dev_sum > 0 ? 100.0 * static_cast<double>(r->dev_self_ns) / static_cast<double>(dev_sum) : 0.0;
    }
    j.mem_alloc_bytes = r->alloc;
    j.mem_freed_bytes = r->freed;
    j.mem_net_bytes = r->alloc - r->freed;
    if (r->has_flops) {
      j.flops = r->flops;
      int64_t t = r->dev_total_ns > 0 ? r->dev_total_ns : r->cpu_total_ns;
      if (t > 0) j.tflops_per_s = r->flops / (static_cast<double>(t) * 1e-9) / 1e12;
    }
    if (!r->shapes.empty()) {
      auto top = std::max_element(r->shapes.begin(), r->shapes.end(),
                                  [](const auto& a, const auto& b) { return a.second < b.second; });
      j.input_shapes = top->first;  // the most frequent shapes of this operator
    }
    out.push_back(std::move(j));
  }
  return out;
}

using NestedByTid = std::map<uint64_t, std::vector<std::pair<size_t, std::pair<int64_t, int64_t>>>>;  // op, clipped iv

// Memory: to the innermost op on the reporting thread that contains the report's time; what no
// op contains goes to outside_alloc / outside_freed.
void attribute_memory(const ProfileData& d, NestedByTid& nested_by_tid, std::vector<int64_t>& alloc,
                      std::vector<int64_t>& freed, int64_t& outside_alloc, int64_t& outside_freed) {
  std::map<uint64_t, std::vector<const MemEvent*>> mem_by_tid;
  for (const auto& m : d.mem_events) mem_by_tid[m.tid].push_back(&m);
  for (auto& [tid, ms] : mem_by_tid) {
    std::sort(ms.begin(), ms.end(), [](const MemEvent* a, const MemEvent* b) { return a->t_ns < b->t_ns; });
    const auto& list = nested_by_tid[tid];  // in nesting order: sorted by start, parents first
    std::vector<size_t> stack;              // positions in list
    size_t k = 0;
    for (const MemEvent* m : ms) {
      // Advance: open every slice that starts at or before m.
      while (k < list.size() && list[k].second.first <= m->t_ns) {
        while (!stack.empty() && list[stack.back()].second.second <= list[k].second.first) stack.pop_back();
        stack.push_back(k++);
      }
      while (!stack.empty() && list[stack.back()].second.second < m->t_ns) stack.pop_back();
      if (stack.empty()) {
        (m->bytes > 0 ? outside_alloc : outside_freed) += std::abs(m->bytes);
        continue;
      }
      size_t op = list[stack.back()].first;
      if (m->bytes > 0) alloc[op] += m->bytes;
      else freed[op] += -m->bytes;
    }
  }
}

}  // namespace

std::vector<OpRow> build_op_table(const ProfileData& d, OpTableTotals* totals) {
  const size_t n = d.ops.size();
  std::vector<int64_t> self(n, 0), dur(n, 0), dev_self(n, 0), dev_total(n, 0), alloc(n, 0), freed(n, 0);
  std::vector<int> parent(n, -1);  // op index of the direct parent on the same thread

  // Group by thread and nest.
  std::map<uint64_t, std::vector<size_t>> by_tid;
  for (size_t i = 0; i < n; ++i) by_tid[d.ops[i].tid].push_back(i);
  int64_t busy_ns = 0;
  NestedByTid nested_by_tid;
  for (auto& [tid, idx] : by_tid) {
    std::vector<std::pair<int64_t, int64_t>> iv;
    std::vector<std::pair<long long, long long>> ivl;
    for (size_t i : idx) {
      iv.emplace_back(d.ops[i].t0_ns, d.ops[i].t1_ns);
      ivl.emplace_back(d.ops[i].t0_ns, std::max(d.ops[i].t0_ns, d.ops[i].t1_ns));
    }
    busy_ns += union_length(ivl);
    auto nested = nest_intervals(iv, {});
    auto& list = nested_by_tid[tid];
    for (const auto& x : nested) {
      size_t op = idx[x.index];
      dur[op] = x.t1_ns - x.t0_ns;
      self[op] += dur[op];
      if (x.parent >= 0) {
        size_t pop = idx[nested[static_cast<size_t>(x.parent)].index];
        parent[op] = static_cast<int>(pop);
        self[pop] -= dur[op];
      }
      list.push_back({op, {x.t0_ns, x.t1_ns}});
    }
  }

  // Device time: self on the launching op (by correlation), total up the parent chain.
  std::unordered_map<int64_t, size_t> by_corr;
  for (size_t i = 0; i < n; ++i)
    if (d.ops[i].correlation != 0 && d.ops[i].linked == 0 && d.ops[i].category != "cuda_runtime")
      by_corr.emplace(d.ops[i].correlation, i);
  std::map<std::string, Row> unlinked;
  int64_t dev_sum = 0;
  for (const auto& e : d.device_events) {
    int64_t t = std::max<int64_t>(0, e.t1_ns - e.t0_ns);
    dev_sum += t;
    auto it = e.linked != 0 ? by_corr.find(e.linked) : by_corr.end();
    if (it == by_corr.end()) {
      auto& r = unlinked[e.name];
      r.name = e.name;
      ++r.calls;
      r.dev_self_ns += t;
      r.dev_total_ns += t;
      continue;
    }
    dev_self[it->second] += t;
    for (int p = static_cast<int>(it->second); p >= 0; p = parent[static_cast<size_t>(p)]) dev_total[static_cast<size_t>(p)] += t;
  }

  int64_t mem_outside_alloc = 0, mem_outside_freed = 0;
  attribute_memory(d, nested_by_tid, alloc, freed, mem_outside_alloc, mem_outside_freed);

  std::map<std::string, Row> rows;
  for (size_t i = 0; i < n; ++i) {
    auto& r = rows[d.ops[i].name];
    r.name = d.ops[i].name;
    ++r.calls;
    r.cpu_total_ns += dur[i];
    r.cpu_self_ns += std::max<int64_t>(0, self[i]);
    r.dev_self_ns += dev_self[i];
    r.dev_total_ns += dev_total[i];
    r.alloc += alloc[i];
    r.freed += freed[i];
    if (d.ops[i].flops > 0) {
      r.flops += d.ops[i].flops;
      r.has_flops = true;
    }
    if (!d.ops[i].shapes.empty()) ++r.shapes[d.ops[i].shapes];
  }
  for (auto& [k, r] : unlinked) {
    std::string key = "[device] " + k;
    r.name = key;
    rows[key] = r;
  }

  int64_t cpu_self_sum = 0;
  for (const auto& [k, r] : rows) cpu_self_sum += r.cpu_self_ns;
  std::vector<OpRow> out = op_rows(rows, !d.device_events.empty(), cpu_self_sum, dev_sum);
  if (totals) {
    totals->operators = static_cast<int64_t>(out.size());
    totals->events = static_cast<int64_t>(n);
    totals->cpu_self_us = us(cpu_self_sum);
    totals->cpu_busy_us = us(busy_ns);
    if (!d.device_events.empty()) totals->device_busy_sum_us = us(dev_sum);
    totals->mem_alloc_outside_ops_bytes = mem_outside_alloc;
    totals->mem_freed_outside_ops_bytes = mem_outside_freed;
    totals->threads = static_cast<int64_t>(by_tid.size());
  }
  return out;
}

namespace {

// Mean host ms per phase over the profiled steps and each phase's share of the five.
void host_phases(const ProfileData& d, StepBreakdown& b) {
  std::map<std::string, double> sum;
  int64_t steps = 0;
  double step_sum = 0;
  for (const auto& s : d.steps)
    if (s.profiled) {
      ++steps;
      step_sum += static_cast<double>(s.t1_ns - s.t0_ns) / 1e6;
    }
  for (const auto& p : d.phases) sum[p.phase] += static_cast<double>(p.t1_ns - p.t0_ns) / 1e6;
  b.profiled_steps = steps;
  struct Ph {
    const char* name;
    OptD PhaseMs::*ms;
    OptD PhasePct::*pct;
  };
  static const Ph kPhases[] = {{"data", &PhaseMs::data_ms, &PhasePct::data_pct},
                               {"h2d", &PhaseMs::h2d_ms, &PhasePct::h2d_pct},
                               {"forward", &PhaseMs::forward_ms, &PhasePct::forward_pct},
                               {"backward", &PhaseMs::backward_ms, &PhasePct::backward_pct},
                               {"optimizer", &PhaseMs::optimizer_ms, &PhasePct::optimizer_pct}};
  if (steps == 0) return;
  double phase_total = 0;
  for (const auto& ph : kPhases) phase_total += sum[ph.name] / static_cast<double>(steps);
  for (const auto& ph : kPhases) {
    double m = sum[ph.name] / static_cast<double>(steps);
    b.phases_host_ms.*ph.ms = m;
    if (phase_total > 0) b.phases_pct.*ph.pct = 100.0 * m / phase_total;
  }
  b.phases_host_ms.step_ms = step_sum / static_cast<double>(steps);
}

// One GPU's busy/idle time over the profiled window and its kernel time by category.
GpuActivity gpu_activity(const ProfileData& d, const std::vector<const DeviceEvent*>& evs) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const auto& s : d.steps)
    if (s.profiled) lo = std::min(lo, s.t0_ns), hi = std::max(hi, s.t1_ns);
  for (const auto* e : evs) {  // kernels queued in the window run past its host end
    lo = std::min(lo, e->t0_ns);
    hi = std::max(hi, e->t1_ns);
  }
  std::vector<std::pair<long long, long long>> iv;
  std::map<std::string, int64_t> cat_ns;
  for (const char* c : {"compute", "memcpy_h2d", "memcpy_d2h", "memcpy_d2d", "memset", "communication"}) cat_ns[c] = 0;
  int64_t kernel_sum = 0;
  for (const auto* e : evs) {
    iv.emplace_back(e->t0_ns, std::max(e->t0_ns, e->t1_ns));
    cat_ns[to_string(classify_device_event(e->name))] += std::max<int64_t>(0, e->t1_ns - e->t0_ns);
    kernel_sum += std::max<int64_t>(0, e->t1_ns - e->t0_ns);
  }
  int64_t busy = union_length(iv);
  int64_t span = std::max<int64_t>(hi - lo, 1);
  GpuActivity g;
  g.window_ms = static_cast<double>(span) / 1e6;
  g.busy_ms = static_cast<double>(busy) / 1e6;
  g.idle_ms = static_cast<double>(span - busy) / 1e6;
  g.busy_pct = 100.0 * static_cast<double>(busy) / static_cast<double>(span);
  g.idle_pct = 100.0 - g.busy_pct;
  for (const auto& [c, ns] : cat_ns) {
    g.kernel_ms_by_category[c + "_ms"] = static_cast<double>(ns) / 1e6;
    // of Σ kernel time (streams may overlap), sums to 100 %
    g.kernel_pct_by_category[c + "_pct"] =
        kernel_sum > 0 ? 100.0 * static_cast<double>(ns) / static_cast<double>(kernel_sum) : 0.0;
  }
  g.kernels = static_cast<int64_t>(evs.size());
  return g;
}

}  // namespace

StepBreakdown build_step_breakdown(const ProfileData& d, const std::string& device,
                                   const std::optional<DevicePhases>& device_phases) {
  StepBreakdown b;
  b.device = device;
  host_phases(d, b);
  b.phases_method = "steady_clock host spans over the profiled steps";
  b.phases_device_ms = device_phases;  // the trainer's means over all steady steps (CUDA events on a GPU)
  if (d.device_events.empty()) {
    b.gpu_absent_reason = device == "cpu" ? "CPU run: no device kernels"
                                          : "no device activity recorded (LibTorch without Kineto/CUPTI)";
    return b;
  }
  // Window: union of profiled steps' spans; busy = union of kernel intervals across streams.
  std::map<int, std::vector<const DeviceEvent*>> by_dev;
  for (const auto& e : d.device_events) by_dev[e.device].push_back(&e);
  b.gpu.emplace();
  for (auto& [dev, evs] : by_dev) (*b.gpu)[fmt::format("cuda:{}", dev)] = gpu_activity(d, evs);
  return b;
}

ProfilerOverhead build_overhead(const ProfileData& d, int64_t skip_first) {
  std::vector<double> in, out;
  for (const auto& s : d.steps) {
    if (s.step < skip_first || s.warmup || s.t1_ns <= s.t0_ns) continue;
    (s.profiled ? in : out).push_back(static_cast<double>(s.t1_ns - s.t0_ns) / 1e6);
  }
  ProfilerOverhead o;
  o.window_steps = static_cast<int64_t>(in.size());
  o.outside_steps = static_cast<int64_t>(out.size());
  auto mi = mean(in), mo = mean(out);
  o.window_step_ms_mean = mi;
  o.outside_step_ms_mean = mo;
  o.window_step_ms_median = median(in);
  o.outside_step_ms_median = median(out);
  if (mi && mo && *mo > 0)
    o.overhead_pct = 100.0 * (*mi - *mo) / *mo;
  else
    o.overhead_absent_reason = "needs steps both inside and outside the profiled window (after skip_first)";
  o.method = "host step time (data start to optimizer end), warm-up steps of the schedule excluded";
  return o;
}

namespace {
std::string csv_value(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return csv_field(v.get<std::string>());
  if (v.is_number_float()) return fmt::format("{:.6g}", v.get<double>());
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}
}  // namespace

std::string op_table_csv(const std::vector<OpRow>& rows, const nlohmann::json& provenance) {
  std::string s;
  for (auto it = provenance.begin(); it != provenance.end(); ++it)
    s += fmt::format("# {}: {}\n", it.key(), it.value().is_string() ? it.value().get<std::string>() : it.value().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  std::string header;
  OpRow probe;
  OpRow::fields(probe, [&](const char* name, const auto&, Better) { header += (header.empty() ? "" : ",") + std::string(name); });
  s += header + "\n";
  for (const auto& r : rows) {
    std::string line;
    bool first = true;
    OpRow::fields(r, [&](const char*, const auto& v, Better) {
      line += (first ? "" : ",") + csv_value(record_json::write(v));
      first = false;
    });
    s += line + "\n";
  }
  return s;
}

}  // namespace trainscope::profile

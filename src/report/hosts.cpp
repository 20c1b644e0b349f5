// Across machines: the same workloads measured on two hosts (trainscope/report.h HostComparison).
// The workload identity (workload_of) decides what is comparable; every other difference of the
// two sides is listed, never used to pair runs.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "report/report_util.h"

namespace trainscope {

namespace report_detail {

std::vector<std::string> provenance_differences(const Provenance& p, const Provenance& q) {
  std::vector<std::string> d;
  auto diff = [&](const char* what, const std::string& x, const std::string& y) {
    if (x != y) d.push_back(fmt::format("{}: {} vs {}", what, x.empty() ? "?" : x, y.empty() ? "?" : y));
  };
  diff("LibTorch", p.libtorch_version, q.libtorch_version);
  diff(kIntraOpThreadsName, std::to_string(p.intra_op_threads), std::to_string(q.intra_op_threads));
  diff("CPU", fmt::format("{} ({})", p.cpu_model, cpu_count_words(p)),
       fmt::format("{} ({})", q.cpu_model, cpu_count_words(q)));
  if (p.cpu_limit != q.cpu_limit)  // the same usable count may come from different limits
    d.push_back(fmt::format("CPU limit: {} vs {}", p.cpu_limit.empty() ? "none" : p.cpu_limit,
                            q.cpu_limit.empty() ? "none" : q.cpu_limit));
  if (p.host_allocator != q.host_allocator)  // e.g. tcmalloc on one side: host-side steps differ
    d.push_back(fmt::format("host allocator: {} vs {}", p.host_allocator.empty() ? "not recorded" : p.host_allocator,
                            q.host_allocator.empty() ? "not recorded" : q.host_allocator));
  diff("CUDA runtime", p.cuda_runtime, q.cuda_runtime);
  diff("trainscope", p.trainscope_version + " " + p.git_commit, q.trainscope_version + " " + q.git_commit);
  diff("build type", p.build_type, q.build_type);
  return d;
}

namespace {

// One place for the list: the settings a report cell or a compare side may mix (report_util.h).
struct RunSetting {
  const char* name;
  std::string (*value)(const RunRecord&);
};

std::string run_end(const RunRecord& r) {
  if (r.stop_reason == "max_steps") return fmt::format("max steps {}", r.steps_completed);
  return r.stop_reason.empty() ? "complete" : r.stop_reason == "time_budget" ? "time budget" : r.stop_reason;
}

const RunSetting kRunSettings[] = {
    {"test samples", [](const RunRecord& r) { return std::to_string(r.test_samples); }},
    {"training samples", [](const RunRecord& r) { return std::to_string(r.train_samples); }},
    {"epochs requested", [](const RunRecord& r) { return std::to_string(r.epochs_requested); }},
    {"end", run_end},
    {"warm-up steps", [](const RunRecord& r) { return std::to_string(r.warmup_steps); }},
    {"optimizer", [](const RunRecord& r) { return r.optimizer.empty() ? std::string("?") : r.optimizer; }},
    {"learning rate", [](const RunRecord& r) { return fmt::format("{}", r.learning_rate); }},
    {"telemetry", [](const RunRecord& r) { return std::string(r.telemetry ? "on" : "off"); }},
    {kIntraOpThreadsName, [](const RunRecord& r) { return std::to_string(r.intra_op_threads); }},
};

}  // namespace

std::vector<std::string> settings_that_differ(const std::vector<std::vector<const RunRecord*>>& groups) {
  std::vector<std::string> out;
  for (const auto& s : kRunSettings) {
    std::vector<std::set<std::string>> values(groups.size());
    std::set<std::string> all;
    for (size_t g = 0; g < groups.size(); ++g)
      for (const auto* r : groups[g]) values[g].insert(s.value(*r)), all.insert(s.value(*r));
    if (all.size() < 2) continue;
    // sides that mix the same values alike do not differ from each other (compare)
    if (groups.size() > 1 && std::all_of(values.begin(), values.end(), [&](const auto& v) { return v == values[0]; }))
      continue;
    if (groups.size() == 1) {
      out.push_back(fmt::format("{}: {}", s.name, fmt::join(all, ", ")));
      continue;
    }
    std::vector<std::string> sides;
    for (size_t g = 0; g < groups.size(); ++g)
      sides.push_back(fmt::format("{} {}", static_cast<char>('A' + g), fmt::join(values[g], ", ")));
    out.push_back(fmt::format("{}: {}", s.name, fmt::join(sides, "; ")));
  }
  return out;
}

std::string host_line(const Provenance& p) {
  std::string gpus;
  for (const auto& g : p.gpus) gpus += (gpus.empty() ? "" : ", ") + g.name;
  return fmt::format("{} ({}, {}, GPUs: {})", p.host.empty() ? "host ?" : p.host, p.date_utc, p.cpu_model,
                     gpus.empty() ? "none" : gpus);
}

namespace {

std::set<std::string> datasets(const ReportInput& in, size_t source) {
  std::set<std::string> s;
  for (size_t i = 0; i < in.runs.size(); ++i)
    if (in.run_source[i] == source) s.insert(in.runs[i].dataset.empty() ? "?" : in.runs[i].dataset);
  return s;
}

std::vector<std::string> differences(const ReportInput& in, size_t a, size_t b) {
  auto d = provenance_differences(in.sources[a].provenance, in.sources[b].provenance);
  auto da = datasets(in, a), db = datasets(in, b);
  if (da != db) d.push_back(fmt::format("data sets: {} vs {}", fmt::join(da, ", "), fmt::join(db, ", ")));
  return d;
}

// The fastest measured cell of a workload on a host (the host's best device for it).
const Cell* fastest(const Analysis& a, const std::string& host, const std::string& key) {
  const Cell* best = nullptr;
  for (const auto& c : a.cells)
    if (c.host == host && workload_key(c.workload) == key && c.samples_per_s.ok() &&
        (!best || c.samples_per_s.median > best->samples_per_s.median))
      best = &c;
  return best;
}

HostComparison compare_pair(const ReportInput& in, const Analysis& a, size_t ia, size_t ib) {
  HostComparison h;
  const std::string& ha = in.sources[ia].provenance.host;
  const std::string& hb = in.sources[ib].provenance.host;
  h.host_a = host_line(in.sources[ia].provenance);
  h.host_b = host_line(in.sources[ib].provenance);
  h.differences = differences(in, ia, ib);
  std::set<std::string> keys;
  std::map<std::string, std::string> labels;
  for (const auto& c : a.cells)
    if (c.host == ha || c.host == hb) keys.insert(workload_key(c.workload)), labels[workload_key(c.workload)] = workload_label(c.workload);
  for (const auto& k : keys) {
    const Cell* ca = fastest(a, ha, k);
    const Cell* cb = fastest(a, hb, k);
    if (!ca || !cb) {
      h.not_comparable.push_back(fmt::format("{}: measured only on {}", labels[k], ca ? ha : cb ? hb : "neither host"));
      continue;
    }
    HostComparison::Row r;
    r.workload = labels[k];
    r.device_a = ca->device;
    r.device_b = cb->device;
    r.samples_per_s_a = ca->samples_per_s;
    r.samples_per_s_b = cb->samples_per_s;
    if (ca->samples_per_s.median > 0) r.ratio = cb->samples_per_s.median / ca->samples_per_s.median;
    r.noise = within_noise(ca->samples_per_s, cb->samples_per_s);
    h.rows.push_back(r);
  }
  return h;
}

}  // namespace

// Sources on another host than the first are compared with the first (folders of one host are
// parts of one matrix, not a comparison).
void compare_hosts(const ReportInput& in, Analysis& a) {
  if (in.sources.size() < 2 || in.run_source.size() != in.runs.size()) return;
  std::set<std::string> seen{in.sources[0].provenance.host};
  for (size_t i = 1; i < in.sources.size(); ++i)
    if (seen.insert(in.sources[i].provenance.host).second) a.host_comparisons.push_back(compare_pair(in, a, 0, i));
}

}  // namespace report_detail

}  // namespace trainscope

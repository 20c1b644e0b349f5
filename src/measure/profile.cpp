// The profiled window of a measured program (measure/profile.h): the hook's traces analysed by
// the trace layer, written beside them, and summed into measure.json and the run record.
#include "measure/profile.h"

#include <fmt/core.h>

#include <filesystem>

#include "trainscope/error.h"
#include "trainscope/fs.h"

namespace trainscope::measure {
namespace {

std::string profile_dir(const MeasureConfig& c) { return c.out_dir + "/" + kProfileDir; }

// The categories of all steps of all traces, ns (trace_analysis.h Category order).
std::array<int64_t, trace::kCategoryCount> category_sums(const std::vector<trace::TraceAnalysis>& all, int64_t* steps) {
  std::array<int64_t, trace::kCategoryCount> sum{};
  for (const trace::TraceAnalysis& a : all) {
    for (int k = 0; k < trace::kCategoryCount; ++k) sum[static_cast<size_t>(k)] += a.total_ns[static_cast<size_t>(k)];
    *steps += static_cast<int64_t>(a.steps.size());
  }
  return sum;
}

OpRow op_row(const trace::OperatorRow& o, int64_t self_sum_ns) {
  OpRow row;
  row.name = o.name;
  row.calls = o.calls;
  row.cpu_total_us = static_cast<double>(o.total_ns) * 1e-3;
  row.cpu_self_us = static_cast<double>(o.self_ns) * 1e-3;
  row.cpu_self_pct = self_sum_ns > 0 ? 100.0 * static_cast<double>(o.self_ns) / static_cast<double>(self_sum_ns) : 0;
  if (o.device_ns > 0) row.device_total_us = static_cast<double>(o.device_ns) * 1e-3;
  return row;
}

}  // namespace

void ingest_profile(MeasureResult& r, const MeasureConfig& c) {
  const std::string dir = profile_dir(c);
  std::vector<std::string> traces;
  try {
    traces = trace::find_traces({dir});
  } catch (const Error& e) {
    r.notes.push_back(fmt::format("profiled window {}-{}: no trace was written ({}); did the program take that many "
                                  "steps, and does its torch have torch.profiler?",
                                  c.profile_steps->first, c.profile_steps->second, e.what()));
    return;
  }
  for (const std::string& path : traces) {
    try {
      r.profile.push_back(trace::analyze_trace(path));
    } catch (const Error& e) {
      r.notes.push_back(fmt::format("profiled window: the trace could not be analysed: {}", e.what()));
    }
  }
  if (r.profile.empty()) return;
  write_file_atomic(dir + "/analysis.json", trace::render_json(r.profile));
  write_file_atomic(dir + "/analysis.md", trace::render_markdown(r.profile));
}

nlohmann::json profile_json(const MeasureResult& r, const MeasureConfig& c) {
  nlohmann::json j;
  j["first_step"] = c.profile_steps->first, j["last_step"] = c.profile_steps->second;
  j["traces"] = nlohmann::json::array();
  for (const trace::TraceAnalysis& a : r.profile)
    j["traces"].push_back(std::filesystem::relative(a.path, c.out_dir).string());
  int64_t steps = 0;
  const auto sum = category_sums(r.profile, &steps);
  j["steps"] = steps;
  nlohmann::json cats = nlohmann::json::object();
  for (int k = 0; k < trace::kCategoryCount; ++k)
    cats[trace::category_key(static_cast<trace::Category>(k))] = static_cast<double>(sum[static_cast<size_t>(k)]) * 1e-6;
  j["categories_ms"] = cats;
  j["analysis"] = r.profile.empty() ? "" : std::string(kProfileDir) + "/analysis.json";
  return j;
}

std::optional<ProfileSection> profile_section(const MeasureResult& r, const MeasureConfig& c) {
  if (r.profile.empty() || !c.profile_steps) return std::nullopt;
  ProfileSection p;
  p.backend = "torch.profiler";
  p.window.windows.push_back({c.profile_steps->first - 1, c.profile_steps->second - 1});  // 0-based, as run's
  p.window.active_steps = c.profile_steps->second - c.profile_steps->first + 1;
  p.window.run_steps = static_cast<int64_t>(r.step_end_ns.size());
  int64_t steps = 0, self_sum = 0;
  const auto sum = category_sums(r.profile, &steps);
  std::map<std::string, double> per_step;
  for (int k = 0; k < trace::kCategoryCount; ++k)
    per_step[trace::category_key(static_cast<trace::Category>(k))] =
        steps ? static_cast<double>(sum[static_cast<size_t>(k)]) * 1e-6 / static_cast<double>(steps) : 0;
  p.step_breakdown.profiled_steps = steps;
  p.step_breakdown.trace_categories_ms = per_step;
  const trace::TraceAnalysis& first = r.profile.front();
  for (const trace::OperatorRow& o : first.operators) self_sum += o.self_ns;
  for (const trace::OperatorRow& o : first.operators) p.op_table.push_back(op_row(o, self_sum));
  for (const trace::TraceAnalysis& a : r.profile)
    p.files.kineto_traces.push_back(std::filesystem::relative(a.path, c.out_dir).string());
  if (r.profile.size() > 1) p.warnings.push_back("several traces: the operator table is the first one's");
  for (const std::string& n : first.notes) p.warnings.push_back(n);
  return p;
}

}  // namespace trainscope::measure

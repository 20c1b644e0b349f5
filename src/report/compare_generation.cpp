// compare on a language model's generation results (trainscope/compare.h compare_generation):
// the pp/tg tests' tokens/s and the server runs' TTFT and TPOT p99, cell by cell.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <set>
#include <tuple>

#include "report/compare_rows.h"
#include "report/generation_report.h"
#include "trainscope/error.h"

namespace trainscope {

using namespace report_detail;

namespace {

// (label and test, device, batch): "gpt-mini [float32, eager] tg128", "cpu", 1.
using Key = std::tuple<std::string, std::string, int64_t>;
using Side = std::map<Key, std::vector<double>>;

// The values of `metric` per cell: each test's repetitions (tokens/s), or each server rate's p99.
Side side_values(const std::vector<InferenceDocument>& docs, const std::string& metric) {
  Side out;
  if (metric == "gen_tokens_per_s") {
    for (const auto& t : generation_tests(docs)) {
      auto& v = out[Key{t.label + " " + t.test->test, t.run->device, t.test->batch}];
      if (!t.test->samples_tokens_per_s.empty())
        v.insert(v.end(), t.test->samples_tokens_per_s.begin(), t.test->samples_tokens_per_s.end());
      else
        v.push_back(*t.test->tokens_per_s_mean);
    }
    return out;
  }
  for (const auto& s : generation_servers(docs)) {
    auto& v = out[Key{fmt::format("{} server {:g} req/s", s.label, s.rate->rate_per_s), s.run->device, 1}];
    const OptD p99 = metric == "tpot_p99_ms" ? s.rate->tpot.p99_ms : s.rate->ttft.p99_ms;
    if (p99) v.push_back(*p99);
  }
  return out;
}

bool has_generation(const std::vector<InferenceDocument>& docs) {
  for (const auto& d : docs)
    if (!d.generation_runs().empty()) return true;
  return false;
}

// A side without generation results, or sides measured with different server lengths or SLOs.
void add_generation_warnings(const std::vector<InferenceDocument>& a, const std::vector<InferenceDocument>& b,
                             CompareResult& res) {
  for (auto [docs, side] : {std::pair{&a, "A"}, std::pair{&b, "B"}})
    if (!has_generation(*docs))
      res.warnings.push_back(fmt::format("{} holds no generation results (no inference.json with a generation section): "
                                         "`trainscope infer --run <folder>` on a language model's run folder writes it",
                                         side));
  auto lengths = [](const std::vector<InferenceDocument>& docs) {
    std::set<std::string> s;
    for (const auto& g : generation_servers(docs)) s.insert(g.server->lengths);
    return s;
  };
  if (res.metric != "gen_tokens_per_s" && !lengths(a).empty() && !lengths(b).empty() && lengths(a) != lengths(b))
    res.warnings.push_back(fmt::format("the sides' server requests differ (A: {}; B: {}): latencies of other lengths "
                                       "are not comparable",
                                       fmt::join(lengths(a), ", "), fmt::join(lengths(b), ", ")));
}

}  // namespace

CompareResult compare_generation(const std::vector<InferenceDocument>& a, const std::vector<InferenceDocument>& b,
                                 const std::string& metric, double threshold_pct) {
  if (!is_generation_metric(metric)) metric_value(RunRecord{}, metric);  // throws with the list of names
  if (!(threshold_pct >= 0))
    throw_error(ErrorKind::kInvalidArgument, fmt::format("--threshold-pct {} must be >= 0", threshold_pct));
  CompareResult res;
  res.metric = metric;
  res.threshold_pct = threshold_pct;
  res.higher_is_better = metric == "gen_tokens_per_s";
  add_generation_warnings(a, b, res);
  const Side va = side_values(a, metric), vb = side_values(b, metric);
  std::set<Key> order;
  for (const auto* s : {&va, &vb})
    for (const auto& [k, v] : *s) order.insert(k);
  for (const auto& k : order) {
    const std::string name = fmt::format("{} {} batch {}", std::get<1>(k), std::get<0>(k), std::get<2>(k));
    if (!vb.count(k)) res.only_in_a.push_back(name);
    else if (!va.count(k)) res.only_in_b.push_back(name);
    else {
      CompareRow row;
      row.model = std::get<0>(k);
      row.device = std::get<1>(k);
      row.batch_size = std::get<2>(k);
      row.a = make_stat(va.at(k));
      row.b = make_stat(vb.at(k));
      if (!row.a.ok() || !row.b.ok())
        row.why_not = fmt::format("not measured ({}{}{})", row.a.ok() ? "" : "A: no p99 recorded",
                                  !row.a.ok() && !row.b.ok() ? "; " : "", row.b.ok() ? "" : "B: no p99 recorded");
      else
        judge_row(row, res);
      res.rows.push_back(std::move(row));
    }
  }
  return res;
}

}  // namespace trainscope

// compare on a language model's generation results (trainscope/compare.h compare_generation):
// the pp/tg tests' tokens/s and the server runs' TTFT and TPOT p99, cell by cell.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <set>
#include <tuple>

#include "report/compare_rows.h"
#include "report/generation_report.h"
#include "report/report_util.h"
#include "trainscope/error.h"

namespace trainscope {

using namespace report_detail;

namespace {

// (label and test, device, batch, source): "gpt-mini [float32, eager] tg128", "cpu", 1,
// "inference". A server rate's batch is 0: how it was batched is its cell's serving.
using Key = std::tuple<std::string, std::string, int64_t, std::string>;

// What a cell measured and how: the values (each test's repetitions, or each server rate's p99)
// and the settings the sides must share for the figures to compare (compare.h).
struct Cell {
  std::vector<double> values;
  std::set<std::string> serving, lengths, threads;
};
using Side = std::map<Key, Cell>;

// The source of a side with one invocation: it pairs with the other side's inference.json.
constexpr const char* kDefaultSource = "inference";

// How a server rate was served: "fcfs", "cont x32". Records written before the batching field
// (2026-11) served one request at a time, fcfs; their lengths were fixed.
std::string serving_of(const GenerationServerRun& r) {
  return r.batching == "continuous" ? fmt::format("cont x{}", r.max_batch) : "fcfs";
}
std::string lengths_of(const GenerationServerRun& r) { return r.lengths.empty() ? "fixed" : r.lengths; }

Side side_values(const std::vector<InferenceDocument>& docs, const std::string& metric) {
  Side out;
  const bool several = several_generation_sources(docs);
  if (metric == "gen_tokens_per_s") {
    for (const auto& t : generation_tests(docs)) {
      Cell& c = out[Key{t.label + " " + t.test->test, t.run->device, t.test->batch, several ? t.source : kDefaultSource}];
      if (!t.test->samples_tokens_per_s.empty())
        c.values.insert(c.values.end(), t.test->samples_tokens_per_s.begin(), t.test->samples_tokens_per_s.end());
      else
        c.values.push_back(*t.test->tokens_per_s_mean);
      c.threads.insert(std::to_string(t.threads));
    }
    return out;
  }
  for (const auto& s : generation_servers(docs)) {
    Cell& c = out[Key{fmt::format("{} server {:g} req/s", s.label, s.rate->rate_per_s), s.run->device, 0,
                      several ? s.source : kDefaultSource}];
    const OptD p99 = metric == "tpot_p99_ms" ? s.rate->tpot.p99_ms : s.rate->ttft.p99_ms;
    if (p99) c.values.push_back(*p99);
    c.serving.insert(serving_of(*s.rate));
    c.lengths.insert(lengths_of(*s.rate));
    c.threads.insert(std::to_string(s.threads));
  }
  return out;
}

bool has_generation(const std::vector<InferenceDocument>& docs) {
  for (const auto& d : docs)
    if (!d.generation_runs().empty()) return true;
  return false;
}

std::set<std::string> dtypes_of(const std::vector<InferenceDocument>& docs) {
  std::set<std::string> s;
  for (const auto& t : generation_tests(docs)) s.insert(t.dtype);
  for (const auto& g : generation_servers(docs)) s.insert(g.dtype);
  return s;
}

// A side without generation results, sides measured in other compute types, or with other
// server lengths or SLOs.
void add_generation_warnings(const std::vector<InferenceDocument>& a, const std::vector<InferenceDocument>& b,
                             CompareResult& res) {
  for (auto [docs, side] : {std::pair{&a, "A"}, std::pair{&b, "B"}})
    if (!has_generation(*docs))
      res.warnings.push_back(fmt::format("{} holds no generation results (no inference.json with a generation section): "
                                         "`trainscope infer --run <folder>` on a language model's run folder writes it",
                                         side));
  const auto da = dtypes_of(a), db = dtypes_of(b);
  if (!da.empty() && !db.empty() && da != db)
    res.warnings.push_back(fmt::format("the sides' generation ran in other compute types (A: {}; B: {}): a cell is "
                                       "paired only with one of its own dtype (the model column names it); measure "
                                       "both sides with one --dtype to compare them",
                                       fmt::join(da, ", "), fmt::join(db, ", ")));
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

// The settings the paired cells' sides measured with, where they differ: "server batching: A
// fcfs; B cont x32" (the form of report_util.h settings_that_differ), and the warning beside them.
void add_setting_differences(const Side& va, const Side& vb, CompareResult& res) {
  const std::pair<const char*, std::set<std::string> Cell::*> settings[] = {
      {"server batching", &Cell::serving}, {"server request lengths", &Cell::lengths}, {kIntraOpThreadsName, &Cell::threads}};
  for (const auto& [name, member] : settings) {
    std::set<std::string> sa, sb;
    for (const auto& [k, c] : va)
      if (vb.count(k)) {
        sa.insert((c.*member).begin(), (c.*member).end());
        sb.insert((vb.at(k).*member).begin(), (vb.at(k).*member).end());
      }
    if (sa != sb) res.setting_differences.push_back(fmt::format("{}: A {}; B {}", name, fmt::join(sa, ", "), fmt::join(sb, ", ")));
  }
  if (!res.setting_differences.empty())
    res.warnings.push_back("the sides' generation differs in settings (the differs: lines): a change in the figures "
                           "may come from them rather than from what the comparison is meant to test");
}

// One cell present on both sides: the medians, the delta and its verdict, or why there is none.
CompareRow compare_cell(const Key& k, const Cell& a, const Cell& b, bool show_source, CompareResult& res) {
  CompareRow row;
  row.model = std::get<0>(k);
  row.device = std::get<1>(k);
  row.batch_size = std::get<2>(k);
  if (show_source) row.source = std::get<3>(k);
  if (!a.serving.empty() || !b.serving.empty())
    row.batch_label = a.serving == b.serving ? fmt::format("{}", fmt::join(a.serving, ", "))
                                             : fmt::format("{} | {}", fmt::join(a.serving, ", "), fmt::join(b.serving, ", "));
  row.a = make_stat(a.values);
  row.b = make_stat(b.values);
  if (!row.a.ok() || !row.b.ok())
    row.why_not = fmt::format("not measured ({}{}{})", row.a.ok() ? "" : "A: no p99 recorded",
                              !row.a.ok() && !row.b.ok() ? "; " : "", row.b.ok() ? "" : "B: no p99 recorded");
  else
    judge_row(row, res);
  return row;
}

// "cuda:0 gpt2 [float32, eager] tg128 batch 1 (inference-graphs)": a cell on one side only.
std::string cell_name(const Key& k, const Cell& c, bool show_source) {
  const std::string batch =
      c.serving.empty() ? fmt::format("batch {}", std::get<2>(k)) : fmt::format("{}", fmt::join(c.serving, ", "));
  return fmt::format("{} {} {}{}", std::get<1>(k), std::get<0>(k), batch,
                     show_source ? fmt::format(" ({})", std::get<3>(k)) : "");
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
  add_setting_differences(va, vb, res);
  const bool show_source = several_generation_sources(a) || several_generation_sources(b);
  std::set<Key> order;
  for (const auto* s : {&va, &vb})
    for (const auto& [k, v] : *s) order.insert(k);
  for (const auto& k : order) {
    if (!vb.count(k)) res.only_in_a.push_back(cell_name(k, va.at(k), show_source));
    else if (!va.count(k)) res.only_in_b.push_back(cell_name(k, vb.at(k), show_source));
    else res.rows.push_back(compare_cell(k, va.at(k), vb.at(k), show_source, res));
  }
  return res;
}

}  // namespace trainscope

// compare: two sets of runs, cell by cell, for a CI regression gate (trainscope/compare.h).
#include "trainscope/compare.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "report/compare_rows.h"
#include "report/report_util.h"
#include "trainscope/error.h"
#include "trainscope/record_sections.h"
#include "trainscope/variants.h"

namespace trainscope {

using namespace report_detail;

namespace {

// A language model's generation metrics (docs/generation.md#outputs): their values are in
// inference.json (trainscope/generation_section.h), compared by compare_generation.
const MetricInfo kGenerationMetrics[] = {
    {"gen_tokens_per_s", true}, {"tpot_p99_ms", false}, {"ttft_p99_ms", false}};

}  // namespace

bool report_detail::is_generation_metric(const std::string& metric) {
  for (const auto& m : kGenerationMetrics)
    if (m.name == metric) return true;
  return false;
}

// The metrics a comparison can use are the record's own list (trainscope/record_sections.h
// run_metrics()), so a metric and its direction are defined once, then the generation metrics.
const std::vector<MetricInfo>& compare_metrics() {
  static const std::vector<MetricInfo> m = [] {
    std::vector<MetricInfo> v;
    for (const auto& x : run_metrics()) v.push_back({x.name, x.higher_is_better});
    for (const auto& x : kGenerationMetrics) v.push_back(x);
    return v;
  }();
  return m;
}

std::optional<double> metric_value(const RunRecord& r, const std::string& m) {
  if (const RunMetric* x = find_run_metric(m)) return x->value(r);
  if (is_generation_metric(m)) return std::nullopt;  // a run record holds no generation result
  std::string names;
  for (const auto& x : compare_metrics()) names += (names.empty() ? "" : ", ") + x.name;
  throw_error(ErrorKind::kInvalidArgument, fmt::format("unknown metric '{}'; one of: {}", m, names));
}

namespace {

// (model label, device, batch size, workload key): sorted by model, device, batch; paired by the
// workload identity (trainscope/report.h workload_of: its variant and world size included).
using Key = std::tuple<std::string, std::string, int64_t, std::string>;
Key key_of(const RunRecord& r) {
  const WorkloadId w = workload_of(r);
  return Key{w.model, r.device, r.batch_size, workload_key(w)};
}
using Side = std::map<Key, std::vector<const RunRecord*>>;  // the ok runs of each cell

// A metric that only means something at its --target-accuracy (docs/variants.md#time-to-accuracy)
// or its --target-loss (docs/language-models.md#time-to-a-target-loss).
bool loss_target(const std::string& metric) {
  return metric == "lm_time_to_target_loss_s" || metric == "lm_energy_to_target_loss_j";
}
bool per_target(const std::string& metric) { return metric == "time_to_accuracy_s" || loss_target(metric); }

// The targets of a cell's runs: "40 %", "40 %, 75 %", "loss 2.5"; "" when no run had the metric's target.
std::string targets_of(const std::vector<const RunRecord*>& runs, const std::string& metric) {
  std::set<double> t;
  for (const auto* r : runs)
    if (loss_target(metric) && r->language_model && r->language_model->target_loss) t.insert(*r->language_model->target_loss);
    else if (!loss_target(metric) && r->time_to_accuracy) t.insert(r->time_to_accuracy->target_pct);
  std::vector<std::string> out;
  for (double x : t) out.push_back(loss_target(metric) ? fmt::format("loss {:g}", x) : fmt_num(x) + " %");
  return fmt::format("{}", fmt::join(out, ", "));
}

// The best a cell's runs reached towards the metric's target: "62.3 %", "loss 2.71"; "not recorded".
std::string best_of(const std::vector<const RunRecord*>& runs, const std::string& metric) {
  std::optional<double> best;
  for (const auto* r : runs)
    if (loss_target(metric) && r->language_model && r->language_model->best_val_loss)
      best = std::min(best.value_or(*r->language_model->best_val_loss), *r->language_model->best_val_loss);
    else if (!loss_target(metric) && r->time_to_accuracy && r->time_to_accuracy->best_accuracy_pct)
      best = std::max(best.value_or(-1), *r->time_to_accuracy->best_accuracy_pct);
  if (!best) return "not recorded";
  return loss_target(metric) ? fmt::format("loss {:.3f}", *best) : fmt_num(*best) + " %";
}

// Why a side of a cell has no value of `metric` (its runs are all ok: only the value is absent).
std::string absent_reason(const std::vector<const RunRecord*>& runs, const std::string& metric) {
  if (!per_target(metric)) return fmt::format("not recorded by its {}", count_of(static_cast<long long>(runs.size()), "run"));
  const std::string targets = targets_of(runs, metric);
  if (targets.empty()) return loss_target(metric) ? "trained without --target-loss" : "trained without --target-accuracy";
  return fmt::format("target {} not reached (best {})", targets, best_of(runs, metric));
}

Stat side_stat(const std::vector<const RunRecord*>& runs, const std::string& metric) {
  std::vector<double> v;
  for (const auto* r : runs)
    if (auto x = metric_value(*r, metric)) v.push_back(*x);
  return make_stat(v);
}

// One cell present on both sides: the medians, the delta and its verdict, or why there is none.
CompareRow compare_cell(const Key& k, const std::vector<const RunRecord*>& a, const std::vector<const RunRecord*>& b,
                        CompareResult& res) {
  CompareRow row;
  row.device = std::get<1>(k);
  row.model = std::get<0>(k);
  row.batch_size = std::get<2>(k);
  row.a = side_stat(a, res.metric);
  row.b = side_stat(b, res.metric);
  const std::string ta = targets_of(a, res.metric), tb = targets_of(b, res.metric);
  if (per_target(res.metric) && !ta.empty() && !tb.empty() && ta != tb) {
    row.why_not = fmt::format("not compared: the targets differ (A: {}; B: {}); {}", ta, tb,
                              loss_target(res.metric) ? "time to a loss compares only at one --target-loss"
                                                      : "time to accuracy compares only at one --target-accuracy");
    return row;
  }
  if (!row.a.ok() || !row.b.ok()) {
    std::vector<std::string> why;
    if (!row.a.ok()) why.push_back("A: " + absent_reason(a, res.metric));
    if (!row.b.ok()) why.push_back("B: " + absent_reason(b, res.metric));
    row.why_not = fmt::format("not measured ({})", fmt::join(why, "; "));
    return row;
  }
  judge_row(row, res);
  return row;
}

// Differences between the sides that make the figures questionable: data sets, how runs ended.
void add_warnings(const std::vector<RunRecord>& a, const std::vector<RunRecord>& b, const Side& va, const Side& vb,
                  CompareResult& res) {
  auto distinct = [](const std::vector<RunRecord>& runs, auto field) {
    std::set<std::string> s;
    for (const auto& r : runs)
      if (r.status == RunStatus::kOk) s.insert(field(r));
    return s;
  };
  auto ds = [](const RunRecord& r) { return r.dataset.empty() ? std::string("?") : r.dataset; };
  auto da = distinct(a, ds), db = distinct(b, ds);
  if (!da.empty() && !db.empty() && da != db)
    res.warnings.push_back(fmt::format("the sides trained on different data sets (A: {}; B: {}): the figures are not "
                                       "comparable", fmt::join(da, ", "), fmt::join(db, ", ")));
  // Only cells on both sides matter here: a cell listed as "only in A/B" is not compared.
  auto both = [&](const std::vector<RunRecord>& runs) {
    std::vector<const RunRecord*> out;
    for (const auto& r : runs)
      if (r.status == RunStatus::kOk && va.count(key_of(r)) && vb.count(key_of(r))) out.push_back(&r);
    return out;
  };
  res.setting_differences = settings_that_differ({both(a), both(b)});
  if (!res.setting_differences.empty())
    res.warnings.push_back("the sides' runs differ in settings (the differs: lines): a change in the figures may come "
                           "from them rather than from what the comparison is meant to test");
}

}  // namespace

void report_detail::judge_row(CompareRow& row, CompareResult& res) {
  if (row.a.median == 0) return;
  row.delta_pct = (row.b.median - row.a.median) / std::fabs(row.a.median) * 100;
  row.noise = within_noise(row.a, row.b);
  row.single_repeat = row.a.n < 2 && row.b.n < 2;
  double better = res.higher_is_better ? *row.delta_pct : -*row.delta_pct;
  row.regression = !row.noise && better < -res.threshold_pct;
  row.improvement = !row.noise && better > res.threshold_pct;
  if (row.regression) res.regressed = true;
}

CompareResult compare_runs(const std::vector<RunRecord>& a, const std::vector<RunRecord>& b, const std::string& metric,
                           double threshold_pct) {
  CompareResult res;
  res.metric = metric;
  res.threshold_pct = threshold_pct;
  if (!(threshold_pct >= 0))
    throw_error(ErrorKind::kInvalidArgument, fmt::format("--threshold-pct {} must be >= 0", threshold_pct));
  bool known = false;
  for (const auto& m : compare_metrics())
    if (m.name == metric) {
      known = true;
      res.higher_is_better = m.higher_is_better;
    }
  if (!known) metric_value(RunRecord{}, metric);  // throws with the list of names
  Side va, vb;
  std::set<Key> order;
  std::map<Key, std::string> names;
  for (auto [runs, side] : {std::pair{&a, &va}, std::pair{&b, &vb}})
    for (const auto& r : *runs) {
      if (r.status != RunStatus::kOk) continue;
      Key k = key_of(r);
      order.insert(k);
      names.emplace(k, fmt::format("{} {}", r.device, workload_label(workload_of(r))));
      (*side)[k].push_back(&r);
    }
  add_warnings(a, b, va, vb, res);
  for (const auto& k : order) {
    if (!vb.count(k))
      res.only_in_a.push_back(names[k]);
    else if (!va.count(k))
      res.only_in_b.push_back(names[k]);
    else
      res.rows.push_back(compare_cell(k, va[k], vb[k], res));
  }
  return res;
}

namespace {

bool has_generation(const ReportInput& in) {
  for (const auto& d : in.inference)
    if (!d.generation_runs().empty()) return true;
  return false;
}

// A setting the provenances already differ in ("intra-op threads: 2 vs 1") is said once, there.
void drop_settings_the_provenances_name(CompareResult& res) {
  std::erase_if(res.setting_differences, [&](const std::string& d) {
    const std::string name = d.substr(0, d.find(':') + 1);
    return std::any_of(res.provenance_differences.begin(), res.provenance_differences.end(),
                       [&](const std::string& p) { return p.rfind(name, 0) == 0; });
  });
}

// The runs a side is compared on: its training runs, else its image-inference runs.
std::vector<RunRecord> runs_of(const ReportInput& in) {
  return in.runs.empty() ? inference_records(in.inference) : in.runs;
}

// The provenance of a side's measurements: its inference documents' (the `infer` invocation's)
// when they are what is compared, else the run folder's.
const Provenance& measured_provenance(const ReportInput& in, bool inference) {
  return inference && !in.inference.empty() ? in.inference.front().provenance : in.provenance;
}

}  // namespace

std::vector<RunRecord> inference_records(const std::vector<InferenceDocument>& docs) {
  std::vector<RunRecord> out;
  for (const auto& d : docs)
    for (const auto& r : d.runs) {
      if (r.failed() || !r.inference || r.inference->generation || r.inference->failed()) continue;
      RunRecord x;
      x.run_id = r.label;
      x.model = r.model.empty() ? r.label : r.model;
      x.device = r.device;
      x.dataset = r.dataset;
      x.status = RunStatus::kOk;
      x.intra_op_threads = r.inference->intra_op_threads;
      x.inference = r.inference;
      out.push_back(std::move(x));
    }
  return out;
}

std::string default_compare_metric(const ReportInput& a, const ReportInput& b) {
  if ((a.runs.empty() || b.runs.empty()) && has_generation(a) && has_generation(b)) return "gen_tokens_per_s";
  if ((a.runs.empty() || b.runs.empty()) && !runs_of(a).empty() && !runs_of(b).empty()) return "inference_samples_per_s";
  return "steady_samples_per_s";
}

CompareResult compare_inputs(const ReportInput& a, const ReportInput& b, const std::string& metric,
                             double threshold_pct) {
  if (is_generation_metric(metric)) {
    CompareResult res = compare_generation(a.inference, b.inference, metric, threshold_pct);
    const Provenance& pa = measured_provenance(a, true);
    const Provenance& pb = measured_provenance(b, true);
    res.host_a = host_line(pa);
    res.host_b = host_line(pb);
    res.provenance_differences = provenance_differences(pa, pb);
    drop_settings_the_provenances_name(res);
    return res;
  }
  CompareResult res = compare_runs(runs_of(a), runs_of(b), metric, threshold_pct);
  const Provenance& pa = measured_provenance(a, a.runs.empty());
  const Provenance& pb = measured_provenance(b, b.runs.empty());
  res.host_a = host_line(pa);
  res.host_b = host_line(pb);
  res.provenance_differences = provenance_differences(pa, pb);
  drop_settings_the_provenances_name(res);
  if (a.runs.empty() || b.runs.empty())  // image inference: the scenarios are not one batch size
    for (auto& row : res.rows)
      row.batch_label = metric == "inference_samples_per_s" ? "offline best" : metric.rfind("inference_p", 0) == 0 ? "1" : "";
  return res;
}

namespace {

// `v` with at least `digits` significant digits, in fixed notation ("0.07120", "12346").
std::string fmt_sig(double v, int digits) {
  if (v == 0 || !std::isfinite(v)) return fmt::format("{}", v);
  int decimals = std::max(0, digits - 1 - static_cast<int>(std::floor(std::log10(std::fabs(v)))));
  return fmt::format("{:.{}f}", v, decimals);
}

// Significant digits for one row: at least 4, more until two different medians print differently.
int row_digits(const CompareRow& r) {
  int d = 4;
  if (r.a.ok() && r.b.ok() && r.a.median != r.b.median)
    while (d < 17 && fmt_sig(r.a.median, d) == fmt_sig(r.b.median, d)) ++d;
  return d;
}

// "median (±half-spread, n=N)", as fmt_stat (report_util.h) but with `digits` significant digits.
std::string fmt_side(const Stat& s, int digits) {
  if (!s.ok()) return "—";
  std::string v = fmt_sig(s.median, digits);
  if (s.n > 1)
    v += s.spread() > 0 ? fmt::format(" (±{}, n={})", fmt_sig(s.spread() / 2, digits), s.n) : fmt::format(" (n={})", s.n);
  return v;
}

// Characters (UTF-8 code points) of a label, as fmt pads them: "×" is one.
size_t display_width(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char ch) { return (static_cast<unsigned char>(ch) & 0xC0) != 0x80; }));
}

std::string verdict(const CompareRow& r) {
  const char* caveat = r.single_repeat ? " (1 repeat: may be noise)" : "";
  if (!r.delta_pct) return r.why_not.empty() ? "not measured" : r.why_not;
  if (r.regression) return std::string("REGRESSION") + caveat;
  if (r.noise) return "noise";
  if (r.improvement) return std::string("improvement") + caveat;
  return "within threshold";
}

}  // namespace

namespace {

std::string batch_cell(const CompareRow& r) {
  return r.batch_label.empty() ? std::to_string(r.batch_size) : r.batch_label;
}

// The rows' table: device, model (its width the longest label's, "cnn ×2 ranks [graphs+bf16]"),
// batch (or how it was served), the source when a side held several invocations, the sides, the
// delta and the verdict.
std::string rows_table(const CompareResult& c) {
  size_t mw = 12, bw = 6, sw = 0;
  for (const auto& r : c.rows) {
    mw = std::max(mw, display_width(r.model));
    bw = std::max(bw, display_width(batch_cell(r)));
    if (!r.source.empty()) sw = std::max<size_t>({sw, 6, display_width(r.source)});
  }
  auto source = [sw](const std::string& v) { return sw == 0 ? std::string() : fmt::format("{:<{}}  ", v, sw); };
  std::string s = fmt::format("{:<10} {:<{}} {:>{}}  {}{:>26}  {:>26}  {:>9}  {}\n", "device", "model", mw, "batch", bw,
                              source("source"), "A median (±, n)", "B median (±, n)", "delta", "verdict");
  for (const auto& r : c.rows) {
    int digits = row_digits(r);
    s += fmt::format("{:<10} {:<{}} {:>{}}  {}{:>26}  {:>26}  {:>9}  {}\n", r.device, r.model, mw, batch_cell(r), bw,
                     source(r.source), fmt_side(r.a, digits), fmt_side(r.b, digits),
                     r.delta_pct ? fmt::format("{}{}%", *r.delta_pct >= 0 ? "+" : "", fmt_num(*r.delta_pct)) : "—",
                     verdict(r));
  }
  return s;
}

}  // namespace

std::string render_compare(const CompareResult& c, const std::string& la, const std::string& lb) {
  auto host = [](const std::string& h) { return h.empty() ? std::string() : " on " + h; };
  std::string s = fmt::format("metric {} ({} is better), threshold {} %\nA = {}{}\nB = {}{}\n", c.metric,
                              c.higher_is_better ? "higher" : "lower", fmt_num(c.threshold_pct), la, host(c.host_a), lb,
                              host(c.host_b));
  for (const auto& d : c.provenance_differences) s += "differs: " + d + "\n";
  for (const auto& d : c.setting_differences) s += "differs: " + d + "\n";
  s += "\n" + rows_table(c);
  size_t single = 0, measured = 0;
  for (const auto& r : c.rows) {
    single += r.single_repeat && (r.regression || r.improvement);
    measured += r.delta_pct.has_value();
  }
  for (const auto& x : c.only_in_a) s += "only in A (no ok run of this workload in B; not comparable): " + x + "\n";
  for (const auto& x : c.only_in_b) s += "only in B (no ok run of this workload in A; not comparable): " + x + "\n";
  for (const auto& w : c.warnings) s += "warning: " + w + "\n";
  if (single > 0)
    s += fmt::format("note: {} verdict(s) rest on one repeat per side: without a spread, run-to-run noise cannot be "
                     "told apart from a real change; measure with --repeats 3 or more to separate them\n",
                     single);
  if (c.rows.empty()) return s + "no cell (device, model, batch size) is in both A and B: nothing was compared\n";
  if (measured == 0)
    return s + fmt::format("no cell could be compared on {} (the verdict column says why): nothing was compared\n",
                           c.metric);
  s += c.regressed ? fmt::format("\nregression: {} got worse by more than {} % beyond the noise\n", c.metric,
                                 fmt_num(c.threshold_pct))
                   : "\nno regression\n";
  return s;
}

}  // namespace trainscope

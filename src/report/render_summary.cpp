// The report's opening, rendered three ways from one set of columns: per model one table of
// every device and batch size with a one-line verdict; the cross-host comparisons; the batch-size
// scaling; and the advice, one item per rule (src/report/report_util.h).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "report/report_util.h"
#include "trainscope/variants.h"

namespace trainscope::report_detail {

namespace {

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

std::vector<std::string> models_of(const Analysis& a) {
  std::vector<std::string> m;
  for (const auto& c : a.cells)
    if (std::find(m.begin(), m.end(), c.model) == m.end()) m.push_back(c.model);
  return m;
}

// `label_epochs`: the table's rows asked for different epoch counts (folders from several
// matrices), so each cell names its own.
std::string time_and_energy(const Cell& c, bool label_epochs) {
  if (!c.time_for_epochs_s.ok()) return "—";
  std::string s = fmt_time(c.time_for_epochs_s.median) + (c.time_for_epochs_is_estimate ? " (est.)" : "");
  if (c.energy_per_epoch_j.ok() && c.epochs_requested > 0)
    s += fmt::format(", {} kJ", fmt_num(c.energy_per_epoch_j.median * static_cast<double>(c.epochs_requested) / 1000));
  if (label_epochs) s += " for " + count_of(c.epochs_requested, "epoch");
  return s;
}

std::string peak_memory(const Cell& c) {
  if (is_gpu(c.device)) {
    const Stat& m = c.device_peak_reserved_bytes.ok() ? c.device_peak_reserved_bytes : c.device_peak_allocated_bytes;
    return m.ok() ? fmt_bytes(m.median) + " GPU" : "—";
  }
  return c.rss_bytes_max.ok() ? fmt_bytes(c.rss_bytes_max.median) + " RSS" : "—";
}

std::string busy(const Cell& c) {
  if (!is_gpu(c.device)) {
    // the machine's utilisation counts other processes too; the process's own cores say what the run used
    if (!c.cpu_util_pct_mean.ok()) return "—";
    std::string s = "CPU " + fmt_stat(c.cpu_util_pct_mean, " %") + " (machine)";
    if (c.process_cpu_cores.ok()) s += ", this process " + fmt_stat(c.process_cpu_cores, " cores");
    return s;
  }
  return fmt::format("{} / SM {}", fmt_device_stat(c, c.gpu_util_pct_mean, " %"),
                     fmt_device_stat(c, c.sm_activity_pct_mean, " %"));
}

// Time and energy to the target accuracy of a --target-accuracy run (docs/variants.md).
std::string to_target(const Cell& c) {
  if (!c.time_to_target_s.ok()) return c.runs_target_missed > 0 ? "not reached" : "—";
  std::string s = fmt_stat(c.time_to_target_s, " s");
  if (c.energy_to_target_j.ok()) s += ", " + fmt_stat(c.energy_to_target_j, " kJ", 1e-3);
  if (c.runs_target_missed > 0) s += fmt::format(" ({} missed it)", count_of(c.runs_target_missed, "run"));
  return s;
}

// The summary of one model: one row per (host, device, batch size) cell; with --target-accuracy
// a column of the time and energy to reach it.
Table summary_table(const Analysis& a, const std::string& model) {
  Table t;
  std::set<int64_t> epochs;
  std::optional<double> target;
  for (const auto& c : a.cells)
    if (c.model == model) {
      if (c.epochs_requested > 0) epochs.insert(c.epochs_requested);  // 0: a not-applicable cell
      if (c.target_pct) target = c.target_pct;
    }
  const bool mixed = epochs.size() > 1;
  // a language model's cells show tokens (docs/language-models.md): windows/s x T, energy per token
  int64_t tokens = 1;
  for (const auto& c : a.cells)
    if (c.model == model) tokens = std::max(tokens, c.tokens_per_sample);
  const double per = static_cast<double>(tokens);
  t.header = {"device", "batch", tokens > 1 ? "tokens/s" : "samples/s", "speed-up vs CPU",
              mixed || epochs.empty() ? std::string("time, energy for the requested epochs")
                                      : "time, energy for " + count_of(*epochs.begin(), "epoch")};
  if (target) t.header.push_back(fmt::format("time, energy to {} % test accuracy", fmt_num(*target)));
  for (const char* h : {tokens > 1 ? "energy/token" : "energy/sample", "peak memory", "util / SM activity", "verdict"})
    t.header.push_back(h);
  for (const auto& c : a.cells) {
    if (c.model != model) continue;
    std::vector<std::string> row = {where_label(a, c), std::to_string(c.batch_size), fmt_stat(c.samples_per_s, "", per),
                                    speedup_of(a, c), time_and_energy(c, mixed)};
    if (target) row.push_back(to_target(c));
    for (auto v : {fmt_stat(c.energy_per_sample_j, " mJ", 1000 / per), peak_memory(c), busy(c), c.verdict})
      row.push_back(std::move(v));
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::string md_table(const Table& t) {
  std::string s = "|";
  for (const auto& h : t.header) s += " " + h + " |";
  s += "\n|";
  for (size_t i = 0; i < t.header.size(); ++i) s += "---|";
  s += "\n";
  for (const auto& r : t.rows) {
    s += "|";
    for (const auto& v : r) s += " " + v + " |";
    s += "\n";
  }
  return s;
}

std::string html_table(const Table& t) {
  // the wrapper scrolls a table still wider than the page after its text columns wrapped, so
  // the page itself never does
  std::string s = "<div class=\"fit\"><table class=\"summary\"><tr>";
  for (const auto& h : t.header) s += "<th>" + html_escape(h) + "</th>";
  s += "</tr>\n";
  for (const auto& r : t.rows) {
    s += "<tr>";
    for (const auto& v : r) s += "<td>" + md_inline(v) + "</td>";
    s += "</tr>\n";
  }
  return s + "</table></div>\n";
}

// Console: fixed-width columns two spaces apart (one space let multi-word headers such as
// "speed-up vs CPU" run into their neighbours), backticks dropped.
std::string text_table(Table t) {
  auto len = [](const std::string& s) {  // UTF-8 code points
    return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char ch) { return (ch & 0xC0) != 0x80; }));
  };
  for (auto& r : t.rows)
    for (auto& v : r) std::erase(v, '`');
  std::vector<size_t> w(t.header.size(), 0);
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] = len(t.header[i]);
    for (const auto& r : t.rows) w[i] = std::max(w[i], len(r[i]));
  }
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (size_t i = 0; i < r.size(); ++i) s += "  " + r[i] + (i + 1 < r.size() ? std::string(w[i] - len(r[i]), ' ') : "");
    return s + "\n";
  };
  std::string s = line(t.header);
  for (const auto& r : t.rows) s += line(r);
  return s;
}

Table hosts_table(const HostComparison& h) {
  Table t;
  t.header = {"workload", "device A", "samples/s A", "device B", "samples/s B", "B / A"};
  for (const auto& r : h.rows)
    t.rows.push_back({r.workload, r.device_a, fmt_stat(r.samples_per_s_a, ""), r.device_b, fmt_stat(r.samples_per_s_b, ""),
                      r.ratio ? fmt::format("{}×{}", fmt_num(*r.ratio), r.noise ? " (noise)" : "") : "—"});
  return t;
}

std::string scaling_line(const BatchScaling& s, bool multi_host) {
  std::string v = fmt::format("`{}` on {}{}, samples/s: ", s.model, s.device, multi_host ? " (" + s.host + ")" : "");
  for (size_t i = 0; i < s.batch_sizes.size(); ++i)
    v += fmt::format("{}b{} {}", i ? ", " : "", s.batch_sizes[i],
                     s.samples_per_s[i] ? fmt_num(*s.samples_per_s[i]) : "— (" + s.absent[i] + ")");
  if (s.saturation_batch) v += fmt::format("; saturation point b{}", *s.saturation_batch);
  size_t last = s.batch_sizes.size();  // the largest batch with a rate
  for (size_t i = 0; i < s.batch_sizes.size(); ++i)
    if (s.samples_per_s[i]) last = i;
  const bool larger_without_rate = last + 1 < s.batch_sizes.size();
  if (!s.stop_reason.empty()) v += "; " + s.stop_reason;
  else if (last < s.batch_sizes.size())
    v += larger_without_rate
             ? fmt::format(" (throughput still rose up to b{}, the largest batch with a rate)", s.batch_sizes[last])
             : " (throughput still rose at the largest batch measured)";
  return v;
}

// Per model, the fastest measured recipe (variant and batch size) of each device and its speed-up
// over the CPU's fastest: what a verdict on where to train rests on (docs/report.md#how-to-read-it).
std::vector<std::string> fastest_recipes(const Analysis& a) {
  std::vector<std::string> bases, lines;
  for (const auto& c : a.cells)
    if (const auto b = split_model_variant(c.model).first; std::find(bases.begin(), bases.end(), b) == bases.end())
      bases.push_back(b);
  for (const auto& base : bases) {
    std::vector<const Cell*> best;  // per device, in the cells' order
    for (const auto& c : a.cells) {
      if (split_model_variant(c.model).first != base || !c.samples_per_s.ok()) continue;
      auto it = std::find_if(best.begin(), best.end(), [&](const Cell* x) { return x->device == c.device && x->host == c.host; });
      if (it == best.end()) best.push_back(&c);
      else if (c.samples_per_s.median > (*it)->samples_per_s.median) *it = &c;
    }
    const auto cpu = std::find_if(best.begin(), best.end(), [](const Cell* x) { return x->device == "cpu"; });
    if (best.size() < 2 || cpu == best.end()) continue;  // one device: nothing to weigh
    std::string v = fmt::format("`{}`, fastest measured recipe per device:", base);
    for (const Cell* c : best) {
      v += fmt::format(" {} `{}` b{} {} samples/s", c->device, c->model, c->batch_size, fmt_num(c->samples_per_s.median));
      if (c != *cpu && (*cpu)->samples_per_s.median > 0)
        v += fmt::format(" ({}× the CPU's)", fmt_num(c->samples_per_s.median / (*cpu)->samples_per_s.median));
      v += ";";
    }
    v.back() = '.';
    lines.push_back(v);
  }
  return lines;
}

}  // namespace

std::string md_summary(const Analysis& a) {
  std::string s = "## Summary\n\nPer model, every device and batch size: median over repeats; speed-up = samples/s "
                  "over the CPU's for the same workload; — = not measured.\n\n";
  for (const auto& m : models_of(a)) s += fmt::format("### `{}`\n\n", m) + md_table(summary_table(a, m)) + "\n";
  for (const auto& x : fastest_recipes(a)) s += "- " + x + "\n";
  for (const auto& x : a.summary_absences) s += "- — " + x + "\n";
  if (!a.summary_absences.empty()) s += "\n";
  for (const auto& h : a.host_comparisons) {
    s += fmt::format("## Across machines\n\nA = {}\nB = {}\n\n", h.host_a, h.host_b);
    for (const auto& d : h.differences) s += "- differs: " + d + "\n";
    if (!h.differences.empty()) s += "\n";
    if (!h.rows.empty()) s += md_table(hosts_table(h)) + "\n";
    for (const auto& x : h.not_comparable) s += "- not comparable: " + x + "\n";
    s += "\n";
  }
  if (!a.batch_scaling.empty()) {
    s += "## Batch-size scaling\n\n";
    for (const auto& b : a.batch_scaling) s += "- " + scaling_line(b, a.multi_host) + "\n";
    s += "\n";
  }
  return s;
}

std::string console_summary(const Analysis& a) {
  std::string s = "Summary (median over repeats; speed-up over the CPU of the same workload)\n";
  for (const auto& m : models_of(a)) s += fmt::format("{}\n", m) + text_table(summary_table(a, m));
  for (const auto& x : fastest_recipes(a)) {
    std::string line = x;
    std::erase(line, '`');
    s += "  " + line + "\n";
  }
  for (const auto& x : a.summary_absences) s += "  — " + x + "\n";
  for (const auto& h : a.host_comparisons) {
    s += fmt::format("\nAcross machines: A = {}; B = {}\n", h.host_a, h.host_b);
    for (const auto& d : h.differences) s += "  differs: " + d + "\n";
    if (!h.rows.empty()) s += text_table(hosts_table(h));
    for (const auto& x : h.not_comparable) s += "  not comparable: " + x + "\n";
  }
  for (const auto& b : a.batch_scaling) s += "batch scaling: " + scaling_line(b, a.multi_host) + "\n";
  return s;
}

std::string html_summary(const Analysis& a) {
  std::string h = "<section id=\"summary\"><h2>Summary <span class=\"prov\">median over repeats; speed-up over the "
                  "CPU of the same workload; — = not measured</span></h2>\n";
  for (const auto& m : models_of(a)) h += "<h3>" + md_inline("`" + m + "`") + "</h3>\n" + html_table(summary_table(a, m));
  h += "</section>\n";
  for (const auto& c : a.host_comparisons) {
    h += "<div id=\"hosts\"><h2>Across machines</h2>\n<p class=\"prov\">A = " + html_escape(c.host_a) + "<br>B = " +
         html_escape(c.host_b) + "</p>\n<ul>\n";
    for (const auto& d : c.differences) h += "<li>differs: " + html_escape(d) + "</li>\n";
    for (const auto& x : c.not_comparable) h += "<li>not comparable: " + md_inline(x) + "</li>\n";
    h += "</ul>\n" + (c.rows.empty() ? std::string() : html_table(hosts_table(c))) + "</div>\n";
  }
  return h;
}

// With rules left unchecked, "nothing fired" is not "no problem".
std::string no_rule_fired(const Analysis& a) {
  return a.advice_not_checked.empty() ? "No rule fired: no measurement points to a problem"
                                      : "No rule fired on what was measured";
}

std::string lower_first(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

std::string md_advice(const Analysis& a) {
  std::string s = "## Advice\n\nOne item per rule, listing every cell it fired on with the measurement (thresholds and "
                  "their sources: docs/report.md#advice-rules).\n\n";
  const auto items = group_advice(a.advice);
  if (items.empty()) s += fmt::format("{}.\n", no_rule_fired(a));
  for (const auto& x : items) {
    s += fmt::format("- **{}** ({}):", x.rule, count_of(static_cast<long long>(x.fired_on.size()), "cell"));
    for (const auto& t : x.advice) s += " " + t;
    s += "\n";
    for (const auto& f : x.fired_on) s += "  - measured: " + f + "\n";
  }
  for (const auto& n : a.advice_not_checked) s += "\nNot checked: " + n + ".\n";
  return s;
}

std::string console_advice(const Analysis& a) {
  std::string s = "\nAdvice (one item per rule)\n";
  const auto items = group_advice(a.advice);
  if (items.empty()) s += fmt::format("  ({})\n", lower_first(no_rule_fired(a)));
  for (const auto& x : items) {
    s += fmt::format("  - [{}]", x.rule);
    for (const auto& t : x.advice) s += " " + t;
    s += "\n";
    for (const auto& f : x.fired_on) s += fmt::format("      because {}\n", f);
  }
  for (const auto& n : a.advice_not_checked) s += "  not checked: " + n + "\n";
  return s;
}

std::string html_advice(const Analysis& a) {
  std::string h = "<h2>Advice</h2>\n<ul id=\"advice\">\n";
  const auto items = group_advice(a.advice);
  if (items.empty()) h += "<li>" + html_escape(no_rule_fired(a)) + ".</li>\n";
  for (const auto& x : items) {
    h += "<li class=\"advice\" data-rule=\"" + html_escape(x.rule) + "\"><span class=\"rule\">" + html_escape(x.rule) +
         "</span>:";
    for (const auto& t : x.advice) h += fmt::format(" {}", md_inline(t));  // not " " + ...: GCC 12 -Wrestrict
    h += "<ul>\n";
    for (const auto& f : x.fired_on) h += "<li class=\"ev\">measured: " + md_inline(f) + "</li>\n";
    h += "</ul></li>\n";
  }
  for (const auto& n : a.advice_not_checked) h += "<li class=\"not-checked\">Not checked: " + html_escape(n) + ".</li>\n";
  return h + "</ul>\n";
}

}  // namespace trainscope::report_detail

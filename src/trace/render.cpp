// Console text, Markdown and JSON of trace analyses (include/trainscope/trace_analysis.h). The
// text and the Markdown print the same tables (sections()); JSON has every figure in ns.
#include <fmt/core.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/text.h"
#include "trainscope/trace_analysis.h"

namespace trainscope::trace {
namespace {

struct Table {
  std::string title;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

std::string dur(int64_t ns) { return format_duration(static_cast<double>(ns) * 1e-9); }
std::string pct(int64_t part, int64_t whole) { return whole > 0 ? fmt::format("{:.1f} %", 100.0 * part / whole) : "—"; }

std::string heading(const TraceAnalysis& a) {
  std::string h = fmt::format("{} ({}", a.path, a.schema);
  if (a.rank) h += fmt::format("; rank {}{}", *a.rank, a.world_size ? fmt::format(" of {}", *a.world_size) : "");
  if (!a.backend.empty()) h += ", " + a.backend;
  for (const std::string& d : a.devices) h += "; " + d;
  return h + fmt::format("; {} events)", a.events);
}

std::vector<std::string> category_cells(const std::array<int64_t, kCategoryCount>& ns, int64_t whole) {
  std::vector<std::string> cells;
  for (int c = 0; c < kCategoryCount; ++c) cells.push_back(pct(ns[c], whole));
  return cells;
}

Table step_table(const TraceAnalysis& a) {
  Table t{"Step time by category (TensorBoard profiler plugin; % of the step)", {"step", "time"}, {}};
  for (int c = 0; c < kCategoryCount; ++c) t.header.push_back(category_name(static_cast<Category>(c)));
  // a long trace: the first and last kSteps / 2 steps, every step in the JSON
  constexpr size_t kSteps = 20;
  for (size_t i = 0; i < a.steps.size(); ++i) {
    if (a.steps.size() > kSteps && i == kSteps / 2) {
      t.rows.push_back({fmt::format("({} more)", a.steps.size() - kSteps), "", "", "", "", "", "", "", "", ""});
      i = a.steps.size() - kSteps / 2;
    }
    const Step& s = a.steps[i];
    std::vector<std::string> row{s.name, dur(s.duration_ns())};
    for (auto& cell : category_cells(s.category_ns, s.duration_ns())) row.push_back(cell);
    t.rows.push_back(row);
  }
  std::vector<std::string> all{fmt::format("all {}", count_of(static_cast<long long>(a.steps.size()), "step")),
                               dur(a.steps_ns)};
  for (auto& cell : category_cells(a.total_ns, a.steps_ns)) all.push_back(cell);
  t.rows.push_back(all);
  return t;
}

Table operator_table(const TraceAnalysis& a) {
  Table t{"Top operators by self time (host)", {"operator", "calls", "self", "total", "device"}, {}};
  for (const OperatorRow& r : a.operators)
    t.rows.push_back({r.name, std::to_string(r.calls), dur(r.self_ns), dur(r.total_ns), r.device_ns ? dur(r.device_ns) : "—"});
  return t;
}

Table kernel_table(const TraceAnalysis& a) {
  Table t{"Top GPU kernels by total time", {"kernel", "calls", "total", "share", "mean", "min", "max"}, {}};
  for (const KernelRow& r : a.kernels)
    t.rows.push_back({r.name, std::to_string(r.calls), dur(r.total_ns), pct(r.total_ns, a.kernel_ns),
                      dur(r.total_ns / std::max<int64_t>(1, r.calls)), dur(r.min_ns), dur(r.max_ns)});
  return t;
}

Table idle_table(const TraceAnalysis& a) {
  Table t{"GPU idle time per stream (Holistic Trace Analysis's split; % of idle)",
          {"device", "stream", "busy", "idle", "host wait", "kernel wait", "other"}, {}};
  for (const StreamIdle& s : a.idle)
    t.rows.push_back({std::to_string(s.device), std::to_string(s.stream), dur(s.busy_ns), dur(s.idle_ns()),
                      pct(s.host_wait_ns, s.idle_ns()), pct(s.kernel_wait_ns, s.idle_ns()), pct(s.other_ns, s.idle_ns())});
  return t;
}

Table overlap_table(const CommOverlap& o) {
  return Table{"Communication and computation (over the steps)",
               {"computation", "communication", "overlap", "other", "communication overlapped"},
               {{dur(o.computation_ns), dur(o.communication_ns), dur(o.overlap_ns), dur(o.other_ns),
                 fmt::format("{:.1f} %", o.overlap_pct())}}};
}

std::vector<Table> sections(const TraceAnalysis& a) {
  std::vector<Table> out{step_table(a), operator_table(a)};
  if (!a.kernels.empty()) out.push_back(kernel_table(a));
  if (!a.idle.empty()) out.push_back(idle_table(a));
  if (a.overlap) out.push_back(overlap_table(*a.overlap));
  return out;
}

// UTF-8 code points, for column widths ("µs", "—").
size_t width(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string text_table(const Table& t) {
  std::vector<size_t> w(t.header.size(), 0);
  auto fit = [&](const std::vector<std::string>& r) {
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], std::min<size_t>(width(r[i]), 60));
  };
  fit(t.header);
  for (const auto& r : t.rows) fit(r);
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (size_t i = 0; i < r.size(); ++i) {
      std::string cell = width(r[i]) > 60 ? r[i].substr(0, 57) + "..." : r[i];
      const std::string pad(w[i] > width(cell) ? w[i] - width(cell) : 0, ' ');
      s += (i ? "  " : "") + (i == 0 ? cell + pad : pad + cell);
    }
    s.erase(s.find_last_not_of(' ') + 1);
    return s + "\n";
  };
  std::string out = t.title + "\n" + line(t.header);
  for (const auto& r : t.rows) out += line(r);
  return out;
}

std::string md_cell(std::string s) {
  for (size_t p = 0; (p = s.find('|', p)) != std::string::npos; p += 2) s.replace(p, 1, "\\|");
  return s;
}

std::string md_table(const Table& t) {
  std::string out = "### " + t.title + "\n\n|";
  for (const auto& h : t.header) out += " " + md_cell(h) + " |";
  out += "\n|";
  for (size_t i = 0; i < t.header.size(); ++i) out += i ? "---:|" : "---|";
  out += "\n";
  for (const auto& r : t.rows) {
    out += "|";
    for (const auto& c : r) out += " " + md_cell(c) + " |";
    out += "\n";
  }
  return out + "\n";
}

}  // namespace

std::string render_text(const std::vector<TraceAnalysis>& analyses) {
  std::string out;
  for (const TraceAnalysis& a : analyses) {
    out += "== " + heading(a) + "\n\n";
    for (const Table& t : sections(a)) out += text_table(t) + "\n";
    for (const std::string& n : a.notes) out += "note: " + n + "\n";
    if (!a.notes.empty()) out += "\n";
  }
  return out;
}

std::string render_markdown(const std::vector<TraceAnalysis>& analyses) {
  std::string out = "# Trace analysis\n\n";
  for (const TraceAnalysis& a : analyses) {
    out += "## " + md_cell(heading(a)) + "\n\n";
    for (const Table& t : sections(a)) out += md_table(t);
    for (const std::string& n : a.notes) out += "- " + md_cell(n) + "\n";
    if (!a.notes.empty()) out += "\n";
  }
  return out;
}

}  // namespace trainscope::trace

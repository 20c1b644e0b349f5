// The pieces the report's renderings share (report/render_parts.h, report/report_util.h).
#include "report/render_parts.h"

#include <fmt/format.h>

#include "dist/rank_table.h"
#include "report/report_util.h"

namespace trainscope::report_detail {

std::string speedup_of(const Analysis& a, const Cell& c) {
  const ShownSpeedup sp = shown_speedup(a, c.device, c.model, c.batch_size, c.host);
  if (sp.baseline) return "1× (baseline)";
  if (!sp.value) return "—";
  return fmt::format("{}×{}", fmt_num(*sp.value), sp.noise ? " (noise)" : "");
}

// A device telemetry column of a cell: marked "n=3, too few" when fewer than kMinStatsSamples
// readings were behind a run's mean or maximum (trainscope/record_sections.h).
std::string fmt_device_stat(const Cell& c, const Stat& s, const std::string& unit) {
  std::string v = fmt_stat(s, unit);
  if (!s.ok() || !c.telemetry_samples_min || !too_few_samples(*c.telemetry_samples_min)) return v;
  return fmt::format("n={}, too few ({})", *c.telemetry_samples_min, v);
}

std::string html_escape(const std::string& in) {
  std::string o;
  for (char c : in) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string md_inline(const std::string& s) {  // `code` -> <code>, the rest escaped
  std::string o;
  bool code = false;
  for (char c : html_escape(s)) {
    if (c == '`') {
      o += code ? "</code>" : "<code>";
      code = !code;
    } else {
      o += c;
    }
  }
  if (code) o += "</code>";
  return o;
}

std::string runs_cell(const Cell& c) {
  std::string s = fmt::format("{}/{}", c.runs_ok, c.runs_failed);
  if (c.runs_not_applicable > 0) s += fmt::format(", {} not applicable", c.runs_not_applicable);
  return s;
}

std::string opt_num(const std::optional<double>& v, const std::string& unit) {
  return v ? fmt_num(*v) + unit : "—";
}


std::string provenance_line(const Provenance& p) {
  std::string gpus;
  for (const auto& g : p.gpus) gpus += (gpus.empty() ? "" : ", ") + g.name;
  return fmt::format("{} · host {} · {} ({}, {}) · GPUs: {} · driver {} · LibTorch {}{} · "
                     "trainscope {} ({}, {}) · schema {}",
                     p.date_utc, p.host, p.cpu_model, cpu_count_words(p), count_of(p.intra_op_threads, "intra-op thread"),
                     gpus.empty() ? "none" : gpus, p.gpu_driver.empty() ? "—" : p.gpu_driver, p.libtorch_version,
                     p.cuda_runtime.empty() ? "" : " · CUDA " + p.cuda_runtime, p.trainscope_version, p.git_commit,
                     p.build_type, p.schema_version);
}

std::string provenance_lines(const ReportInput& in, const std::string& sep) {
  if (in.sources.empty()) return provenance_line(in.provenance) + sep;
  std::string s;
  for (const auto& src : in.sources) s += provenance_line(src.provenance) + (src.run_dir.empty() ? "" : " · folder " + src.run_dir) + sep;
  return s;
}


std::vector<std::string> instrumentation_flags(const ReportInput& in) {
  std::vector<std::string> out;
  for (const auto& r : in.runs) {
    if (!r.measurement.instrumentation_over_3pct) continue;
    const std::optional<double>& cost = r.measurement.profile_cost_pct;
    // A negative cost is noise (the headline steps were slowed by something else), never a cost.
    const std::string profiling =
        cost && *cost < 0 ? "profiling window cost not measurable: its steps ran faster than the headline (noise)"
          : cost ? fmt::format("profiling window {:.1f} % of the training time", *cost)
                 : std::string("profiling window cost not measured");
    const auto& sampler = r.measurement.sampler_cpu_pct_mean;  // absent: telemetry off or unmeasured, never 0
    out.push_back(fmt::format("{}: trainscope's own instruments cost more than 3 % ({}, {}); the headline excludes "
                              "the profiled steps",
                              r.run_id,
                              sampler ? fmt::format("telemetry sampler {:.1f} % of one core", *sampler)
                                      : std::string("telemetry sampler's CPU time not measured"),
                              profiling));
  }
  return out;
}

// Data-parallel runs (docs/distributed.md): each one's per-rank table (samples/s, step and phase
// times, communication, its GPU's power and utilisation) with the imbalance ratios and the
// exposed communication share: the console's table (dist/rank_table.h), one source for both.
std::string distributed_tables(const ReportInput& in) {
  std::string s;
  for (const auto& r : in.runs)
    if (auto t = dist::format_rank_table(r); !t.empty()) s += t + "\n";
  return s;
}

}  // namespace trainscope::report_detail

// report.html: one self-contained page (its style sheet, script and Chart.js inline) with the
// summary tables, the charts (drawn by the page script from DATA, report/render_charts.h), the
// answers and advice, and the definitions.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "report/generation_report.h"
#include "report/render_charts.h"
#include "report/render_parts.h"
#include "report/report_util.h"
#include "trainscope/report.h"

namespace trainscope {

using nlohmann::json;
using namespace report_detail;

namespace {

// Inline <script> content must not contain "</script" (nor "<!--"); JSON and JS allow "<\/".
std::string script_safe(std::string s) {
  for (size_t p = 0; (p = s.find("</", p)) != std::string::npos; p += 3) s.replace(p, 2, "<\\/");
  for (size_t p = 0; (p = s.find("<!--", p)) != std::string::npos; p += 5) s.replace(p, 4, "<\\!--");
  return s;
}

// The page's head, with its style sheet inline.
std::string html_head() {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
         "content=\"width=device-width, initial-scale=1\">\n<title>trainscope report</title>\n<style>\n" +
         page_css() + "</style></head><body>\n";
}

std::string html_answers_and_advice(const Analysis& a) {
  std::string h = "<h2>Research questions</h2>\n";
  for (const auto& q : a.answers) {
    h += "<h3>" + html_escape(q.id == "simple_network" ? "Simple network" : q.id) + ": " + html_escape(q.question) +
         "</h3>\n<ul>\n";
    for (const auto& s : q.sentences) h += "<li>" + md_inline(s) + "</li>\n";
    h += "</ul>\n";
  }
  return h + html_advice(a);
}

// The summary table, as in report.md.
std::string html_summary_table(const Analysis& a) {
  std::string h =
      "<h2>Details per device, model and batch size</h2>\n<table><tr><th>model</th><th>batch</th><th>device</th>"
      "<th>samples/s</th><th>speed-up</th><th>epoch time</th><th>test acc.</th><th>GPU util</th><th>SM activity</th>"
      "<th>CPU util (machine)</th><th>process CPU</th><th>GPU peak alloc.</th><th>host RSS</th><th>power mean</th><th>power peak</th>"
      "<th>temp peak</th><th>energy/sample</th><th>latency p50</th></tr>\n";
  for (const auto& c : a.cells)
    h += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        html_escape(c.model), c.batch_size, html_escape(c.device), fmt_stat(c.samples_per_s, ""), speedup_of(a, c),
        c.epoch_time_s.ok() ? fmt_time(c.epoch_time_s.median) + (c.epoch_time_is_estimate ? " (est.)" : "") : "—", fmt_stat(c.test_accuracy_pct, " %"),
        fmt_device_stat(c, c.gpu_util_pct_mean, " %"), fmt_device_stat(c, c.sm_activity_pct_mean, " %"), fmt_stat(c.cpu_util_pct_mean, " %"),
        fmt_stat(c.process_cpu_cores, " cores"), c.device_peak_allocated_bytes.ok() ? fmt_bytes(c.device_peak_allocated_bytes.median) : "—",
        c.rss_bytes_max.ok() ? fmt_bytes(c.rss_bytes_max.median) : "—", fmt_device_stat(c, c.power_w_mean, " W"),
        fmt_device_stat(c, c.power_w_max, " W"), fmt_device_stat(c, c.temp_c_max, " °C"), fmt_stat(c.energy_per_sample_j, " mJ", 1000),
        fmt_stat(c.latency_p50_ms, " ms"));
  return h + "</table>\n";
}

const char* kChartSections =
    "<section id=\"batches\"><h2>Batch-size scaling</h2></section>\n"
    "<section id=\"speedup\"><h2>Training speed and speed-up</h2></section>\n"
    "<section id=\"energy\"><h2>Energy</h2></section>\n"
    "<section id=\"latency\"><h2>Inference latency</h2></section>\n"
    "<section id=\"timeseries\"><h2>Utilisation, power, temperature and memory over time</h2>"
    "<p class=\"prov\">Dashed lines: epoch starts; darker at a run's first epoch, labelled with the run where the label fits.</p></section>\n"
    "<section id=\"steps\"><h2>Step breakdown</h2></section>\n"
    "<section id=\"operators\"><h2>Top operators per device</h2></section>\n";

}  // namespace

std::string render_html(const ReportInput& in, const Analysis& a, const std::vector<CounterSeries>& series,
                        const std::string& telemetry_absent_reason) {
  const json d = chart_data(in, a, series, telemetry_absent_reason);
  std::string h = html_head();
  h += "<h1>trainscope report</h1>\n<p class=\"prov\">" + html_escape(provenance_lines(in, "\n")) + "</p>\n";
  if (!in.provenance.command_line.empty())
    h += "<p class=\"prov\">Command: <code>" + html_escape(in.provenance.command_line) + "</code></p>\n";
  h += html_summary(a);
  h += kChartSections;
  h += html_answers_and_advice(a);
  h += html_generation(in);
  h += html_summary_table(a);
  if (const std::string t = distributed_tables(in); !t.empty())
    h += "<h2>Data-parallel ranks</h2>\n<pre>" + html_escape(t) + "</pre>\n";
  h += "<h2>Definitions</h2>\n<ul>\n";
  for (const auto& x : kDefinitions) h += "<li><b>" + html_escape(x[0]) + "</b>: " + html_escape(x[1]) + "</li>\n";
  for (const auto& x : a.summary_absences)  // here, not under the summary: it keeps the first screen
    h += "<li><b>— in the summary</b>: " + html_escape(x) + "</li>\n";
  for (const auto& n : a.notes) h += "<li>" + md_inline(n) + "</li>\n";
  for (const auto& f : instrumentation_flags(in)) h += "<li><b>instrumentation cost</b>: " + html_escape(f) + "</li>\n";
  h += "</ul>\n<p class=\"prov\">Charts: " + html_escape(chartjs_version()) + " (MIT), embedded.</p>\n";
  h += "<script>/* " + html_escape(chartjs_version()) + " — MIT License, see third_party/chartjs/LICENSE.md */\n" +
       script_safe(chartjs_source()) + "\n</script>\n";
  h += "<script>\nvar DATA = " + script_safe(d.dump(-1, ' ', false, json::error_handler_t::replace)) + ";\n\n" +
       page_script() + "</script>\n</body></html>\n";
  return h;
}

}  // namespace trainscope

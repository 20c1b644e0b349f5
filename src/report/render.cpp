// Renderings of an Analysis: console text, report.md and a self-contained report.html with
// Chart.js inline; plus the telemetry time series the HTML charts.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <nlohmann/json.hpp>

#include "dist/rank_table.h"
#include "report/report_util.h"
#include "trainscope/console_table.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/report.h"

namespace trainscope {

namespace report_detail {
extern const unsigned char kChartJs[];
extern const size_t kChartJsSize;
extern const char kChartJsVersion[];
}  // namespace report_detail

using nlohmann::json;
using namespace report_detail;

const std::string& chartjs_source() {
  static const std::string s(reinterpret_cast<const char*>(kChartJs), kChartJsSize);
  return s;
}
std::string chartjs_version() { return kChartJsVersion; }

namespace report_detail {

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

}  // namespace report_detail

// ---------------------------------------------------------------- telemetry series

namespace {

// "ok/failed", and the not-applicable runs when there are any: "0/0, 1 not applicable".
std::string runs_cell(const Cell& c) {
  std::string s = fmt::format("{}/{}", c.runs_ok, c.runs_failed);
  if (c.runs_not_applicable > 0) s += fmt::format(", {} not applicable", c.runs_not_applicable);
  return s;
}

bool charted(const std::string& device, const std::string& metric) {
  if (device.rfind("gpu", 0) == 0)
    return metric == "util_pct" || metric == "sm_activity_pct" || metric == "power_w" || metric == "temp_c" ||
           metric == "mem_used_bytes";
  if (device == "cpu")
    return metric == "util_pct" || metric == "package_power_w" || metric == "temp_c" || metric == "mem_used_bytes";
  if (device == "process") return metric == "rss_bytes";
  return false;
}

}  // namespace

std::vector<CounterSeries> load_telemetry_series(const std::string& run_dir, size_t max_points, std::string* why,
                                                 const std::function<bool(const std::string&, const std::string&)>& keep) {
  return read_telemetry_series(run_dir, max_points, why, keep ? keep : charted);
}

// ---------------------------------------------------------------- shared pieces

namespace {

std::string opt_num(const std::optional<double>& v, const std::string& unit = "") {
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

// One provenance line per source folder (several when folders from other hosts were merged).
std::string provenance_lines(const ReportInput& in, const std::string& sep) {
  if (in.sources.empty()) return provenance_line(in.provenance) + sep;
  std::string s;
  for (const auto& src : in.sources) s += provenance_line(src.provenance) + (src.run_dir.empty() ? "" : " · folder " + src.run_dir) + sep;
  return s;
}

const char* kDefinitions[][2] = {
    {"speed-up", "GPU steady-state training samples/s divided by the CPU's, same model and batch size (> 1: GPU faster)"},
    {"noise", "a difference no larger than the combined spread (max − min over repeats) of the two cells"},
    {"GPU utilisation", "NVML utilization.gpu: share of the sample period during which at least one kernel ran; "
                        "100 % can still leave most SMs idle"},
    {"SM activity", "NVML GPM SM activity: average share of streaming multiprocessors with a warp resident; the "
                    "measure of how full the GPU really is"},
    {"CPU util (machine)", "/proc/stat: share of all the machine's logical CPUs busy, every process counted"},
    {"process CPU", "/proc/self/stat: the cores this process kept busy on average (process_cpu_pct_mean / 100); "
                    "below the run's intra-op threads on a busy machine, other processes took the rest"},
    {"peak allocated / reserved", "CUDA caching allocator: memory held by tensors / memory the allocator took from "
                                  "the device"},
    {"energy per epoch", "joules per sample × training-set size (the device's energy counter, or power integrated "
                         "over time)"},
};

// Runs whose own instruments cost trainscope more than 3 % (run_record.h MeasurementWindow,
// docs/profiling.md#measurement-protocol).
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

}  // namespace

// ---------------------------------------------------------------- console

std::string render_console(const ReportInput& in, const Analysis& a) {
  std::string s = console_summary(a) + console_advice(a);
  s += "\nResearch questions (answered in full in report.md)\n";
  for (const auto& q : a.answers)
    if (!q.sentences.empty()) s += fmt::format("  {}  {}\n", q.id == "simple_network" ? "Simple network" : q.id, q.sentences.front());
  for (const auto& n : a.notes) s += "note: " + n + "\n";
  for (const auto& f : instrumentation_flags(in)) s += "flag: " + f + "\n";
  return s;
}

// ---------------------------------------------------------------- markdown

namespace {


}  // namespace

namespace {

std::string md_summary_table(const Analysis& a) {
  std::string s;
  s += "\n## Details per device, model and batch size\n\n";
  s += "Median over repeats; (±half the spread, n = repeats) where there are several. — = not measured.\n\n";
  s += "| model | batch | device | runs ok/failed | samples/s | speed-up | epoch time | time for N epochs | test acc. | "
       "GPU util | SM activity | CPU util (machine) | process CPU | GPU peak alloc. | GPU peak reserved | host RSS | "
       "power mean | power peak | "
       "temp peak | energy/epoch | energy/sample | data share | h2d share | latency p50 | inference/s |\n";
  s += "|";
  for (int i = 0; i < 25; ++i) s += "---|";
  s += "\n";
  for (const auto& c : a.cells) {
    s += fmt::format(
        "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | "
        "{} | {} | {} | {} |\n",
        c.model, c.batch_size, c.device, runs_cell(c), fmt_stat(c.samples_per_s, ""), speedup_of(a, c),
        c.epoch_time_s.ok() ? fmt_time(c.epoch_time_s.median) + (c.epoch_time_is_estimate ? " (est.)" : "") : "—",
        c.time_for_epochs_s.ok() ? fmt::format("{} ({} ep.{})", fmt_time(c.time_for_epochs_s.median),
                                               c.epochs_requested, c.time_for_epochs_is_estimate ? ", est." : "")
                                 : "—",
        fmt_stat(c.test_accuracy_pct, " %"), fmt_device_stat(c, c.gpu_util_pct_mean, " %"), fmt_device_stat(c, c.sm_activity_pct_mean, " %"),
        fmt_stat(c.cpu_util_pct_mean, " %"), fmt_stat(c.process_cpu_cores, " cores"),
        c.device_peak_allocated_bytes.ok() ? fmt_bytes(c.device_peak_allocated_bytes.median) : "—",
        c.device_peak_reserved_bytes.ok() ? fmt_bytes(c.device_peak_reserved_bytes.median) : "—",
        c.rss_bytes_max.ok() ? fmt_bytes(c.rss_bytes_max.median) : "—", fmt_device_stat(c, c.power_w_mean, " W"),
        fmt_device_stat(c, c.power_w_max, " W"), fmt_device_stat(c, c.temp_c_max, " °C"), fmt_stat(c.energy_per_epoch_j, " J"),
        fmt_stat(c.energy_per_sample_j, " mJ", 1000), fmt_stat(c.data_share_pct, " %"), fmt_stat(c.h2d_share_pct, " %"),
        fmt_stat(c.latency_p50_ms, " ms"), fmt_stat(c.inference_samples_per_s, ""));
  }
  return s;
}

std::string md_answers_and_advice(const Analysis& a) {
  std::string s;
  s += "\n## Answers to the study's research questions\n\n";
  for (const auto& q : a.answers) {
    s += fmt::format("### {}: {}\n\n", q.id == "simple_network" ? "Simple network" : q.id, q.question);
    for (const auto& x : q.sentences) s += "- " + x + "\n";
    s += "\n";
  }
  s += md_advice(a);
  return s;
}

std::string md_comparisons(const Analysis& a) {
  std::string s;
  if (!a.batch_comparisons.empty()) {
    s += "\n## Batch sizes\n\n| device | model | batches | samples/s ratio | utilisation | memory |\n|---|---|---|---|---|---|\n";
    for (const auto& b : a.batch_comparisons)
      s += fmt::format("| {} | `{}` | {} → {} | {}{} | {} → {} | {} → {} |\n", b.device, b.model, b.batch_a, b.batch_b,
                       opt_num(b.samples_per_s_ratio, "×"), b.noise ? " (noise)" : "", opt_num(b.util_a_pct, " %"),
                       opt_num(b.util_b_pct, " %"), b.mem_a_bytes ? fmt_bytes(*b.mem_a_bytes) : "—",
                       b.mem_b_bytes ? fmt_bytes(*b.mem_b_bytes) : "—");
  }
  if (!a.balance.empty()) {
    s += "\n## Per-GPU balance\n\n| run | multi-GPU | GPU | util mean | power mean | power peak | memory peak |\n"
         "|---|---|---|---|---|---|---|\n";
    for (const auto& b : a.balance)
      for (const auto& e : b.gpus)
        s += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", b.run_id, b.multi_gpu_run ? "yes" : "no", e.gpu,
                         opt_num(e.util_pct_mean, " %"), opt_num(e.power_w_mean, " W"), opt_num(e.power_w_max, " W"),
                         e.mem_used_bytes_max ? fmt_bytes(*e.mem_used_bytes_max) : "—");
  }
  return s;
}

std::string md_definitions_and_notes(const ReportInput& in, const Analysis& a) {
  std::string s;
  s += "\n## Definitions\n\n";
  for (const auto& d : kDefinitions) s += fmt::format("- **{}**: {}\n", d[0], d[1]);
  std::vector<std::string> reasons;
  for (const auto& c : a.cells)
    for (const auto& r : c.absent_reasons)
      if (std::find(reasons.begin(), reasons.end(), r) == reasons.end()) reasons.push_back(r);
  const auto flags = instrumentation_flags(in);
  if (!a.notes.empty() || !reasons.empty() || !flags.empty()) {
    s += "\n## Notes\n\n";
    for (const auto& f : flags) s += "- **instrumentation cost**: " + f + "\n";
    for (const auto& n : a.notes) s += "- " + n + "\n";
    for (const auto& n : reasons) s += "- " + n + "\n";
  }
  return s;
}

}  // namespace

// One line per streamed run (docs/input-pipeline.md); "" when no run was streamed.
std::string md_input_pipeline(const ReportInput& in) {
  std::string s;
  for (const auto& r : in.runs)
    if (auto line = format_input_pipeline(r); !line.empty()) s += "- " + line + "\n";
  return s.empty() ? s : "\n## Input pipeline\n\n" + s;
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

std::string md_distributed(const ReportInput& in) {
  const std::string t = distributed_tables(in);
  return t.empty() ? t : "\n## Data-parallel ranks\n\n```\n" + t + "```\n";
}

std::string render_markdown(const ReportInput& in, const Analysis& a) {
  std::string s = "# trainscope report\n\n";
  s += provenance_lines(in, "\n\n");
  if (!in.provenance.command_line.empty()) s += fmt::format("Command: `{}`\n\n", in.provenance.command_line);
  return s + md_summary(a) + md_answers_and_advice(a) + md_summary_table(a) + md_comparisons(a) + md_input_pipeline(in) +
         md_distributed(in) +
         md_definitions_and_notes(in, a);
}

// ---------------------------------------------------------------- html

namespace {


// Inline <script> content must not contain "</script" (nor "<!--"); JSON and JS allow "<\/".
std::string script_safe(std::string s) {
  for (size_t p = 0; (p = s.find("</", p)) != std::string::npos; p += 3) s.replace(p, 2, "<\\/");
  for (size_t p = 0; (p = s.find("<!--", p)) != std::string::npos; p += 5) s.replace(p, 4, "<\\!--");
  return s;
}


// The top `n` operators of a run's profile by self time: self device time when the profiler
// recorded device events (OpRow::device_self_us), else self CPU time (OpRow::cpu_self_us).
json top_operators(const RunRecord& r, size_t n) {
  if (!r.profile || r.profile->op_table.empty()) return nullptr;
  const auto& rows = r.profile->op_table;
  const bool dev = std::any_of(rows.begin(), rows.end(), [](const OpRow& o) { return o.device_self_us.value_or(0) > 0; });
  std::vector<std::pair<double, std::string>> ops;
  for (const auto& o : rows) ops.emplace_back((dev ? o.device_self_us.value_or(0) : o.cpu_self_us) / 1000, o.name);
  std::stable_sort(ops.begin(), ops.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  json out = {{"labels", json::array()}, {"ms", json::array()}, {"key", dev ? "device_self_us" : "cpu_self_us"}};
  for (size_t i = 0; i < ops.size() && i < n; ++i) {
    out["labels"].push_back(ops[i].second.size() > 48 ? ops[i].second.substr(0, 45) + "..." : ops[i].second);
    out["ms"].push_back(ops[i].first);
  }
  return out;
}

json nullable(const Stat& s, double scale = 1) { return s.ok() ? json(s.median * scale) : json(nullptr); }

const char* kHtmlHead = R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>trainscope report</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1280px;padding:16px 24px;color:#1b1f24;background:#fff}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:15px;margin:14px 0 4px}.prov{color:#57606a;font-size:12px;white-space:pre-line}
#summary h2{margin-top:12px}#summary h3{margin:6px 0 2px}#summary .chart{height:140px}
table.summary{display:table;width:100%;margin:2px 0}table.summary td,table.summary th{padding:2px 6px}
table.summary td:first-child,table.summary td:last-child{text-align:left}table.summary td:last-child{min-width:220px}
table.summary td,table.summary th{white-space:normal;overflow-wrap:anywhere}.fit{max-width:100%;overflow-x:auto}
img,canvas{max-width:100%}
table{border-collapse:collapse;font-size:12px;margin:8px 0;display:block;overflow-x:auto}
th,td{border:1px solid #d0d7de;padding:3px 6px;text-align:right;white-space:nowrap}th{background:#f6f8fa}td:nth-child(-n+3){text-align:left}
.charts{display:flex;flex-wrap:wrap;gap:12px}.chart{position:relative;height:300px;flex:1 1 560px;min-width:360px;border:1px solid #eaeef2;border-radius:6px;padding:6px}
.absent{color:#9a6700;background:#fff8c5;padding:6px 10px;border-radius:6px}.rule{font-weight:600}.ev{color:#57606a}
code{background:#f6f8fa;padding:0 3px;border-radius:3px}li{margin:3px 0}
</style></head><body>
)";

// The page's own script: draws every chart from DATA and marks each canvas with data-rendered="1"
// once pixels were drawn (the end-to-end test reads the attribute from the DOM).
const char* kPageScript = R"JS(
(function(){
  var errors = [];
  window.addEventListener('error', function(e){ errors.push(String(e.message)); document.body.setAttribute('data-errors', String(errors.length)); });
  var palette = ['#0969da','#cf222e','#1a7f37','#8250df','#bf8700','#0598bc','#bc4c00','#6e7781','#d63384','#2da44e'];
  function color(i){ return palette[i % palette.length]; }
  function drawn(cv){
    try {
      // Read the pixels back through a scratch canvas made for readback (keeps Chart.js's own
      // context fast and Chrome quiet about repeated getImageData).
      var aux = document.createElement('canvas'); aux.width = cv.width; aux.height = cv.height;
      var ctx = aux.getContext('2d', {willReadFrequently: true}); ctx.drawImage(cv, 0, 0);
      var d = ctx.getImageData(0, 0, aux.width, aux.height).data; var n = 0;
      for (var i = 3; i < d.length; i += 4 * 13) { if (d[i] !== 0) { n++; if (n > 20) break; } }
      return n > 20;
    } catch (e) { return false; }
  }
  var charts = [];
  function absent(section, text){ var p = document.createElement('p'); p.className = 'absent'; p.textContent = text; document.getElementById(section).appendChild(p); }
  function chart(section, title, cfg){
    var holder = document.getElementById(section).querySelector('.charts');
    if (!holder) { holder = document.createElement('div'); holder.className = 'charts'; document.getElementById(section).appendChild(holder); }
    var box = document.createElement('div'); box.className = 'chart'; var cv = document.createElement('canvas');
    cv.setAttribute('data-chart', title); box.appendChild(cv); holder.appendChild(box);
    cfg.options = cfg.options || {};
    cfg.options.animation = false; cfg.options.responsive = true; cfg.options.maintainAspectRatio = false;
    cfg.options.plugins = cfg.options.plugins || {};
    cfg.options.plugins.title = {display: true, text: title};
    try { var c = new Chart(cv, cfg); charts.push([c, cv]); if (drawn(cv)) cv.setAttribute('data-rendered', '1'); }
    catch (e) { cv.setAttribute('data-rendered', 'error'); console.error('chart "' + title + '": ' + e); }
  }
  // Vertical dashed lines at epoch starts; each run's id at its first epoch, in a band above the
  // plot (never over the data), on the first of two rows where it does not run into the label
  // before it, else left out. Later epochs' lines closer than 8 px to the last one drawn are skipped.
  var epochMarkers = {
    id: 'epochMarkers',
    beforeLayout: function(c){  // the band: 24 px more below the legend, above the plot
      var l = c.legend; if (!l || l.tsBand) return; l.tsBand = true;
      var fit = l.fit; l.fit = function(){ fit.call(this); this.height += 24; };
    },
    afterDatasetsDraw: function(c){
      var m = DATA.epochs; if (!m || !c.scales.x) return; var ctx = c.ctx, a = c.chartArea;
      ctx.save(); ctx.setLineDash([4, 3]); ctx.lineWidth = 1; ctx.font = '10px sans-serif';
      var rowEnd = [-Infinity, -Infinity], lastX = -Infinity;
      for (var i = 0; i < m.length; i++) {
        var x = c.scales.x.getPixelForValue(m[i].t_s); if (x < a.left || x > a.right) continue;
        var first = m[i].epoch === 1;
        if (!first && x - lastX < 8) continue;
        lastX = x;
        ctx.strokeStyle = first ? '#57606a' : '#d0d7de';
        ctx.beginPath(); ctx.moveTo(x, a.top); ctx.lineTo(x, a.bottom); ctx.stroke();
        if (!first) continue;
        var w = ctx.measureText(m[i].run).width, tx = Math.min(x + 2, c.width - w - 2);
        var row = rowEnd[0] < tx ? 0 : (rowEnd[1] < tx ? 1 : -1);
        if (row < 0) continue;  // no room: the line stays, the label would cover another
        ctx.fillStyle = '#57606a'; ctx.fillText(m[i].run, tx, a.top - 4 - (1 - row) * 11);
        rowEnd[row] = tx + w + 6;
      }
      ctx.restore();
    }
  };
  function bars(section, title, labels, sets, yTitle, horizontal, stacked){
    chart(section, title, {type: 'bar', data: {labels: labels, datasets: sets.map(function(s, i){ return {label: s.label, data: s.data, backgroundColor: s.color || color(i)}; })},
      options: {indexAxis: horizontal ? 'y' : 'x', scales: {x: {stacked: !!stacked, title: {display: !!horizontal, text: yTitle}}, y: {stacked: !!stacked, beginAtZero: true, title: {display: !horizontal, text: yTitle}}}}});
  }
  var D = DATA;
  // Speed-up and throughput
  if (D.speedup.labels.length) bars('speedup', 'Training speed-up over the CPU (×, > 1: GPU faster)', D.speedup.labels, [{label: 'speed-up', data: D.speedup.values}], '×');
  else absent('speedup', D.speedup.absent);
  // Summary: throughput of every workload and device, right after the summary tables
  if (D.throughput.labels.length)
    chart('summary', 'Steady training throughput (samples/s' + (D.throughput.log ? ', log scale' : '') + ')', {type: 'bar',
      data: {labels: D.throughput.labels, datasets: D.throughput.sets.map(function(s, i){ return {label: s.label, data: s.data, backgroundColor: color(i)}; })},
      options: {scales: {y: {type: D.throughput.log ? 'logarithmic' : 'linear', beginAtZero: !D.throughput.log, title: {display: true, text: 'samples/s'}}}}});
  else absent('summary', 'no steady training throughput in these runs');
  // Batch-size scaling: samples/s over the batch size; the saturation point drawn larger
  if (D.batches.sets.length)
    chart('batches', 'Throughput over batch size (the large point: saturation)', {type: 'line',
      data: {datasets: D.batches.sets.map(function(s, i){ return {label: s.label, data: s.points, borderColor: color(i), backgroundColor: color(i),
        pointRadius: s.points.map(function(p){ return p.x === s.saturation ? 7 : 3; }), parsing: false}; })},
      options: {scales: {x: {type: 'logarithmic', title: {display: true, text: 'batch size (samples)'}}, y: {beginAtZero: true, title: {display: true, text: 'samples/s'}}}}});
  else absent('batches', D.batches.absent);
  // Energy
  if (D.energy.labels.length) bars('energy', 'Energy per sample (mJ)', D.energy.labels, [{label: 'mJ per sample', data: D.energy.values}], 'mJ');
  else absent('energy', D.energy.absent);
  // Latency
  if (D.latency.labels.length) bars('latency', 'Inference latency, single stream (ms)', D.latency.labels, D.latency.sets, 'ms');
  else absent('latency', D.latency.absent);
  // Time series
  if (D.series.groups.length) {
    D.series.groups.forEach(function(g){
      chart('timeseries', g.title, {type: 'line', data: {datasets: g.sets.map(function(s, i){ return {label: s.label, data: s.points, borderColor: color(i), backgroundColor: color(i), pointRadius: 0, borderWidth: 1.5, parsing: false}; })},
        options: {normalized: true, scales: {x: {type: 'linear', title: {display: true, text: 's since the matrix started'}}, y: {beginAtZero: true, title: {display: true, text: g.unit}}}},
        plugins: [epochMarkers]});
    });
  } else absent('timeseries', D.series.absent);
  // Step breakdown
  if (D.steps.labels.length) bars('steps', 'Time per training step by phase (ms)', D.steps.labels, D.steps.sets, 'ms per step', true, true);
  else absent('steps', D.steps.absent);
  // Operators
  if (D.ops.length) D.ops.forEach(function(o){ bars('operators', 'Top operators on ' + o.device + ' (' + o.run + ', ' + o.key + ')', o.labels, [{label: 'ms', data: o.ms}], 'ms', true); });
  else absent('operators', D.opsAbsent);
  // Re-check after layout settles (a resize redraws).
  setTimeout(function(){
    charts.forEach(function(p){ if (drawn(p[1])) p[1].setAttribute('data-rendered', '1'); });
    document.body.setAttribute('data-charts', String(charts.length));
    // Where the summary (tables and their chart) ends, in CSS pixels from the top of the page:
    // the end-to-end test checks that it fits the first screen.
    var sum = document.getElementById('summary');
    if (sum) { var last = sum.querySelector('canvas') || sum; document.body.setAttribute('data-summary-bottom', String(Math.round(last.getBoundingClientRect().bottom + window.scrollY))); }
    // The page's width against the viewport's (the test requires no horizontal scrolling).
    document.body.setAttribute('data-page-width', String(document.documentElement.scrollWidth));
    document.body.setAttribute('data-viewport-width', String(document.documentElement.clientWidth));
    document.body.setAttribute('data-charts-done', '1');
  }, 50);
})();
)JS";

}  // namespace

namespace {

json speedup_chart(const ReportInput& in, const Analysis& a) {
  json d = {{"labels", json::array()}, {"values", json::array()}};
  for (const auto& c : a.device_comparisons)
    if (c.speedup) {
      d["labels"].push_back(fmt::format("{} b{} {}{}", c.model, c.batch_size, c.gpu_device, c.noise ? " (noise)" : ""));
      d["values"].push_back(*c.speedup);
    }
  d["absent"] = a.has_gpu ? "no GPU cell has a CPU cell of the same model and batch size to compare with"
                          : "no speed-up: no GPU run in these results (provenance lists " +
                                std::to_string(in.provenance.gpus.size()) + " GPU(s))";
  return d;
}

json throughput_chart(const Analysis& a) {
  std::vector<std::string> labels, devices;
  double lo = 0, hi = 0;
  for (const auto& c : a.cells) {
    std::string l = fmt::format("{} b{}", c.model, c.batch_size);
    if (std::find(labels.begin(), labels.end(), l) == labels.end()) labels.push_back(l);
    const std::string dev = where_label(a, c);
    if (std::find(devices.begin(), devices.end(), dev) == devices.end()) devices.push_back(dev);
    if (c.samples_per_s.ok() && c.samples_per_s.median > 0) {
      lo = lo > 0 ? std::min(lo, c.samples_per_s.median) : c.samples_per_s.median;
      hi = std::max(hi, c.samples_per_s.median);
    }
  }
  json sets = json::array();
  for (const auto& dev : devices) {
    json vals = json::array();
    for (const auto& l : labels) {
      json v = nullptr;
      for (const auto& c : a.cells)
        if (where_label(a, c) == dev && fmt::format("{} b{}", c.model, c.batch_size) == l) v = nullable(c.samples_per_s);
      vals.push_back(v);
    }
    sets.push_back({{"label", dev}, {"data", vals}});
  }
  return {{"labels", labels}, {"sets", sets}, {"log", lo > 0 && hi / lo > 20}};
}

json batches_chart(const Analysis& a) {
  json sets = json::array();
  for (const auto& s : a.batch_scaling) {
    json pts = json::array();
    for (size_t i = 0; i < s.batch_sizes.size(); ++i)
      if (s.samples_per_s[i]) pts.push_back({{"x", s.batch_sizes[i]}, {"y", *s.samples_per_s[i]}});
    std::string label = fmt::format("{} {}{}", s.model, s.device, a.multi_host ? " (" + s.host + ")" : "");
    sets.push_back({{"label", label}, {"points", pts}, {"saturation", s.saturation_batch ? json(*s.saturation_batch) : json(nullptr)}});
  }
  return {{"sets", sets},
          {"absent", "one batch size per device and model: no scaling to chart (measure several with --batch-sizes auto)"}};
}

json energy_chart(const ReportInput& in, const Analysis& a) {
  json d = {{"labels", json::array()}, {"values", json::array()}};
  for (const auto& c : a.cells)
    if (c.energy_per_sample_j.ok()) {
      d["labels"].push_back(fmt::format("{} b{} {}", c.model, c.batch_size, c.device));
      d["values"].push_back(c.energy_per_sample_j.median * 1000);
    }
  std::string why = source_reason(in.runs, "nvml");
  std::string rapl = source_reason(in.runs, "rapl");
  d["absent"] = fmt::format("energy not measured: GPU: {}; CPU: {}", why.empty() ? "no energy reading" : why,
                            rapl.empty() ? "no energy reading" : rapl);
  return d;
}

json latency_chart(const Analysis& a) {
  json d = {{"labels", json::array()}, {"sets", json::array()}};
  json p50 = json::array(), p99 = json::array();
  for (const auto& c : a.cells)
    if (c.latency_p50_ms.ok()) {
      d["labels"].push_back(fmt::format("{} b{} {}", c.model, c.batch_size, c.device));
      p50.push_back(c.latency_p50_ms.median);
      p99.push_back(nullable(c.latency_p99_ms));
    }
  d["sets"] = json::array({{{"label", "p50"}, {"data", p50}}, {{"label", "p99"}, {"data", p99}}});
  d["absent"] = "no inference measurements in these runs (the inference benchmark did not run)";
  return d;
}

// Time series, grouped by what they measure.
json series_chart(const std::vector<CounterSeries>& series, const std::string& telemetry_absent_reason) {
  struct Group {
    const char* title;
    const char* unit;
    std::vector<std::string> metrics;
    double scale;
  };
  const Group groups[] = {{"Utilisation over time", "%", {"util_pct", "sm_activity_pct"}, 1},
                          {"Power over time", "W", {"power_w", "package_power_w"}, 1},
                          {"Temperature over time", "°C", {"temp_c"}, 1},
                          {"Memory over time", "GiB", {"mem_used_bytes", "rss_bytes"}, 1.0 / (1024.0 * 1024 * 1024)}};
  json d = {{"groups", json::array()}};
  for (const auto& g : groups) {
    json sets = json::array();
    for (const auto& s : series) {
      if (std::find(g.metrics.begin(), g.metrics.end(), s.metric) == g.metrics.end()) continue;
      json pts = json::array();
      for (const auto& [t, v] : s.points) pts.push_back({{"x", static_cast<double>(t) / 1e9}, {"y", v * g.scale}});
      std::string label = s.device + " " + s.metric;
      if (s.device == "cpu" && s.metric == "mem_used_bytes") label = "host mem_used_bytes";
      sets.push_back({{"label", label}, {"points", pts}});
    }
    if (!sets.empty()) d["groups"].push_back({{"title", g.title}, {"unit", g.unit}, {"sets", sets}});
  }
  d["absent"] = telemetry_absent_reason.empty() ? "no telemetry samples" : telemetry_absent_reason;
  return d;
}

// Step breakdown per cell (the last ok run of the cell with phases).
json steps_chart(const ReportInput& in, const Analysis& a) {
  json d = {{"labels", json::array()}, {"sets", json::array()}};
  const char* names[] = {"data", "h2d", "forward", "backward", "optimizer", "other"};
  std::vector<json> vals(6, json::array());
  for (const auto& c : a.cells) {
    const RunRecord* r = nullptr;
    for (const auto& x : in.runs)
      if (x.status == RunStatus::kOk && x.device == c.device && workload_of(x) == c.workload && x.phases)
        r = &x;
    if (!r) continue;
    const auto& p = *r->phases;
    d["labels"].push_back(fmt::format("{} b{} {}", c.model, c.batch_size, c.device));
    double known = p.data_ms + p.h2d_ms + p.forward_ms + p.backward_ms + p.optimizer_ms;
    double parts[] = {p.data_ms, p.h2d_ms, p.forward_ms, p.backward_ms, p.optimizer_ms, std::max(0.0, p.step_ms - known)};
    for (int i = 0; i < 6; ++i) vals[i].push_back(parts[i]);
  }
  for (int i = 0; i < 6; ++i) d["sets"].push_back({{"label", names[i]}, {"data", vals[i]}});
  d["absent"] = "no phase breakdown in these runs";
  return d;
}

// Top operators of the first profiled run of each device.
json ops_chart(const ReportInput& in) {
  json ops = json::array();
  std::vector<std::string> seen;
  for (const auto& r : in.runs) {
    if (r.status != RunStatus::kOk || std::find(seen.begin(), seen.end(), r.device) != seen.end()) continue;
    json t = top_operators(r, 10);
    if (t.is_null()) continue;
    seen.push_back(r.device);
    t["device"] = r.device;
    t["run"] = r.run_id;
    ops.push_back(t);
  }
  return ops;
}

json chart_data(const ReportInput& in, const Analysis& a, const std::vector<CounterSeries>& series,
                const std::string& telemetry_absent_reason) {
  json d;
  d["speedup"] = speedup_chart(in, a);
  d["throughput"] = throughput_chart(a);
  d["batches"] = batches_chart(a);
  d["energy"] = energy_chart(in, a);
  d["latency"] = latency_chart(a);
  d["series"] = series_chart(series, telemetry_absent_reason);
  d["epochs"] = json::array();
  for (const auto& r : in.runs)
    for (const auto& e : r.epochs)
      d["epochs"].push_back({{"t_s", static_cast<double>(e.start_ns) / 1e9}, {"epoch", e.epoch}, {"run", r.run_id}});
  d["steps"] = steps_chart(in, a);
  d["ops"] = ops_chart(in);
  d["opsAbsent"] = "no operator profile in these runs (the profiler did not run; rec.profile is empty)";
  return d;
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
  std::string h = kHtmlHead;
  h += "<h1>trainscope report</h1>\n<p class=\"prov\">" + html_escape(provenance_lines(in, "\n")) + "</p>\n";
  if (!in.provenance.command_line.empty())
    h += "<p class=\"prov\">Command: <code>" + html_escape(in.provenance.command_line) + "</code></p>\n";
  h += html_summary(a);
  h += kChartSections;
  h += html_answers_and_advice(a);
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
  h += "<script>\nvar DATA = " + script_safe(d.dump(-1, ' ', false, json::error_handler_t::replace)) + ";\n" +
       kPageScript + "</script>\n</body></html>\n";
  return h;
}

ReportFiles write_report(const ReportInput& in, const std::string& out_dir, const AdviceThresholds& t) {
  Analysis a = analyze(in, t);
  std::string why;
  auto series = in.run_dir.empty() ? std::vector<CounterSeries>{} : load_telemetry_series(in.run_dir, 800, &why);
  if (in.run_dir.empty()) why = "report built from the history database without a run folder: no telemetry samples";
  ensure_writable_dir(out_dir);
  ReportFiles f{out_dir + "/report.md", out_dir + "/report.html"};
  write_file_atomic(f.markdown_path, render_markdown(in, a));
  write_file_atomic(f.html_path, render_html(in, a, series, why));
  return f;
}

}  // namespace trainscope

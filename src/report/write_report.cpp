// The report's files (report.md, report.html) from a run folder's records and its telemetry, and
// the telemetry series the HTML charts.
#include <functional>

#include "report/report_util.h"
#include "trainscope/fs.h"
#include "trainscope/report.h"

namespace trainscope {

namespace {

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

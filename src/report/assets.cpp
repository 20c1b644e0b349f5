// The files embedded into report.html at build time (src/report/sources.cmake): Chart.js
// (third_party/chartjs) and the page's own style sheet and script (src/report/assets/).
#include <cstddef>
#include <string>

#include "report/render_parts.h"
#include "trainscope/report.h"

namespace trainscope {

namespace report_detail {
extern const unsigned char kChartJs[];
extern const size_t kChartJsSize;
extern const char kChartJsVersion[];
extern const unsigned char kReportCss[];
extern const size_t kReportCssSize;
extern const unsigned char kReportJs[];
extern const size_t kReportJsSize;

const std::string& page_css() {
  static const std::string s(reinterpret_cast<const char*>(kReportCss), kReportCssSize);
  return s;
}

const std::string& page_script() {
  static const std::string s(reinterpret_cast<const char*>(kReportJs), kReportJsSize);
  return s;
}
}  // namespace report_detail

const std::string& chartjs_source() {
  static const std::string s(reinterpret_cast<const char*>(report_detail::kChartJs), report_detail::kChartJsSize);
  return s;
}
std::string chartjs_version() { return report_detail::kChartJsVersion; }

}  // namespace trainscope

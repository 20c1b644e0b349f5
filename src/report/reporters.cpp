// The report's reporter (trainscope/report.h ReportFilesReporter): report.md + report.html at the
// end of a matrix.
#include <fmt/format.h>

#include "report/report_util.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/report.h"

namespace trainscope {

void ReportFilesReporter::start(const Provenance& p, const std::string& run_dir, size_t /*planned_runs*/) {
  input_.provenance = p;
  input_.run_dir = run_dir;
}

void ReportFilesReporter::finish(const std::vector<RunRecord>& runs) {
  if (input_.run_dir.empty()) return;
  input_.runs = runs;
  input_.inference.clear();
  try {
    // A run folder `infer --run` measured before (a --resume of it): its generation results stay
    // in the report (docs/generation.md#outputs).
    for (const auto& path : report_detail::inference_files(input_.run_dir))
      input_.inference.push_back(load_inference_document(path));
  } catch (const Error& e) {
    if (notices_) notices_->notice(fmt::format("report without the generation results: {}", e.what()));
    input_.inference.clear();
  }
  try {
    auto files = write_report(input_, input_.run_dir);
    markdown_path_ = files.markdown_path;
    html_path_ = files.html_path;
    written_ = true;
  } catch (const Error& e) {
    if (notices_) notices_->notice(fmt::format("report not written: {}", e.what()));
  }
}

}  // namespace trainscope

// The file reporters of a matrix (trainscope/reporter.h): results.json + results.csv, and
// report.md + report.html.
#include <fmt/format.h>

#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/report.h"
#include "trainscope/reporter.h"

namespace trainscope {

void ResultsFilesReporter::start(const Provenance& p, const std::string& run_dir, size_t /*planned_runs*/) {
  provenance_ = p;
  run_dir_ = run_dir;
  runs_.clear();
  // A fresh folder gets (empty) results at once; a resumed one keeps its file until a run is kept.
  if (!file_exists(run_dir_ + "/results.json")) write();
}

void ResultsFilesReporter::run_finished(const RunRecord& r) {
  runs_.push_back(r);
  write();
}

void ResultsFilesReporter::run_skipped(const RunRecord& r) {
  runs_.push_back(r);
  write();
}

void ResultsFilesReporter::finish(const std::vector<RunRecord>& runs) {
  if (run_dir_.empty()) return;
  runs_ = runs;
  write();
}

void ResultsFilesReporter::write() const {
  write_file_atomic(run_dir_ + "/results.json", results_json(provenance_, runs_));
  write_file_atomic(run_dir_ + "/results.csv", results_csv(provenance_, runs_));
}

void ReportFilesReporter::start(const Provenance& p, const std::string& run_dir, size_t /*planned_runs*/) {
  input_.provenance = p;
  input_.run_dir = run_dir;
}

void ReportFilesReporter::finish(const std::vector<RunRecord>& runs) {
  if (input_.run_dir.empty()) return;
  input_.runs = runs;
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

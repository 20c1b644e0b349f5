// The file reporters of a matrix (trainscope/reporter.h): results.json + results.csv, and
// report.md + report.html.
#include <fmt/format.h>

#include <cstdio>

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
  provenance_ = p;
  run_dir_ = run_dir;
}

void ReportFilesReporter::finish(const std::vector<RunRecord>& runs) {
  if (run_dir_.empty()) return;
  try {  // RQ answers and advice on the console, report.md + report.html last
    ReportInput in{provenance_, runs, run_dir_};
    auto rep = write_report(in, run_dir_);
    if (print_summary_)
      fmt::print("\n{}\nreport: {}\n{}\n", render_console(in, analyze(in)), rep.markdown_path, rep.html_path);
  } catch (const Error& e) {
    fmt::print(stderr, "trainscope: report not written: {}\n", e.what());
  }
}

}  // namespace trainscope

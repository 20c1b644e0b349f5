// The record's own files (trainscope/reporter.h ResultsFilesReporter): results.json and
// results.csv, rewritten atomically after every run.
#include "trainscope/fs.h"
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

void ResultsFilesReporter::write() {
  write_file_atomic(run_dir_ + "/results.json", results_json(provenance_, runs_));
  written_ = runs_.size();  // results.json is the record; results.csv is its table
  write_file_atomic(run_dir_ + "/results.csv", results_csv(provenance_, runs_));
}

}  // namespace trainscope

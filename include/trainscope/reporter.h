// One reporter interface for everything a matrix produces (in the spirit of google/benchmark's
// BenchmarkReporter): the matrix runner (src/matrix/) measures and calls reporters; the
// reporters write results.json/results.csv, the SQLite history, the console lines and table, and
// report.md/report.html. The runner itself writes no results file.
//
// The interface knows records and provenance only (docs/design.md#layers): the implementations
// that read the analysis (ReportFilesReporter, trainscope/report.h), the history
// (HistoryReporter, trainscope/history.h) or TensorBoard (trainscope/tensorboard.h) sit above it,
// and a program picks them by name (trainscope/reporter_registry.h). ResultsFilesReporter is
// here because it writes the record's own files and is the runner's default.
//
// Call order, all on the matrix's thread:
//   start(provenance, run folder, planned runs)                       once, after the inputs are valid
//   per cell: run_started(record) + run_finished(record), or run_skipped(record) (--resume)
//   notice(message), warning(message)                                  at any time, also before start
//   finish(all records)                                                once, also when the matrix is
//                                                                      interrupted or aborted (exit 5/6)
// Records reach run_finished/run_skipped in matrix order, so a reporter that keeps them holds the
// same list the matrix returns.
//
// Errors: a reporter whose output IS the record of the matrix (ResultsFilesReporter) lets
// Error(kIo) propagate; the matrix then stops, keeps the runs already written and ends with
// MatrixResult::abort = kIo (exit 5). Optional reporters (history, console, report) report a
// failure through a notice and carry on. Any other exception escaping a reporter stops the matrix
// with abort = kInternal (exit 6).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "trainscope/provenance.h"
#include "trainscope/run_record.h"

namespace trainscope {

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void start(const Provenance& /*p*/, const std::string& /*run_dir*/, size_t /*planned_runs*/) {}
  virtual void run_started(const RunRecord& /*r*/) {}
  virtual void run_finished(const RunRecord& /*r*/) {}
  /// --resume: a run already measured as ok in the run folder, kept and not repeated.
  virtual void run_skipped(const RunRecord& /*r*/) {}
  virtual void notice(const std::string& /*message*/) {}
  /// Something that makes the figures worse than they could be (more threads than usable CPUs):
  /// a notice unless the reporter tells the two apart.
  virtual void warning(const std::string& message) { notice(message); }
  virtual void finish(const std::vector<RunRecord>& /*runs*/) {}
};

/// results.json + results.csv in the run folder (formats: trainscope/run_record.h), rewritten
/// atomically (trainscope/fs.h) at start (empty run list, fresh folder only), after every finished
/// or kept run, and at finish: a crash loses at most the run in progress. Throws Error(kIo).
class ResultsFilesReporter final : public Reporter {
 public:
  void start(const Provenance& p, const std::string& run_dir, size_t planned_runs) override;
  void run_finished(const RunRecord& r) override;
  void run_skipped(const RunRecord& r) override;
  void finish(const std::vector<RunRecord>& runs) override;
  /// The runs in the files as last written: after an I/O error, the runs a user still has
  /// (the run whose write failed is not among them).
  size_t runs_written() const { return written_; }

 private:
  void write();
  Provenance provenance_;
  std::string run_dir_;
  std::vector<RunRecord> runs_;
  size_t written_ = 0;
};

}  // namespace trainscope

// What `trainscope infer` measures and who reports it: one InferenceRun per (model or checkpoint,
// device; trainscope/inference_run.h, with inference.json's form), and reporters in the manner of
// trainscope/reporter.h that write inference.json and print the console lines and table. The
// command measures and calls reporters; it writes no file.
//
// Call order, all on the command's thread:
//   start(provenance)                              once, before the first measurement
//   per measurement: measurement_started(run), progress(line)..., measurement_finished(run)
//   finish(all runs)                               once, also after Ctrl-C (the runs finished)
//
// inference.json's form is described in trainscope/inference_run.h.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "trainscope/inference_run.h"
#include "trainscope/provenance.h"
#include "trainscope/record_sections.h"

namespace trainscope {

/// The console table of `trainscope infer`: a header, one row per run (failed runs: their
/// error), single-stream split and flag lines; then the legend of the columns. Figures are the
/// runs' own (the same values inference.json holds), "—" where absent.
std::string format_inference_table(const std::vector<InferenceRun>& runs, int64_t intra_op_threads);

class InferenceReporter {
 public:
  virtual ~InferenceReporter() = default;
  virtual void start(const Provenance& /*p*/) {}
  virtual void measurement_started(const InferenceRun& /*r*/) {}
  /// One line while a measurement runs (a scenario's result; trainscope/inference.h).
  virtual void progress(const std::string& /*line*/) {}
  virtual void measurement_finished(const InferenceRun& /*r*/) {}
  virtual void finish(const std::vector<InferenceRun>& /*runs*/) {}
};

/// inference.json at `path`, rewritten atomically (trainscope/fs.h) at start (no runs yet),
/// after every finished measurement and at finish: nothing measured is lost when a later
/// measurement fails or the process is killed. Throws Error(kIo) naming the path.
class InferenceFileReporter final : public InferenceReporter {
 public:
  explicit InferenceFileReporter(std::string path) : path_(std::move(path)) {}
  void start(const Provenance& p) override;
  void measurement_finished(const InferenceRun& r) override;
  void finish(const std::vector<InferenceRun>& runs) override;
  const std::string& path() const { return path_; }

 private:
  void write() const;
  std::string path_;
  Provenance provenance_;
  std::vector<InferenceRun> runs_;
};

/// The console: "<label> on <device> (<test_samples> samples of <dataset>)" when a measurement
/// starts, each progress line indented, the table (format_inference_table) and "results: <path>" at finish, to `out` (stdout by default).
class InferenceConsoleReporter final : public InferenceReporter {
 public:
  explicit InferenceConsoleReporter(std::string results_path, std::FILE* out = stdout)
      : results_path_(std::move(results_path)), out_(out) {}
  void start(const Provenance& p) override { intra_op_threads_ = p.intra_op_threads; }
  void measurement_started(const InferenceRun& r) override;
  void progress(const std::string& line) override;
  void finish(const std::vector<InferenceRun>& runs) override;

 private:
  std::string results_path_;
  std::FILE* out_;
  int64_t intra_op_threads_ = 0;
};

}  // namespace trainscope

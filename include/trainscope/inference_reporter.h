// What `trainscope infer` measures and who reports it: one InferenceRun per (model or checkpoint,
// device), and reporters in the manner of trainscope/reporter.h that write inference.json and
// print the console lines and table. The command measures and calls reporters; it writes no file.
//
// Call order, all on the command's thread:
//   start(provenance)                              once, before the first measurement
//   per measurement: measurement_started(run), progress(line)..., measurement_finished(run)
//   finish(all runs)                               once, also after Ctrl-C (the runs finished)
//
// inference.json: {"provenance": {...}, "runs": [InferenceRun, ...], "schema_version": N}
// (provenance first; trainscope/run_record.h results_json has the same envelope). A run's keys
// are InferenceRun::fields below; its "inference" is the record's InferenceSection
// (trainscope/record_sections.h, JSON form in src/results/record_json.h), so results.json's
// runs[].inference and inference.json's runs[].inference are one format.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "trainscope/provenance.h"
#include "trainscope/record_sections.h"

namespace trainscope {

/// The per-channel normalisation the inputs were given ([0,1] pixel units).
struct InputNormalisation {
  std::vector<double> mean, std;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("mean", s.mean, Better::kNone);
    v("std", s.std, Better::kNone);
  }
};

/// One measurement of `trainscope infer`: a subject (checkpoint, TorchScript file or fresh
/// weights) on one device. Strings "" and absent numbers are null in JSON.
struct InferenceRun {
  std::string label;        // checkpoint path or model name (the table's first column)
  std::string weights;      // "checkpoint" | "torchscript" | "untrained"
  std::string checkpoint;   // the .pt file; "" without one
  std::string model;        // built-in name or TorchScript path
  std::string trained_on;   // checkpoint: the device it was trained on
  OptI trained_batch_size;  // checkpoint: the training batch size
  JsonText description;     // checkpoint: its description (<weights>.json), as written
  std::string device, device_name, dataset;
  int64_t test_samples = 0;  // samples loaded from the data set (accuracy; the pool is a prefix)
  InputNormalisation normalisation;
  OptD test_accuracy_pct, test_loss;  // trained weights: over the loaded test samples
  std::optional<InferenceSection> inference;
  std::string error_kind, error;      // the measurement failed (trainscope::to_string(ErrorKind))
  bool failed() const { return !error.empty() || !error_kind.empty(); }
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("label", s.label, Better::kNone);
    v("weights", s.weights, Better::kNone);
    v("checkpoint", s.checkpoint, Better::kNone);
    v("model", s.model, Better::kNone);
    v("trained_on", s.trained_on, Better::kNone);
    v("trained_batch_size", s.trained_batch_size, Better::kNone);
    v("description", s.description, Better::kNone);
    v("device", s.device, Better::kNone);
    v("device_name", s.device_name, Better::kNone);
    v("dataset", s.dataset, Better::kNone);
    v("test_samples", s.test_samples, Better::kNone);
    v("normalisation", s.normalisation, Better::kNone);
    v("test_accuracy_pct", s.test_accuracy_pct, Better::kHigher);
    v("test_loss", s.test_loss, Better::kLower);
    v("inference", s.inference, Better::kNone);
    v("error_kind", s.error_kind, Better::kNone);
    v("error", s.error, Better::kNone);
  }
};

/// inference.json content (the envelope above), pretty-printed; invalid UTF-8 is replaced.
std::string inference_json(const Provenance& p, const std::vector<InferenceRun>& runs);
/// The runs of an inference.json document (a missing or malformed "runs" gives none; each run
/// is read defensively as in src/results/record_json.h). Throws Error(kDataFormat) when `text`
/// is not JSON.
std::vector<InferenceRun> inference_runs_from_json(const std::string& text);

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

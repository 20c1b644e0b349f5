// One measurement of `trainscope infer` and the file that holds them (inference.json), in the
// record layer: `infer` writes it (trainscope/inference_reporter.h), and the report, compare and
// the history read it back without the command's reporters.
//
// inference.json: {"provenance": {...}, "runs": [InferenceRun, ...], "schema_version": N}
// (provenance first; trainscope/run_record.h results_json has the same envelope). A run's keys
// are InferenceRun::fields below; its "inference" is the record's InferenceSection
// (trainscope/record_sections.h, JSON form in src/results/record_json.h), so results.json's
// runs[].inference and inference.json's runs[].inference are one format. A language model's
// generation results are its inference.generation (trainscope/generation_section.h).
#pragma once

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

/// An inference.json file read back: its provenance (the `infer` invocation's) and its runs.
struct InferenceDocument {
  std::string path;         // the file read; "" when empty
  Provenance provenance;
  std::vector<InferenceRun> runs;
  /// The runs that hold a generation section (trainscope/generation_section.h) and did not fail.
  std::vector<const InferenceRun*> generation_runs() const;
};
/// Reads the inference.json at `path`. Throws Error(kIo) when it cannot be read, Error(kDataFormat)
/// naming the path when it is not JSON or has no "runs" array (not an inference.json).
InferenceDocument load_inference_document(const std::string& path);

/// The compute type of the generation runs of one `infer` invocation: the value of `--dtype` in
/// the provenance's command line ("--dtype bfloat16" or "--dtype=bfloat16"), else "float32",
/// infer's default (docs/generation.md#how-to-run-it). The fallback for a record without its
/// own dtype (GenerationSection::dtype, written since 2026-12-05).
std::string generation_dtype(const Provenance& p);
/// The compute type of one generation run: its record's GenerationSection::dtype, else (an
/// older record, or a run without a generation section) generation_dtype(p) of its invocation.
std::string generation_dtype(const InferenceRun& r, const Provenance& p);

/// Which `infer` invocation a document is from, by its file name without ".json":
/// "inference" (inference.json, and a document read from no file), "inference-graphs"
/// (`infer -o inference-graphs.json`). Several invocations' files in one folder are told apart by it.
std::string inference_source(const InferenceDocument& d);

}  // namespace trainscope

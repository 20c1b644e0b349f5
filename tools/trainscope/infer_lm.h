// `trainscope infer` on a language model: the generation scenarios (src/infer/generate.h) on a
// checkpoint of `run` (src/infer/lm_checkpoint.h), their options from the flags, and their
// console output (llama-bench's table or --output format, then the sweep and server tables).
#pragma once

#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "infer/generate.h"
#include "infer/lm_checkpoint.h"
#include "settings_cli.h"
#include "trainscope/config.h"
#include "trainscope/inference_reporter.h"
#include "trainscope/telemetry.h"

namespace trainscope::cli {

/// The generation flags of `infer` (the gen_* settings come from the settings table).
struct GenerationFlags {
  std::string gen_batches = "auto";  // auto | none | 1,2,4
  std::vector<std::string> server_rates_words;  // --server-rates as typed (items checked one by one)
  std::vector<double> server_rates;             // ... and as numbers (read_generation_flags)
  std::string output = "md";
  double temperature = 0;
  int64_t top_k = 0, batch = 1;
  std::string dtype = "float32";
  bool graphs = false;
  InferenceConfig cfg;                  // gen_* (defaults, or as given)
  std::vector<std::string> given;       // the gen_* keys given on the command line
  std::vector<std::string> flags_given; // every generation flag given, for the error naming them
};

/// Declares the CLI-only generation flags on `sub` (the gen_* settings are declared by the caller
/// through SettingOptions, as infer's other shared settings).
void add_generation_flags(CLI::App* sub, GenerationFlags& g);
/// Collects, after parsing, which generation flags were given (from `sub` and `settings`), and
/// checks every value that needs no model (check_generation_values, infer/generate.h; --dtype,
/// --output, --gen-batches; --server-max-batch given with --server-batching fcfs): throws
/// Error(kInvalidArgument) naming the flag, so a bad value stops `infer` before anything is
/// loaded or written (exit 2).
void read_generation_flags(CLI::App* sub, const SettingOptions& settings, const MatrixConfig& m, GenerationFlags& g);

/// The flags against one checkpoint, before its weights load: tests and requests within its
/// context, and --server-lengths text against its validation `text` (check_generation_options,
/// server_text_spans). Throws Error(kInvalidArgument) naming the flag.
void check_generation_fit(const GenerationFlags& g, const LmCheckpoint& c, const torch::Tensor& text,
                          const std::vector<int64_t>& paragraph_break);

/// The scenario options for a decoder of `context` tokens: defaults shortened to the context
/// where not given; throws Error(kInvalidArgument) for a bad --gen-batches, --output or --dtype.
GenerationOptions generation_options(const GenerationFlags& g, int64_t context, uint64_t seed,
                                     const std::atomic<bool>* stop);

torch::ScalarType generation_dtype(const GenerationFlags& g);

/// One language-model checkpoint and the validation text its prompts come from.
struct LmSubject {
  LmCheckpoint checkpoint;
  std::unique_ptr<Model> model;
  torch::Tensor text;
  std::vector<int64_t> paragraph_break;  // the text's paragraph break ({10, 10} for byte text; empty: unknown)
};

/// Measures `s` on `dev`; a failure is recorded in the run (error_kind, error), not thrown.
/// `base` holds the fields every measurement of the subject repeats.
/// Inside a catch block of a measurement on `dev`: records the exception being handled (a
/// trainscope Error, or a LibTorch error: out of memory or another) in r's error_kind and error,
/// and gives a failed device's cached memory back. Other exceptions propagate.
void record_measurement_failure(InferenceRun& r, const std::string& dev);

InferenceRun measure_generation_run(LmSubject& s, const InferenceRun& base, const std::string& dev,
                                    const GenerationFlags& g, uint64_t seed, const std::atomic<bool>* stop,
                                    const GenerationTelemetry& tel, const std::function<void(const std::string&)>& log);

/// The console of a generation invocation: progress on stderr; at finish, stdout gets the tests
/// in `format` (llama-bench's), then (md only) the decode sweep and server tables and the
/// results path.
class GenerationConsoleReporter final : public InferenceReporter {
 public:
  GenerationConsoleReporter(std::string results_path, std::string format, std::string dtype)
      : results_path_(std::move(results_path)), format_(std::move(format)), dtype_(std::move(dtype)) {}
  void start(const Provenance& p) override { provenance_ = p; }
  void measurement_started(const InferenceRun& r) override;
  void progress(const std::string& line) override;
  void finish(const std::vector<InferenceRun>& runs) override;

 private:
  std::string results_path_, format_, dtype_;
  Provenance provenance_;
};

}  // namespace trainscope::cli

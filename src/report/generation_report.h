// A language model's generation results in the report, compare and the history (private to
// src/report): the pp/tg tests and server runs of the inference.json files of a ReportInput,
// each named as they are compared (trainscope/report.h generation_label), the RQ5 sentences and
// the report's generation tables.
#pragma once

#include <string>
#include <vector>

#include "trainscope/report.h"

namespace trainscope::report_detail {

/// One pp/tg test of one generation run (a test that failed is left out).
struct GenTest {
  const InferenceRun* run = nullptr;
  const TokenRateTest* test = nullptr;
  std::string model, dtype, kind;  // kind: generation_execution_kind of the run's execution
  std::string label;               // generation_label(model, dtype, execution)
  std::string host;                // the invocation's Provenance::host
  int64_t threads = 0;             // intra-op threads of the measurement
  std::string source;              // the invocation's file (inference_source): "inference", "inference-graphs"
  Stat tokens_per_s;               // over the repetitions' samples (samples_tokens_per_s)
  bool prefill() const { return test->n_prompt > 0; }
};
/// One server run (one Poisson rate) of one generation run.
struct GenServer {
  const InferenceRun* run = nullptr;
  const GenerationServer* server = nullptr;
  const GenerationServerRun* rate = nullptr;
  std::string model, dtype, kind, label, host;
  int64_t threads = 0;             // intra-op threads of the measurement
  std::string source;              // as GenTest::source
};

std::vector<GenTest> generation_tests(const std::vector<InferenceDocument>& docs);
/// Whether the documents holding generation results are several `infer` invocations (their
/// inference_source differ: inference.json and inference-graphs.json of one folder); then the
/// report's and compare's rows name their source and compare pairs a cell only with its source's.
bool several_generation_sources(const std::vector<InferenceDocument>& docs);
std::vector<GenServer> generation_servers(const std::vector<InferenceDocument>& docs);

/// RQ5 for a language model (src/report/generation_answers.cpp): the figures per device, CPU
/// against GPU for prefill (pp) and decoding (tg); a sentence saying what was not measured and
/// how to measure it when a side is absent. Empty when the input holds neither generation
/// results nor a language model's training runs.
std::vector<std::string> generation_rq5_sentences(const ReportInput& in);

/// The "simple network" verdict for a language model's batch-1 decoding (at depth 0), eager and
/// with CUDA graphs, per model, dtype and GPU that has a CPU figure beside it. Empty otherwise.
std::vector<std::string> generation_simple_network_sentences(const ReportInput& in);

/// The report's generation section (src/report/render_generation.cpp): the pp/tg tests in
/// llama-bench's columns (with the device, the execution and J/token), the decode batch sweep
/// and the server runs. "" without generation results.
std::string md_generation(const ReportInput& in);
std::string html_generation(const ReportInput& in);

}  // namespace trainscope::report_detail

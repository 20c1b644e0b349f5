// A language model's generation results as the report and compare see them
// (src/report/generation_report.h, trainscope/report.h generation_label).
#include <fmt/format.h>

#include <set>

#include "report/generation_report.h"

namespace trainscope {

std::string generation_execution_kind(const std::string& execution) {
  return execution.rfind("cuda_graph", 0) == 0 ? "cuda graphs" : "eager";
}

std::string generation_label(const std::string& model, const std::string& dtype, const std::string& execution) {
  return fmt::format("{} [{}, {}]", model, dtype, generation_execution_kind(execution));
}

namespace report_detail {

std::vector<GenTest> generation_tests(const std::vector<InferenceDocument>& docs) {
  std::vector<GenTest> out;
  for (const auto& d : docs) {
    for (const InferenceRun* r : d.generation_runs()) {
      const auto& g = *r->inference->generation;
      const std::string dtype = generation_dtype(*r, d.provenance);
      for (const auto& t : g.tests) {
        if (!t.error.empty() || !t.tokens_per_s_mean) continue;
        GenTest x{r, &t, r->model, dtype, generation_execution_kind(g.execution),
                  generation_label(r->model, dtype, g.execution), d.provenance.host, r->inference->intra_op_threads,
                  inference_source(d), make_stat(t.samples_tokens_per_s)};
        if (!x.tokens_per_s.ok()) x.tokens_per_s = make_stat({*t.tokens_per_s_mean});
        out.push_back(std::move(x));
      }
    }
  }
  return out;
}

bool several_generation_sources(const std::vector<InferenceDocument>& docs) {
  std::set<std::string> s;
  for (const auto& d : docs)
    if (!d.generation_runs().empty()) s.insert(inference_source(d));
  return s.size() > 1;
}

std::vector<GenServer> generation_servers(const std::vector<InferenceDocument>& docs) {
  std::vector<GenServer> out;
  for (const auto& d : docs) {
    for (const InferenceRun* r : d.generation_runs()) {
      const auto& g = *r->inference->generation;
      if (!g.server) continue;
      const std::string dtype = generation_dtype(*r, d.provenance);
      for (const auto& s : g.server->runs)
        out.push_back({r, &*g.server, &s, r->model, dtype, generation_execution_kind(g.execution),
                       generation_label(r->model, dtype, g.execution), d.provenance.host,
                       r->inference->intra_op_threads, inference_source(d)});
    }
  }
  return out;
}

}  // namespace report_detail
}  // namespace trainscope

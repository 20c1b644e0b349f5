// The report's generation section (src/report/generation_report.h): the pp/tg tests in
// llama-bench's columns, the decode batch sweep and the server runs, as Markdown and as HTML
// (the HTML tables are the Markdown tables converted, so each table has one formatter).
#include <fmt/format.h>

#include <sstream>

#include "report/generation_report.h"
#include "report/report_util.h"
#include "results/generation_output.h"

namespace trainscope::report_detail {

namespace {

// Energy per token in millijoules, as the training tables print energy per sample; three
// significant digits below 100 mJ (a GPU's prefill token is tens of µJ), whole mJ above.
std::string per_token(const OptD& j) {
  if (!j) return "—";
  const double mj = *j * 1000;
  return mj >= 100 ? fmt::format("{:.0f} mJ", mj) : fmt::format("{:.3g} mJ", mj);
}

std::string rate_cell(const TokenRateTest& t) {
  if (!t.error.empty()) return fmt::format("failed: {}", t.error_kind.empty() ? t.error : t.error_kind);
  if (!t.tokens_per_s_mean) return "—";
  return fmt::format("{:.2f} ± {:.2f}", *t.tokens_per_s_mean, t.tokens_per_s_stddev.value_or(0));
}

// llama-bench's columns (model | size | params | backend | threads | test | t/s), with the device,
// the decoder's execution and the energy per token beside them; first the source when several.
std::string tests_table(const std::vector<InferenceDocument>& docs) {
  std::string s;
  const bool several = several_generation_sources(docs);
  for (const auto& d : docs)
    for (const InferenceRun* r : d.generation_runs()) {
      const auto& g = *r->inference->generation;
      const std::string size = g.model_size_bytes ? fmt_bytes(static_cast<double>(*g.model_size_bytes)) : "—";
      const std::string params =
          g.model_parameters ? fmt::format("{:.2f} M", static_cast<double>(*g.model_parameters) / 1e6) : "—";
      const std::string source = several ? fmt::format("| {} ", inference_source(d)) : "";
      for (const auto& t : g.tests)
        s += fmt::format("{}| {} {} | {} | {} | {} | {} | {} | {} | {}{} | {} | {} |\n", source, r->model,
                         generation_dtype(*r, d.provenance), size, params, is_gpu(r->device) ? "CUDA" : "CPU", r->device,
                         r->inference->intra_op_threads, g.execution, t.test,
                         t.batch > 1 ? fmt::format(" x{}", t.batch) : "", rate_cell(t), per_token(t.joules_per_token));
    }
  if (s.empty()) return s;
  return std::string(several ? "| source " : "") +
         "| model | size | params | backend | device | threads | execution | test | t/s | mJ/token |\n" +
         (several ? "| --- " : "") + "| --- | ---: | ---: | --- | --- | ---: | --- | ---: | ---: | ---: |\n" + s;
}

// "gpt2 [float32, eager] cpu", and "(inference-graphs)" after it when the input holds several sources.
std::string run_label(const InferenceDocument& d, const InferenceRun& r, bool several) {
  return fmt::format("{} {}{}", generation_label(r.model, generation_dtype(r, d.provenance), r.inference->generation->execution),
                     r.device, several ? fmt::format(" ({})", inference_source(d)) : "");
}

struct Tables {
  std::string tests, sweep, server;
};

Tables tables(const ReportInput& in) {
  std::vector<std::pair<std::string, DecodeSweep>> sweeps;
  std::vector<std::pair<std::string, GenerationServer>> servers;
  const bool several = several_generation_sources(in.inference);
  for (const auto& d : in.inference)
    for (const InferenceRun* r : d.generation_runs()) {
      const auto& g = *r->inference->generation;
      if (g.decode_sweep) sweeps.emplace_back(run_label(d, *r, several), *g.decode_sweep);
      if (g.server) servers.emplace_back(run_label(d, *r, several), *g.server);
    }
  return {tests_table(in.inference), sweeps.empty() ? "" : decode_sweep_table(sweeps),
          servers.empty() ? "" : generation_server_table(servers)};
}

constexpr const char* kTestsText =
    "llama-bench's tests (docs/generation.md): ppN processes an N-token prompt in one forward pass, tgM generates M "
    "tokens one forward pass each; t/s = tokens per second, mean ± sample standard deviation over the repetitions; "
    "mJ/token from the device's energy over the tests' windows (— without a power source).";
constexpr const char* kSweepText = "Decode batch sweep: tokens/s = batch × generated tokens / time of the decoding steps.";
constexpr const char* kServerText =
    "Server scenario: Poisson arrivals served by one worker as each row's batching says (fcfs: one request at a "
    "time, batch 1; continuous xN: up to N requests decoded together, each prefilled alone); TTFT includes "
    "queueing and the prefill, TPOT = (e2e − TTFT) / (output tokens − 1); goodput = requests meeting every SLO per "
    "second.";

// A Markdown table (| a | b |, its second line the alignment row) as an HTML table.
std::string html_table(const std::string& md) {
  std::istringstream lines(md);
  std::string line, h = "<table>\n";
  for (int n = 0; std::getline(lines, line); ++n) {
    if (n == 1 || line.size() < 2) continue;  // the alignment row
    const char* cell = n == 0 ? "th" : "td";
    h += "<tr>";
    size_t at = 1;
    for (size_t bar; (bar = line.find(" |", at)) != std::string::npos; at = bar + 2) {
      std::string c = line.substr(at, bar - at);
      if (!c.empty() && c.front() == ' ') c.erase(0, 1);
      h += fmt::format("<{0}>{1}</{0}>", cell, html_escape(c));
    }
    h += "</tr>\n";
  }
  return h + "</table>\n";
}

}  // namespace

std::string md_generation(const ReportInput& in) {
  const Tables t = tables(in);
  if (t.tests.empty() && t.sweep.empty() && t.server.empty()) return "";
  std::string s = "\n## Generation (language models)\n\n";
  if (!t.tests.empty()) s += std::string(kTestsText) + "\n\n" + t.tests;
  if (!t.sweep.empty()) s += "\n" + std::string(kSweepText) + "\n\n" + t.sweep;
  if (!t.server.empty()) s += "\n" + std::string(kServerText) + "\n\n" + t.server;
  return s;
}

std::string html_generation(const ReportInput& in) {
  const Tables t = tables(in);
  if (t.tests.empty() && t.sweep.empty() && t.server.empty()) return "";
  std::string h = "<h2 id=\"generation\">Generation (language models)</h2>\n";
  if (!t.tests.empty()) h += "<p>" + html_escape(kTestsText) + "</p>\n" + html_table(t.tests);
  if (!t.sweep.empty()) h += "<p>" + html_escape(kSweepText) + "</p>\n" + html_table(t.sweep);
  if (!t.server.empty()) h += "<p>" + html_escape(kServerText) + "</p>\n" + html_table(t.server);
  return h;
}

}  // namespace trainscope::report_detail

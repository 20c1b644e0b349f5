// `trainscope analyze TRACE|DIR...`: the step-time breakdown, operator and kernel tables, GPU
// idle time and communication overlap of PyTorch profiler traces (docs/analyze.md). Its options
// are its own (no setting of the settings table applies).
#include <fmt/core.h>

#include <memory>

#include "commands.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/trace_analysis.h"

namespace trainscope::cli {
namespace {

struct AnalyzeArgs {
  std::vector<std::string> inputs;
  std::string json_path, markdown_path;
  trace::AnalyzeOptions options;
  bool quiet = false;
};

// Analyses every trace; a trace that cannot be read is reported and the others go on.
int run_analyze(const AnalyzeArgs& args) {
  std::vector<trace::TraceAnalysis> done;
  int status = kExitOk;
  for (const std::string& path : trace::find_traces(args.inputs)) {
    try {
      done.push_back(trace::analyze_trace(path, args.options));
    } catch (const Error& e) {
      fmt::print(stderr, "trainscope: error ({}): {}\n", to_string(e.kind()), e.what());
      status = kExitUsage;
    }
  }
  if (!args.quiet) fmt::print("{}", trace::render_text(done));
  if (!done.empty() && !args.json_path.empty()) write_file_atomic(args.json_path, trace::render_json(done));
  if (!done.empty() && !args.markdown_path.empty()) write_file_atomic(args.markdown_path, trace::render_markdown(done));
  return status;
}

}  // namespace

void add_analyze_command(CLI::App& app, int& exit_status) {
  auto args = std::make_shared<AnalyzeArgs>();
  auto* sub = app.add_subcommand(
      "analyze", "Analyse PyTorch profiler traces (*.pt.trace.json[.gz]): step time by category, top operators and "
                 "kernels, GPU idle time, communication overlap");
  sub->add_option("traces", args->inputs, "trace files, or folders searched for *.pt.trace.json[.gz]")->required();
  sub->add_option("--json", args->json_path, "also write the analysis as JSON to this file");
  sub->add_option("--markdown", args->markdown_path, "also write the analysis as Markdown to this file");
  sub->add_option("--top", args->options.top, "rows of the operator and kernel tables")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  sub->add_option("--kernel-wait-ns", args->options.consecutive_kernel_delay_ns,
                  "GPU gaps shorter than this (ns) are kernel wait, not other (HTA's consecutive_kernel_delay)")
      ->check(CLI::Range(int64_t{0}, int64_t{1000000000}))
      ->capture_default_str();
  sub->add_option_function<int64_t>(
         "--memory-mb", [args](int64_t mb) { args->options.memory_budget_bytes = mb << 20; },
         "memory for the events the analysis sorts, MiB (32); beyond it they go to a temporary file in $TMPDIR")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  sub->add_flag("--quiet", args->quiet, "no console summary (with --json or --markdown)");
  sub->callback([args, &exit_status] { exit_status = run_analyze(*args); });
}

}  // namespace trainscope::cli

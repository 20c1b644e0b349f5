// RQ5 for a language model: generation on the CPU against the GPU, prefill and decoding apart,
// and the study's "simple network" verdict for batch-1 decoding eager and with CUDA graphs
// (src/report/generation_report.h). Every figure is a measured one from inference.json; a side
// that was not measured is said, with the command that measures it.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <set>

#include "report/generation_report.h"
#include "report/report_util.h"

namespace trainscope::report_detail {

namespace {

// The study's threshold of "gains little" (src/report/answers.cpp answer_simple_network).
constexpr double kLittleGain = 1.5;

std::string test_name(const TokenRateTest& t) {
  return t.batch > 1 ? fmt::format("{} x{}", t.test, t.batch) : t.test;
}
std::string tps(const GenTest& t) { return fmt::format("{} tokens/s", fmt_num(*t.test->tokens_per_s_mean)); }

// "`gpt-mini [float32, eager]` on cpu (2 threads): pp16 1234 tokens/s, tg8 456 tokens/s."
std::vector<std::string> figures(const std::vector<GenTest>& tests) {
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> by;  // (device, label) -> "pp16 1234 tokens/s"
  std::map<std::pair<std::string, std::string>, int64_t> threads;
  for (const auto& t : tests) {
    by[{t.run->device, t.label}].push_back(fmt::format("{} {}", test_name(*t.test), tps(t)));
    threads[{t.run->device, t.label}] = t.threads;
  }
  std::vector<std::string> out;
  for (const auto& [k, v] : by)
    out.push_back(fmt::format("Generation of `{}` on {}{}: {} (llama-bench's mean over the repetitions).", k.second,
                              k.first, is_gpu(k.first) ? "" : fmt::format(" ({})", count_of(threads[k], "thread")),
                              fmt::join(v, ", ")));
  return out;
}

// The CPU test a GPU test is measured against: the same model, test and batch; of the same
// compute type when the CPU measured it, else the CPU's fastest of that test.
const GenTest* cpu_baseline(const std::vector<GenTest>& all, const GenTest& g) {
  const GenTest* best = nullptr;
  for (const auto& c : all) {
    if (is_gpu(c.run->device) || c.model != g.model || c.test->test != g.test->test || c.test->batch != g.test->batch)
      continue;
    const bool same = c.dtype == g.dtype, best_same = best && best->dtype == g.dtype;
    if (!best || (same && !best_same) ||
        (same == best_same && *c.test->tokens_per_s_mean > *best->test->tokens_per_s_mean))
      best = &c;
  }
  return best;
}

double ratio(const GenTest& g, const GenTest& c) { return *g.test->tokens_per_s_mean / *c.test->tokens_per_s_mean; }

// "Prefill (pp512) of `gpt2 [float32, eager]` on cuda:0: 28800 tokens/s, 11.5× the CPU's 2500 tokens/s (...)".
std::string cpu_vs_gpu(const GenTest& g, const GenTest& c) {
  const std::string what = g.prefill() ? "Prefill" : "Decoding";
  const std::string base = fmt::format("{} tokens/s (`{}`{})", fmt_num(*c.test->tokens_per_s_mean), c.label,
                                       c.host != g.host ? ", host " + c.host : "");
  if (within_noise(g.tokens_per_s, c.tokens_per_s))
    return fmt::format("{} ({}) of `{}` on {}: {}, the same as the CPU's {} within the noise.", what,
                       test_name(*g.test), g.label, g.run->device, tps(g), base);
  const double r = ratio(g, c);
  return fmt::format("{} ({}) of `{}` on {}: {}, {}× {} the CPU's {}.", what, test_name(*g.test), g.label,
                     g.run->device, tps(g), fmt_num(r >= 1 ? r : 1 / r), r >= 1 ? "faster than" : "slower than", base);
}

struct DecodeRatios {
  const GenTest *eager = nullptr, *graphs = nullptr;  // the GPU's batch-1 tg tests
  const GenTest *eager_cpu = nullptr, *graphs_cpu = nullptr;
};

std::string times(const GenTest& g, const GenTest& c) {
  return within_noise(g.tokens_per_s, c.tokens_per_s) ? "the same as the CPU (within the noise)"
                                                      : fmt::format("{}× the CPU", fmt_num(ratio(g, c)));
}

// The study's "simple network" verdict for batch-1 decoding of one (model, compute type, GPU).
std::string decode_verdict(const std::string& what, const DecodeRatios& d) {
  if (d.eager && d.graphs) {
    const double re = ratio(*d.eager, *d.eager_cpu), rg = ratio(*d.graphs, *d.graphs_cpu);
    std::string s = fmt::format("Batch-1 decoding of {} is {} with CUDA graphs, {} eager", what,
                                times(*d.graphs, *d.graphs_cpu), times(*d.eager, *d.eager_cpu));
    const double gain = *d.graphs->test->tokens_per_s_mean / *d.eager->test->tokens_per_s_mean;
    if (gain >= kLittleGain)
      s += fmt::format(": eager decoding is launch-bound (replaying each step as one graph makes it {}× faster on the "
                       "same GPU)",
                       fmt_num(gain));
    if (re < kLittleGain && rg >= kLittleGain)
      s += "; the study's \"simple network\" finding holds for eager decoding and not with CUDA graphs";
    else if (re < kLittleGain && rg < kLittleGain)
      s += "; the study's \"simple network\" finding holds for decoding, with and without graphs";
    return s + ".";
  }
  const GenTest& g = d.eager ? *d.eager : *d.graphs;
  const GenTest& c = d.eager ? *d.eager_cpu : *d.graphs_cpu;
  const double r = ratio(g, c);
  return fmt::format("Batch-1 decoding of {} is {} {}{}; {} not measured ({}).", what, times(g, c),
                     d.eager ? "eager" : "with CUDA graphs",
                     r < kLittleGain ? ": it gains little from the GPU, the study's \"simple network\" finding" : "",
                     d.eager ? "with CUDA graphs" : "eager",
                     d.eager ? "`trainscope infer --graphs` replays each decoding step as a graph; it tells whether "
                               "the eager figure is launch overhead"
                             : "`trainscope infer` without --graphs");
}

// CPU against GPU per GPU test.
std::vector<std::string> comparisons(const std::vector<GenTest>& tests) {
  std::vector<std::string> out;
  for (const auto& g : tests) {
    if (!is_gpu(g.run->device)) continue;
    const GenTest* c = cpu_baseline(tests, g);
    if (!c) {
      out.push_back(fmt::format("{} ({}) of `{}` on {}: {}; the CPU did not run {} at batch {}, so there is no CPU "
                                "figure to compare it with.",
                                g.prefill() ? "Prefill" : "Decoding", test_name(*g.test), g.label, g.run->device, tps(g),
                                g.test->test, g.test->batch));
      continue;
    }
    out.push_back(cpu_vs_gpu(g, *c));
  }
  return out;
}

// The batch-1 decoding verdicts per (model, dtype, GPU), eager and with CUDA graphs.
std::vector<std::string> decode_verdicts(const std::vector<GenTest>& tests) {
  std::map<std::string, DecodeRatios> decode;  // "`gpt2` (bfloat16) on cuda:0"
  for (const auto& g : tests) {
    if (!is_gpu(g.run->device) || g.prefill() || g.test->batch != 1 || g.test->n_depth != 0) continue;
    const GenTest* c = cpu_baseline(tests, g);
    if (!c) continue;
    auto& d = decode[fmt::format("`{}` ({}) on {}", g.model, g.dtype, g.run->device)];
    (g.kind == "eager" ? d.eager : d.graphs) = &g;
    (g.kind == "eager" ? d.eager_cpu : d.graphs_cpu) = c;
  }
  std::vector<std::string> out;
  for (const auto& [what, d] : decode) out.push_back(decode_verdict(what, d));
  return out;
}

// What is missing for CPU against GPU: a side not measured, with the command that measures it.
std::vector<std::string> absences(const ReportInput& in, const std::vector<GenTest>& tests) {
  std::set<std::string> cpu, gpu;
  for (const auto& t : tests) (is_gpu(t.run->device) ? gpu : cpu).insert(t.model);
  const std::string dir = in.run_dir.empty() ? "<run folder>" : in.run_dir;
  std::vector<std::string> out;
  for (const auto& m : cpu)
    if (!gpu.count(m))
      out.push_back(fmt::format("CPU against GPU for generation of `{}`: not measured on a GPU (its generation runs "
                                "are on the CPU only); `trainscope infer --run {} --devices cpu,cuda` on a host with a "
                                "GPU measures both.",
                                m, dir));
  for (const auto& m : gpu)
    if (!cpu.count(m))
      out.push_back(fmt::format("CPU against GPU for generation of `{}`: not measured on the CPU (its generation runs "
                                "are on GPUs only); add cpu to `--devices`.",
                                m));
  return out;
}

// Language models trained here whose generation was not measured (no inference.json with it).
std::vector<std::string> unmeasured(const ReportInput& in, const std::vector<GenTest>& tests) {
  std::set<std::string> measured, trained;
  for (const auto& t : tests) measured.insert(t.model);
  for (const auto& r : in.runs)
    if (r.language_model && r.status == RunStatus::kOk && !measured.count(r.model)) trained.insert(r.model);
  std::vector<std::string> out;
  for (const auto& m : trained)
    out.push_back(fmt::format("Generation of `{}` was not measured (no inference.json with its generation results in "
                              "{}): `trainscope infer --run {} --devices cpu,cuda` measures prefill and decoding "
                              "(docs/generation.md), then `trainscope report` answers here.",
                              m, in.run_dir.empty() ? "the input" : in.run_dir,
                              in.run_dir.empty() ? "<run folder>" : in.run_dir));
  return out;
}

}  // namespace

std::vector<std::string> generation_rq5_sentences(const ReportInput& in) {
  const std::vector<GenTest> tests = generation_tests(in.inference);
  std::vector<std::string> out = figures(tests);
  for (auto& s : comparisons(tests)) out.push_back(std::move(s));
  if (!tests.empty())
    for (auto& s : absences(in, tests)) out.push_back(std::move(s));
  for (auto& s : unmeasured(in, tests)) out.push_back(std::move(s));
  return out;
}

std::vector<std::string> generation_simple_network_sentences(const ReportInput& in) {
  return decode_verdicts(generation_tests(in.inference));
}

}  // namespace trainscope::report_detail

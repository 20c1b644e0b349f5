// The generation results in llama-bench's output formats (llama.cpp tools/llama-bench: -o
// md|csv|json|jsonl|sql) with its field names where they apply, and the server scenario's
// TTFT / TPOT / goodput table and the decode batch sweep's table (Markdown).
//
// Fields of a row (llama-bench's names; those it has no equivalent for are trainscope's):
//   build_commit, cpu_info, gpu_info, backends, model_filename, model_type, model_size (bytes),
//   model_n_params, n_threads, devices, n_prompt, n_gen, n_depth, test_time (ISO 8601 UTC),
//   avg_ns, stddev_ns (nanoseconds per repetition), avg_ts, stddev_ts (tokens/s), and
//   trainscope's n_seq (rows decoded together), execution; json and jsonl add samples_ns and
//   samples_ts as llama-bench does. The Markdown table is llama-bench's: model | size | params
//   | backend | threads | test | t/s, t/s as "mean ± stddev".
// A failed test is a row with its error in the t/s cell (Markdown) and empty figures (others).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/generation_section.h"

namespace trainscope {

/// What a row says about where the test ran (the same for every test of one model on one device).
struct GenerationBenchInfo {
  std::string build_commit, cpu_info, gpu_info, backends, devices, model_filename, model_type, test_time;
  std::string execution;
  int64_t model_size = 0, model_n_params = 0, n_threads = 0;
};

struct GenerationBenchRow {
  GenerationBenchInfo info;
  TokenRateTest test;
};

/// The rows in `format`: "md", "csv", "json", "jsonl" or "sql". Throws Error(kInvalidArgument)
/// naming the format and the choices for any other.
std::string generation_bench_output(const std::vector<GenerationBenchRow>& rows, const std::string& format);

/// The formats generation_bench_output accepts, in the order --help lists them.
std::vector<std::string> generation_output_formats();

/// Markdown table of the server runs, one row per (label, rate): request/s, output tokens/s,
/// TTFT, TPOT, ITL and e2e p50/p90/p99 (ms), goodput and SLO attainment, then how it was served
/// (batching, mean running batch, mean prompt / output tokens per request).
std::string generation_server_table(const std::vector<std::pair<std::string, GenerationServer>>& servers);

/// Markdown table of the decode batch sweeps, one row per (label, batch), the saturation point marked.
std::string decode_sweep_table(const std::vector<std::pair<std::string, DecodeSweep>>& sweeps);

}  // namespace trainscope

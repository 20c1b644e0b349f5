// Token generation scenarios on a Decoder (workload/decoder.h): llama-bench's pp/tg tests, the
// decode batch sweep and the server scenario (definitions and sources:
// trainscope/generation_section.h; how to run them: docs/generation.md).
//
// Timing: the host's steady clock with a device synchronisation at every token boundary that is
// timed (device_synchronize, train/device.h; a no-op on the CPU), as llama-bench synchronises
// after each llama_decode.
//   pp N     reset(B, depth + N); the depth's tokens appended untimed; then one append of N
//            tokens [B, N], timed.
//   tg M     reset(B, depth + M); the depth untimed; then M appends of one token each, timed as
//            one region. The tokens are the text's next ones, drawn before the clock starts
//            (teacher forcing), so no sampling and no host read-back is timed: llama-bench feeds
//            tokens the same way (it does not sample in tg either).
//   Each test: one untimed warm-up repetition (it also captures CUDA graphs), then
//   `repetitions` timed ones.
//   sweep    at each batch B: the prompt appended untimed, then `sweep_gen` one-token appends
//            timed; decode tokens/s = B x sweep_gen / time.
//   server   Poisson arrivals at each rate (poisson_arrivals, trainscope/inference.h); ONE worker
//            serves the requests first come first served with batch 1 (no continuous batching):
//            prefill, then output_len - 1 decoding steps, each new token selected (greedy argmax,
//            or seeded temperature / top-k sampling) and read back to the host, where its time is
//            taken. TTFT therefore includes the queueing behind earlier requests.
//
// Errors (Error(kInvalidArgument), naming the flag and the fix): a test or request longer than
// the decoder's context, a batch or repetition count below 1, no token to draw prompts from.
// LibTorch errors other than out of memory propagate; out of memory in the sweep ends the sweep
// with the point marked "out_of_memory".
#pragma once

#include <torch/torch.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trainscope/generation_section.h"
#include "trainscope/telemetry.h"
#include "workload/decoder.h"

namespace trainscope {

/// Temperature / top-k sampling; temperature 0 = greedy (argmax).
struct SamplingOptions {
  double temperature = 0;
  int64_t top_k = 0;      // 0 = every token
  uint64_t seed = 42;
};

struct GenerationOptions {
  std::vector<int64_t> pp = {512}, tg = {128};  // tests; 0 entries are skipped
  int64_t depth = 0;                            // tokens already in the cache (untimed)
  int64_t batch = 1;                            // rows of the pp/tg tests
  int64_t repetitions = 5;
  bool sweep = true;
  std::vector<int64_t> sweep_batches;           // empty: auto (1, 2, 4, ... by the sweep rule)
  double sweep_min_gain_pct = 5;                // trainscope/batch_sweep.h
  int64_t sweep_max_batch = 1024;
  int64_t sweep_prompt = 128, sweep_gen = 128;  // shortened to the context when longer
  std::vector<double> server_rates;             // requests/s; empty: no server scenario
  int64_t prompt_len = 128, output_len = 128;   // server requests (fixed lengths)
  double slo_ttft_ms = 500, slo_tpot_ms = 30;   // MLPerf Inference Llama-3.1-8B interactive limits
  double server_budget_s = 10;                  // per rate: requests = max(min_requests, rate x budget)
  int64_t min_requests = 20;
  SamplingOptions sampling;
  uint64_t seed = 42;                           // arrivals and prompt offsets
  const std::atomic<bool>* stop_requested = nullptr;  // Ctrl-C: ends between tokens / requests
  /// Server: one rate ends after max(5 x server_budget_s, kServerMinCapS) seconds.
  static constexpr double kServerMinCapS = 30;
};

/// Where the telemetry of a window comes from (may be absent).
struct GenerationTelemetry {
  const TelemetrySampler* sampler = nullptr;
  std::string device;  // "cpu", "gpuN"; "" = none matches
};

/// Runs the scenarios of `opt` on `dec`. `text` is a token stream (int64, 1-D, on the CPU, ids
/// below dec.vocab()) from which prompts and teacher-forced tokens are drawn (cycled when short).
/// `log` (may be empty) receives one line per test, batch and rate.
GenerationSection measure_generation(Decoder& dec, const torch::Tensor& text, const GenerationOptions& opt,
                                     const GenerationTelemetry& tel = {},
                                     const std::function<void(const std::string&)>& log = {});

/// The server scenario alone (measure_generation runs it when server_rates is not empty).
GenerationServer generation_server(Decoder& dec, const torch::Tensor& text, const GenerationOptions& opt,
                                   const GenerationTelemetry& tel = {},
                                   const std::function<void(const std::string&)>& log = {});

/// Checks the options against the decoder's context before anything runs (the errors above).
void check_generation_options(const GenerationOptions& opt, int64_t context);

/// The next tokens [B, 1] (int64, on the logits' device) from logits [B, vocab]: argmax when
/// temperature is 0, else a draw from softmax(logits / temperature) over the top_k largest
/// (every token for top_k 0), with `gen` (a CPU generator seeded by the caller).
torch::Tensor select_tokens(const torch::Tensor& logits, const SamplingOptions& s, at::Generator& gen);

/// `count` tokens x `batch` rows of `text` starting at `offset` (wrapping), as int64 [batch,
/// count] on `device`; row r starts `r * count` tokens further on.
torch::Tensor text_tokens(const torch::Tensor& text, int64_t offset, int64_t batch, int64_t count,
                          const torch::Device& device);

/// A window's power and energy from the sampler (or the reason it is absent); `samples` the
/// tokens of the window, so joules_per_sample is joules per token.
ScenarioTelemetry window_telemetry(const GenerationTelemetry& tel, int64_t t0_ns, int64_t t1_ns, int64_t samples);

}  // namespace trainscope

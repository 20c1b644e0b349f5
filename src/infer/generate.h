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
//   server   Poisson arrivals at each rate (poisson_arrivals, trainscope/inference.h) served by
//            ONE worker, each new token selected (greedy argmax, or seeded temperature / top-k
//            sampling) and read back to the host, where its time is taken; TTFT therefore
//            includes the queueing. Two ways to serve (server_batching):
//            fcfs        one request at a time in arrival order, batch 1 (on the Decoder):
//                        prefill, then output_len - 1 one-token appends.
//            continuous  iteration-level scheduling (Orca, Yu et al., OSDI 2022; vLLM, TGI,
//                        llama.cpp's server) on a SlotDecoder (workload/decoder.h): at every step
//                        boundary the requests that have arrived take free slots (the lowest
//                        first, up to server_max_batch), each prefilled alone (its first token),
//                        then one step() advances every running request by a token; a request
//                        that has its output_len tokens leaves and frees its slot. Without a
//                        slot decoder (a TorchScript LM) the server runs fcfs and says why.
//            Lengths (server_lengths): "fixed" (prompt_len and output_len, prompts at seeded
//            offsets of the text) or "text" (server_text_spans below).
//
// Errors (Error(kInvalidArgument), naming the flag and the fix): a test or request longer than
// the decoder's context, a batch, repetition count or server max batch below 1, a server rate not
// > 0, a negative temperature or top-k, an unknown server batching or lengths, nothing to measure,
// text lengths without paragraph breaks, no token to draw prompts from.
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
  int64_t prompt_len = 128, output_len = 128;   // server requests: fixed lengths, or text lengths' upper bounds
  std::string server_batching = "continuous";   // "fcfs" | "continuous" (above)
  int64_t server_max_batch = 8;                 // continuous: slots of the running batch
  std::string server_lengths = "fixed";         // "fixed" | "text" (above)
  /// Text lengths: the tokens that end a paragraph ({10, 10}, a blank line, for byte text);
  /// empty when the tokenizer's are unknown (token files), which refuses text lengths.
  std::vector<int64_t> paragraph_break;
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
/// `slots` (may be null): the slot decoder of the server's continuous batching (over the same
/// model as `dec`).
GenerationSection measure_generation(Decoder& dec, const torch::Tensor& text, const GenerationOptions& opt,
                                     const GenerationTelemetry& tel = {},
                                     const std::function<void(const std::string&)>& log = {},
                                     SlotDecoder* slots = nullptr);

/// The server scenario alone (measure_generation runs it when server_rates is not empty):
/// continuous batching on `slots` when server_batching is "continuous" and `slots` is given,
/// otherwise fcfs on `dec`.
GenerationServer generation_server(Decoder& dec, const torch::Tensor& text, const GenerationOptions& opt,
                                   const GenerationTelemetry& tel = {},
                                   const std::function<void(const std::string&)>& log = {},
                                   SlotDecoder* slots = nullptr);

/// One request of the server scenario.
struct ServerRequest {
  double arrival_s = 0;       // after the run's start
  torch::Tensor prompt;       // int64 [1, P] on the decoder's device
  int64_t output_len = 1;     // output tokens asked (>= 1)
};

/// A request's place in the text under server_lengths "text": its prompt is the paragraph
/// before a paragraph boundary (its last max_prompt tokens when longer), its output length the
/// length of the paragraph after it (the tokens up to and including the next paragraph break),
/// at most max_output and at most what the context leaves after the prompt.
struct TextSpan {
  int64_t prompt_start = 0, prompt_len = 0, output_len = 0;
};

/// `count` spans at boundaries drawn uniformly (mt19937_64 `seed`) among the text's paragraph
/// boundaries that have a whole paragraph before and after them. A boundary is the position
/// after a run of `paragraph_break` (runs of more breaks, such as several blank lines, count as
/// one). Throws Error(kInvalidArgument) naming --server-lengths text when `paragraph_break` is
/// empty (the tokenizer's is unknown) or the text holds fewer than two such boundaries.
std::vector<TextSpan> server_text_spans(const torch::Tensor& text, const std::vector<int64_t>& paragraph_break,
                                        int64_t count, int64_t max_prompt, int64_t max_output, int64_t context,
                                        uint64_t seed);

/// The requests of one rate: Poisson arrivals (poisson_arrivals(rate, count, seed)); lengths by
/// opt.server_lengths; prompts made before any clock starts.
std::vector<ServerRequest> server_requests(const torch::Tensor& text, const GenerationOptions& opt, double rate,
                                           int64_t count, uint64_t seed, const torch::Device& device);

/// The server's clock: seconds since the run's start, and a wait until a time that returns false
/// when the worker should take no new request (interrupted, or past the rate's time cap). The
/// scenario's is the host's steady clock; tests give one that advances with the forward passes.
struct ServerClock {
  std::function<double()> now_s;
  std::function<bool(double)> wait_until;
};

/// What the worker did with the requests: each one's timing (arrival, and when each of its tokens
/// was on the host) and its tokens; requests taken (served, in part when interrupted); decoding
/// steps and the rows they advanced (the mean running batch is rows / steps).
struct ServedRequests {
  std::vector<RequestTiming> timing;
  std::vector<std::vector<int64_t>> tokens;
  size_t taken = 0;
  int64_t decode_steps = 0, decode_rows = 0;
};

/// fcfs: the requests one at a time in order, batch 1 (the header's server fcfs).
ServedRequests serve_fcfs(Decoder& dec, const std::vector<ServerRequest>& reqs, const GenerationOptions& opt,
                          at::Generator& gen, const ServerClock& clock);

/// continuous: iteration-level scheduling over opt.server_max_batch slots (the header's server
/// continuous). Ctrl-C (opt.stop_requested) ends it between passes; when the clock refuses a new
/// request, the running ones are finished and nothing more is taken.
ServedRequests serve_continuous(SlotDecoder& dec, const std::vector<ServerRequest>& reqs,
                                const GenerationOptions& opt, at::Generator& gen, const ServerClock& clock);

/// Checks the options against the decoder's context before anything runs (the errors above;
/// check_generation_values's too).
void check_generation_options(const GenerationOptions& opt, int64_t context);

/// The checks that need no model, so `infer` makes them before anything is loaded: a batch,
/// repetition count or server max batch below 1, a negative depth or pp/tg length, a server rate
/// that is not > 0, an unknown server batching or lengths, SLOs not > 0, a negative or non-finite
/// temperature, a negative top-k, and nothing to measure (no pp or tg test above 0, no sweep, no
/// server rate). Error(kInvalidArgument) naming the flag, the value and the fix.
void check_generation_values(const GenerationOptions& opt);

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

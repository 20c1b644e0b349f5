// The generation section of a run record: token generation of a causal language model measured
// as the field measures it (`trainscope infer` on a language model; docs/generation.md). It sits
// in the inference section (InferenceSection::generation, trainscope/inference_section.h), so
// inference.json and results.json carry it alike.
//
// Definitions and their sources:
//   ppN, tgM     llama.cpp's llama-bench (tools/llama-bench/llama-bench.cpp): "pp512" is the
//                processing of a 512-token prompt in one forward pass, "tg128" the generation of
//                128 tokens one forward pass each; "pp512 @ d512" the same after 512 tokens
//                already in the key/value cache (a prefilled depth, untimed). tokens/s of one
//                repetition = batch x (n_prompt + n_gen) / its time; the cell is the mean ±
//                sample standard deviation (Bessel's n - 1, as llama-bench) over the repetitions
//                (default 5) after one untimed warm-up. Tokenisation and sampling are outside the
//                timed region (greedy argmax is on the device, after the clock stops).
//   TTFT         time to first token: the request's arrival to its first output token on the
//                host, queueing and the prefill included (vLLM benchmark_serving, MLPerf
//                Inference's LLM scenarios).
//   TPOT         time per output token after the first: (e2e - TTFT) / (output tokens - 1)
//                (vLLM benchmark_serving, MLPerf Inference); undefined for a request of one
//                output token (left out of TPOT's percentiles, and it meets any TPOT SLO).
//   ITL          inter-token latency: every gap between consecutive output tokens of a request,
//                pooled over the requests (vLLM benchmark_serving).
//   e2e          arrival to the last output token on the host.
//   goodput      requests meeting every SLO (TTFT <= slo_ttft_ms and TPOT <= slo_tpot_ms) per
//                second of the run (DistServe, Zhong et al. 2024; vLLM's --goodput).
//   request/s    requests served / duration; output tokens/s: output tokens / duration, where
//                duration = the first arrival (time 0) to the last completion.
//   J/token      energy of the prefill windows (pp tests) over the prompt tokens they processed,
//                and of the decode windows (tg tests) over the tokens they generated, apart;
//                tokens/J its inverse. Absent, with the reason, without a power source.
//   Percentiles  exact, type 7 of Hyndman & Fan (1996) (trainscope/stats.h), as every latency
//                of the inference section.
//   Decode batch sweep  batch 1, 2, 4, ... of lockstep decoding after a prompt, until decode
//                tokens/s (batch x generated tokens / time) rises by less than min_gain_pct (the
//                batch sweep rule of trainscope/batch_sweep.h), memory runs out, or the context
//                or batch limit is reached; the saturation point is the smallest batch within
//                min_gain_pct of the best.
//
// Units are in the names (_ms, _s, _j, _per_s, _per_j); a value not measured is absent (null).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/fields.h"
#include "trainscope/scenario_fields.h"  // LatencyFields, ScenarioTelemetry

namespace trainscope {

/// One llama-bench test (a pp or tg cell) on one device.
struct TokenRateTest {
  std::string test;                   // "pp512", "tg128", "pp512 @ d512"
  int64_t n_prompt = 0, n_gen = 0, n_depth = 0, batch = 1;
  int64_t repetitions = 0;            // timed repetitions (the untimed warm-up not counted)
  std::vector<double> samples_ns;     // each repetition's timed region
  std::vector<double> samples_tokens_per_s;
  OptD avg_ns, stddev_ns;             // over samples_ns
  OptD tokens_per_s_mean, tokens_per_s_stddev;  // over samples_tokens_per_s (llama-bench avg_ts, stddev_ts)
  OptD joules_per_token, tokens_per_j;          // from telemetry over the timed repetitions' window
  std::optional<ScenarioTelemetry> telemetry;
  std::string error_kind, error;      // "out_of_memory", "model", ... when the test failed
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("test", s.test, Better::kNone);
    v("n_prompt", s.n_prompt, Better::kNone);
    v("n_gen", s.n_gen, Better::kNone);
    v("n_depth", s.n_depth, Better::kNone);
    v("batch", s.batch, Better::kNone);
    v("repetitions", s.repetitions, Better::kNone);
    v("samples_ns", s.samples_ns, Better::kNone);
    v("samples_tokens_per_s", s.samples_tokens_per_s, Better::kNone);
    v("avg_ns", s.avg_ns, Better::kLower);
    v("stddev_ns", s.stddev_ns, Better::kNone);
    v("tokens_per_s_mean", s.tokens_per_s_mean, Better::kHigher);
    v("tokens_per_s_stddev", s.tokens_per_s_stddev, Better::kNone);
    v("joules_per_token", s.joules_per_token, Better::kLower);
    v("tokens_per_j", s.tokens_per_j, Better::kHigher);
    v("telemetry", s.telemetry, Better::kNone);
    v("error_kind", s.error_kind, Better::kNone);
    v("error", s.error, Better::kNone);
  }
};

/// Energy per token of one phase ("prefill": the pp tests, "decode": the tg tests).
struct TokenEnergy {
  std::string phase;
  OptD energy_j, tokens, window_s, joules_per_token, tokens_per_j;
  std::string energy_method;            // ScenarioTelemetry::energy_method of the windows
  std::optional<bool> short_window;     // any window marked short (trainscope/telemetry.h)
  std::string absent_reason;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("phase", s.phase, Better::kNone);
    v("energy_j", s.energy_j, Better::kLower);
    v("tokens", s.tokens, Better::kNone);
    v("window_s", s.window_s, Better::kNone);
    v("joules_per_token", s.joules_per_token, Better::kLower);
    v("tokens_per_j", s.tokens_per_j, Better::kHigher);
    v("energy_method", s.energy_method, Better::kNone);
    v("short_window", s.short_window, Better::kNone);
    v("absent_reason", s.absent_reason, Better::kNone);
  }
};

/// One batch size of the decode batch sweep.
struct DecodeSweepPoint {
  int64_t batch = 0;
  OptD tokens_per_s;    // batch x n_gen / time of the n_gen decoding steps
  OptD step_ms;         // mean time of one decoding step (all rows advance one token)
  std::string error_kind, error;  // "out_of_memory" when the batch did not fit
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("batch", s.batch, Better::kNone);
    v("tokens_per_s", s.tokens_per_s, Better::kHigher);
    v("step_ms", s.step_ms, Better::kLower);
    v("error_kind", s.error_kind, Better::kNone);
    v("error", s.error, Better::kNone);
  }
};

struct DecodeSweep {
  int64_t n_prompt = 0, n_gen = 0;
  double min_gain_pct = 0;
  std::vector<DecodeSweepPoint> points;
  OptI saturation_batch;
  OptD best_tokens_per_s;
  std::string stop_kind, stop_reason;   // trainscope/batch_sweep.h BatchSweepStep, or "list" for given batches
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("n_prompt", s.n_prompt, Better::kNone);
    v("n_gen", s.n_gen, Better::kNone);
    v("min_gain_pct", s.min_gain_pct, Better::kNone);
    v("points", s.points, Better::kNone);
    v("saturation_batch", s.saturation_batch, Better::kNone);
    v("best_tokens_per_s", s.best_tokens_per_s, Better::kHigher);
    v("stop_kind", s.stop_kind, Better::kNone);
    v("stop_reason", s.stop_reason, Better::kNone);
  }
};

/// The distribution of one request length over a server run's requests (tokens): mean, exact
/// type-7 p50 and p99 (trainscope/stats.h), min and max; absent for no requests.
struct TokenLengths {
  OptD mean, p50, p99;
  OptI min, max;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("mean", s.mean, Better::kNone);
    v("p50", s.p50, Better::kNone);
    v("p99", s.p99, Better::kNone);
    v("min", s.min, Better::kNone);
    v("max", s.max, Better::kNone);
  }
};

/// One server run at one arrival rate.
///
/// How the worker served (docs/generation.md, "What the server scenario models"):
///   batching     "fcfs": one request at a time in arrival order, batch 1; "continuous":
///                iteration-level scheduling (Orca, Yu et al., OSDI 2022; as vLLM, TGI and
///                llama.cpp's server): at every step boundary the requests that have arrived
///                take free slots (up to max_batch), each prefilled in its own forward pass, then
///                one decoding step advances every running request by one token; a finished
///                request leaves and frees its slot.
///   mean_running_batch  rows per decoding step, averaged over the run's decoding steps
///                (prefill passes not counted); 1 for fcfs.
///   lengths      "fixed" (every request the same prompt and output length) or "text" (each
///                request's prompt ends at a paragraph boundary of the validation text and its
///                output length is the following paragraph's; infer/generate.h); prompt_lengths
///                and output_lengths: their distribution over the requests issued (the output
///                length asked of each request, before any early stop).
struct GenerationServerRun {
  double rate_per_s = 0;                 // Poisson arrival rate asked for (requests/s)
  int64_t requests_issued = 0, requests_served = 0, good_requests = 0, output_tokens = 0;
  LatencyFields ttft, tpot, itl, e2e;    // percentiles in ms
  OptD duration_s, request_throughput_per_s, output_tokens_per_s, goodput_per_s, slo_attainment_pct;
  bool interrupted = false, stopped_early = false;
  std::string stop_reason;
  std::optional<ScenarioTelemetry> telemetry;
  std::string batching;                  // "fcfs" | "continuous" (above)
  int64_t max_batch = 1;                 // slots of the running batch (1 for fcfs)
  OptD mean_running_batch;               // rows per decoding step (above)
  int64_t decode_steps = 0;              // decoding forward passes of the run (prefills not counted)
  std::string lengths;                   // "fixed" | "text" (above)
  TokenLengths prompt_lengths, output_lengths;  // tokens per request (above)
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("rate_per_s", s.rate_per_s, Better::kNone);
    v("requests_issued", s.requests_issued, Better::kNone);
    v("requests_served", s.requests_served, Better::kNone);
    v("good_requests", s.good_requests, Better::kNone);
    v("output_tokens", s.output_tokens, Better::kNone);
    v("ttft", s.ttft, Better::kNone);
    v("tpot", s.tpot, Better::kNone);
    v("itl", s.itl, Better::kNone);
    v("e2e", s.e2e, Better::kNone);
    v("duration_s", s.duration_s, Better::kNone);
    v("request_throughput_per_s", s.request_throughput_per_s, Better::kHigher);
    v("output_tokens_per_s", s.output_tokens_per_s, Better::kHigher);
    v("goodput_per_s", s.goodput_per_s, Better::kHigher);
    v("slo_attainment_pct", s.slo_attainment_pct, Better::kHigher);
    v("interrupted", s.interrupted, Better::kNone);
    v("stopped_early", s.stopped_early, Better::kNone);
    v("stop_reason", s.stop_reason, Better::kNone);
    v("telemetry", s.telemetry, Better::kNone);
    v("batching", s.batching, Better::kNone);
    v("max_batch", s.max_batch, Better::kNone);
    v("mean_running_batch", s.mean_running_batch, Better::kNone);
    v("decode_steps", s.decode_steps, Better::kNone);
    v("lengths", s.lengths, Better::kNone);
    v("prompt_tokens_per_request", s.prompt_lengths, Better::kNone);
    v("output_tokens_per_request", s.output_lengths, Better::kNone);
  }
};

struct GenerationServer {
  std::string worker, arrivals, lengths;  // what was modelled, in words
  double slo_ttft_ms = 0, slo_tpot_ms = 0;
  std::vector<GenerationServerRun> runs;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("worker", s.worker, Better::kNone);
    v("arrivals", s.arrivals, Better::kNone);
    v("lengths", s.lengths, Better::kNone);
    v("slo_ttft_ms", s.slo_ttft_ms, Better::kNone);
    v("slo_tpot_ms", s.slo_tpot_ms, Better::kNone);
    v("runs", s.runs, Better::kNone);
  }
};

/// The generation results of one model on one device.
struct GenerationSection {
  std::string decoding;      // "greedy" | "sampling (temperature T, top-k K, seed S)"
  std::string execution;     // Decoder::execution(): "eager", "cuda_graph", ...
  /// The decoder's compute type, as `infer --dtype` names it: "float32", "bfloat16", "float16".
  /// "" in a record written before the field (schema 2 of inference.json before 2026-12-05):
  /// trainscope/inference_run.h generation_dtype then reads the invocation's command line.
  std::string dtype;
  std::string kv_cache;      // how the decoder keeps keys and values (e.g. "allocated once per reset")
  int64_t context = 0, vocab = 0;
  OptI model_parameters, model_size_bytes;
  std::vector<TokenRateTest> tests;
  std::optional<TokenEnergy> prefill_energy, decode_energy;
  std::optional<DecodeSweep> decode_sweep;
  std::optional<GenerationServer> server;
  std::vector<std::string> notes;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("decoding", s.decoding, Better::kNone);
    v("execution", s.execution, Better::kNone);
    v("dtype", s.dtype, Better::kNone);
    v("kv_cache", s.kv_cache, Better::kNone);
    v("context", s.context, Better::kNone);
    v("vocab", s.vocab, Better::kNone);
    v("model_parameters", s.model_parameters, Better::kNone);
    v("model_size_bytes", s.model_size_bytes, Better::kNone);
    v("tests", s.tests, Better::kNone);
    v("prefill_energy", s.prefill_energy, Better::kNone);
    v("decode_energy", s.decode_energy, Better::kNone);
    v("decode_sweep", s.decode_sweep, Better::kNone);
    v("server", s.server, Better::kNone);
    v("notes", s.notes, Better::kNone);
  }
};

/// The section as JSON text (src/results/record_json.h's form) and back; reading is defensive
/// (a missing or mistyped key leaves its field at the default). Throws Error(kDataFormat) when
/// `text` is not a JSON object.
std::string generation_section_json(const GenerationSection& s);
GenerationSection generation_section_from_json(const std::string& text);

/// llama-bench's test name: "pp512", "tg128", "pp512 @ d512" (n_prompt > 0 names a pp test,
/// else a tg test; the depth is appended when > 0).
std::string token_test_name(int64_t n_prompt, int64_t n_gen, int64_t n_depth);

/// Fills a test's means and sample standard deviations from samples_ns: tokens/s of each
/// repetition = batch x (n_prompt + n_gen) / seconds (llama-bench's get_ts). One sample gives
/// a stddev of 0, as llama-bench; none leaves them absent.
void summarize_token_test(TokenRateTest& t);

/// Mean and sample standard deviation (n - 1; 0 for one value); nullopt for no values.
struct MeanStddev {
  double mean = 0, stddev = 0;
};
std::optional<MeanStddev> mean_stddev(const std::vector<double>& values);

/// TPOT of one request (ms): (e2e - TTFT) / (output_tokens - 1); nullopt below 2 tokens.
OptD time_per_output_token_ms(double e2e_ms, double ttft_ms, int64_t output_tokens);

/// What a server run measured of one request, in seconds from the run's start (the first arrival
/// is drawn after 0). token_s: when each output token was on the host (first = TTFT's end).
/// A request not served has an empty token_s.
struct RequestTiming {
  double arrival_s = 0;
  std::vector<double> token_s;
};

/// The server run's figures from its requests: TTFT, TPOT, ITL and e2e percentiles (requests
/// fewer than `min_requests` flag each LatencyFields as too few), throughputs over the duration,
/// goodput under the SLOs (ms; a request of one token has no TPOT and meets the TPOT SLO).
GenerationServerRun generation_server_summary(double rate_per_s, const std::vector<RequestTiming>& requests,
                                              double slo_ttft_ms, double slo_tpot_ms, int64_t min_requests);

/// The distribution of `lengths` (tokens per request; TokenLengths above).
TokenLengths token_lengths(const std::vector<int64_t>& lengths);

/// Exact type-7 percentiles of `values_ms` (trainscope/stats.h); fewer than `min_count`
/// values set too_few_queries with the reason. Absent values for none.
LatencyFields latency_percentiles(const std::vector<double>& values_ms, int64_t min_count);

/// Energy per token of a phase over several windows: the sum of their energies over the sum of
/// their tokens; absent with the first window's absent_reason when a window has no energy.
TokenEnergy token_energy(const std::string& phase, const std::vector<const TokenRateTest*>& tests);

}  // namespace trainscope

// Generation records made in memory for the compare/report/history tests of a language model's
// inference.json (tests/report/test_compare_gen_*.cpp): pp/tg tests with repetitions, server rates
// with their serving, image-inference runs, and the documents that hold them. One copy each:
// `inline`, in namespace gen_fixture.
#pragma once

#include <string>
#include <vector>

#include "trainscope/inference_run.h"

namespace gen_fixture {

using namespace trainscope;

/// A pp/tg test whose repetitions ran at `tps` tokens/s each.
inline TokenRateTest token_test(int64_t n_prompt, int64_t n_gen, std::vector<double> tps) {
  TokenRateTest t;
  t.n_prompt = n_prompt;
  t.n_gen = n_gen;
  t.test = token_test_name(n_prompt, n_gen, 0);
  t.repetitions = static_cast<int64_t>(tps.size());
  for (double x : tps) t.samples_ns.push_back(1e9 * static_cast<double>(n_prompt + n_gen) / x);
  summarize_token_test(t);
  return t;
}

/// How a server rate was served: "fcfs" or "continuous" with `max_batch` slots; lengths "fixed" or "text".
struct Serving {
  std::string batching = "fcfs";
  int64_t max_batch = 1;
  std::string lengths = "fixed";
};

/// One server rate at 2 requests/s: TTFT p99 40 x TPOT p99.
inline GenerationServerRun server_rate(double tpot_p99, const Serving& how) {
  GenerationServerRun s;
  s.rate_per_s = 2;
  s.requests_issued = s.requests_served = 20;
  s.ttft.p99_ms = 40 * tpot_p99;
  s.tpot.p99_ms = tpot_p99;
  s.batching = how.batching;
  s.max_batch = how.max_batch;
  s.lengths = how.lengths;
  return s;
}

/// gpt2 on `device`, eager, `threads` intra-op threads: tg128 at `tg` tokens/s (three
/// repetitions, ±1 %), and a server rate served `how` when `tpot_p99` > 0. dtype: the record's
/// own field ("" as a record written before it).
inline InferenceRun gen_run(const std::string& device, double tg, double tpot_p99 = 0, const Serving& how = {},
                            int64_t threads = 16, const std::string& dtype = "") {
  InferenceRun r;
  r.label = "runs/lm/checkpoints/cpu-gpt2.pt";
  r.model = "gpt2";
  r.weights = "checkpoint";
  r.device = device;
  InferenceSection inf;
  inf.device = device;
  inf.intra_op_threads = threads;
  GenerationSection g;
  g.execution = "eager";
  g.dtype = dtype;
  g.tests = {token_test(0, 128, {tg * 0.99, tg, tg * 1.01})};
  if (tpot_p99 > 0) {
    GenerationServer s;
    s.lengths = "prompt 128, output 128 tokens";
    s.runs = {server_rate(tpot_p99, how)};
    g.server = s;
  }
  inf.generation = g;
  r.inference = inf;
  return r;
}

/// An image classifier's measurement: single-stream p99 `p99_ms`, offline best `samples_per_s`.
inline InferenceRun image_run(const std::string& device, double p99_ms, double samples_per_s) {
  InferenceRun r;
  r.label = "runs/mnist/checkpoints/cpu-mlp.pt";
  r.model = "mlp";
  r.weights = "checkpoint";
  r.device = device;
  r.dataset = "mnist";
  InferenceSection inf;
  inf.device = device;
  inf.intra_op_threads = 4;
  SingleStreamResult ss;
  ss.latency.queries = 1000;
  ss.latency.p50_ms = p99_ms / 2;
  ss.latency.p99_ms = p99_ms;
  inf.single_stream = ss;
  OfflineResult off;
  off.best_samples_per_s = samples_per_s;
  off.best_batch_size = 256;
  inf.offline = off;
  r.inference = inf;
  return r;
}

/// A document of one `infer` invocation read from `path` ("" for none).
inline InferenceDocument doc(std::vector<InferenceRun> runs, const std::string& path = "",
                             const std::string& command = "trainscope infer --run runs/lm") {
  InferenceDocument d;
  d.path = path;
  d.provenance.host = "h200-host";
  d.provenance.date_utc = "2026-12-04T10:00:00Z";
  d.provenance.command_line = command;
  d.runs = std::move(runs);
  return d;
}

}  // namespace gen_fixture

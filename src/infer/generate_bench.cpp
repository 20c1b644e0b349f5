// llama-bench's pp/tg tests, the decode batch sweep and measure_generation (src/infer/generate.h).
#include <c10/core/InferenceMode.h>
#include <fmt/format.h>

#include <chrono>

#include "infer/generate.h"
#include "train/compat.h"
#include "train/device.h"
#include "trainscope/batch_sweep.h"
#include "trainscope/error.h"

namespace trainscope {

namespace {

using Clock = std::chrono::steady_clock;

double ns_since(Clock::time_point t0) { return std::chrono::duration<double, std::nano>(Clock::now() - t0).count(); }
int64_t tel_now(const GenerationTelemetry& t) { return t.sampler ? t.sampler->now_ns() : 0; }
bool stop_now(const GenerationOptions& o) { return o.stop_requested && o.stop_requested->load(); }

// One repetition of a test; returns the timed region in ns. Tokens come from `text` at `offset`.
double run_test_once(Decoder& dec, const torch::Tensor& text, const TokenRateTest& t, int64_t offset) {
  const auto dev = dec.device();
  dec.reset(t.batch, t.n_depth + std::max(t.n_prompt, t.n_gen));
  if (t.n_depth > 0) dec.append(text_tokens(text, offset, t.batch, t.n_depth, dev));
  // Prompt, or the tg tokens as [n_gen, B, 1] so each step's [B, 1] is contiguous.
  auto prompt = t.n_prompt > 0 ? text_tokens(text, offset + t.n_depth, t.batch, t.n_prompt, dev) : torch::Tensor();
  auto steps = t.n_gen > 0 ? text_tokens(text, offset + t.n_depth, t.batch, t.n_gen, dev).t().contiguous().unsqueeze(-1)
                           : torch::Tensor();
  device_synchronize(dev);
  const auto t0 = Clock::now();
  if (t.n_prompt > 0) dec.append(prompt);
  for (int64_t i = 0; i < t.n_gen; ++i) {
    dec.append(steps[i]);
    device_synchronize(dev);  // a token boundary, as llama-bench's llama_synchronize per token
  }
  device_synchronize(dev);
  return ns_since(t0);
}

TokenRateTest run_test(Decoder& dec, const torch::Tensor& text, TokenRateTest t, const GenerationOptions& o,
                       const GenerationTelemetry& tel) {
  t.test = token_test_name(t.n_prompt, t.n_gen, t.n_depth);
  run_test_once(dec, text, t, 0);  // warm-up (and graph capture)
  const int64_t tel0 = tel_now(tel);
  for (int64_t r = 0; r < o.repetitions && !stop_now(o); ++r)
    t.samples_ns.push_back(run_test_once(dec, text, t, (r + 1) * 7919));
  const int64_t tel1 = tel_now(tel);
  summarize_token_test(t);
  const int64_t tokens = t.batch * (t.n_prompt + t.n_gen) * t.repetitions;
  t.telemetry = window_telemetry(tel, tel0, tel1, tokens);
  if (t.telemetry->energy_j && tokens > 0) {
    t.joules_per_token = *t.telemetry->energy_j / static_cast<double>(tokens);
    if (*t.telemetry->energy_j > 0) t.tokens_per_j = static_cast<double>(tokens) / *t.telemetry->energy_j;
  }
  return t;
}

std::vector<TokenRateTest> token_tests(Decoder& dec, const torch::Tensor& text, const GenerationOptions& o,
                                       const GenerationTelemetry& tel, const std::function<void(const std::string&)>& log) {
  std::vector<TokenRateTest> out;
  auto one = [&](int64_t p, int64_t g) {
    if (stop_now(o)) return;
    TokenRateTest t;
    t.n_prompt = p, t.n_gen = g, t.n_depth = o.depth, t.batch = o.batch;
    out.push_back(run_test(dec, text, t, o, tel));
    const auto& r = out.back();
    if (log)
      log(fmt::format("{}: {:.2f} ± {:.2f} tokens/s", r.test, r.tokens_per_s_mean.value_or(0),
                      r.tokens_per_s_stddev.value_or(0)));
  };
  for (int64_t p : o.pp)
    if (p > 0) one(p, 0);
  for (int64_t g : o.tg)
    if (g > 0) one(0, g);
  return out;
}

// Decode tokens/s at batch b: the prompt untimed, then `gen` one-token steps timed.
DecodeSweepPoint sweep_point(Decoder& dec, const torch::Tensor& text, int64_t b, int64_t prompt, int64_t gen) {
  TokenRateTest t;
  t.batch = b, t.n_depth = prompt, t.n_gen = gen;
  DecodeSweepPoint p;
  p.batch = b;
  try {
    TokenRateTest warm = t;
    warm.n_gen = std::min<int64_t>(gen, 8);
    run_test_once(dec, text, warm, 0);
    const double ns = run_test_once(dec, text, t, 104729);
    p.tokens_per_s = static_cast<double>(b * gen) * 1e9 / ns;
    p.step_ms = ns / 1e6 / static_cast<double>(gen);
  } catch (const c10::Error& e) {
    if (!compat::is_out_of_memory(e)) throw;
    release_device_cache(dec.device());
    p.error_kind = "out_of_memory";
    p.error = fmt::format("out of memory at batch {}", b);
  }
  return p;
}

BatchSweepPoint as_sweep_point(const DecodeSweepPoint& p) {
  BatchSweepPoint s;
  s.batch_size = p.batch;
  s.samples_per_s = p.tokens_per_s;
  s.out_of_memory = p.error_kind == "out_of_memory";
  s.failure = p.error;
  return s;
}

DecodeSweep decode_sweep(Decoder& dec, const torch::Tensor& text, const GenerationOptions& o,
                         const std::function<void(const std::string&)>& log) {
  DecodeSweep s;
  s.n_prompt = std::min(o.sweep_prompt, dec.context() / 2);
  s.n_gen = std::min(o.sweep_gen, dec.context() - s.n_prompt);
  s.min_gain_pct = o.sweep_min_gain_pct;
  auto measure = [&](int64_t b) {
    if (stop_now(o)) return BatchSweepPoint{};  // batch_size 0: interrupted
    s.points.push_back(sweep_point(dec, text, b, s.n_prompt, s.n_gen));
    const auto& p = s.points.back();
    if (log) log(fmt::format("decode batch {}: {}", b, p.tokens_per_s ? fmt::format("{:.1f} tokens/s", *p.tokens_per_s) : p.error));
    return as_sweep_point(p);
  };
  BatchSweepRule rule;
  rule.min_gain_pct = o.sweep_min_gain_pct;
  rule.max_batch = o.sweep_max_batch;
  std::vector<BatchSweepPoint> done;
  if (o.sweep_batches.empty()) {
    auto r = run_batch_sweep(1, rule, measure);
    done = r.points;
    s.stop_kind = r.last.stop_kind, s.stop_reason = r.last.stop_reason;
  } else {
    for (int64_t b : o.sweep_batches)
      if (!stop_now(o)) done.push_back(measure(b));
    s.stop_kind = "list";
    s.stop_reason = "the batch sizes given (--gen-batches)";
  }
  s.saturation_batch = saturation_batch(done, rule);
  for (const auto& p : s.points)
    if (p.tokens_per_s && (!s.best_tokens_per_s || *p.tokens_per_s > *s.best_tokens_per_s)) s.best_tokens_per_s = p.tokens_per_s;
  return s;
}

std::string decoding_text(const SamplingOptions& s) {
  if (!(s.temperature > 0)) return "greedy (argmax)";
  return fmt::format("sampling (temperature {:g}, top-k {}, seed {})", s.temperature, s.top_k, s.seed);
}

}  // namespace

GenerationSection measure_generation(Decoder& dec, const torch::Tensor& text, const GenerationOptions& o,
                                     const GenerationTelemetry& tel, const std::function<void(const std::string&)>& log,
                                     SlotDecoder* slots) {
  check_generation_options(o, dec.context());
  if (!text.defined() || text.dim() != 1 || text.numel() < 1)
    throw_error(ErrorKind::kInvalidArgument, "generation needs a token stream to draw prompts from (the validation "
                                             "text of the checkpoint's data; pass --data with it)");
  c10::InferenceMode inference_mode;
  const torch::Tensor ids = text.to(torch::kCPU, torch::kLong).remainder(dec.vocab());
  if (!o.server_rates.empty() && o.server_lengths == "text")  // its errors before anything is measured
    (void)server_text_spans(ids, o.paragraph_break, 1, o.prompt_len, o.output_len, dec.context(), o.seed);
  GenerationSection g;
  g.decoding = decoding_text(o.sampling);
  g.context = dec.context(), g.vocab = dec.vocab();
  g.tests = token_tests(dec, ids, o, tel, log);
  std::vector<const TokenRateTest*> pp, tg;
  for (const auto& t : g.tests) (t.n_prompt > 0 ? pp : tg).push_back(&t);
  if (!pp.empty()) g.prefill_energy = token_energy("prefill", pp);
  if (!tg.empty()) g.decode_energy = token_energy("decode", tg);
  if (o.sweep && !stop_now(o)) g.decode_sweep = decode_sweep(dec, ids, o, log);
  if (!o.server_rates.empty() && !stop_now(o)) g.server = generation_server(dec, ids, o, tel, log, slots);
  g.execution = dec.execution();  // after the scenarios: graphs are captured on first use
  if (o.depth > 0)
    g.notes.push_back("tests at a depth: the energy window of each test includes its untimed depth prefills");
  if (stop_now(o)) g.notes.push_back("interrupted (Ctrl-C): the scenarios measured so far are kept");
  return g;
}

}  // namespace trainscope

// The server scenario of token generation (src/infer/generate.h): Poisson arrivals, one worker
// serving first come first served with batch 1, each output token timed on the host.
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <chrono>
#include <random>
#include <thread>

#include "infer/generate.h"
#include "train/device.h"
#include "trainscope/inference.h"

namespace trainscope {

namespace {

using Clock = std::chrono::steady_clock;

double since_s(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
bool stop_now(const GenerationOptions& o) { return o.stop_requested && o.stop_requested->load(); }

// One request: prefill, then output_len - 1 steps; each token selected and read back to the host.
void serve(Decoder& dec, const torch::Tensor& prompt, const GenerationOptions& o, at::Generator& gen,
           Clock::time_point t0, RequestTiming& r) {
  dec.reset(1, o.prompt_len + o.output_len);
  auto next = select_tokens(dec.append(prompt), o.sampling, gen);
  (void)next.cpu();  // the token on the host, where a server streams it
  r.token_s.push_back(since_s(t0));
  for (int64_t i = 1; i < o.output_len && !stop_now(o); ++i) {
    next = select_tokens(dec.append(next), o.sampling, gen);
    (void)next.cpu();
    r.token_s.push_back(since_s(t0));
  }
}

// Waits until `arrival` (s after t0) in slices of at most 50 ms; false when stopped or capped.
bool wait_for(double arrival, Clock::time_point t0, const GenerationOptions& o, double cap_s) {
  double now = since_s(t0);
  while (arrival - now > 2e-4) {
    if (stop_now(o) || now >= cap_s) return false;
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(arrival - now - 1e-4, 0.05)));
    now = since_s(t0);
  }
  while (since_s(t0) < arrival) {
  }
  return !stop_now(o) && now < cap_s;
}

GenerationServerRun run_rate(Decoder& dec, const torch::Tensor& text, const GenerationOptions& o, double rate,
                             uint64_t seed, const GenerationTelemetry& tel) {
  const int64_t count = std::min<int64_t>(std::max<int64_t>(o.min_requests, std::llround(rate * o.server_budget_s)), 100000);
  const auto arrivals = poisson_arrivals(rate, count, seed);
  std::vector<RequestTiming> reqs(arrivals.size());
  // Prompts drawn before the clock: each from a seeded offset of the text.
  std::mt19937_64 pick(seed);
  std::vector<torch::Tensor> prompts;
  for (size_t i = 0; i < arrivals.size(); ++i)
    prompts.push_back(text_tokens(text, static_cast<int64_t>(pick() % static_cast<uint64_t>(text.numel())), 1,
                                  o.prompt_len, dec.device()));
  auto gen = at::detail::createCPUGenerator(o.sampling.seed + seed);
  const double cap_s = std::max(5 * o.server_budget_s, GenerationOptions::kServerMinCapS);
  const int64_t tel0 = tel.sampler ? tel.sampler->now_ns() : 0;
  const auto t0 = Clock::now();
  size_t i = 0;
  for (; i < arrivals.size(); ++i) {
    reqs[i].arrival_s = arrivals[i];
    if (!wait_for(arrivals[i], t0, o, cap_s)) break;
    serve(dec, prompts[i], o, gen, t0, reqs[i]);
  }
  for (size_t k = i; k < arrivals.size(); ++k) reqs[k].arrival_s = arrivals[k];
  const int64_t tel1 = tel.sampler ? tel.sampler->now_ns() : 0;
  auto r = generation_server_summary(rate, reqs, o.slo_ttft_ms, o.slo_tpot_ms, o.min_requests);
  r.interrupted = stop_now(o);
  if (i < arrivals.size()) {
    r.stopped_early = true;
    r.stop_reason = r.interrupted ? "interrupted (Ctrl-C)"
                                  : fmt::format("time cap of {:.0f} s reached after {} of {} requests; the figures are "
                                                "over the requests served",
                                                cap_s, i, arrivals.size());
  }
  r.telemetry = window_telemetry(tel, tel0, tel1, r.output_tokens);
  return r;
}

}  // namespace

GenerationServer generation_server(Decoder& dec, const torch::Tensor& text, const GenerationOptions& o,
                                   const GenerationTelemetry& tel, const std::function<void(const std::string&)>& log) {
  GenerationServer s;
  s.worker = "one worker, first come first served, batch 1 (no continuous batching); TTFT includes queueing";
  s.arrivals = fmt::format("Poisson process: exponential inter-arrival times, mt19937_64 seed {} (+ rate index)", o.seed);
  s.lengths = fmt::format("fixed: prompt {} tokens (from the validation text at seeded offsets), output {} tokens",
                          o.prompt_len, o.output_len);
  s.slo_ttft_ms = o.slo_ttft_ms, s.slo_tpot_ms = o.slo_tpot_ms;
  uint64_t seed = o.seed;
  for (double rate : o.server_rates) {
    if (stop_now(o)) break;
    s.runs.push_back(run_rate(dec, text, o, rate, seed++, tel));
    const auto& r = s.runs.back();
    if (log)
      log(fmt::format("server {:g} req/s: TTFT p99 {} ms, TPOT p99 {} ms, goodput {:.2f} req/s", rate,
                      r.ttft.p99_ms ? fmt::format("{:.1f}", *r.ttft.p99_ms) : "—",
                      r.tpot.p99_ms ? fmt::format("{:.2f}", *r.tpot.p99_ms) : "—", r.goodput_per_s.value_or(0)));
  }
  return s;
}

}  // namespace trainscope

// The server scenario of token generation (src/infer/generate.h): Poisson arrivals served by
// one worker, first come first served with batch 1 (here) or by continuous batching
// (server_continuous.cpp), each output token timed on the host.
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <chrono>
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
void serve_one(Decoder& dec, const ServerRequest& q, const GenerationOptions& o, at::Generator& gen,
               const ServerClock& clock, RequestTiming& r, std::vector<int64_t>& tokens, int64_t& steps) {
  dec.reset(1, q.prompt.size(1) + q.output_len);
  auto next = select_tokens(dec.append(q.prompt), o.sampling, gen);
  tokens.push_back(next.cpu().item<int64_t>());  // the token on the host, where a server streams it
  r.token_s.push_back(clock.now_s());
  for (int64_t i = 1; i < q.output_len && !stop_now(o); ++i) {
    next = select_tokens(dec.append(next), o.sampling, gen);
    tokens.push_back(next.cpu().item<int64_t>());
    r.token_s.push_back(clock.now_s());
    ++steps;
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

// Requests of one rate: max(min_requests, rate x budget), at most 100000.
int64_t request_count(const GenerationOptions& o, double rate) {
  return std::min<int64_t>(std::max<int64_t>(o.min_requests, std::llround(rate * o.server_budget_s)), 100000);
}

// The served requests' figures, and how they were served (generation_section.h).
GenerationServerRun summarize_rate(const std::vector<ServerRequest>& reqs, const ServedRequests& done,
                                   const GenerationOptions& o, double rate, bool continuous, double cap_s) {
  auto r = generation_server_summary(rate, done.timing, o.slo_ttft_ms, o.slo_tpot_ms, o.min_requests);
  r.batching = continuous ? "continuous" : "fcfs";
  r.max_batch = continuous ? o.server_max_batch : 1;
  r.decode_steps = done.decode_steps;
  if (done.decode_steps > 0)
    r.mean_running_batch = static_cast<double>(done.decode_rows) / static_cast<double>(done.decode_steps);
  r.lengths = o.server_lengths;
  std::vector<int64_t> prompts, outputs;
  for (const auto& q : reqs) prompts.push_back(q.prompt.size(1)), outputs.push_back(q.output_len);
  r.prompt_lengths = token_lengths(prompts);
  r.output_lengths = token_lengths(outputs);
  r.interrupted = stop_now(o);
  if (done.taken < reqs.size()) {
    r.stopped_early = true;
    r.stop_reason = r.interrupted ? "interrupted (Ctrl-C)"
                                  : fmt::format("time cap of {:.0f} s reached after {} of {} requests; the figures are "
                                                "over the requests served",
                                                cap_s, done.taken, reqs.size());
  }
  return r;
}

GenerationServerRun run_rate(Decoder& dec, SlotDecoder* slots, const torch::Tensor& text, const GenerationOptions& o,
                             double rate, uint64_t seed, const GenerationTelemetry& tel) {
  const auto reqs = server_requests(text, o, rate, request_count(o, rate), seed, dec.device());
  auto gen = at::detail::createCPUGenerator(o.sampling.seed + seed);
  const double cap_s = std::max(5 * o.server_budget_s, GenerationOptions::kServerMinCapS);
  if (slots) slots->reset_slots(o.server_max_batch, o.prompt_len + o.output_len);  // allocated before the clock
  const int64_t tel0 = tel.sampler ? tel.sampler->now_ns() : 0;
  const auto t0 = Clock::now();
  const ServerClock clock{[t0] { return since_s(t0); },
                          [t0, &o, cap_s](double t) { return wait_for(t, t0, o, cap_s); }};
  const ServedRequests done = slots ? serve_continuous(*slots, reqs, o, gen, clock) : serve_fcfs(dec, reqs, o, gen, clock);
  const int64_t tel1 = tel.sampler ? tel.sampler->now_ns() : 0;
  auto r = summarize_rate(reqs, done, o, rate, slots != nullptr, cap_s);
  r.telemetry = window_telemetry(tel, tel0, tel1, r.output_tokens);
  return r;
}

std::string worker_text(const SlotDecoder* slots, const GenerationOptions& o) {
  if (slots)
    return fmt::format("one worker, continuous batching (iteration-level scheduling) of up to {} requests, each "
                       "prefilled alone; slot decoder, {}; TTFT includes queueing",
                       o.server_max_batch, slots->execution());
  std::string why = o.server_batching == "continuous"
                        ? " (continuous batching needs the built-in GPT's slot decoder; this model has none)"
                        : "";
  return "one worker, first come first served, batch 1" + why + "; TTFT includes queueing";
}

std::string lengths_text(const GenerationOptions& o) {
  if (o.server_lengths == "text")
    return fmt::format("from the validation text: each prompt the paragraph before a paragraph boundary (at most {} "
                       "tokens), its output the paragraph after it (at most {} tokens); boundaries drawn with the "
                       "arrivals' seed",
                       o.prompt_len, o.output_len);
  return fmt::format("fixed: prompt {} tokens (from the validation text at seeded offsets), output {} tokens",
                     o.prompt_len, o.output_len);
}

}  // namespace

ServedRequests serve_fcfs(Decoder& dec, const std::vector<ServerRequest>& reqs, const GenerationOptions& o,
                          at::Generator& gen, const ServerClock& clock) {
  ServedRequests s;
  s.timing.resize(reqs.size());
  s.tokens.resize(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) s.timing[i].arrival_s = reqs[i].arrival_s;
  for (; s.taken < reqs.size(); ++s.taken) {
    if (stop_now(o) || !clock.wait_until(reqs[s.taken].arrival_s)) break;
    serve_one(dec, reqs[s.taken], o, gen, clock, s.timing[s.taken], s.tokens[s.taken], s.decode_steps);
  }
  s.decode_rows = s.decode_steps;
  return s;
}

GenerationServer generation_server(Decoder& dec, const torch::Tensor& text, const GenerationOptions& o,
                                   const GenerationTelemetry& tel, const std::function<void(const std::string&)>& log,
                                   SlotDecoder* slots) {
  if (o.server_batching != "continuous") slots = nullptr;
  GenerationServer s;
  s.worker = worker_text(slots, o);
  s.arrivals = fmt::format("Poisson process: exponential inter-arrival times, mt19937_64 seed {} (+ rate index)", o.seed);
  s.lengths = lengths_text(o);
  s.slo_ttft_ms = o.slo_ttft_ms, s.slo_tpot_ms = o.slo_tpot_ms;
  uint64_t seed = o.seed;
  for (double rate : o.server_rates) {
    if (stop_now(o)) break;
    s.runs.push_back(run_rate(dec, slots, text, o, rate, seed++, tel));
    const auto& r = s.runs.back();
    if (log)
      log(fmt::format("server {:g} req/s ({}): TTFT p99 {} ms, TPOT p99 {} ms, goodput {:.2f} req/s, mean batch {}",
                      rate, r.batching, r.ttft.p99_ms ? fmt::format("{:.1f}", *r.ttft.p99_ms) : "—",
                      r.tpot.p99_ms ? fmt::format("{:.2f}", *r.tpot.p99_ms) : "—", r.goodput_per_s.value_or(0),
                      r.mean_running_batch ? fmt::format("{:.2f}", *r.mean_running_batch) : "—"));
  }
  return s;
}

}  // namespace trainscope

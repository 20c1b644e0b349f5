// The arithmetic of the generation section (trainscope/generation_section.h gives every
// definition and its source): llama-bench's mean ± stddev, TPOT, the server run's percentiles,
// throughputs and goodput, energy per token. No clock, no LibTorch.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "trainscope/generation_section.h"
#include "trainscope/stats.h"

namespace trainscope {

std::optional<MeanStddev> mean_stddev(const std::vector<double>& v) {
  if (v.empty()) return std::nullopt;
  MeanStddev m;
  m.mean = *mean(v);
  if (v.size() < 2) return m;
  double ss = 0;
  for (double x : v) ss += (x - m.mean) * (x - m.mean);
  m.stddev = std::sqrt(ss / static_cast<double>(v.size() - 1));  // Bessel's correction, as llama-bench
  return m;
}

void summarize_token_test(TokenRateTest& t) {
  t.repetitions = static_cast<int64_t>(t.samples_ns.size());
  t.samples_tokens_per_s.clear();
  const double tokens = static_cast<double>(t.batch * (t.n_prompt + t.n_gen));
  for (double ns : t.samples_ns) t.samples_tokens_per_s.push_back(ns > 0 ? tokens * 1e9 / ns : 0.0);
  auto ns = mean_stddev(t.samples_ns);
  auto ts = mean_stddev(t.samples_tokens_per_s);
  t.avg_ns = ns ? OptD(ns->mean) : std::nullopt;
  t.stddev_ns = ns ? OptD(ns->stddev) : std::nullopt;
  t.tokens_per_s_mean = ts ? OptD(ts->mean) : std::nullopt;
  t.tokens_per_s_stddev = ts ? OptD(ts->stddev) : std::nullopt;
}

OptD time_per_output_token_ms(double e2e_ms, double ttft_ms, int64_t output_tokens) {
  if (output_tokens < 2) return std::nullopt;
  return (e2e_ms - ttft_ms) / static_cast<double>(output_tokens - 1);
}

TokenLengths token_lengths(const std::vector<int64_t>& lengths) {
  TokenLengths t;
  if (lengths.empty()) return t;
  std::vector<double> sorted(lengths.begin(), lengths.end());
  std::sort(sorted.begin(), sorted.end());
  t.mean = mean(sorted);
  t.p50 = percentile_sorted(sorted, 50);
  t.p99 = percentile_sorted(sorted, 99);
  t.min = static_cast<int64_t>(sorted.front());
  t.max = static_cast<int64_t>(sorted.back());
  return t;
}

LatencyFields latency_percentiles(const std::vector<double>& values_ms, int64_t min_count) {
  LatencyFields s;
  min_count = std::max<int64_t>(min_count, 1);
  s.queries = static_cast<int64_t>(values_ms.size());
  if (s.queries < min_count) {
    s.too_few_queries = true;
    s.too_few_reason = fmt::format("only {} timed queries, fewer than the minimum of {}: percentiles (p99 above all) "
                                   "are unreliable",
                                   s.queries, min_count);
  }
  if (values_ms.empty()) return s;
  std::vector<double> sorted = values_ms;
  std::sort(sorted.begin(), sorted.end());
  s.p50_ms = percentile_sorted(sorted, 50);
  s.p90_ms = percentile_sorted(sorted, 90);
  s.p99_ms = percentile_sorted(sorted, 99);
  s.max_ms = sorted.back();
  s.mean_ms = mean(sorted);
  return s;
}

namespace {

// Per-request latencies of the served requests, and the SLO verdicts.
struct ServedFigures {
  std::vector<double> ttft, tpot, itl, e2e;
  int64_t good = 0, tokens = 0;
  double last_done_s = 0;
};

ServedFigures served_figures(const std::vector<RequestTiming>& requests, double slo_ttft_ms, double slo_tpot_ms) {
  ServedFigures f;
  for (const auto& r : requests) {
    if (r.token_s.empty()) continue;  // not served
    const double ttft = (r.token_s.front() - r.arrival_s) * 1e3, e2e = (r.token_s.back() - r.arrival_s) * 1e3;
    const auto n = static_cast<int64_t>(r.token_s.size());
    const OptD tpot = time_per_output_token_ms(e2e, ttft, n);
    f.ttft.push_back(ttft);
    f.e2e.push_back(e2e);
    if (tpot) f.tpot.push_back(*tpot);
    for (size_t i = 1; i < r.token_s.size(); ++i) f.itl.push_back((r.token_s[i] - r.token_s[i - 1]) * 1e3);
    if (ttft <= slo_ttft_ms && (!tpot || *tpot <= slo_tpot_ms)) ++f.good;
    f.tokens += n;
    f.last_done_s = std::max(f.last_done_s, r.token_s.back());
  }
  return f;
}

}  // namespace

GenerationServerRun generation_server_summary(double rate_per_s, const std::vector<RequestTiming>& requests,
                                              double slo_ttft_ms, double slo_tpot_ms, int64_t min_requests) {
  const ServedFigures f = served_figures(requests, slo_ttft_ms, slo_tpot_ms);
  GenerationServerRun r;
  r.rate_per_s = rate_per_s;
  r.requests_issued = static_cast<int64_t>(requests.size());
  r.requests_served = static_cast<int64_t>(f.e2e.size());
  r.good_requests = f.good;
  r.output_tokens = f.tokens;
  r.ttft = latency_percentiles(f.ttft, min_requests);
  r.tpot = latency_percentiles(f.tpot, min_requests);
  r.itl = latency_percentiles(f.itl, min_requests);
  r.e2e = latency_percentiles(f.e2e, min_requests);
  if (r.requests_served > 0 && f.last_done_s > 0) {
    r.duration_s = f.last_done_s;
    r.request_throughput_per_s = static_cast<double>(r.requests_served) / f.last_done_s;
    r.output_tokens_per_s = static_cast<double>(f.tokens) / f.last_done_s;
    r.goodput_per_s = static_cast<double>(f.good) / f.last_done_s;
    r.slo_attainment_pct = 100.0 * static_cast<double>(f.good) / static_cast<double>(r.requests_served);
  }
  return r;
}

TokenEnergy token_energy(const std::string& phase, const std::vector<const TokenRateTest*>& tests) {
  TokenEnergy e;
  e.phase = phase;
  if (tests.empty()) {
    e.absent_reason = fmt::format("no {} test was measured", phase);
    return e;
  }
  double joules = 0, tokens = 0, window = 0;
  bool short_window = false;
  for (const auto* t : tests) {
    if (!t->telemetry || !t->telemetry->energy_j) {
      e.absent_reason = t->telemetry && !t->telemetry->absent_reason.empty()
                            ? t->telemetry->absent_reason
                            : fmt::format("test {} has no energy reading", t->test);
      return e;
    }
    joules += *t->telemetry->energy_j;
    tokens += static_cast<double>(t->batch * (t->n_prompt + t->n_gen) * t->repetitions);
    window += t->telemetry->window_s.value_or(0);
    short_window = short_window || t->telemetry->short_window.value_or(false);
    if (e.energy_method.empty()) e.energy_method = t->telemetry->energy_method;
  }
  e.energy_j = joules, e.tokens = tokens, e.window_s = window, e.short_window = short_window;
  if (tokens > 0) e.joules_per_token = joules / tokens;
  if (joules > 0) e.tokens_per_j = tokens / joules;
  return e;
}

}  // namespace trainscope

// Pure arithmetic of the inference scenarios (no LibTorch, no clock): percentile summaries,
// the Poisson arrival process and the server summary.
#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "trainscope/error.h"
#include "trainscope/inference.h"
#include "trainscope/stats.h"

namespace trainscope {

LatencySummary summarize_latencies(const std::vector<double>& latencies_ms, int64_t min_queries) {
  LatencySummary s = latency_percentiles(latencies_ms, min_queries);  // trainscope/generation_section.h
  if (s.too_few_queries)
    s.too_few_reason += "; raise the time budget (infer --budget; run: [inference] single_stream_budget_s / "
                        "server_budget_s) or lower the minimum";
  return s;
}

std::vector<double> poisson_arrivals(double qps, int64_t count, uint64_t seed) {
  if (!(qps > 0)) throw_error(ErrorKind::kInvalidArgument, fmt::format("server rate {} qps: must be > 0", qps));
  if (count < 0) throw_error(ErrorKind::kInvalidArgument, fmt::format("server query count {}: must be >= 0", count));
  std::mt19937_64 gen(seed);
  std::exponential_distribution<double> gap(qps);  // mean 1/qps seconds
  std::vector<double> t(static_cast<size_t>(count));
  double now = 0;
  for (auto& v : t) v = now += gap(gen);
  return t;
}

ServerRun server_summary(double qps, const std::vector<double>& arrival_s, const std::vector<double>& done_s,
                         double target_p99_ms, int64_t min_queries) {
  TS_CHECK(arrival_s.size() == done_s.size(), "server_summary: one completion time per arrival");
  std::vector<double> lat;
  lat.reserve(arrival_s.size());
  double last_arrival = 0;
  for (size_t i = 0; i < arrival_s.size(); ++i) {
    if (done_s[i] < 0) continue;  // not served (run stopped early)
    lat.push_back((done_s[i] - arrival_s[i]) * 1e3);
    last_arrival = std::max(last_arrival, arrival_s[i]);
  }
  auto s = summarize_latencies(lat, min_queries);
  ServerRun j;
  j.latency = s;
  j.qps = qps;
  j.target_p99_ms = target_p99_ms;
  if (last_arrival > 0) j.achieved_qps = static_cast<double>(lat.size()) / last_arrival;
  j.queries_issued = static_cast<int64_t>(arrival_s.size());
  j.meets_target = !s.too_few_queries && s.p99_ms && *s.p99_ms <= target_p99_ms;
  return j;
}

}  // namespace trainscope

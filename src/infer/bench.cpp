#include "infer/bench.h"

#include <c10/core/InferenceMode.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "infer/executor.h"
#include "infer/generate.h"  // window_telemetry
#include "train/compat.h"
#include "trainscope/error.h"
#include "trainscope/stats.h"

namespace trainscope {

namespace {

using Clock = std::chrono::steady_clock;

double since_s(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Power and energy of `tdev` over [t0_ns, t1_ns] from the sampler, or the reason they are absent.
ScenarioTelemetry telemetry_section(const TelemetrySampler* sampler, const std::string& tdev, int64_t t0_ns,
                                    int64_t t1_ns, int64_t samples) {
  return window_telemetry(GenerationTelemetry{sampler, tdev}, t0_ns, t1_ns, samples);
}

// The rows [first, first + n) of the pool, wrapping around; a view when they are contiguous.
torch::Tensor pool_rows(InferenceExecutor& ex, const torch::Tensor& pool, int64_t first, int64_t n) {
  int64_t size = pool.size(0);
  first %= size;
  if (first + n <= size) return pool.narrow(0, first, n);
  auto idx = torch::arange(first, first + n, torch::kLong).remainder(size);
  return ex.prepare(pool.index_select(0, idx));
}

std::optional<SplitPart> split_part(const std::vector<double>& v) {
  if (v.empty()) return std::nullopt;
  auto s = summarize_latencies(v, 1);
  return SplitPart{s.p50_ms, s.p99_ms, s.mean_ms};
}

// Checked between queries: also the scenarios' sign of progress (InferenceOptions::on_progress).
bool stop_now(const InferenceOptions& opt) {
  if (opt.on_progress) opt.on_progress();
  return opt.stop_requested && opt.stop_requested->load();
}

struct Env {
  InferenceExecutor& ex;
  const torch::Tensor& pool;
  const InferenceOptions& opt;
  const TelemetrySampler* sampler;
  const std::string& tdev;
};

SingleStreamResult single_stream(Env& e) {
  const auto& opt = e.opt;
  for (int64_t i = 0; i < opt.warmup_queries; ++i) e.ex.run(e.pool.narrow(0, i % e.pool.size(0), 1));
  std::vector<double> e2e, h2d, compute, d2h;
  const double hard_stop_s = 5 * opt.single_stream_budget_s;
  int64_t tel0 = e.sampler ? e.sampler->now_ns() : 0;
  auto t0 = Clock::now();
  for (int64_t i = 0;; ++i) {
    double el = since_s(t0);
    bool budget_spent = el >= opt.single_stream_budget_s;
    if ((budget_spent && i >= opt.min_queries) || el >= hard_stop_s || i >= 10'000'000) break;
    if (stop_now(opt)) break;
    auto q = e.ex.run(e.pool.narrow(0, i % e.pool.size(0), 1));
    e2e.push_back(q.e2e_ms);
    if (q.h2d_ms) h2d.push_back(*q.h2d_ms);
    if (q.d2h_ms) d2h.push_back(*q.d2h_ms);
    if (q.h2d_ms && q.compute_ms) compute.push_back(*q.compute_ms);
  }
  double wall = since_s(t0);
  int64_t tel1 = e.sampler ? e.sampler->now_ns() : 0;
  SingleStreamResult j;
  j.latency = summarize_latencies(e2e, opt.min_queries);
  j.warmup_queries = opt.warmup_queries;
  j.budget_s = opt.single_stream_budget_s;
  j.wall_s = wall;
  j.interrupted = stop_now(opt);
  if (!h2d.empty())
    j.split = LatencySplit{split_part(h2d), split_part(compute), split_part(d2h),
                           "CUDA events on the compute stream around each copy and the forward"};
  j.telemetry = telemetry_section(e.sampler, e.tdev, tel0, tel1, static_cast<int64_t>(e2e.size()));
  return j;
}

OfflineBatch offline_one(Env& e, int64_t b) {
  const auto& opt = e.opt;
  int64_t n = e.pool.size(0);
  torch::Tensor big;  // a batch larger than the pool: the pool repeated, prepared once
  if (b > n) big = e.ex.prepare(e.pool.repeat({(b + n - 1) / n, 1, 1, 1}).narrow(0, 0, b).contiguous());
  auto batch = [&](int64_t k) { return b > n ? big : e.pool.narrow(0, (k * b) % (n - b + 1), b); };
  for (int64_t k = 0; k < 2; ++k) e.ex.enqueue(batch(k));
  e.ex.drain();
  int64_t tel0 = e.sampler ? e.sampler->now_ns() : 0;
  auto t0 = Clock::now();
  int64_t k = 0;
  while ((k < 3 || since_s(t0) < opt.offline_budget_s) && !(k > 0 && stop_now(opt))) e.ex.enqueue(batch(k++));
  e.ex.drain();
  double wall = since_s(t0);
  int64_t tel1 = e.sampler ? e.sampler->now_ns() : 0;
  OfflineBatch r;
  r.batch_size = b;
  r.samples_per_s = static_cast<double>(k * b) / wall;
  r.batches = k;
  r.samples = k * b;
  r.wall_s = wall;
  r.telemetry = telemetry_section(e.sampler, e.tdev, tel0, tel1, k * b);
  return r;
}

OfflineResult offline(Env& e) {
  OfflineResult out;
  out.budget_s_per_batch = e.opt.offline_budget_s;
  for (int64_t b : e.opt.offline_batch_sizes) {
    if (stop_now(e.opt)) break;  // the batch sizes measured so far are kept
    try {
      auto r = offline_one(e, b);
      if (!out.best_samples_per_s || *r.samples_per_s > *out.best_samples_per_s)
        out.best_samples_per_s = r.samples_per_s, out.best_batch_size = b;
      out.per_batch.push_back(r);
    } catch (const c10::Error& err) {
      if (!compat::is_out_of_memory(err)) throw;
      e.ex.drain();
      OfflineBatch failed;
      failed.batch_size = b;
      failed.error_kind = "out_of_memory";
      failed.error = fmt::format("out of memory at batch size {}", b);
      out.per_batch.push_back(failed);
    }
  }
  out.interrupted = stop_now(e.opt);
  return out;
}

// One server run at `qps`: a single worker serves queries in arrival order, up to max_batch
// already-arrived queries at a time. Stops early once the p99 target can no longer be met.
ServerRun server_at(Env& e, double qps, uint64_t seed) {
  const auto& opt = e.opt;
  int64_t count = std::max<int64_t>(opt.min_queries, std::llround(qps * opt.server_budget_s));
  count = std::min<int64_t>(count, 1'000'000);
  auto arrivals = poisson_arrivals(qps, count, seed);
  std::vector<double> done(arrivals.size(), -1.0);
  const double target_s = opt.server_target_p99_ms * 1e-3;
  // With type-7 interpolation p99 exceeds the target once more than 0.01 n + 2 latencies do.
  const int64_t late_limit = static_cast<int64_t>(0.01 * static_cast<double>(count)) + 2;
  int64_t late = 0;
  bool stopped_early = false;
  const double cap_s = std::max(5 * opt.server_budget_s, InferenceOptions::kServerMinCapS);
  bool capped = false, interrupted = false;
  int64_t tel0 = e.sampler ? e.sampler->now_ns() : 0;
  auto t0 = Clock::now();
  size_t i = 0;
  auto must_stop = [&](double now) {  // Ctrl-C or the per-rate time cap; records which
    interrupted = interrupted || stop_now(opt);
    capped = capped || now >= cap_s;
    return interrupted || capped;
  };
  while (i < arrivals.size()) {
    double now = since_s(t0);
    // Wait for the next arrival in slices of at most 50 ms, so Ctrl-C and the time cap are seen.
    while (arrivals[i] - now > 2e-4 && !must_stop(now)) {
      std::this_thread::sleep_for(std::chrono::duration<double>(std::min(arrivals[i] - now - 1e-4, 0.05)));
      now = since_s(t0);
    }
    if (must_stop(now)) break;
    while ((now = since_s(t0)) < arrivals[i]) {
    }
    size_t k = i + 1;
    while (k < arrivals.size() && static_cast<int64_t>(k - i) < opt.server_max_batch && arrivals[k] <= now) ++k;
    e.ex.run(pool_rows(e.ex, e.pool, static_cast<int64_t>(i), static_cast<int64_t>(k - i)));
    double fin = since_s(t0);
    for (size_t q = i; q < k; ++q) {
      done[q] = fin;
      if (fin - arrivals[q] > target_s) ++late;
    }
    i = k;
    if (late > late_limit) {
      stopped_early = i < arrivals.size();
      break;
    }
  }
  int64_t tel1 = e.sampler ? e.sampler->now_ns() : 0;
  ServerRun j = server_summary(qps, arrivals, done, opt.server_target_p99_ms, opt.min_queries);
  if (late > late_limit) {
    j.meets_target = false;
    if (stopped_early) {
      j.stopped_early = true;
      j.stop_reason = fmt::format("more than {} of {} queries already exceeded the p99 target: it cannot be met; "
                                     "percentiles are over the queries served",
                                     late_limit, count);
      j.latency.too_few_queries = false;  // the verdict does not depend on the count
      j.latency.too_few_reason.clear();
    }
  }
  j.served = static_cast<int64_t>(i);
  if (capped) {
    j.stopped_early = true;
    j.stop_reason = fmt::format("time cap of {:.0f} s reached after {} of {} queries (at {} qps, {} queries take "
                                   "{:.0f} s); percentiles are over the queries served",
                                   cap_s, i, count, qps, count, static_cast<double>(count) / qps);
  }
  j.interrupted = interrupted;
  j.telemetry = telemetry_section(e.sampler, e.tdev, tel0, tel1, static_cast<int64_t>(i));
  return j;
}

// Bisection over the rate for the highest one meeting the p99 target. Upper bracket from the
// service time: one worker cannot keep up with more than max_batch / service time queries per
// second. `probe` runs one rate and says whether it met the target.
MaxQpsSearch find_max_qps(Env& e, std::optional<double> mean_service_ms, const std::function<bool(double)>& probe,
                          const bool& interrupted) {
  const auto& opt = e.opt;
  if (!mean_service_ms) {
    std::vector<double> v;
    for (int64_t i = 0; i < 50; ++i) v.push_back(e.ex.run(e.pool.narrow(0, i % e.pool.size(0), 1)).e2e_ms);
    mean_service_ms = mean(v);
  }
  double cap = 1e3 / std::max(*mean_service_ms, 1e-3) * static_cast<double>(opt.server_max_batch);
  // Start near the capacity: a low rate needs min_queries / rate seconds to measure.
  double lo = 0.5 * cap, hi = 1.5 * cap;
  bool lo_ok = probe(lo);
  bool hi_known_failing = !lo_ok;
  for (int t = 0; t < 4 && !lo_ok; ++t) hi = lo, lo_ok = probe(lo /= 2);
  MaxQpsSearch search;
  search.method = "bisection over the rate; stop when hi/lo < 1.05 or after 8 probes";
  search.initial_upper_qps = hi;
  if (!lo_ok) {
    search.absent_reason = fmt::format("even {:.2f} qps misses the p99 target of {} ms: the service time alone is "
                                       "too long; raise --target-p99-ms",
                                       lo, opt.server_target_p99_ms);
  } else {
    while (!hi_known_failing && probe(hi) && hi < 64 * cap) lo = hi, hi *= 2;  // batching can beat the estimate
    for (int t = 0; t < 8 && hi / lo > 1.05; ++t) {
      double mid = std::sqrt(lo * hi);  // geometric midpoint: rates span orders of magnitude
      (probe(mid) ? lo : hi) = mid;
    }
    search.max_qps_meeting_target = lo;
    search.first_failing_qps = hi;
  }
  if (interrupted) {
    search.max_qps_meeting_target.reset();
    search.absent_reason = "interrupted (Ctrl-C) before the search finished";
  }
  return search;
}

ServerResult server(Env& e, std::optional<double> mean_service_ms, const std::function<void(const std::string&)>& log) {
  const auto& opt = e.opt;
  ServerResult out;
  out.target_p99_ms = opt.server_target_p99_ms;
  out.max_batch = opt.server_max_batch;
  out.budget_s_per_rate = opt.server_budget_s;
  out.worker = "one worker, first come first served; latency = result on host - arrival (queueing included)";
  out.arrivals = fmt::format("Poisson process: exponential inter-arrival times, mt19937_64 seed {}", opt.seed);
  for (int64_t i = 0; i < opt.warmup_queries; ++i) e.ex.run(e.pool.narrow(0, i % e.pool.size(0), 1));
  uint64_t seed = opt.seed;
  std::function<bool(double)> probe = [&](double qps) {
    if (stop_now(opt)) {  // Ctrl-C: no further rates; the search reports what it has
      out.interrupted = true;
      return false;
    }
    ServerRun r = server_at(e, qps, seed++);
    out.interrupted = out.interrupted || r.interrupted;
    if (log)
      log(fmt::format("server {:.1f} qps: p99 {} ms, {}", qps,
                      r.latency.p99_ms ? fmt::format("{:.3f}", *r.latency.p99_ms) : "—",
                      r.meets_target ? "meets target" : "misses target"));
    out.runs.push_back(r);
    return r.meets_target;
  };
  if (opt.server_qps > 0) {
    out.qps = opt.server_qps;
    out.meets_target = probe(opt.server_qps);
    if (!out.runs.empty() && out.runs.back().interrupted) out.meets_target.reset();
  }
  if (opt.find_max_qps) {
    out.find_max_qps = find_max_qps(e, mean_service_ms, probe, out.interrupted);
    out.max_qps_meeting_target = out.find_max_qps->max_qps_meeting_target;
  }
  return out;
}

}  // namespace

InferenceOptions inference_options(const InferenceConfig& cfg, uint64_t seed) {
  InferenceOptions o;
  o.single_stream_budget_s = cfg.single_stream_budget_s;
  o.min_queries = cfg.min_queries;
  o.offline_batch_sizes = cfg.offline_batch_sizes;
  o.offline_budget_s = cfg.offline_budget_s;
  o.server = cfg.server_qps > 0;
  o.server_qps = cfg.server_qps;
  o.server_target_p99_ms = cfg.server_target_p99_ms;
  o.server_budget_s = cfg.server_budget_s;
  o.seed = seed;
  return o;
}

InferenceSection measure_inference(Model& model, const torch::Device& device, const torch::Tensor& samples,
                       const InferenceOptions& opt, const TelemetrySampler* sampler, const std::string& tdev,
                       const std::function<void(const std::string&)>& log) {
  if (!samples.defined() || samples.dim() != 4 || samples.size(0) < 1)
    throw_error(ErrorKind::kInvalidArgument, "inference needs at least one sample of shape C x H x W");
  for (int64_t b : opt.offline_batch_sizes)
    if (b < 1) throw_error(ErrorKind::kInvalidArgument, fmt::format("offline batch size {}: must be >= 1", b));
  if (opt.server_max_batch < 1) throw_error(ErrorKind::kInvalidArgument, "server max batch must be >= 1");
  c10::InferenceMode inference_mode;  // no autograd records, no version counters
  model.set_training(false);
  auto ex = make_inference_executor(model, device, ExecutorOptions{opt.cuda_graphs});
  torch::Tensor pool = ex->prepare(samples.to(torch::kCPU, torch::kFloat));
  InferenceSection j;
  j.device = device.str();
  j.intra_op_threads = at::get_num_threads();
  j.inter_op_threads = at::get_num_interop_threads();
  j.grad_mode = "inference_mode";
  j.eval_mode = true;
  j.samples_in_pool = pool.size(0);
  j.timer = ex->timer();
  j.execution = ex->execution();  // set again after the scenarios: CUDA graphs are captured on first use
  j.percentile_method = "exact, linear interpolation between closest ranks (Hyndman-Fan type 7)";
  if (device.is_cpu()) j.notes.push_back("CPU: no host-device copies; latency is the forward call (steady clock)");
  Env env{*ex, pool, opt, sampler, tdev};
  if (opt.single_stream) {
    j.single_stream = single_stream(env);
    const auto& l = j.single_stream->latency;
    if (log) log(fmt::format("single-stream: {} queries, p50 {:.3f} ms, p99 {:.3f} ms", l.queries, l.p50_ms.value_or(0),
                             l.p99_ms.value_or(0)));
  }
  if (opt.offline) {
    j.offline = offline(env);
    if (log && j.offline->best_samples_per_s)
      log(fmt::format("offline: best {:.0f} samples/s at batch {}", *j.offline->best_samples_per_s,
                      j.offline->best_batch_size.value_or(0)));
  }
  if (opt.server || opt.find_max_qps) {
    if (!(opt.server_target_p99_ms > 0))
      throw_error(ErrorKind::kInvalidArgument, "the server p99 target must be > 0 ms");
    if (opt.server && !(opt.server_qps > 0))
      throw_error(ErrorKind::kInvalidArgument,
                  "the server scenario needs a rate: pass --qps N (queries per second) or --find-max-qps");
    j.server = server(env, j.single_stream ? j.single_stream->latency.mean_ms : std::nullopt, log);
  }
  j.execution = ex->execution();
  return j;
}

InferenceSection inference_after_training(Model& model, const torch::Device& device, const torch::Tensor& test_x,
                              const InferenceConfig& cfg, uint64_t seed, const TelemetrySampler* sampler,
                              const std::string& tdev, const std::atomic<bool>* stop_requested, bool cuda_graphs,
                              std::function<void()> on_progress) {
  try {
    auto pool = test_x.narrow(0, 0, std::min<int64_t>(test_x.size(0), kPoolSamples));
    auto opt = inference_options(cfg, seed);
    opt.stop_requested = stop_requested;
    opt.cuda_graphs = cuda_graphs;
    opt.on_progress = std::move(on_progress);
    return measure_inference(model, device, pool, opt, sampler, tdev);
  } catch (const Error& e) {
    InferenceSection failed;
    failed.error_kind = to_string(e.kind());
    failed.error = e.what();
    return failed;
  } catch (const c10::Error& e) {
    InferenceSection failed;
    failed.error_kind = compat::is_out_of_memory(e) ? "out_of_memory" : "libtorch";
    failed.error = e.what_without_backtrace();
    return failed;
  }
}

}  // namespace trainscope

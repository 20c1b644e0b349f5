// Advice rules (trainscope/report.h Advice): a table of rules, each a small function that reads
// the analysis (cells, comparisons, GPU balance) and cites the measurement that fired it.
// Thresholds: AdviceThresholds (docs/report.md#advice-rules gives their sources).
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <cmath>

#include "report/cpu_contention.h"
#include "report/report_util.h"
#include "trainscope/variants.h"
#include "trainscope/report.h"

namespace trainscope {

using namespace report_detail;

namespace {

std::string pct(double v) { return fmt_num(v) + " %"; }

std::string where(const Analysis& a, const Cell& c) {
  return fmt::format("`{}` batch {} on {}", c.model, c.batch_size, where_label(a, c));
}

bool data_bound(const Cell& c, const AdviceThresholds& t) {
  return c.data_share_pct.ok() && c.data_share_pct.median >= t.data_share_pct;
}

void add(Analysis& a, std::string rule, const Cell* c, std::string advice, std::string evidence) {
  Advice x;
  x.rule = std::move(rule);
  if (c) {
    x.device = c->device;
    x.model = c->model;
    x.batch_size = c->batch_size;
  }
  x.advice = std::move(advice);
  x.evidence = std::move(evidence);
  a.advice.push_back(std::move(x));
}

void low_utilisation(const Cell& c, const AdviceThresholds& t, Analysis& a) {
  if (!is_gpu(c.device)) return;
  bool low_u = c.gpu_util_pct_mean.ok() && c.gpu_util_pct_mean.median < t.low_gpu_util_pct;
  bool low_sm = c.sm_activity_pct_mean.ok() && c.sm_activity_pct_mean.median < t.low_sm_activity_pct;
  if (!low_u && !low_sm) return;
  std::string ev = fmt::format("{}: mean GPU utilisation {} (threshold {} %), mean SM activity {} (threshold {} %)",
                               where(a, c), c.gpu_util_pct_mean.ok() ? pct(c.gpu_util_pct_mean.median) : "not measured",
                               fmt_num(t.low_gpu_util_pct),
                               c.sm_activity_pct_mean.ok() ? pct(c.sm_activity_pct_mean.median) : "not measured",
                               fmt_num(t.low_sm_activity_pct));
  if (c.data_share_pct.ok()) ev += fmt::format("; data loading {} of the step", pct(c.data_share_pct.median));
  add(a, "low_utilisation", &c,
      data_bound(c, t) ? "The GPU waits for data: data loading is the bottleneck. Prepare batches ahead (more loader "
                         "threads, prefetching, data decoded once and kept in memory) before raising the batch size."
                       : "The GPU is under-used: raise the batch size (see the batch_size advice) or use a "
                         "larger model per step; small kernels leave SMs idle.",
      ev);
}

void h2d_copies(const Cell& c, const AdviceThresholds& t, Analysis& a) {
  if (!is_gpu(c.device) || !c.h2d_share_pct.ok() || c.h2d_share_pct.median < t.h2d_share_pct) return;
  add(a, "h2d_copies", &c,
      "Host-to-device copies take a large share of each step: use pinned (page-locked) host memory with "
      "non-blocking copies, prefetch the next batch while this one computes, or keep the whole data set on "
      "the device when it fits.",
      fmt::format("{}: host-to-device copy {} of the step (rec.phases h2d_ms / step_ms; threshold {} %)", where(a, c),
                  pct(c.h2d_share_pct.median), fmt_num(t.h2d_share_pct)));
}

// Where a batch-size series is: "`cnn` on cuda:0" (with its host when several hosts ran).
std::string series_where(const Analysis& a, const BatchScaling& s) {
  return a.multi_host ? fmt::format("`{}` on {} ({})", s.model, s.device, s.host) : fmt::format("`{}` on {}", s.model, s.device);
}

std::string series_numbers(const BatchScaling& s) {
  std::string v;
  for (size_t i = 0; i < s.batch_sizes.size(); ++i)
    v += fmt::format("{}b{} {}", i ? ", " : "", s.batch_sizes[i], s.samples_per_s[i] ? fmt_num(*s.samples_per_s[i]) : "failed");
  return "samples/s " + v;
}

// A larger measured batch trained clearly faster: recommend the saturation point (the smallest
// batch within batch_gain_pct of the best), from measured throughput, never from memory alone.
void batch_size(const ReportInput&, const AdviceThresholds& t, Analysis& a) {
  for (const auto& s : a.batch_scaling) {
    if (!s.saturation_batch || !s.samples_per_s.front() || *s.saturation_batch == s.batch_sizes.front()) continue;
    size_t i = std::find(s.batch_sizes.begin(), s.batch_sizes.end(), *s.saturation_batch) - s.batch_sizes.begin();
    const double gain = (*s.samples_per_s[i] / *s.samples_per_s.front() - 1) * 100;
    if (gain < t.batch_gain_pct) continue;
    const Cell* c = find_cell(a.cells, s.device, s.model, *s.saturation_batch, s.host);
    std::string acc_cost = s.test_accuracy_pct.front() && s.test_accuracy_pct[i]
                               ? fmt::format("test accuracy {} at b{} vs {} at b{} (measured)", pct(*s.test_accuracy_pct[i]),
                                             *s.saturation_batch, pct(*s.test_accuracy_pct.front()), s.batch_sizes.front())
                               : "accuracy at the larger batch not measured";
    add(a, "batch_size", c,
        "Train at the saturation batch (the smallest measured batch within the gain threshold of the fastest): "
        "larger batches stopped paying beyond it. Its cost: a larger batch takes fewer, larger steps, so re-tune the "
        "learning rate (the linear scaling rule with a warm-up, Goyal et al. 2017, arXiv 1706.02677, is the usual "
        "start) and check the test accuracy before adopting it.",
        fmt::format("{}: b{} trains {} % faster than b{} ({}); {}{}", series_where(a, s), *s.saturation_batch,
                    fmt_num(gain), s.batch_sizes.front(), series_numbers(s), acc_cost,
                    s.stop_reason.empty() ? "" : "; beyond it " + s.stop_reason));
  }
}

// One batch size measured on a GPU that used little of its memory: measure, do not extrapolate.
void batch_sweep(const Cell& c, const AdviceThresholds& t, Analysis& a) {
  if (!is_gpu(c.device) || !c.device_memory_total_bytes || !c.device_peak_reserved_bytes.ok()) return;
  for (const auto& s : a.batch_scaling)
    if (s.host == c.host && s.device == c.device && s.model == c.model) return;  // several batch sizes ran
  const double total = static_cast<double>(*c.device_memory_total_bytes);
  const double used_pct = 100.0 * c.device_peak_reserved_bytes.median / total;
  if (used_pct >= t.memory_headroom_pct) return;
  add(a, "batch_sweep", &c,
      "Only one batch size ran and the GPU kept most of its memory free: measure the throughput at several batch "
      "sizes (`trainscope run --batch-sizes auto` doubles the batch until throughput stops rising) before changing "
      "it; free memory alone does not say that a larger batch trains faster, and a larger batch needs the learning "
      "rate re-tuned.",
      fmt::format("{}: peak reserved {} of {} device memory ({} < {} %), one batch size measured", where(a, c),
                  fmt_bytes(c.device_peak_reserved_bytes.median), fmt_bytes(total), pct(used_pct),
                  fmt_num(t.memory_headroom_pct)));
}

std::string throttle_reasons(uint64_t mask) {
  // NVML nvmlClocksEventReason* bits (nvml.h): only those that mean "slowed down".
  static const std::pair<uint64_t, const char*> kBits[] = {{0x4, "software power cap"},
                                                           {0x8, "hardware slowdown"},
                                                           {0x20, "software thermal slowdown"},
                                                           {0x40, "hardware thermal slowdown"},
                                                           {0x80, "hardware power brake"}};
  std::string s;
  for (auto [bit, name] : kBits)
    if (mask & bit) s += (s.empty() ? "" : ", ") + std::string(name);
  return s;
}

void throttling(const Cell& c, const AdviceThresholds&, Analysis& a) {
  if (!is_gpu(c.device) || !c.clocks_event_reasons_mask) return;
  std::string why = throttle_reasons(*c.clocks_event_reasons_mask);
  if (why.empty()) return;
  add(a, "throttling", &c,
      "The GPU slowed its clocks during the run, so these numbers are below what it can do: check cooling, air flow "
      "and the power limit (nvidia-smi -q -d PERFORMANCE,POWER), then measure again.",
      fmt::format("{}: NVML clocks event reasons 0x{:x} ({}) seen during the run", where(a, c), *c.clocks_event_reasons_mask,
                  why));
}

// On a GPU only when low_utilisation did not already say that the GPU waits for data.
void data_loading(const Cell& c, const AdviceThresholds& t, Analysis& a) {
  if (!data_bound(c, t)) return;
  const bool gpu = is_gpu(c.device);
  if (gpu && std::any_of(a.advice.begin(), a.advice.end(), [&](const Advice& x) {
        return x.rule == "low_utilisation" && x.device == c.device && x.model == c.model && x.batch_size == c.batch_size;
      }))
    return;
  add(a, "data_loading", &c,
      gpu ? "Data loading is a large part of each step: prepare batches ahead (loader threads, prefetching, data "
            "kept on the device)."
          : "Data loading is a large part of each step: prepare batches ahead (loader threads, prefetching, data "
            "decoded once and kept in memory).",
      fmt::format("{}: data loading {} of the step (threshold {} %)", where(a, c), pct(c.data_share_pct.median),
                  fmt_num(t.data_share_pct)));
}

// The fastest measured cell of one device, model (any variant: "mlp", "mlp [graphs]", ...),
// batch size and host; nullptr when none measured samples/s.
const Cell* fastest_variant(const Analysis& a, const std::string& device, const std::string& model, int64_t batch,
                            const std::string& host) {
  const Cell* best = nullptr;
  for (const auto& c : a.cells) {
    if (c.device != device || c.batch_size != batch || c.host != host || !c.samples_per_s.ok()) continue;
    if (split_model_variant(c.model).first != model) continue;
    if (!best || c.samples_per_s.median > best->samples_per_s.median) best = &c;
  }
  return best;
}

// "Train on the CPU" rests on the best variant measured on each side (docs/report.md#advice-rules):
// a GPU whose whole-step CUDA graph beats the CPU's best does not get this advice from its eager
// cell, and a GPU measured in eager alone gets it qualified as resting on eager.
void cpu_faster(const ReportInput&, const AdviceThresholds&, Analysis& a) {
  std::set<std::string> said;  // one verdict per (GPU, model, batch, hosts)
  for (const auto& d : a.device_comparisons) {
    if (!d.speedup || *d.speedup >= 1 || d.noise) continue;
    const std::string model = split_model_variant(d.model).first;
    const Cell* c = fastest_variant(a, "cpu", model, d.batch_size, d.cpu_host);
    const Cell* g = fastest_variant(a, d.gpu_device, model, d.batch_size, d.gpu_host);
    if (!c || !g || g->samples_per_s.median >= c->samples_per_s.median || within_noise(c->samples_per_s, g->samples_per_s))
      continue;
    if (!said.insert(fmt::format("{}|{}|{}|{}|{}", d.gpu_device, model, d.batch_size, d.gpu_host, d.cpu_host)).second)
      continue;
    const bool gpu_eager_only = split_model_variant(g->model).second == "eager" &&
                                !std::any_of(a.cells.begin(), a.cells.end(), [&](const Cell& x) {
                                  return x.device == d.gpu_device && x.batch_size == d.batch_size &&
                                         x.host == d.gpu_host && split_model_variant(x.model).first == model &&
                                         split_model_variant(x.model).second != "eager";
                                });
    add(a, "cpu_faster", c,
        gpu_eager_only
            ? fmt::format("Train {} b{} on the CPU, as measured in eager on the GPU: the model is too small for "
                          "{} to pay for its per-kernel launch and copy overheads. Only eager ran there; the "
                          "whole-step CUDA graph removes the launch cost (--variants eager,graphs) and may "
                          "reverse this.",
                          model, d.batch_size, d.gpu_device)
            : fmt::format("Train {} b{} on the CPU: its fastest measured recipe beats the GPU's fastest, CUDA "
                          "graphs included.",
                          model, d.batch_size),
        fmt::format("`{}` batch {}: the CPU's fastest, `{}`, is {}× faster than {}'s fastest, `{}` (steady "
                    "training throughput: {} vs {} samples/s)",
                    model, d.batch_size, c->model, fmt_num(c->samples_per_s.median / g->samples_per_s.median),
                    where_label(a, *g), g->model, fmt_stat(c->samples_per_s, "", 1), fmt_stat(g->samples_per_s, "", 1)));
  }
}

std::string watts(const std::optional<double>& w) { return w ? fmt_num(*w) + " W" : "—"; }

// Runs on several GPUs (world_size > 1) whose least-loaded GPU drew little power.
void unbalanced_gpus(const ReportInput& in, const AdviceThresholds& t, Analysis& a) {
  for (const auto& b : a.balance) {
    if (!b.multi_gpu_run) continue;
    const GpuBalance::Entry *lo = nullptr, *hi = nullptr;
    for (const auto& e : b.gpus) {
      if (!e.power_w_mean) continue;
      if (!lo || *e.power_w_mean < *lo->power_w_mean) lo = &e;
      if (!hi || *e.power_w_mean > *hi->power_w_mean) hi = &e;
    }
    if (!lo || !hi || lo == hi || *lo->power_w_mean >= t.unbalanced_power_ratio * *hi->power_w_mean) continue;
    Advice x;
    x.rule = "unbalanced_gpus";
    x.device = b.run_device;
    for (const auto& r : in.runs)
      if (r.run_id == b.run_id) x.model = r.model, x.batch_size = r.batch_size;
    x.advice =
        "The GPUs are unbalanced: one does almost nothing. Spread the work (one process per GPU with "
        "DistributedDataParallel, equal shards) or check that the model and data are placed on every device.";
    x.evidence = fmt::format("run {}: {} drew {} W on average (peak {}) while {} drew {} W (peak {}); threshold: "
                             "below {} % of the busiest GPU",
                             b.run_id, lo->gpu, fmt_num(*lo->power_w_mean), watts(lo->power_w_max), hi->gpu,
                             fmt_num(*hi->power_w_mean), watts(hi->power_w_max), fmt_num(t.unbalanced_power_ratio * 100));
    a.advice.push_back(x);
  }
}

void add_for_run(Analysis& a, const char* rule, const RunRecord& r, std::string advice, std::string evidence) {
  Advice x;
  x.rule = rule;
  x.device = r.device;
  x.model = r.model;
  x.batch_size = r.batch_size;
  x.advice = std::move(advice);
  x.evidence = std::move(evidence);
  a.advice.push_back(std::move(x));
}

// A CPU run with more intra-op threads than the CPUs its process could use (affinity mask, cgroup
// quota: Provenance::cpu_usable_cores): its throughput measures oversubscribed cores.
bool oversubscribed(const ReportInput& in, const RunRecord& r) {
  const int64_t usable = in.provenance.cpu_usable_cores;
  return r.device == "cpu" && usable > 0 && r.intra_op_threads > usable;
}

void cpu_oversubscribed(const ReportInput& in, const AdviceThresholds&, Analysis& a) {
  const Provenance& p = in.provenance;
  for (const auto& r : in.runs) {
    if (r.status != RunStatus::kOk || !oversubscribed(in, r)) continue;
    add_for_run(a, "cpu_oversubscribed", r,
                fmt::format("This run's intra-op threads outnumber the CPUs its process could use, so its throughput "
                            "measures threads waiting for cores, not the model. Run with at most {} threads (--threads "
                            "0 takes every usable CPU), or give the job more CPUs.",
                            p.cpu_usable_cores),
                fmt::format("run {}: {} on {} ({}; {} logical)", r.run_id,
                            count_of(r.intra_op_threads, "intra-op thread"), count_of(p.cpu_usable_cores, "usable CPU"),
                            p.cpu_limit.empty() ? "no affinity mask or CPU quota" : p.cpu_limit,
                            p.cpu_logical_cores));
  }
}

}  // namespace

std::optional<CpuContention> cpu_contention_of(const TelemetryHeadline& h, int64_t intra_op_threads,
                                               int64_t logical_cores, const AdviceThresholds& t) {
  if (intra_op_threads <= 0 || !h.process_cpu_pct_mean || !h.cpu_util_pct_mean) return std::nullopt;
  const double cores = static_cast<double>(logical_cores);
  const double got = *h.process_cpu_pct_mean / 100.0;  // cores
  const double threads = static_cast<double>(intra_op_threads);
  if (got >= t.cpu_contention_core_ratio * threads || *h.cpu_util_pct_mean < t.busy_machine_pct) return std::nullopt;
  const double others = cores > 0 ? *h.cpu_util_pct_mean / 100.0 * cores - got : 0;
  if (cores > 0 && others < t.other_load_cores) return std::nullopt;
  CpuContention c;
  c.advice =
      "Other processes competed for the CPU: this run got fewer cores than its intra-op threads, so its throughput "
      "measures the contention, not the model. Measure on a quiet machine, or run with fewer --threads (no more "
      "than the cores that are free).";
  c.evidence = fmt::format(
      "the process used {} cores on average (process_cpu_pct_mean {}) for {} (threshold {} of them) while the "
      "machine's CPUs were {} busy (cpu_util_pct_mean; threshold {} %){}",
      fmt_num(got), pct(*h.process_cpu_pct_mean), count_of(intra_op_threads, "intra-op thread"),
      fmt_num(t.cpu_contention_core_ratio * threads), pct(*h.cpu_util_pct_mean), fmt_num(t.busy_machine_pct),
      cores > 0 ? fmt::format("; other processes held about {} of the {} logical cores", fmt_num(others), logical_cores)
                : std::string());
  return c;
}

namespace {

// A CPU run whose process got clearly fewer cores than its intra-op threads while the machine
// was busy with other work: its throughput measures the contention, not the model.
void cpu_contention(const ReportInput& in, const AdviceThresholds& t, Analysis& a) {
  for (const auto& r : in.runs) {
    if (r.device != "cpu" || r.intra_op_threads <= 0 || !r.telemetry || r.status != RunStatus::kOk) continue;
    if (oversubscribed(in, r)) continue;  // cpu_oversubscribed says why, without blaming other processes
    // Data-parallel CPU ranks on one machine share its cores by design (docs/distributed.md):
    // the other ranks are not competing processes.
    if (r.distributed && r.distributed->local_world_size > 1) continue;
    const auto c = cpu_contention_of(r.telemetry->headline, r.intra_op_threads, in.provenance.cpu_logical_cores, t);
    if (c) add_for_run(a, "cpu_contention", r, c->advice, fmt::format("run {}: {}", r.run_id, c->evidence));
  }
}

// What the profiling window's means say about its cost; a negative cost is noise, not a gain.
std::string profile_cost_words(const MeasurementWindow& m) {
  if (!m.profile_cost_pct) return "the profiling window's cost to the training time was not measured";
  if (*m.profile_cost_pct < 0)
    return fmt::format("from the means, the profiled steps were faster, by {} % of the training time: noise, not a cost",
                       fmt_num(-*m.profile_cost_pct));
  return fmt::format("from the means, the profiling window added {} % to the training time", fmt_num(*m.profile_cost_pct));
}

// The profiled steps, which do extra work, ran faster than the headline steps: something else
// slowed the headline window, so its figure is not a clean measurement.
void noisy_headline(const ReportInput& in, const AdviceThresholds& t, Analysis& a) {
  for (const auto& r : in.runs) {
    const auto& m = r.measurement;
    const bool slow_headline = m.profile_step_time_ratio && *m.profile_step_time_ratio < t.noisy_headline_ratio;
    if (!slow_headline) continue;
    add_for_run(a, "noisy_headline", r,
                "The headline window was disturbed: its median step ran slower than the median profiled step, "
                "which does extra work, so something else (another process, frequency scaling) slowed it. Treat "
                "this run's samples/s as noisy, not clean: measure again on a quiet machine, with repeats to see the "
                "spread.",
                fmt::format("run {}: median profiled / median headline step time: profile_step_time_ratio {:.3f} "
                            "(threshold < {}); the means, which a few slow steps move: profiled steps {} ms, "
                            "headline steps {} ms; {}",
                            r.run_id, *m.profile_step_time_ratio, fmt_num(t.noisy_headline_ratio),
                            m.profiled_step_ms_mean ? fmt_num(*m.profiled_step_ms_mean) : "?",
                            m.headline_step_ms_mean ? fmt_num(*m.headline_step_ms_mean) : "?", profile_cost_words(m)));
  }
}

// Variants (docs/variants.md): a variant that ran beside eager on the same device, model and
// batch size cites its measured gain; on a GPU where only eager ran and the GPU waited (mean
// utilisation below low_gpu_util_pct: launch-bound), the untried variants are suggested and said
// to be unmeasured.
// Fewest headline steps of the ok runs of one cell (device and workload: model, variant, world
// size, batch, ...); 0 without any.
int64_t fewest_headline_steps(const ReportInput& in, const std::string& device, const WorkloadId& w) {
  int64_t fewest = -1;
  for (const auto& r : in.runs)
    if (r.status == RunStatus::kOk && r.device == device && workload_of(r) == w)
      fewest = fewest < 0 ? r.measurement.headline_steps : std::min(fewest, r.measurement.headline_steps);
  return std::max<int64_t>(fewest, 0);
}

// A gain measured over fewer steady steps than this per run is stated but not recommended:
// a steady rate from a handful of steps is mostly warm-up tail and timer noise.
constexpr int64_t kMinHeadlineStepsForAdvice = 20;

// Intra-op threads of a cell's ok runs (the first one's; 0 without any).
int64_t cell_threads(const ReportInput& in, const std::string& device, const WorkloadId& w) {
  for (const auto& r : in.runs)
    if (r.status == RunStatus::kOk && r.device == device && workload_of(r) == w) return r.intra_op_threads;
  return 0;
}

// What variant_gain advises for a measured gain; a threadsN variant is judged against eager's
// thread count and the usable CPUs (a count equal to eager's is no change at all, and one above
// the usable CPUs measures oversubscription).
std::string gain_action(const ReportInput& in, const Variant& var, const std::string& variant, double gain,
                        int64_t var_threads, int64_t eager_threads) {
  const int64_t usable = in.provenance.cpu_usable_cores;
  const bool threads_only = var.threads > 0 && without_threads(variant) == "eager";  // "threads8" alone
  if (threads_only && var_threads == eager_threads)
    return fmt::format(" (eager ran {} too: the same setting, so the difference is run-to-run noise)",
                       count_of(eager_threads, "intra-op thread"));
  if (var.threads > 0 && usable > 0 && var.threads > usable)
    return fmt::format(" ({} on {}: oversubscribed, not a setting to train with)", count_of(var.threads, "thread"),
                       count_of(usable, "usable CPU"));
  if (gain <= 1) return " (slower than eager: keep eager)";
  if (threads_only)
    return fmt::format("; train with --threads {}", var.threads);
  return fmt::format("; train with --variants {}", variant);
}

void variant_gain(const ReportInput& in, const AdviceThresholds& t, Analysis& a) {
  for (const auto& v : a.cells) {
    auto [model, variant] = split_model_variant(v.model);
    if (variant == "eager" || v.runs_ok == 0) continue;
    const Cell* e = find_cell(a.cells, v.device, model, v.batch_size);
    if (!e || !e->samples_per_s.ok() || !v.samples_per_s.ok() || !(e->samples_per_s.median > 0)) continue;
    const double gain = v.samples_per_s.median / e->samples_per_s.median;
    WorkloadId eager = v.workload;
    eager.model = model;
    const int64_t steps = std::min(fewest_headline_steps(in, v.device, v.workload), fewest_headline_steps(in, v.device, eager));
    const bool few = steps < kMinHeadlineStepsForAdvice;
    const Variant var = variant_of_label(variant);
    const int64_t var_threads = cell_threads(in, v.device, v.workload), eager_threads = cell_threads(in, v.device, eager);
    const std::string action =
        few ? fmt::format(" over only {} per run: measure with more steps (--max-steps) before choosing",
                          count_of(steps, "steady step"))
            : gain_action(in, var, variant, gain, var_threads, eager_threads);
    const std::string threads_words =
        v.device == "cpu" && var.threads > 0 ? fmt::format(" ({} vs {})", count_of(var_threads, "thread"),
                                                            count_of(eager_threads, "thread"))
                                             : std::string();
    add(a, "variant_gain", &v,
        fmt::format("{}: {}× on {} for {} b{}, measured{}.", variant, fmt_num(gain), v.device, model, v.batch_size, action),
        fmt::format("steady training throughput: {} {} vs eager {} samples/s{}; fewest steady steps per run {}", variant,
                    fmt_stat(v.samples_per_s, "", 1), fmt_stat(e->samples_per_s, "", 1), threads_words, steps));
  }
  for (const auto& e : a.cells) {
    if (!is_gpu(e.device) || e.runs_ok == 0 || split_model_variant(e.model).second != "eager") continue;
    if (!e.gpu_util_pct_mean.ok() || e.gpu_util_pct_mean.median >= t.low_gpu_util_pct) continue;
    const bool any_variant = std::any_of(a.cells.begin(), a.cells.end(), [&](const Cell& c) {
      return c.device == e.device && c.batch_size == e.batch_size && split_model_variant(c.model).first == e.model &&
             split_model_variant(c.model).second != "eager";
    });
    if (any_variant) continue;
    add(a, "variant_untried", &e,
        fmt::format("Try --variants eager,graphs,bf16,graphs+bf16 for {} b{} on {} (unmeasured: no variant ran "
                    "beside eager; CUDA graphs remove the per-kernel launch cost, bf16 uses the tensor cores).",
                    e.model, e.batch_size, e.device),
        fmt::format("only eager ran for {}; GPU utilisation {} (threshold {} %)", where(a, e),
                    pct(e.gpu_util_pct_mean.median), fmt_num(t.low_gpu_util_pct)));
  }
}

// A streamed run (docs/input-pipeline.md) whose trainer waited for batches: how many decode
// workers would feed the device at the measured decode rate, and whether the cores allow it.
void stream_input(const ReportInput& in, const AdviceThresholds& t, Analysis& a) {
  for (const auto& r : in.runs) {
    const auto* p = r.input_pipeline ? &*r.input_pipeline : nullptr;
    if (!p || p->mode != "stream" || !r.phases || r.phases->step_ms <= 0 || !p->decode_per_s_per_worker ||
        *p->decode_per_s_per_worker <= 0 || !p->workers)
      continue;
    const double share = 100.0 * r.phases->data_ms / r.phases->step_ms;
    if (share < t.data_share_pct) continue;
    // A step cannot be faster than the host's own part of it (step - data) nor the device's
    // (h2d + forward + backward + optimizer: on a GPU timed by CUDA events, which exclude the
    // wait for data; the host part alone would overstate a GPU that catches up during the wait).
    const auto& ph = *r.phases;
    const double device_ms = ph.h2d_ms + ph.forward_ms + ph.backward_ms + ph.optimizer_ms;
    const double compute_ms = std::max({ph.step_ms - ph.data_ms, device_ms, 1e-3});
    const double device_rate = static_cast<double>(r.batch_size) * 1000.0 / compute_ms;  // samples/s without waiting
    const double rate = *p->decode_per_s_per_worker;
    const auto need = static_cast<int64_t>(std::ceil(device_rate / rate));
    const double cores = static_cast<double>(p->cores.value_or(0));
    const double trainer_cores = p->trainer_cpu_pct.value_or(0) / 100.0;
    const double free_cores = cores - trainer_cores;
    const bool cores_busy = cores > 0 && static_cast<double>(need) > free_cores;
    std::string advice =
        cores_busy
            ? fmt::format("The trainer waits for decoded images, and more workers cannot help: {} workers would be "
                          "needed but only about {} of the {} cores are not busy with the trainer. Decode less per "
                          "step: keep the set decoded in memory (--cache-data on) if it fits, store smaller images, "
                          "use a cheaper transform, or train on a machine with more cores per device.",
                          need, fmt_num(std::max(free_cores, 0.0)), p->cores.value_or(0))
            : fmt::format("The trainer waits for decoded images: run {} decode workers (--data-workers {}) instead of "
                          "{} to feed the device.",
                          need, need, *p->workers);
    add_for_run(a, "stream_input", r, std::move(advice),
                fmt::format("run {}: data phase {} of the step (threshold {} %); {} decoded {} images/s "
                            "each; the device trains {} samples/s when not waiting (batch {} in {} ms); loader CPU "
                            "{}, trainer CPU {} (100 % = one core) of {} cores",
                            r.run_id, pct(share), fmt_num(t.data_share_pct), count_of(*p->workers, "worker"), fmt_num(rate),
                            fmt_num(device_rate), r.batch_size, fmt_num(compute_ms),
                            p->loader_cpu_pct ? pct(*p->loader_cpu_pct) : "?",
                            p->trainer_cpu_pct ? pct(*p->trainer_cpu_pct) : "?", p->cores.value_or(0)));
  }
}

// The rules that read telemetry, and the ok runs they could not look at for want of it: the CPU
// rule (cpu_contention) and the GPU rules (low_utilisation, throttling, unbalanced_gpus).
// unbalanced_gpus only where it applies: data-parallel runs (world size > 1).
// cpu_contention also where telemetry ran but gave no CPU utilisation (no /proc/stat, as in
// some containers, or too few samples in the headline window).
void add_not_checked(const ReportInput& in, Analysis& a) {
  int64_t cpu = 0, gpu = 0;
  std::vector<RunRecord> unread;  // CPU runs with telemetry but without what cpu_contention reads
  bool multi_gpu = false;
  for (const auto& r : in.runs) {
    if (r.status != RunStatus::kOk) continue;
    if (r.telemetry) {
      const auto& h = r.telemetry->headline;
      if (r.device == "cpu" && r.intra_op_threads > 0 && (!h.cpu_util_pct_mean || !h.process_cpu_pct_mean))
        unread.push_back(r);
      continue;
    }
    ++(r.device == "cpu" ? cpu : gpu);
    multi_gpu = multi_gpu || (r.device != "cpu" && r.world_size > 1);
  }
  const std::string why = no_telemetry_cause(in.runs);
  if (cpu > 0) a.advice_not_checked.push_back(fmt::format("cpu_contention, for {}: {}", count_of(cpu, "CPU run"), why));
  if (!unread.empty()) {
    const std::string proc = source_reason(unread, "proc");
    a.advice_not_checked.push_back(fmt::format(
        "cpu_contention, for {} whose telemetry has no CPU utilisation or process CPU share: {}",
        count_of(static_cast<int64_t>(unread.size()), "CPU run"),
        proc.empty() ? "their windows held no reading of them" : "the proc source: " + proc));
  }
  if (gpu > 0)
    a.advice_not_checked.push_back(fmt::format("{}, for {}: {}",
                                               multi_gpu ? "low_utilisation, throttling and unbalanced_gpus"
                                                         : "low_utilisation and throttling",
                                               count_of(gpu, "GPU run"), why));
}

using CellRule = void (*)(const Cell&, const AdviceThresholds&, Analysis&);
using RunRule = void (*)(const ReportInput&, const AdviceThresholds&, Analysis&);

// The rules, in the order their advice is listed: per cell, then across cells.
const CellRule kCellRules[] = {low_utilisation, h2d_copies, batch_sweep, throttling, data_loading};
const RunRule kRunRules[] = {batch_size, cpu_faster, unbalanced_gpus, cpu_oversubscribed, cpu_contention, noisy_headline, variant_gain,
                              stream_input};

}  // namespace

namespace report_detail {

void add_advice(const ReportInput& in, const AdviceThresholds& t, Analysis& a) {
  for (const auto& c : a.cells) {
    if (c.runs_ok == 0) continue;
    for (CellRule rule : kCellRules) rule(c, t, a);
  }
  for (RunRule rule : kRunRules) rule(in, t, a);
  add_not_checked(in, a);
}

}  // namespace report_detail

}  // namespace trainscope

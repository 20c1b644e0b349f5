// Plain-sentence answers to the study's research questions (docs/report.md#research-questions)
// from the analysis. A number that is absent is said to be absent, with its reason.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "report/generation_report.h"
#include "report/report_util.h"
#include "trainscope/variants.h"

namespace trainscope::report_detail {

namespace {

std::string pct(double v) { return fmt_num(v) + " %"; }

std::string label(const Cell& c) {
  if (c.device == "cpu") return "the CPU";
  return c.device_name.empty() || c.device_name == c.device ? c.device : fmt::format("{} ({})", c.device, c.device_name);
}

const Cell* find(const Analysis& a, const std::string& d, const std::string& m, int64_t b) {
  for (const auto& c : a.cells)
    if (c.device == d && c.model == m && c.batch_size == b && c.runs_ok > 0) return &c;
  return nullptr;
}

// Why these results hold no GPU number, said in full (RQ1) and as the later answers' short
// reference to it; both empty when a GPU run succeeded.
struct GpuAbsence {
  std::string full, again;
};

GpuAbsence gpu_absence(const ReportInput& in, const Analysis& a) {
  if (a.has_gpu) return {};
  const bool asked = std::any_of(a.cells.begin(), a.cells.end(), [](const Cell& c) { return is_gpu(c.device); });
  if (in.provenance.gpus.empty())
    return {"No GPU run in these results: the machine reported no CUDA device (provenance lists no GPU), so there is "
            "no GPU number to compare with.",
            "No GPU run in these results (as in RQ1)."};
  if (!asked)
    return {"No GPU run in these results: none was asked for (--devices), so there is no GPU number to compare with.",
            "No GPU run in these results (as in RQ1)."};
  return {"No GPU run finished successfully in these results, so there is no GPU number to compare with.",
          "No GPU run finished successfully (as in RQ1)."};
}

}  // namespace

namespace {

// Why a source gave no number ("" when it did), shared by the answers. no_gpu is said in full
// by RQ1; no_gpu_again, the later answers' reference to it.
struct Reasons {
  std::string no_gpu, no_gpu_again, nvml, rapl, hwmon;
};

// A missing reading's reason, given with the first sentence of an answer that lacks it; the
// sentences after it refer back ("as above"): the reason is the same for every cell of a host,
// and the console shows an answer's first sentence.
class SayOnce {
 public:
  // "as above" only when the same reading's last absence had the same reason: cells of one
  // answer may differ in theirs (a report over folders run with different settings).
  std::string operator()(const std::string& what, const std::string& reason) {
    auto [it, first] = last_.try_emplace(what, reason);
    const bool again = !first && it->second == reason;
    it->second = reason;
    return fmt::format("{} ({})", what, again ? "as above" : flat(reason));
  }

  // A reason that has its own parentheses (a source's text, "X does not exist (no driver)")
  // reads "X does not exist: no driver" inside ours, never "((...))".
  static std::string flat(std::string r) {
    for (size_t i; (i = r.find(" (")) != std::string::npos;) r.replace(i, 2, ": ");
    std::erase(r, '(');
    std::erase(r, ')');
    return r;
  }

 private:
  std::map<std::string, std::string> last_;  // reading -> the reason its last absence gave
};

// A cell's steady throughput in its task's unit: tokens/s for a language model, else samples/s.
std::string rate(const Cell& c) {
  return c.tokens_per_sample > 1 ? fmt_stat(c.samples_per_s, " tokens/s", static_cast<double>(c.tokens_per_sample))
                                 : fmt_stat(c.samples_per_s, " samples/s");
}

// The median of a run group's values ({} when none).
std::optional<double> median_of(std::vector<double> v) {
  const Stat st = make_stat(v);
  return st.ok() ? std::optional<double>(st.median) : std::nullopt;
}

// The ok language-model runs of these results by (device, model label without the sequence
// length, variant and ranks included), each with its (batch, T) points in order.
struct LmPoint {
  int64_t batch = 0, seq_len = 0;
  std::vector<double> rss, device_allocated;
};
using LmGroups = std::map<std::pair<std::string, std::string>, std::map<std::pair<int64_t, int64_t>, LmPoint>>;

LmGroups lm_groups(const ReportInput& in) {
  LmGroups g;
  for (const auto& r : in.runs) {
    if (r.status != RunStatus::kOk || !r.language_model) continue;
    const int64_t t = r.language_model->seq_len;
    std::string label = workload_of(r).model;  // "gpt-mini T256 [bf16]": the length left out here
    if (auto at = label.find(fmt::format(" T{}", t)); at != std::string::npos)
      label.erase(at, fmt::format(" T{}", t).size());
    LmPoint& p = g[{r.device, label}][{r.batch_size, t}];
    p.batch = r.batch_size, p.seq_len = t;
    if (r.peak_rss_bytes) p.rss.push_back(static_cast<double>(*r.peak_rss_bytes));
    if (r.device_peak_allocated_bytes) p.device_allocated.push_back(static_cast<double>(*r.device_peak_allocated_bytes));
  }
  return g;
}

// RQ2 for language models: peak memory at each (batch, sequence length) of a (device, model),
// when there are two or more; activations grow with batch x T, the attention scores with batch x T².
std::vector<std::string> lm_memory_sentences(const ReportInput& in) {
  std::vector<std::string> out;
  for (const auto& [key, points] : lm_groups(in)) {
    if (points.size() < 2) continue;
    const bool gpu = is_gpu(key.first);
    std::vector<std::string> parts;
    for (const auto& [bt, p] : points)
      if (auto m = median_of(gpu ? p.device_allocated : p.rss))
        parts.push_back(fmt::format("{} at batch {} × T {}", fmt_bytes(*m), p.batch, p.seq_len));
    if (parts.size() < 2) continue;
    out.push_back(fmt::format("`{}` on {} (language model, batch × sequence length): peak {} {}; the activations grow "
                              "with batch × T and the attention scores with batch × T².",
                              key.second, key.first, gpu ? "GPU memory allocated" : "host memory (RSS)",
                              fmt::join(parts, ", ")));
  }
  return out;
}

// RQ4 for language models with --target-loss: per (model, batch) and device, the training time,
// tokens and energy until the validation loss first reached the target, or the best miss.
std::vector<std::string> lm_target_loss_sentences(const ReportInput& in) {
  struct Side {
    double target = 0;
    std::vector<double> time_s, energy_j, tokens, best;
    int missed = 0;
  };
  std::map<std::pair<std::string, int64_t>, std::map<std::string, Side>> g;  // (model, batch) -> device -> side
  for (const auto& r : in.runs) {
    if (r.status != RunStatus::kOk || !r.language_model || !r.language_model->target_loss) continue;
    const auto& l = *r.language_model;
    Side& s = g[{workload_of(r).model, r.batch_size}][r.device];
    s.target = *l.target_loss;
    if (l.target_loss_reached.value_or(false) && l.time_to_target_loss_s) {
      s.time_s.push_back(*l.time_to_target_loss_s);
      if (l.energy_to_target_loss_j) s.energy_j.push_back(*l.energy_to_target_loss_j);
      if (l.tokens_to_target_loss) s.tokens.push_back(static_cast<double>(*l.tokens_to_target_loss));
    } else {
      ++s.missed;
      if (l.best_val_loss) s.best.push_back(*l.best_val_loss);
    }
  }
  std::vector<std::string> out;
  for (const auto& [key, sides] : g)
    for (const auto& [dev, s] : sides) {
      const std::string where = dev == "cpu" ? "the CPU" : dev;
      if (auto t = median_of(s.time_s)) {
        const auto e = median_of(s.energy_j);
        const auto tok = median_of(s.tokens);
        out.push_back(fmt::format("`{}` at batch {} on {} reaches validation loss {} in {} of training{}{}{}.", key.first,
                                  key.second, where, fmt::format("{:g}", s.target), fmt_time(*t),
                                  tok ? fmt::format(", {} tokens", fmt_num(*tok)) : "",
                                  e ? fmt::format(", {} kJ", fmt_num(*e / 1000)) : ", energy not measured",
                                  s.missed ? fmt::format(" ({} missed it)", count_of(s.missed, "run")) : ""));
      } else {
        const auto best = median_of(s.best);
        out.push_back(fmt::format("`{}` at batch {} on {} did not reach validation loss {} (best {}).", key.first,
                                  key.second, where, fmt::format("{:g}", s.target),
                                  best ? fmt::format("{:.3f}", *best) : "not recorded"));
      }
    }
  return out;
}

// "1 epoch takes" / "20 epochs take": the subject and verb of RQ4's time sentences.
std::string epochs_take(int64_t epochs) { return count_of(epochs, "epoch") + (epochs == 1 ? " takes" : " take"); }

// Why a CPU cell has no utilisation, from that cell's own runs: a report may merge folders run
// with different settings (one with --no-telemetry, one without /proc/stat).
// Runs are matched as cells group them (host, device, workload), not by run id, which folders share.
std::string cpu_util_absent(const ReportInput& in, const Cell& c) {
  std::vector<RunRecord> runs;
  for (size_t i = 0; i < in.runs.size(); ++i) {
    const RunRecord& r = in.runs[i];
    if (r.status == RunStatus::kOk && r.device == c.device && provenance_of(in, i).host == c.host &&
        workload_of(r) == c.workload)
      runs.push_back(r);
  }
  if (std::none_of(runs.begin(), runs.end(), [](const RunRecord& r) { return r.telemetry.has_value(); }))
    return no_telemetry_reason(runs);
  const auto why = source_reason(runs, "proc");
  // The source worked, but the runs hold no utilisation: too few samples in their training
  // window (utilisation needs two /proc/stat readings).
  return why.empty() ? "no two /proc/stat samples inside the training window: the run was shorter than the sampling "
                       "interval allows"
                     : why;
}

// Why a GPU cell has no SM activity: when another cell on the same device has it, GPM works
// there and this cell's training window held too few GPM samples (two are needed, one
// sampling period apart); otherwise GPM is not available.
std::string sm_activity_absent(const Analysis& a, const Cell& c) {
  const bool gpm_works = std::any_of(a.cells.begin(), a.cells.end(),
                                     [&](const Cell& o) { return o.device == c.device && o.sm_activity_pct_mean.ok(); });
  return gpm_works ? "too few NVML GPM samples in this cell's training window: the run was too short"
                   : "needs NVML GPM, Hopper or newer";
}

Answer answer_rq1(const ReportInput& in, const Analysis& a, const Reasons& why) {
  // ---- RQ1 utilisation
  Answer q1{"RQ1", "How busy are the CPU and the GPU while training, and how does the batch size change it?", {}};
  SayOnce why_not;
  for (const auto& c : a.cells) {
    if (c.runs_ok == 0) continue;
    if (is_gpu(c.device)) {
      std::string s = fmt::format("`{}` at batch {} on {}: ", c.model, c.batch_size, label(c));
      if (c.gpu_util_pct_mean.ok())
        s += fmt::format("GPU utilisation {} on average (peak {}; NVML: share of time any kernel ran)",
                         pct(c.gpu_util_pct_mean.median),
                         c.gpu_util_pct_max.ok() ? pct(c.gpu_util_pct_max.median) : "—");
      else
        s += why_not("GPU utilisation not measured", why.nvml.empty() ? "no NVML reading for this GPU" : why.nvml);
      if (c.sm_activity_pct_mean.ok())
        s += fmt::format(", SM activity {} (share of SMs with work; the truer measure of how full the GPU is)",
                         pct(c.sm_activity_pct_mean.median));
      else
        s += ", " + why_not("SM activity not measured", sm_activity_absent(a, c));
      if (c.data_share_pct.ok()) s += fmt::format("; data loading took {} of a step", pct(c.data_share_pct.median));
      q1.sentences.push_back(s + ".");
    } else {
      std::string s = fmt::format("`{}` at batch {} on the CPU: ", c.model, c.batch_size);
      if (c.cpu_util_pct_mean.ok()) {
        s += fmt::format("the machine's CPUs were {} busy on average", pct(c.cpu_util_pct_mean.median));
        if (c.process_cpu_cores.ok())  // the machine's figure counts other processes too
          s += fmt::format(", this process kept {} cores busy", fmt_num(c.process_cpu_cores.median));
      } else {
        s += why_not("CPU utilisation not measured", cpu_util_absent(in, c));
      }
      if (c.data_share_pct.ok()) s += fmt::format("; data loading took {} of a step", pct(c.data_share_pct.median));
      q1.sentences.push_back(s + ".");
    }
  }
  for (const auto& b : a.batch_comparisons)
    if (is_gpu(b.device) && b.util_a_pct && b.util_b_pct)
      q1.sentences.push_back(fmt::format("Going from batch {} to {} moved {} utilisation for `{}` from {} to {}.",
                                         b.batch_a, b.batch_b, b.device, b.model, pct(*b.util_a_pct),
                                         pct(*b.util_b_pct)));
  if (!why.no_gpu.empty()) q1.sentences.push_back(why.no_gpu);
  return q1;
}

Answer answer_rq2(const ReportInput& in, const Analysis& a, const Reasons& why) {
  // ---- RQ2 memory vs batch size (and a language model's sequence length)
  Answer q2{"RQ2", "How does memory use change with the batch size?", lm_memory_sentences(in)};
  for (const auto& b : a.batch_comparisons) {
    const Cell* p = find(a, b.device, b.model, b.batch_a);
    const Cell* q = find(a, b.device, b.model, b.batch_b);
    if (!p || !q) continue;
    if (is_gpu(b.device)) {
      if (p->device_peak_allocated_bytes.ok() && q->device_peak_allocated_bytes.ok()) {
        std::string s = fmt::format("`{}` on {}: peak GPU memory allocated {} at batch {} → {} at batch {}", b.model,
                                    b.device, fmt_bytes(p->device_peak_allocated_bytes.median), b.batch_a,
                                    fmt_bytes(q->device_peak_allocated_bytes.median), b.batch_b);
        if (p->device_peak_reserved_bytes.ok() && q->device_peak_reserved_bytes.ok())
          s += fmt::format(" (reserved by the caching allocator {} → {})",
                           fmt_bytes(p->device_peak_reserved_bytes.median),
                           fmt_bytes(q->device_peak_reserved_bytes.median));
        if (q->device_memory_total_bytes)
          s += fmt::format(", of {} on the device", fmt_bytes(static_cast<double>(*q->device_memory_total_bytes)));
        q2.sentences.push_back(s + ".");
      } else {
        q2.sentences.push_back(fmt::format("`{}` on {}: peak GPU memory not recorded.", b.model, b.device));
      }
    }
    if (p->rss_bytes_max.ok() && q->rss_bytes_max.ok()) {
      double ch = 100.0 * (q->rss_bytes_max.median - p->rss_bytes_max.median) / p->rss_bytes_max.median;
      q2.sentences.push_back(fmt::format(
          "`{}` on {}: host memory of the process (peak RSS) {} at batch {} → {} at batch {} ({}{}){}.", b.model,
          b.device, fmt_bytes(p->rss_bytes_max.median), b.batch_a, fmt_bytes(q->rss_bytes_max.median), b.batch_b,
          ch >= 0 ? "+" : "", pct(ch), std::fabs(ch) < 10 ? ": flat, as in the study" : ""));
    }
  }
  if (q2.sentences.empty())
    q2.sentences.push_back("Only one batch size per device and model was run, so memory cannot be compared across "
                           "batch sizes (use --batch-sizes 64,128).");
  if (!why.no_gpu.empty()) q2.sentences.push_back(why.no_gpu_again);
  return q2;
}

Answer answer_rq3(const ReportInput& /*in*/, const Analysis& a, const Reasons& why) {
  // ---- RQ3 power and temperature
  Answer q3{"RQ3", "How much power do the devices draw, how hot do they get, and how balanced are the GPUs?", {}};
  SayOnce why_not;
  auto lacks = [&](const std::string& what, const std::string& reason) { return why_not(what + " unavailable", reason); };
  for (const auto& c : a.cells) {
    if (c.runs_ok == 0) continue;
    const bool gpu = is_gpu(c.device);
    std::string s = fmt::format("`{}` at batch {} on {}: ", c.model, c.batch_size, label(c));
    if (c.power_w_mean.ok()) {
      s += fmt::format("power {} W on average, peak {} W", fmt_num(c.power_w_mean.median),
                       c.power_w_max.ok() ? fmt_num(c.power_w_max.median) : "—");
      if (c.power_limit_w) s += fmt::format(" of a {} W limit", fmt_num(*c.power_limit_w));
    } else if (gpu) {
      s += lacks("GPU power", why.nvml.empty() ? "no NVML power reading" : why.nvml);
    } else {
      s += lacks("CPU power", why.rapl.empty() ? "no RAPL reading in this run" : why.rapl);
    }
    if (c.temp_c_max.ok())
      s += fmt::format("; peak temperature {} °C", fmt_num(c.temp_c_max.median));
    else
      s += "; " + (gpu ? lacks("GPU temperature", why.nvml.empty() ? "no NVML reading" : why.nvml)
                       : lacks("CPU temperature", why.hwmon.empty() ? "no sensor reading in this run" : why.hwmon));
    if (c.energy_per_epoch_j.ok() && c.tokens_per_sample > 1)  // a language model: per token
      s += fmt::format("; energy {} J per epoch, {} mJ per token", fmt_num(c.energy_per_epoch_j.median),
                       fmt_num(c.energy_per_sample_j.median * 1000 / static_cast<double>(c.tokens_per_sample)));
    else if (c.energy_per_epoch_j.ok())
      s += fmt::format("; energy {} J per epoch, {} mJ per sample", fmt_num(c.energy_per_epoch_j.median),
                       fmt_num(c.energy_per_sample_j.median * 1000));
    q3.sentences.push_back(s + ".");
  }
  for (const auto& b : a.balance) {
    std::string s = fmt::format("While run {} trained{}: ", b.run_id, b.multi_gpu_run ? " on several GPUs" : "");
    for (size_t i = 0; i < b.gpus.size(); ++i) {
      const auto& e = b.gpus[i];
      s += fmt::format("{}{} {}", i ? ", " : "", e.gpu,
                       e.power_w_mean ? fmt::format("{} W (peak {})", fmt_num(*e.power_w_mean),
                                                    e.power_w_max ? fmt_num(*e.power_w_max) + " W" : "—")
                                      : "power not measured");
      if (e.util_pct_mean) s += fmt::format(", {} busy", pct(*e.util_pct_mean));
    }
    q3.sentences.push_back(s + ".");
  }
  if (!why.no_gpu.empty()) q3.sentences.push_back(why.no_gpu_again);
  return q3;
}

Answer answer_rq4(const ReportInput& in, const Analysis& a, const Reasons& why) {
  // ---- RQ4 training time
  Answer q4{"RQ4", "How long does training take on the CPU and on the GPU, and is the accuracy the same?", {}};
  for (const auto& d : a.device_comparisons) {
    const Cell* c = find(a, "cpu", d.model, d.batch_size);
    const Cell* g = find(a, d.gpu_device, d.model, d.batch_size);
    if (!c || !g) continue;
    std::string s;
    if (!d.speedup) {
      s = fmt::format("`{}` at batch {}: steady throughput missing on one side, no speed-up.", d.model, d.batch_size);
    } else if (d.noise) {
      s = fmt::format("On this machine {} and the CPU train `{}` at batch {} equally fast: the difference ({}×) is "
                      "inside the run-to-run spread (noise): {} vs {}",
                      g->device, d.model, d.batch_size, fmt_num(*d.speedup), rate(*g), rate(*c));
    } else if (*d.speedup >= 1) {
      s = fmt::format("On this machine the GPU, {}, trains `{}` {}× faster than the CPU at batch {}: {} vs {}",
                      label(*g), d.model, fmt_num(*d.speedup), d.batch_size, rate(*g), rate(*c));
    } else {
      s = fmt::format("On this machine the CPU trains `{}` {}× faster than the GPU, {}, at batch {}: {} vs {}",
                      d.model, fmt_num(1 / *d.speedup), label(*g), d.batch_size, rate(*c), rate(*g));
    }
    if (d.cpu_time_for_epochs_s && d.gpu_time_for_epochs_s)
      s += fmt::format("; {} {} on the CPU and {} on the GPU{}", epochs_take(c->epochs_requested),
                       fmt_time(*d.cpu_time_for_epochs_s),
                       fmt_time(*d.gpu_time_for_epochs_s),
                       c->time_for_epochs_is_estimate || g->time_for_epochs_is_estimate
                           ? " (estimated from the steady throughput of runs stopped early)"
                           : "");
    if (d.accuracy_diff_pct)
      s += fmt::format("; test accuracy {} % (CPU) vs {} % (GPU), a difference of {} points",
                       fmt_num(c->test_accuracy_pct.median), fmt_num(g->test_accuracy_pct.median),
                       fmt_num(*d.accuracy_diff_pct));
    q4.sentences.push_back(s + ".");
  }
  if (!why.no_gpu.empty()) {  // the CPU's figures first: the console shows an answer's first sentence
    for (const auto& c : a.cells)
      if (c.device == "cpu" && c.runs_ok > 0 && c.samples_per_s.ok())
        q4.sentences.push_back(fmt::format(
            "On the CPU `{}` at batch {} trains {}{}{}.", c.model, c.batch_size, rate(c),
            c.time_for_epochs_s.ok() ? fmt::format("; {} {}{}", epochs_take(c.epochs_requested),
                                                   fmt_time(c.time_for_epochs_s.median),
                                                   c.time_for_epochs_is_estimate ? " (estimated)" : "")
                                     : "",
            c.test_accuracy_pct.ok() ? fmt::format("; {} {} %", c.tokens_per_sample > 1 ? "next-token accuracy" : "test accuracy",
                                                   fmt_num(c.test_accuracy_pct.median))
                                     : ""));
    q4.sentences.push_back(why.no_gpu_again);
  }
  for (auto& l : lm_target_loss_sentences(in)) q4.sentences.push_back(std::move(l));
  return q4;
}

Answer answer_rq5(const ReportInput& in, const Analysis& a, const Reasons& /*why*/) {
  // ---- RQ5 inference
  Answer q5{"RQ5", "How fast is inference on the CPU and on the GPU?", {}};
  for (const auto& c : a.cells) {
    if (c.runs_ok == 0 || (!c.latency_p50_ms.ok() && !c.inference_samples_per_s.ok())) continue;
    std::string s = fmt::format("`{}` (trained at batch {}) on {}: ", c.model, c.batch_size, label(c));
    if (c.latency_p50_ms.ok())
      s += fmt::format("one image takes {} ms (median; p99 {} ms)", fmt_num(c.latency_p50_ms.median),
                       c.latency_p99_ms.ok() ? fmt_num(c.latency_p99_ms.median) : "—");
    if (c.inference_samples_per_s.ok())
      s += fmt::format("{}best offline throughput {} samples/s", c.latency_p50_ms.ok() ? "; " : "",
                       fmt_num(c.inference_samples_per_s.median));
    q5.sentences.push_back(s + ".");
  }
  for (const auto& d : a.device_comparisons) {
    const Cell* c = find(a, "cpu", d.model, d.batch_size);
    const Cell* g = find(a, d.gpu_device, d.model, d.batch_size);
    if (c && g && c->latency_p50_ms.ok() && g->latency_p50_ms.ok() && g->latency_p50_ms.median > 0) {
      double r = c->latency_p50_ms.median / g->latency_p50_ms.median;
      q5.sentences.push_back(
          within_noise(c->latency_p50_ms, g->latency_p50_ms)
              ? fmt::format("Single-image latency of `{}` is the same on the CPU and {} within the noise.", d.model,
                            d.gpu_device)
              : fmt::format("Single-image latency of `{}`: {} is {}× {} than the CPU.", d.model, d.gpu_device,
                            fmt_num(r >= 1 ? r : 1 / r), r >= 1 ? "faster" : "slower"));
    }
  }
  // A language model's inference is generation (docs/generation.md): prefill and decoding apart.
  for (auto& s : generation_rq5_sentences(in)) q5.sentences.push_back(std::move(s));
  if (q5.sentences.empty())
    q5.sentences.push_back("No inference measurements in these runs (the run records carry no inference section: "
                           "the inference benchmark did not run), so RQ5 has no answer here.");
  return q5;
}

Answer answer_simple_network(const ReportInput& in, const Analysis& a, const Reasons& /*why*/) {
  // ---- simple network: a model the GPU does not speed up
  std::set<std::string> models;
  for (const auto& d : a.device_comparisons) models.insert(d.model);
  Answer sn{"simple_network", "Does a simple network gain anything from the GPU?", {}};
  std::set<std::string> slow;  // models (eager) that gain nothing or little; sorted before their variants
  // eager models with a variant that gains at least 1.5x: their eager verdict names the variant
  std::map<std::string, std::string> flipped;
  for (const auto& d : a.device_comparisons)
    if (const auto [base, variant] = split_model_variant(d.model);
        variant != "eager" && d.speedup && *d.speedup >= 1.5 && !d.noise && !flipped.count(base))
      flipped[base] = variant;
  for (const auto& m : models) {
    bool none = true, little = true;
    std::string detail;
    for (const auto& d : a.device_comparisons) {
      if (d.model != m || !d.speedup) continue;
      if (!(*d.speedup <= 1 || d.noise)) none = false;
      if (*d.speedup >= 1.5 && !d.noise) little = false;
      detail += fmt::format("{}{}× at batch {} on {}{}", detail.empty() ? "" : "; ", fmt_num(*d.speedup),
                            d.batch_size, d.gpu_device, d.noise ? ", within the noise" : "");
    }
    if (detail.empty()) continue;
    const auto flip = flipped.find(m);
    if (none && flip != flipped.end())
      sn.sentences.push_back(fmt::format("`{}` gains nothing from the GPU in eager on this machine (speed-up {}): the "
                                         "study's \"simple network\" finding holds for eager execution; with `{}` "
                                         "it does gain (below).",
                                         m, detail, flip->second));
    else if (none)
      sn.sentences.push_back(fmt::format("`{}` gains nothing from the GPU on this machine (speed-up {}): the study's "
                                         "\"simple network\" finding holds here.",
                                         m, detail));
    else if (little)
      sn.sentences.push_back(fmt::format("`{}` gains little from the GPU (speed-up {}, below 1.5×).", m, detail));
    if (none || little) slow.insert(m);
    else if (const auto [base, variant] = split_model_variant(m); variant != "eager" && slow.count(base))
      // The verdict per variant (docs/variants.md): a variant that removes launch overhead can
      // turn the eager finding around; said beside it so the reader sees both.
      sn.sentences.push_back(fmt::format("`{}` does gain from the GPU (speed-up {} over CPU eager): with {} the "
                                         "verdict on `{}` is about launch overhead, not the hardware.",
                                         m, detail, variant, base));
  }
  // A language model's batch-1 decoding is the same question for inference (docs/generation.md).
  for (auto& s : generation_simple_network_sentences(in)) sn.sentences.push_back(std::move(s));
  if (sn.sentences.empty())
    sn.sentences.push_back(a.device_comparisons.empty()
                               ? "Not answerable without both CPU and GPU runs of the same model."
                               : "Every model measured here gains at least 1.5× from the GPU.");
  return sn;
}

// The summary's "—" cells for energy and utilisation, with the reason the answers give.
std::vector<std::string> summary_absences(const ReportInput& in, const Analysis& a, const Reasons& why) {
  bool cpu_energy = false, gpu_energy = false, cpu_util = false;
  for (const auto& c : a.cells) {
    if (c.runs_ok == 0) continue;
    const bool gpu = is_gpu(c.device);
    if (!c.energy_per_sample_j.ok()) (gpu ? gpu_energy : cpu_energy) = true;
    if (!gpu && !c.cpu_util_pct_mean.ok()) cpu_util = true;
  }
  // Only a source that gave no reading at all has one reason for every cell; a cell-specific
  // absence (a window too short, a data-parallel cell) is explained in the answers.
  std::vector<std::string> out;
  auto line = [&](bool absent, const char* reading, const std::string& reason) {
    if (absent && !reason.empty()) out.push_back(fmt::format("{}: {}", reading, reason));
  };
  line(cpu_energy, "CPU energy", why.rapl);
  line(gpu_energy, "GPU energy", why.nvml);
  line(cpu_util, "CPU utilisation", source_reason(in.runs, "proc"));
  return out;
}

}  // namespace

void build_answers(const ReportInput& in, Analysis& a) {
  const GpuAbsence no_gpu = gpu_absence(in, a);
  const Reasons why{no_gpu.full, no_gpu.again, source_reason(in.runs, "nvml"), source_reason(in.runs, "rapl"),
                    source_reason(in.runs, "hwmon")};
  for (auto* f : {answer_rq1, answer_rq2, answer_rq3, answer_rq4, answer_rq5, answer_simple_network})
    a.answers.push_back(f(in, a, why));
  a.summary_absences = summary_absences(in, a, why);
}

}  // namespace trainscope::report_detail

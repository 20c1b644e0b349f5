// The record's figures once the steps are done: headline samples/s and phases, the profiler's and
// the sampler's cost, epoch times and the time for the requested epochs, MFU.
#include <fmt/format.h>

#include <algorithm>

#include "common/text.h"
#include "train/lm_task.h"
#include "train/task_loss.h"
#include "train/train_loop.h"
#include "train/variant_exec.h"
#include "train/mfu.h"

namespace trainscope {

int64_t planned_train_steps(const TrainConfig& cfg, int64_t train_count, int64_t batch_size) {
  const int64_t per_epoch = (train_count + batch_size - 1) / std::max<int64_t>(batch_size, 1);
  const int64_t all = per_epoch * cfg.epochs;
  return cfg.max_steps > 0 ? std::min(all, cfg.max_steps) : all;
}

std::string profiled_epochs_note(const std::vector<EpochRecord>& epochs, int64_t profiled_steps) {
  int64_t full = 0, unfinished = 0, complete = 0;
  for (const auto& e : epochs) {
    complete += e.complete;
    if (e.profiled_steps > 0) ++(e.complete ? full : unfinished);
  }
  if (full > 0)
    return fmt::format("{} {} the {} (profiler cost included); the time for the requested epochs is estimated from "
                       "the headline samples/s",
                       count_of(full, "epoch time"), full == 1 ? "includes" : "include",
                       count_of(profiled_steps, "profiled step"));
  if (unfinished == 0) return "";
  return fmt::format("the {} fell in an epoch that did not finish, so no measured epoch time includes "
                     "them; {} estimated from the headline samples/s",
                     count_of(profiled_steps, "profiled step"),
                     complete > 0 ? "the time for the requested epochs is"
                                  : "no epoch finished: the epoch time and the time for the requested epochs are");
}

void rate_instrumentation_cost(RunRecord& r) {
  auto& m = r.measurement;
  if (m.sampler_cpu_pct_mean && r.intra_op_threads > 0)
    m.sampler_cpu_share_pct = *m.sampler_cpu_pct_mean / static_cast<double>(r.intra_op_threads);
  // The worst case, not the average over cores: a poll can hold up a step whose threads wait for
  // each other for as long as it holds one of their cores, so its cost to throughput is bounded
  // by its CPU time per second of wall time on one core (docs/telemetry.md#cost-to-the-workload).
  const bool sampler_over = m.sampler_cpu_pct_mean && *m.sampler_cpu_pct_mean > 3.0;
  const bool profiler_over = m.profile_cost_pct && *m.profile_cost_pct > 3.0;
  m.instrumentation_over_3pct = sampler_over || profiler_over;
  if (sampler_over)
    r.notes.push_back(fmt::format("trainscope's telemetry sampler used {:.1f} % of one core (> 3 %), which a step whose "
                                  "threads wait for each other can lose in throughput ({:.2f} % of the run's {} "
                                  "intra-op threads' cores): raise --telemetry-interval",
                                  *m.sampler_cpu_pct_mean, m.sampler_cpu_share_pct.value_or(0), r.intra_op_threads));
  if (profiler_over)
    r.notes.push_back(fmt::format("the profiling window added {:.1f} % to the training time (> 3 %; its steps took "
                                  "{:.2f}× the headline step time on average); the headline figures exclude it",
                                  *m.profile_cost_pct, *m.profiled_step_ms_mean / *m.headline_step_ms_mean));
}

// The run's figures: headline samples/s and phases, self-perturbation, epoch times.
void TrainLoop::figures() {
  auto& mw = r_.measurement;
  if (ph_.steps > 0) {
    double k = 1.0 / static_cast<double>(ph_.steps);
    for (double* v : {&ph_.data_ms, &ph_.h2d_ms, &ph_.forward_ms, &ph_.backward_ms, &ph_.optimizer_ms, &ph_.step_ms})
      *v *= k;
    r_.phases = ph_;
  } else {
    r_.notes.push_back(fmt::format("phase breakdown absent: the run had {} steps, none in the headline window "
                                   "(after the {} warm-up steps, before the profiler)",
                                   global_step_, cfg_.warmup_steps));
  }
  if (mw.headline_samples > 0 && mw.headline_time_s > 0) {
    r_.steady_samples_per_s = static_cast<double>(mw.headline_samples) / mw.headline_time_s;
  } else {
    r_.notes.push_back(fmt::format("steady-state samples/s absent: {} steps, none in the headline window (after the "
                                   "{} warm-up steps, before the profiler); lower --warmup-steps or run longer",
                                   global_step_, cfg_.warmup_steps));
  }
  mw.headline_step_ms_mean = headline_ms_.mean();
  mw.profiled_step_ms_mean = profiled_ms_.mean();
  mw.after_profile_step_ms_mean = after_ms_.mean();
  mw.profile_step_time_ratio = profile_step_time_ratio(headline_ms_, profiled_ms_, graph_ != nullptr);
  if (mw.headline_step_ms_mean && mw.profiled_step_ms_mean && *mw.headline_step_ms_mean > 0) {
    if (train_time_ > 0)
      mw.profile_cost_pct = 100.0 * static_cast<double>(mw.profiled_steps) *
                            (*mw.profiled_step_ms_mean - *mw.headline_step_ms_mean) / (train_time_ * 1000.0);
  }
  if (spec_.profile_skip_first_auto && r_.stop_reason == "time_budget" && mw.profiled_steps == 0)
    r_.notes.push_back(fmt::format("the time budget ended the run at step {}, before the profiling window placed at the "
                                   "end of the {} planned steps: nothing was profiled (the headline stays undisturbed); "
                                   "set --profile-skip or --max-steps to profile such runs",
                                   global_step_, planned_train_steps(cfg_, shard_samples_, batch_size_)));
  epoch_time_figures();
  mfu_figures();
  language_model_figures(r_);
  target_figures();
}

// MFU (train/mfu.h): 3 x forward FLOPs x samples/s against the peak of the variant's precision.
// LibTorch lets cuDNN run fp32 convolutions on TF32 tensor cores by default
// (at::globalContext().allowTF32CuDNN()), so a CUDA run of a convolutional model is rated
// against the TF32 peak even in eager (against FP32's it would overstate MFU several times).
void TrainLoop::mfu_figures() {
  const bool cudnn_tf32 = cuda_ && !variant_.bf16 && at::globalContext().allowTF32CuDNN() && has_4d_parameters(*model_);
  auto f = compute_mfu(r_.forward_flops_per_sample, r_.steady_samples_per_s, spec_.device, r_.device_name,
                       variant_.bf16, variant_.tf32 || cudnn_tf32);
  if (cudnn_tf32 && !variant_.tf32 && f.mfu_pct)
    r_.notes.push_back("MFU against the TF32 peak: cuDNN runs this model's fp32 convolutions on TF32 tensor cores "
                       "(LibTorch's default); its matrix products stay fp32 (docs/variants.md#mfu)");
  r_.train_flops_per_s = f.train_flops_per_s;
  r_.mfu_pct = f.mfu_pct;
  r_.peak_flops_per_s = f.peak_flops_per_s;
  r_.mfu_precision = f.precision;
  r_.mfu_note = f.note;
}

void TrainLoop::epoch_time_figures() {
  std::vector<double> full_epochs;
  double measured_total = 0;
  int64_t profiled_epochs = 0;
  for (const auto& e : r_.epochs) {
    if (e.complete) full_epochs.push_back(e.epoch_time_s);
    measured_total += e.epoch_time_s + e.eval_time_s;
    profiled_epochs += e.profiled_steps > 0;
  }
  if (!full_epochs.empty()) {
    double s = 0;
    for (double v : full_epochs) s += v;
    r_.mean_epoch_time_s = s / static_cast<double>(full_epochs.size());
  }
  if (auto note = profiled_epochs_note(r_.epochs, r_.measurement.profiled_steps); !note.empty())
    r_.notes.push_back(std::move(note));
  if (r_.epochs_completed == cfg_.epochs && !r_.stopped_early && profiled_epochs == 0) {
    r_.time_for_requested_epochs_s = measured_total;
    r_.time_for_requested_epochs_is_estimate = false;
  } else if (r_.steady_samples_per_s) {
    // One end-of-epoch evaluation per epoch (mid-epoch --eval-every-steps ones are not part of
    // training for N epochs).
    double eval_mean = 0;
    for (const auto& e : r_.epochs) eval_mean += e.eval_time_s / static_cast<double>(r_.epochs.size());
    r_.time_for_requested_epochs_s =
        static_cast<double>(cfg_.epochs) * (static_cast<double>(shard_samples_) / *r_.steady_samples_per_s + eval_mean);
    r_.time_for_requested_epochs_is_estimate = true;
  }
}

}  // namespace trainscope

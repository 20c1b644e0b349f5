// One cell's training with the hooks of the other components (profiler, inference, telemetry,
// stall watch), and the minimum measured time that may lengthen it.
#include <fmt/format.h>

#include "common/text.h"
#include "dist/rank.h"
#include "infer/bench.h"
#include "matrix/matrix.h"
#include "train/device.h"
#include "train/min_time.h"
#include "trainscope/variants.h"

namespace trainscope::matrix_detail {

// Trains one cell with the other components' hooks; a failure becomes the record's status.
// An I/O error writing the run folder is not the run's fault: the run is recorded with what it
// measured, then the matrix stops (exit 5).
void Matrix::train_cell(RunSpec& spec, RunRecord& rec, ProgressBar& progress) {
  const std::string& dev = spec.device;
  TrainHooks hooks;
  hooks.progress = &progress;
  hooks.stop_requested = stop_;
  // ---- hooks of other components attach here (profiler: on_step_*/on_phase_span;
  //      inference: on_trained). Keep each component's code to a few lines + a call
  //      into its own src/<component>/ files.
  // profile: the scheduled operator-profiling window (src/profile/).
  std::unique_ptr<RunProfiler> profiler;
  // dist: a single-process step, evaluation or inference query without progress for
  // dist.timeout_s is reported as stalled (watch_stalls)
  std::unique_ptr<dist::StallWatch> stall;
  if (cfg_.profile.enabled) {  // placed after the headline window (docs/profiling.md#measurement-protocol)
    std::string fit_note;
    spec.profile = resolve_profile_schedule(cfg_.profile, spec.train.warmup_steps,
                                            planned_train_steps(spec.train, workload_->data.train.count, spec.step_samples()),
                                            &fit_note);
    spec.profile_skip_first_auto = cfg_.profile.skip_first < 0;
    if (!fit_note.empty()) rec.notes.push_back(fit_note);
    profiler = std::make_unique<RunProfiler>(*spec.profile, spec.run_id, dev, origin_);
    hooks.on_step_begin = [p = profiler.get()](int64_t s) { p->on_step_begin(s); };
    hooks.on_step_end = [p = profiler.get()](int64_t s) { p->on_step_end(s); };
    hooks.on_phase_span = [p = profiler.get()](int64_t s, const char* ph, int64_t t0, int64_t t1) {
      p->on_phase_span(s, ph, t0, t1);
    };
  }
  if (cfg_.inference.enabled && workload_->data.train.is_tokens())
    rec.notes.push_back("inference not measured after training: a language model's inference is generation; measure "
                        "it on this run's checkpoint with `trainscope infer --run <run folder>` (pp/tg tokens/s, "
                        "TTFT, TPOT; docs/generation.md)");
  else if (cfg_.inference.enabled)  // single-stream + offline (+ server) on the trained model
    hooks.on_trained = [&](Model& m, const torch::Device& d) {
      // A run that ends inside the profiling window: close it first, so inference
      // operators never land in the training operator table or trace.
      if (profiler) profiler->stop();
      notice(fmt::format("{}: training done; measuring inference (Ctrl-C ends it early)", spec.run_id));
      const auto& w = *workload_;
      auto inference = inference_after_training(
          m, d, w.test_x.numel() > 0 ? w.test_x : w.train_x, cfg_.inference, cfg_.train.seed, sampler_.get(),
          sampler_ ? telemetry_device(dev, res_.provenance, telemetry_gpus_) : "", stop_,
          /*cuda_graphs=*/parse_variant(spec.variant, "--variants").graphs, [&stall] {
            if (stall) stall->progress();  // a query returned
          });
      std::unique_lock<std::timed_mutex> lock;  // the record is the rescue's while the run waits here
      if (hooks.rescue) lock = std::unique_lock<std::timed_mutex>(hooks.rescue->mu);
      rec.inference = std::move(inference);
    };
  // telemetry: the run GPU's energy counter at the windows' edges (docs/telemetry.md#energy)
  if (sampler_ && dev != "cpu")
    hooks.on_window_edge = [s = sampler_.get()] { s->read_energy_now(); };
  // a run that hangs in its model when the process must end (MatrixRescue, trainscope/runner.h)
  RunRescue rescue;
  if (dist::current_rank() < 0) {
    stall = watch_stalls(spec, hooks);
    hooks.rescue = &rescue;
  }
  // ---- end of component hooks
  set_live_run({&rec, hooks.rescue, stall.get()});
  try {
    train_run(spec, *workload_, hooks, &rec);
    if (rec.status == RunStatus::kOk) publish_checkpoint(spec, rec);
  } catch (...) {
    // An Error(kIo) (the checkpoint could not be written: a full disk) keeps the run's
    // measurements in its record and stops the matrix after it is merged (run_cell).
    if (record_failure(std::current_exception(), spec, rec)) io_stop_ = rec.failure_reason;
  }
  set_live_run({});
  if (stall)
    for (auto& n : stall->notes()) rec.notes.push_back(n);
  stall.reset();
  fill_run_telemetry(dev, rec);
  if (!sampler_failure_.empty()) rec.notes.push_back(RunRecord::kSamplerFailedNote + sampler_failure_);
  focus_telemetry("");
  finish_run_profile(profiler, rec);
  rate_instrumentation_cost(rec);
  dist::finish_run_record(rec);  // data-parallel runs: rank 0's record gets every rank's figures
}

void Matrix::set_live_run(const LiveRun& live) {
  std::lock_guard<std::mutex> lock(live_mu_);
  live_ = live;
}

// MatrixRescue (trainscope/runner.h), on the caller's thread: the run in progress, once it is
// seen waiting in its model (its rescue lock free), completed and merged as an interrupted run.
// The training thread is then left blocked on that lock until the process ends.
bool Matrix::salvage_live_run(const std::string& why) {
  std::lock_guard<std::mutex> lock(live_mu_);
  if (!live_.rec || !live_.rescue) return false;
  std::unique_lock<std::timed_mutex> held(live_.rescue->mu, std::defer_lock);
  if (!held.try_lock_for(std::chrono::seconds(5))) return false;
  if (live_.rescue->salvage) live_.rescue->salvage();
  RunRecord rec = *live_.rec;
  rec.status = RunStatus::kInterrupted;
  rec.stopped_early = true;
  rec.stop_reason = "interrupted";
  rec.error_kind = "interrupted";
  rec.failure_reason = why;
  if (live_.stall)
    for (auto& n : live_.stall->notes()) rec.notes.push_back(n);
  fill_run_telemetry(rec.device, rec);
  merge_run(std::move(rec));
  report([&](Reporter& r) { r.finish(res_.runs); });
  return true;
}

// dist: the stall watch (src/dist/stall.h) around the step hooks of the other components.
std::unique_ptr<dist::StallWatch> Matrix::watch_stalls(const RunSpec& spec, TrainHooks& hooks) {
  auto w = std::make_unique<dist::StallWatch>(
      spec.run_id, cfg_.dist.timeout_s, [this, dev = spec.device] { return recent_telemetry(dev); },
      [this](const std::string& m) { notice(m); });
  if (cfg_.dist.inject_fault == "hang" && cfg_.dist.inject_fault_rank == 0) w->inject_slow_step(cfg_.dist.inject_fault_step);
  hooks.on_step_begin = [s = w.get(), f = hooks.on_step_begin](int64_t k) {
    s->step_begin(k);
    if (f) f(k);
  };
  hooks.on_step_end = [s = w.get(), f = hooks.on_step_end](int64_t k) {
    if (f) f(k);
    s->step_end(k);
  };
  hooks.on_evaluation = [s = w.get()](bool running) {
    if (running) s->work_begin("the evaluation on the test set");
    else s->work_end();
  };
  hooks.on_eval_batch = [s = w.get()] { s->progress(); };
  if (hooks.on_trained)  // inference after training: its queries call progress() (train_cell)
    hooks.on_trained = [s = w.get(), f = hooks.on_trained](Model& m, const torch::Device& d) {
      s->work_begin("the inference measurement after training");
      f(m, d);  // inference_after_training never throws
      s->work_end();
    };
  return w;
}

// ---- per-run post-processing of other components (profile summary and trace, ...)
void Matrix::finish_run_profile(std::unique_ptr<RunProfiler>& profiler, RunRecord& rec) {
  if (!profiler) return;
  try {  // profile: op table, step breakdown, trace (never fails the run)
    rec.profile = profiler->finish(res_.run_dir, rec, sampler_ ? sampler_->series() : std::vector<CounterSeries>{},
                                   &res_.provenance);
  } catch (const std::exception& e) {
    rec.notes.push_back(fmt::format("profile absent: {}", e.what()));
  }
  profiler.reset();
}

// The minimum measured time (train/min_time.h): a calibration pass of a few steps times the
// cell, and a cell whose requested epochs would give a shorter headline window trains more
// epochs. Returns the calibrated headline seconds per epoch (0 when not calibrated).
double Matrix::fit_min_time(RunSpec& spec) {
  const double min_s = effective_min_time_s(cfg_.train, cfg_.telemetry);
  if (!min_time_applies(spec.train, min_s, dist::current_rank() < 0)) return 0;
  const double step_s = calibrate_step_s(spec);
  const int64_t per_epoch = (workload_->data.train.count + spec.step_samples() - 1) / spec.step_samples();
  const int64_t planned = planned_train_steps(spec.train, workload_->data.train.count, spec.step_samples());
  int64_t tail = 0;  // steps the profiler takes at the end of the plan
  if (cfg_.profile.enabled) {
    std::string unused;
    const auto p = resolve_profile_schedule(cfg_.profile, spec.train.warmup_steps, planned, &unused);
    if (const int64_t first = profile_first_touched_step(p); first >= 0) tail = std::max<int64_t>(planned - first, 0);
  }
  const int64_t epochs = epochs_for_min_time(spec.train.epochs, per_epoch, step_s, spec.train.warmup_steps, tail, min_s);
  if (epochs > spec.train.epochs) {
    notice(fmt::format("{}: {:.2f} s of headline training per epoch, shorter than the minimum measured time {} s: training "
                       "{} (--min-time 0 keeps the requested {})",
                       spec.run_id, step_s * static_cast<double>(per_epoch), format_number(min_s),
                       count_of(epochs, "epoch"), count_of(spec.train.epochs, "epoch")));
    spec.train.epochs = epochs;
  }
  return step_s * static_cast<double>(per_epoch);
}

// Seconds per headline step of a calibration pass: the cell's own model and data, the warm-up
// and kCalibrationSteps more steps, no profiler, inference or checkpoint; 0 when it failed (the
// cell's own run then reports why).
double Matrix::calibrate_step_s(const RunSpec& spec) {
  constexpr int64_t kCalibrationSteps = 20;
  RunSpec c = spec;
  c.run_id += "-calibration";
  c.checkpoint_path.clear();
  c.profile.reset();
  c.train.max_steps = c.train.warmup_steps + kCalibrationSteps;
  TrainHooks hooks;
  hooks.stop_requested = stop_;
  RunRecord r;
  try {
    train_run(c, *workload_, hooks, &r);
  } catch (const std::exception&) {
    return 0;
  }
  const auto& m = r.measurement;
  if (r.status != RunStatus::kOk || m.headline_steps <= 0 || m.headline_time_s <= 0) return 0;
  return m.headline_time_s / static_cast<double>(m.headline_steps);
}

}  // namespace trainscope::matrix_detail

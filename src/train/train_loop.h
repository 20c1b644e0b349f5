// The training loop behind train_run (train/trainer.h), one class whose members are defined by
// idea across several files:
//   trainer.cpp       the run's set-up, the loop over epochs, the wrap-up (memory peaks, checkpoint)
//   train_step.cpp    one step (batch, eager compute, NaN check, stop decisions) and an epoch's end
//   graph_replay.cpp  the CUDA-graph step: capture and replay
//   measurement.cpp   the measurement protocol: each step's role, the headline window, salvage
//   run_figures.cpp   the record's figures once the steps are done (samples/s, phases, MFU, estimates)
//   evaluation.cpp    the test-set evaluation, time-to-accuracy and time to a target loss
//   grad_accum.cpp    a step of several micro-batches (--grad-accum) and the learning-rate schedule
// Internal to src/train/.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "dist/grad_sync.h"
#include "train/batch_source.h"
#include "train/device.h"
#include "train/graph_step.h"
#include "train/lr_schedule.h"
#include "train/optimizer.h"
#include "train/step_times.h"
#include "train/trainer.h"
#include "trainscope/variants.h"

namespace trainscope {

using Clock = std::chrono::steady_clock;

inline int64_t ns_since(Clock::time_point origin, Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t - origin).count();
}
inline double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Which part of the measurement protocol a step belongs to (docs/profiling.md#measurement-protocol).
enum class StepRole { kWarmup, kHeadline, kProfiled, kAfterProfile };

// One epoch's per-step scratch.
struct EpochState {
  int64_t epoch = 0;
  torch::Tensor perm, sums;  // sums: summed loss and correct count (train/step_sums.h)
  const int64_t* perm_ptr = nullptr;
  std::vector<double> host_data_ms, host_step_ms;
  std::vector<char> counted;
  int64_t steps = 0, samples = 0, headline_samples = 0, profiled_steps = 0;
  Clock::time_point start;
};

// While the run waits in its model (a step's compute, an evaluation, inference after training):
// the run's rescue lock is released, so its state can be read if the model never returns
// (RunRescue, train/trainer.h); taken back when the model returned.
class ModelWait {
 public:
  explicit ModelWait(std::unique_lock<std::timed_mutex>& held) : held_(held), released_(held.owns_lock()) {
    if (released_) held_.unlock();
  }
  ~ModelWait() {
    if (released_) held_.lock();
  }
  ModelWait(const ModelWait&) = delete;
  ModelWait& operator=(const ModelWait&) = delete;

 private:
  std::unique_lock<std::timed_mutex>& held_;
  bool released_;
};

// train_run's state, split along its seams: set_up, step, finish_epoch, figures, wrap_up.
class TrainLoop {
 public:
  TrainLoop(const RunSpec& spec, const Workload& w, TrainHooks& hooks, RunRecord& r)
      : spec_(spec), w_(w), hooks_(hooks), r_(r), cfg_(spec.train), dev_(spec.device), cuda_(dev_.is_cuda()) {}
  void run();

 private:
  void describe_run();
  void set_up();
  void set_up_variant();
  void keep_data_on_device();
  void plan_windows();
  StepRole role(int64_t step) const;
  void begin_epoch(EpochState& e);
  bool step(EpochState& e, int64_t s);
  // the step's compute: eager (forward, loss, backward, optimizer) or one graph replay
  std::pair<torch::Tensor, torch::Tensor> eager_compute(const torch::Tensor& x, const torch::Tensor& y, int64_t s,
                                                        Clock::time_point* host_marks);
  // --grad-accum N > 1: the step's N micro-batches (loss and backward each), one optimizer step;
  // returns the step's mean loss (detached) after adding each micro-batch to `sums`
  torch::Tensor accumulated_compute(const torch::Tensor& x, const torch::Tensor& y, int64_t s,
                                    Clock::time_point* host_marks, const torch::Tensor& sums);
  void apply_learning_rate();  // the schedule's rate for global_step_ (train/lr_schedule.h)
  void set_up_recipe();        // grad accumulation and the schedule: the record, the graphs variant
  void graph_compute(const torch::Tensor& bx, const torch::Tensor& by, bool filled, int64_t s, Clock::time_point* host_marks);
  void try_capture(const torch::Tensor& x, const torch::Tensor& y, int64_t s);
  bool fetch_batch(EpochState& e, int64_t s, int64_t& m, torch::Tensor& bx, torch::Tensor& by);
  void phase_spans(int64_t step, Clock::time_point t0, Clock::time_point t_data, const Clock::time_point* host_marks);
  // --target-accuracy (docs/variants.md#time-to-accuracy)
  void maybe_evaluate_mid_epoch(EpochState& e);
  void check_target(double accuracy_pct, double trained_s, int64_t end_ns);
  void check_target_loss(double loss, double trained_s, int64_t end_ns);  // --target-loss
  bool has_target() const;
  void target_reached();
  void target_figures();
  void after_step(EpochState& e, int64_t s, int64_t m, Clock::time_point t0, Clock::time_point t_data,
                  const Clock::time_point* host_marks);
  bool should_stop(const EpochState& e, int64_t s);
  dist::StopWish local_stop_wish() const;
  void drain_stop_votes(const EpochState& e);
  void open_headline();
  void close_headline(Clock::time_point t);
  void finish_epoch(EpochState& e);
  void add_epoch_phases(const EpochState& e);
  void salvage_after_failure(const EpochState* e) noexcept;
  void epochs(EpochState& e);
  void rescue() noexcept;  // RunRescue::salvage (train/trainer.h)
  void evaluate_epoch(EpochRecord& er);
  std::pair<double, double> evaluate_test_set();  // with the on_evaluation / on_eval_batch hooks
  void figures();
  void mfu_figures();
  void epoch_time_figures();
  void wrap_up();

  const RunSpec& spec_;
  const Workload& w_;
  TrainHooks& hooks_;
  RunRecord& r_;
  const TrainConfig& cfg_;
  torch::Device dev_;
  const bool cuda_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<StepOptimizer> opt_;
  std::unique_ptr<PhaseClock> clock_;
  std::unique_ptr<BatchSource> batches_;
  std::unique_ptr<dist::RunSync> dist_;  // data-parallel runs only (src/dist/grad_sync.h)
  torch::Generator gen_;
  int64_t shard_samples_ = 0;  // training samples of this rank (all of them in one process)
  // batch_size_: the samples of one optimizer step, grad_accum_ micro-batches of micro_batch_
  // (the run's batch size) each
  int64_t batch_size_ = 0, steps_per_epoch_ = 0, micro_batch_ = 0, grad_accum_ = 1;
  LrSchedule schedule_;
  double lr_now_ = 0;  // the rate of the current step
  int staging_ = 1;
  bool rss_reset_ = false;

  // the execution variant (trainscope/variants.h, train/variant_exec.h)
  Variant variant_;
  at::MemoryFormat format_ = at::MemoryFormat::Contiguous;
  StepForward forward_;                        // the one forward of eager and graph steps
  bool want_graph_ = false;                    // graphs variant on CUDA (or forced): capture once
  int64_t capture_at_ = 0;                     // global step whose batch is used for the capture
  std::unique_ptr<CapturedTrainStep> graph_;
  bool replayed_ = false;                      // the last step was a graph replay
  int64_t samples_total_ = 0;                  // training samples so far (all epochs)
  double epoch_paused_s_ = 0;                  // evaluation time inside the current epoch (mid-epoch evals)
  Clock::time_point epoch_start_;
  // A training set that fits on the GPU is kept there: batches are gathered on the device (no
  // host gather, no host-to-device copy per step; docs/variants.md#resident-data).
  bool resident_ = false;
  torch::Tensor dev_x_, dev_y_, dev_perm_;

  PhaseBreakdown ph_;
  int64_t global_step_ = 0;
  double train_time_ = 0, eval_time_total_ = 0;
  // The last --eval-every-steps evaluation: an epoch that ends at that step reuses it (same weights).
  struct Evaluation {
    int64_t step = -1;  // global step it was taken at
    double accuracy_pct = 0, loss = 0, seconds = 0;
  } mid_eval_;
  Clock::time_point train_start_;
  Clock::time_point last_step_end_;  // when the last completed step ended (a failure's cut-off)
  bool stop_ = false;
  // RunRescue (train/trainer.h): the lock while the run's state is being written, the epoch whose
  // steps are not booked yet, the epoch record whose evaluation runs, whether figures() ran
  std::unique_lock<std::timed_mutex> held_;
  const EpochState* unbooked_ = nullptr;
  const EpochRecord* evaluating_ = nullptr;
  bool figured_ = false;

  // The headline window: [warmup_steps, first_touched_) of the run's steps.
  int64_t first_touched_ = INT64_MAX;  // first step a profiler is on for
  bool headline_open_ = false, headline_closed_ = false;
  Clock::time_point segment_start_;    // start of the window's part in the current epoch
  StepMs headline_ms_, profiled_ms_, after_ms_;
};

}  // namespace trainscope

// One training run: a model, a device, a batch size, on an in-memory data set.
#pragma once

#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "trainscope/config.h"
#include "trainscope/dataset.h"
#include "trainscope/progress.h"
#include "trainscope/run_record.h"
#include "trainscope/variants.h"
#include "workload/model.h"

namespace trainscope {

/// The data of a matrix, loaded once and shared by every run (host memory, float32 NCHW).
struct Workload {
  DatasetPair data;
  torch::Tensor train_x, train_y, test_x, test_y;  // CPU tensors viewing `data` (no copy)
  std::string dataset_name;
};
Workload make_workload(DatasetPair data);

struct RunSpec {
  std::string run_id;
  std::string device;          // "cpu", "cuda:0"
  std::string model;
  int64_t batch_size = 64;     // the micro-batch (a forward pass) when train.grad_accum > 1
  int64_t repeat = 0;
  TrainConfig train;
  /// Samples of one optimizer step: grad_accum micro-batches of batch_size.
  int64_t step_samples() const { return batch_size * train.grad_accum; }
  std::string checkpoint_path;  // "" = do not save
  std::chrono::steady_clock::time_point origin;  // the matrix clock's zero
  /// The profiler's resolved schedule when one runs (resolve_profile_schedule, profile.h):
  /// the headline window ends before its first touched step (docs/profiling.md#measurement-protocol).
  std::optional<ProfileConfig> profile;
  bool profile_skip_first_auto = false;  // `profile` had skip_first = -1 (auto) before resolving
  std::string variant = "eager";  // canonical execution variant (trainscope/variants.h)
};

/// Optimizer steps a run plans: epochs x ceil(train_count / batch), or max_steps when smaller.
int64_t planned_train_steps(const TrainConfig& cfg, int64_t train_count, int64_t batch_size);

/// Completes r.measurement's self-perturbation figures once telemetry is in
/// (sampler_cpu_pct_mean set by the caller, or absent): the sampler's share of the run's
/// intra_op_threads cores, the profiler's share of the training time, the > 3 % flag and a
/// note when it is raised. Definitions: docs/telemetry.md#cost-to-the-workload.
void rate_instrumentation_cost(RunRecord& r);

/// The note on epochs that held profiled steps: finished epochs whose measured time includes the
/// profiler's cost, or, when the profiled steps fell in an epoch that never finished, that no
/// measured epoch time includes them (and whether the epoch time is an estimate). "" when no
/// epoch held a profiled step.
std::string profiled_epochs_note(const std::vector<EpochRecord>& epochs, int64_t profiled_steps);

/// The record of a run that hangs in its model, for a process that must end before the run
/// returns (an interrupt's deadline: tools/trainscope/interrupt.h). The training thread holds
/// `mu` while it touches the run's state and releases it only while it waits in the model (a
/// step's compute, an evaluation, inference after training); `salvage`, called with `mu` held
/// (so only while the run waits in its model), completes the record as far as it was measured:
/// the headline window up to the last finished step, the phases, the training time and the
/// figures from them, an epoch whose evaluation hangs. Set by train_run for the run's lifetime;
/// after a salvage the training thread is left blocked (the process is about to end).
struct RunRescue {
  std::timed_mutex mu;
  std::function<void()> salvage;
};

/// Hooks the matrix passes to a run (all optional).
struct TrainHooks {
  ProgressBar* progress = nullptr;
  const std::atomic<bool>* stop_requested = nullptr;   // SIGINT: finish the step, then stop
  /// Called at the start of each step with the global step index (0-based); the profiler's
  /// schedule hangs off this.
  std::function<void(int64_t step)> on_step_begin;
  std::function<void(int64_t step)> on_step_end;
  /// Host-side spans of each step's phases, called after the step: phase is one of "data",
  /// "h2d", "forward", "backward", "optimizer"; times are matrix-clock ns (host steady clock;
  /// on a GPU these are launch times, the device times come from CUDA events).
  std::function<void(int64_t step, const char* phase, int64_t t0_ns, int64_t t1_ns)> on_phase_span;
  /// Called when an evaluation on the test set starts (true) and when it returned (false), and
  /// after each of its batches (on_eval_batch): the stall watch names a forward pass that never
  /// returns there as it does in a training step.
  std::function<void(bool running)> on_evaluation;
  std::function<void()> on_eval_batch;
  /// Called once after the last step, with the trained model still on `device` (inference
  /// measurements hang off this), before the checkpoint is written.
  std::function<void(Model& model, const torch::Device& device)> on_trained;
  /// Called at the edges of the run's energy windows, on the training thread, outside the
  /// timed windows: once when the headline window opens (after its device synchronisation,
  /// before its clock starts) and once after the last step (after the last epoch's end time).
  /// Telemetry reads the run GPU's energy counter here (TelemetrySampler::read_energy_now).
  std::function<void()> on_window_edge;
  /// Where the run's state can be read while it hangs in its model (RunRescue above).
  RunRescue* rescue = nullptr;
};

/// Trains one run and returns its record. Bad input throws trainscope::Error before any
/// training; failures during training (NaN loss, out of memory, c10::Error) also throw and the
/// matrix turns them into failed records. The record is also filled as far as measured in
/// `partial` so nothing measured is lost when it throws.
RunRecord train_run(const RunSpec& spec, const Workload& w, TrainHooks& hooks, RunRecord* partial = nullptr);

/// The record's settings of a run of `w` with `cfg` (data set, sizes, optimizer, learning rate,
/// seed, intra-op threads, epochs and warm-up requested): the same for a trained run and for one
/// recorded as not applicable, so neither holds made-up zeros.
void fill_run_settings(RunRecord& r, const TrainConfig& cfg, const Workload& w);

/// The description written beside each checkpoint (checkpoints/<run_id>.json): model name,
/// input shape, classes, normalisation mean/std and the data it was trained on, so that
/// `trainscope infer` can rebuild the model and its inputs.
nlohmann::json checkpoint_description(const RunSpec& spec, const DataConfig& data, const Workload& w);

/// Evaluates `model` on (x, y) in eval mode without gradients; returns {accuracy_pct, mean loss}.
/// `after_batch` (may be empty) is called after each batch's forward pass: a sign of progress.
std::pair<double, double> evaluate(Model& model, const torch::Tensor& x, const torch::Tensor& y,
                                   const torch::Device& device, int64_t batch_size,
                                   const std::function<void()>& after_batch = {});

}  // namespace trainscope

#include "train/lm_task.h"
#include "train/task_loss.h"
#include "train/trainer.h"

#include <algorithm>
#include <fmt/format.h>
#include <sys/resource.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "common/text.h"
#include "train/batch_source.h"
#include "dist/grad_sync.h"
#include "train/compat.h"
#include "train/device.h"
#include "train/graph_step.h"
#include "train/step_sums.h"
#include "train/step_times.h"
#include "train/optimizer.h"
#include "train/variant_exec.h"
#include "trainscope/error.h"
#include "trainscope/mfu.h"
#include "trainscope/profile.h"
#include "trainscope/stats.h"

namespace trainscope {

using Clock = std::chrono::steady_clock;

namespace {

int64_t ns_since(Clock::time_point origin, Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t - origin).count();
}
double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Peak RSS of this process since the last reset_peak_rss() (Linux: VmHWM in /proc/self/status).
std::optional<int64_t> peak_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return std::nullopt;
}

// Writing "5" to clear_refs resets VmHWM to the current RSS (Linux >= 4.0, proc(5)).
bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  if (!f) return false;
  f << "5";
  return static_cast<bool>(f.flush());
}

// Number of staging buffers: the host may run this many steps ahead of the device.
constexpr int kStaging = 4;

}  // namespace

Workload make_workload(DatasetPair data) {
  Workload w;
  w.data = std::move(data);
  auto& tr = w.data.train;
  auto& te = w.data.test;
  if (tr.is_tokens()) {  // windows and their next tokens: two views of the token stream (trainscope/dataset.h)
    view_token_windows(w);
    return w;
  }
  const int64_t resident = tr.sample_numel() > 0 ? static_cast<int64_t>(tr.images.size()) / tr.sample_numel() : 0;
  w.train_x = torch::from_blob(tr.images.data(), {resident, tr.channels, tr.height, tr.width}, torch::kFloat);  // < count when streamed
  w.train_y = torch::from_blob(tr.labels.data(), {tr.count}, torch::kLong);
  w.test_x = torch::from_blob(te.images.data(), {te.count, te.channels, te.height, te.width}, torch::kFloat);
  w.test_y = torch::from_blob(te.labels.data(), {te.count}, torch::kLong);
  auto n = tr.name;
  auto pos = n.rfind(' ');
  w.dataset_name = pos == std::string::npos ? n : n.substr(0, pos);
  return w;
}

std::pair<double, double> evaluate(Model& model, const torch::Tensor& x, const torch::Tensor& y,
                                   const torch::Device& device, int64_t batch_size) {
  torch::NoGradGuard no_grad;
  model.set_training(false);
  int64_t n = x.size(0);
  auto correct = torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(device));
  auto loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
  int64_t rows = 0;  // predictions: samples, or tokens of a language model
  for (int64_t s = 0; s < n; s += batch_size) {
    int64_t m = std::min(batch_size, n - s);
    auto bx = x.narrow(0, s, m).to(device);
    auto by = y.narrow(0, s, m).to(device);
    auto logits = prediction_rows(model.forward(bx));  // language models: one row per token
    auto targets = target_rows(by);
    correct += logits.argmax(1).eq(targets).sum();
    loss_sum += torch::nn::functional::cross_entropy(logits, targets, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum)).to(torch::kDouble);
    rows += targets.size(0);
  }
  model.set_training(true);
  double acc = 100.0 * static_cast<double>(correct.item<int64_t>()) / static_cast<double>(std::max<int64_t>(rows, 1));
  return {acc, loss_sum.item<double>() / static_cast<double>(std::max<int64_t>(rows, 1))};
}

namespace {

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
  void graph_compute(const torch::Tensor& bx, const torch::Tensor& by, bool filled, int64_t s, Clock::time_point* host_marks);
  void try_capture(const torch::Tensor& x, const torch::Tensor& y, int64_t s);
  bool fetch_batch(EpochState& e, int64_t s, int64_t& m, torch::Tensor& bx, torch::Tensor& by);
  void phase_spans(int64_t step, Clock::time_point t0, Clock::time_point t_data, const Clock::time_point* host_marks);
  // --target-accuracy (docs/variants.md#time-to-accuracy)
  void maybe_evaluate_mid_epoch(EpochState& e);
  void check_target(double accuracy_pct, double trained_s, int64_t end_ns);
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
  void evaluate_epoch(EpochRecord& er);
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
  int64_t batch_size_ = 0, steps_per_epoch_ = 0;
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

  // The headline window: [warmup_steps, first_touched_) of the run's steps.
  int64_t first_touched_ = INT64_MAX;  // first step a profiler is on for
  bool headline_open_ = false, headline_closed_ = false;
  Clock::time_point segment_start_;    // start of the window's part in the current epoch
  StepMs headline_ms_, profiled_ms_, after_ms_;
};

void TrainLoop::describe_run() {
  r_.run_id = spec_.run_id;
  r_.device = spec_.device;
  r_.model = spec_.model;
  r_.batch_size = spec_.batch_size;
  r_.repeat = spec_.repeat;
  r_.status = RunStatus::kRunning;
  fill_run_settings(r_, cfg_, w_);
  describe_task(r_, spec_.model, w_.data, cfg_, dev_, parse_variant(spec_.variant, "the run's variant").bf16);
  r_.start_ns = ns_since(spec_.origin, Clock::now());
  variant_ = parse_variant(spec_.variant, "the run's variant");
  r_.variant = variant_.name();
  if (cfg_.target_accuracy_pct > 0) {
    r_.time_to_accuracy.emplace();
    r_.time_to_accuracy->target_pct = cfg_.target_accuracy_pct;
  }
}

void TrainLoop::set_up() {
  const auto& tr = w_.data.train;
  // Same seed for every device and batch size, so runs start from the same weights.
  torch::manual_seed(cfg_.seed);
  model_ = make_run_model(spec_.model, tr, cfg_);
  r_.parameters = model_->parameter_count();
  try {
    r_.forward_flops_per_sample = run_forward_flops(*model_, spec_.model, tr, cfg_);
  } catch (const c10::Error& e) {
    throw_error(ErrorKind::kModel, fmt::format("model '{}' cannot take inputs of shape 1x{}x{}x{} from the data set: {}",
                                               spec_.model, tr.channels, tr.height, tr.width,
                                               e.what_without_backtrace()));
  }
  if (!r_.forward_flops_per_sample) r_.notes.push_back("forward FLOPs: no convolution or matrix product operator seen");
  model_->to(dev_);
  model_->set_training(true);
  set_up_variant();
  dist_ = dist::RunSync::attach(*model_, dev_, cfg_.warmup_steps, r_);
  reset_device_memory_stats(dev_);
  rss_reset_ = reset_peak_rss();

  shard_samples_ = dist_ ? dist_->shard_size(tr.count) : tr.count, batch_size_ = spec_.batch_size;
  steps_per_epoch_ = (shard_samples_ + batch_size_ - 1) / batch_size_;
  if (batch_size_ > shard_samples_)
    r_.notes.push_back(fmt::format("batch size {} is larger than the training set ({} samples): every step trained on "
                                   "all {} samples",
                                   batch_size_, shard_samples_, shard_samples_));
  r_.steps_per_epoch = steps_per_epoch_;
  clock_ = make_phase_clock(dev_, steps_per_epoch_);
  // Pinned staging buffers (GPU) so host-to-device copies are asynchronous DMA transfers.
  staging_ = cuda_ ? kStaging : 1;
  batches_ = make_batch_source(w_, batch_size_, cuda_, staging_, cfg_.seed);
  gen_ = at::detail::createCPUGenerator(cfg_.seed + 1);
  ph_.method = clock_->method();
  keep_data_on_device();
  plan_windows();
}

// The variant's layout, forward and optimizer (train/variant_exec.h). The graph is captured at the
// last warm-up step (its cost stays out of the headline window) with that step's real batch.
void TrainLoop::set_up_variant() {
  format_ = variant_memory_format(variant_);
  if (variant_.channels_last) convert_model_memory_format(*model_, format_);
  forward_ = [this](const torch::Tensor& x) { return variant_forward(*model_, x, format_); };
  want_graph_ = variant_.graphs && (cuda_ || cfg_.force_graph_capture);
  capture_at_ = std::max<int64_t>(cfg_.warmup_steps - 1, 0);
  // A graphs run needs an optimizer whose step counters live on the device (graph_step.h).
  opt_ = make_optimizer(cfg_, model_->parameters(), dev_, /*capturable=*/want_graph_);
  r_.optimizer_impl = opt_->implementation();
  if (cuda_) r_.cudnn_benchmark = cfg_.cudnn_benchmark;
}

// On a GPU, a training set that takes at most a quarter of the device's memory is copied there
// once; the epoch's permutation follows it (same shuffling as on the host). A streamed set
// (docs/input-pipeline.md) never is: its batches are decoded each epoch.
void TrainLoop::keep_data_on_device() {
  if (!cuda_ || w_.data.stream) return;
  const auto total = device_memory_stats(dev_).total_bytes;
  const int64_t bytes = w_.train_x.numel() * w_.train_x.element_size() + w_.train_y.numel() * 8;
  if (!total || bytes > *total / 4) return;
  dev_x_ = w_.train_x.to(dev_);
  dev_y_ = w_.train_y.to(dev_);
  resident_ = true;
  r_.notes.push_back(fmt::format("training set resident on {} ({:.0f} MB): batches gathered on the device, so the "
                                 "data phase is the gather's launch and h2d is empty",
                                 spec_.device, static_cast<double>(bytes) / 1e6));
}

void TrainLoop::plan_windows() {
  auto& m = r_.measurement;
  if (!spec_.profile) return;
  m.profile_skip_first = spec_.profile->skip_first;
  m.profile_skip_first_auto = spec_.profile_skip_first_auto;
  const int64_t first = profile_first_touched_step(*spec_.profile);
  if (first >= 0) first_touched_ = first;
  if (first_touched_ <= cfg_.warmup_steps)
    r_.notes.push_back(fmt::format("the profiler starts at step {}, inside the {} warm-up steps: no step is left for "
                                   "the headline figures; use --profile-skip -1 (auto) or a larger value",
                                   first_touched_, cfg_.warmup_steps));
}

StepRole TrainLoop::role(int64_t step) const {
  if (step >= first_touched_) {
    auto st = profile_step_state(*spec_.profile, step);
    return st == ProfileStepState::kWarmup || st == ProfileStepState::kActive ? StepRole::kProfiled
                                                                                : StepRole::kAfterProfile;
  }
  return step < cfg_.warmup_steps ? StepRole::kWarmup : StepRole::kHeadline;
}

void TrainLoop::open_headline() {
  device_synchronize(dev_);  // once per run: the start of the headline window
  if (hooks_.on_window_edge) hooks_.on_window_edge();
  segment_start_ = Clock::now();
  headline_open_ = true;
  r_.measurement.headline_start_ns = ns_since(spec_.origin, segment_start_);
}

void TrainLoop::close_headline(Clock::time_point t) {
  auto& m = r_.measurement;
  m.headline_time_s += seconds(segment_start_, t);
  m.headline_end_ns = ns_since(spec_.origin, t);
  headline_open_ = false;
}

void TrainLoop::begin_epoch(EpochState& e) {
  if (hooks_.progress)
    hooks_.progress->begin(fmt::format("{} {} b{} epoch {}/{}", spec_.device, spec_.model, batch_size_, e.epoch, cfg_.epochs),
                           steps_per_epoch_);
  e.perm = torch::randperm(w_.data.train.count, gen_, torch::TensorOptions().dtype(torch::kLong));
  if (dist_) e.perm = dist_->shard(e.perm);
  e.perm_ptr = e.perm.data_ptr<int64_t>();
  if (resident_) dev_perm_ = e.perm.to(dev_);
  else batches_->begin_epoch(e.epoch, e.perm_ptr, shard_samples_);
  e.sums = make_step_sums(dev_);
  e.host_data_ms.assign(static_cast<size_t>(steps_per_epoch_), 0.0);
  e.host_step_ms = e.host_data_ms;
  e.counted.assign(static_cast<size_t>(steps_per_epoch_), 0);
  e.start = Clock::now();
  epoch_paused_s_ = 0;
  if (headline_open_) segment_start_ = e.start;
}

// One optimizer step (step s of the epoch); returns true when the run stops after it.
bool TrainLoop::step(EpochState& e, int64_t s) {
  const auto t0 = Clock::now();
  if (hooks_.on_step_begin) hooks_.on_step_begin(global_step_);
  torch::Tensor bx, by;  // from the batch source, or device tensors when the data set is resident
  int64_t m = std::min(batch_size_, shard_samples_ - s * batch_size_);
  bool filled = fetch_batch(e, s, m, bx, by);  // the batch is in the graph's static buffers (or it gathers it)
  const auto t_data = Clock::now();
  Clock::time_point host_marks[PhaseClock::kMarks];
  host_marks[0] = t_data;
  clock_->mark(s, 0);
  if (want_graph_ && !graph_ && r_.variant_note.empty() && global_step_ >= capture_at_ && m == batch_size_) {
    try_capture(cuda_ ? bx.to(dev_, /*non_blocking=*/true) : bx, cuda_ ? by.to(dev_, /*non_blocking=*/true) : by, s);
    filled = graph_ != nullptr;
  }
  torch::Tensor loss;
  replayed_ = graph_ && m == batch_size_;
  if (replayed_) {  // a partial last batch has another shape: it runs eagerly (same optimizer)
    graph_compute(bx, by, filled, s, host_marks);
    loss = graph_->loss();  // the replay added its loss and accuracy sums inside the graph
  } else {
    auto x = cuda_ ? bx.to(dev_, /*non_blocking=*/true) : bx;
    auto y = cuda_ ? by.to(dev_, /*non_blocking=*/true) : by;
    torch::Tensor logits;
    std::tie(loss, logits) = eager_compute(x, y, s, host_marks);
    add_task_sums(e.sums, loss, logits, y);
  }
  ++global_step_;
  ++e.steps;
  e.samples += m;
  samples_total_ += m;
  // NaN/Inf check: one host synchronisation every nan_check_interval steps.
  if (global_step_ % cfg_.nan_check_interval == 0 || global_step_ == cfg_.inject_nan_at_step + 1) {
    float lv = loss.item<float>();
    if (!std::isfinite(lv))
      throw_error(ErrorKind::kNumerical,
                  fmt::format("loss became {} at step {} (epoch {}); lower the learning rate (now {}) or check the "
                              "data for NaN/Inf values",
                              std::isnan(lv) ? "NaN" : "Inf", global_step_ - 1, e.epoch, cfg_.learning_rate));
    r_.loss_checks.push_back({global_step_, ns_since(spec_.origin, Clock::now()), lv});  // already on the host
  }
  r_.steps_completed = global_step_;  // kept current: a run that fails mid-epoch says how far it got
  after_step(e, s, m, t0, t_data, host_marks);
  if (hooks_.progress) hooks_.progress->update(s + 1);
  if (s + 1 < steps_per_epoch_) maybe_evaluate_mid_epoch(e);  // the epoch's last step: evaluate_epoch
  return should_stop(e, s);
}

// Step s's batch (m samples planned; fewer when bad images were skipped): gathered on the device
// from a resident set, or from the batch source. Returns true when no batch tensors were made
// because the captured graph gathers the batch itself (only its indices were copied).
bool TrainLoop::fetch_batch(EpochState& e, int64_t s, int64_t& m, torch::Tensor& bx, torch::Tensor& by) {
  if (resident_) {
    auto idx = dev_perm_.narrow(0, s * batch_size_, m);
    if (graph_ && m == batch_size_ && graph_->static_index()) {
      graph_->static_index()->copy_(idx, /*non_blocking=*/true);
      return true;
    }
    bx = dev_x_.index_select(0, idx);
    by = dev_y_.index_select(0, idx);
    return false;
  }
  if (cuda_ && s >= staging_) clock_->wait(s - staging_, 1);  // that buffer's copy has finished
  std::tie(bx, by) = batches_->next(s, e.perm_ptr + s * batch_size_, m);
  m = bx.size(0);
  return false;
}

// Forward (the variant's StepForward), loss, backward and optimizer step, marking the phases.
std::pair<torch::Tensor, torch::Tensor> TrainLoop::eager_compute(const torch::Tensor& x, const torch::Tensor& y,
                                                                 int64_t s, Clock::time_point* host_marks) {
  clock_->mark(s, 1);
  host_marks[1] = Clock::now();
  auto logits = forward_(x);
  auto loss = task_loss(logits, y);
  if (global_step_ == cfg_.inject_nan_at_step) loss = loss * std::numeric_limits<float>::quiet_NaN();
  clock_->mark(s, 2);
  host_marks[2] = Clock::now();
  opt_->zero_grad();
  if (dist_) dist_->before_backward(global_step_, local_stop_wish());
  loss.backward();
  if (dist_) dist_->after_backward();
  clock_->mark(s, 3);
  host_marks[3] = Clock::now();
  opt_->step();
  clock_->mark(s, 4);
  host_marks[4] = Clock::now();
  return {loss, logits};
}

// One replay of the captured step: the pinned batch is copied into the graph's static buffers
// (asynchronously) and the graph replayed. Phases: h2d, then the whole replay booked as
// "forward" (backward and optimizer are inside it and read 0; docs/variants.md#cuda-graphs).
void TrainLoop::graph_compute(const torch::Tensor& bx, const torch::Tensor& by, bool filled, int64_t s,
                              Clock::time_point* host_marks) {
  if (!filled) {
    graph_->static_x().copy_(bx, /*non_blocking=*/true);
    graph_->static_y().copy_(by, /*non_blocking=*/true);
  }
  clock_->mark(s, 1);
  host_marks[1] = Clock::now();
  graph_->replay();
  for (int k = 2; k < PhaseClock::kMarks; ++k) clock_->mark(s, k);
  host_marks[2] = host_marks[3] = host_marks[4] = Clock::now();
}

// Captures the training step with this step's batch (graph_step.h). Its warm-up steps train the
// model on that batch (noted); a failed capture leaves the run eager with the reason recorded.
void TrainLoop::try_capture(const torch::Tensor& x, const torch::Tensor& y, int64_t s) {
  constexpr int kCaptureWarmup = 3;  // PyTorch's recipe (graph_step.h)
  std::optional<ResidentSet> set;  // a resident training set: the graph gathers its own batches
  if (resident_) set = ResidentSet{dev_x_, dev_y_, dev_perm_.narrow(0, s * batch_size_, batch_size_)};
  CaptureOutcome out = capture_train_step(*model_, *opt_, forward_, x, y, dev_, kCaptureWarmup, set ? &*set : nullptr);
  if (out.step) {
    graph_ = std::move(out.step);
    r_.notes.push_back(fmt::format("CUDA graph captured at step {}: its {} warm-up steps trained on that step's batch "
                                   "on a side stream (not counted in steps_completed)",
                                   global_step_, kCaptureWarmup));
  } else {
    r_.variant_note = "graphs fell back to eager: " + out.fallback_reason;
  }
}

// Books the step into its protocol window, feeds the hooks, opens/closes the headline window.
void TrainLoop::after_step(EpochState& e, int64_t s, int64_t m, Clock::time_point t0, Clock::time_point t_data,
                           const Clock::time_point* host_marks) {
  const int64_t step = global_step_ - 1;
  const auto t_end = Clock::now();
  last_step_end_ = t_end;
  const double step_ms = std::chrono::duration<double, std::milli>(t_end - t0).count();
  auto& mw = r_.measurement;
  switch (role(step)) {
    case StepRole::kHeadline:
      e.counted[static_cast<size_t>(s)] = 1;
      e.headline_samples += m;
      e.host_data_ms[static_cast<size_t>(s)] = std::chrono::duration<double, std::milli>(t_data - t0).count();
      e.host_step_ms[static_cast<size_t>(s)] = step_ms;
      headline_ms_.add(step_ms);
      if (mw.headline_first_step < 0) mw.headline_first_step = step;
      mw.headline_last_step = step;
      ++mw.headline_steps;
      mw.headline_samples += m;
      break;
    case StepRole::kProfiled:
      profiled_ms_.add(step_ms);
      ++e.profiled_steps;
      if (mw.profiled_first_step < 0) mw.profiled_first_step = step;
      mw.profiled_last_step = step;
      ++mw.profiled_steps;
      break;
    case StepRole::kAfterProfile: after_ms_.add(step_ms); break;
    case StepRole::kWarmup: break;
  }
  if (hooks_.on_phase_span) phase_spans(step, t0, t_data, host_marks);
  if (hooks_.on_step_end) hooks_.on_step_end(step);
  if (!headline_open_ && !headline_closed_ && global_step_ == cfg_.warmup_steps && global_step_ < first_touched_)
    open_headline();
  if (headline_open_ && global_step_ == first_touched_) {
    device_synchronize(dev_);  // once per run: the end of the headline window, before the profiler starts
    close_headline(Clock::now());
    headline_closed_ = true;
  }
}

// The step's phase spans for the hooks: data, h2d, forward, backward, optimizer; a replayed
// graph step has data, h2d and one "graph_replay" span.
void TrainLoop::phase_spans(int64_t step, Clock::time_point t0, Clock::time_point t_data, const Clock::time_point* host_marks) {
  static const char* kPhase[] = {"h2d", "forward", "backward", "optimizer"};
  auto ns = [&](Clock::time_point t) { return ns_since(spec_.origin, t); };
  hooks_.on_phase_span(step, "data", ns(t0), ns(t_data));
  hooks_.on_phase_span(step, "h2d", ns(host_marks[0]), ns(host_marks[1]));
  if (replayed_) {
    hooks_.on_phase_span(step, "graph_replay", ns(host_marks[1]), ns(host_marks[4]));
    return;
  }
  for (int k = 1; k < 4; ++k) hooks_.on_phase_span(step, kPhase[k], ns(host_marks[k]), ns(host_marks[k + 1]));
}

bool TrainLoop::should_stop(const EpochState& e, int64_t s) {
  if (cfg_.max_steps > 0 && global_step_ >= cfg_.max_steps) {
    r_.stopped_early = global_step_ < steps_per_epoch_ * cfg_.epochs;
    if (r_.stopped_early) r_.stop_reason = "max_steps";
    stop_ = true;
  }
  // A data-parallel rank stops only when the ranks agree (grad_sync.h's stop vote): a signal
  // or a time budget reaches each rank at its own moment, and a rank that left alone would
  // leave its peers waiting in an all-reduce.
  const dist::StopWish why = dist_ ? dist_->agreed_stop() : local_stop_wish();
  if (why.budget) {
    r_.stopped_early = !(e.epoch == cfg_.epochs && s + 1 == steps_per_epoch_);
    if (r_.stopped_early) r_.stop_reason = "time_budget";
    stop_ = true;
  }
  if (why.signal) {
    r_.status = RunStatus::kInterrupted;
    r_.test_accuracy_pct.reset();  // README: null for an interrupted run (its last epoch is not evaluated)
    r_.stopped_early = true;
    r_.stop_reason = "interrupted";
    r_.error_kind = "interrupted";
    r_.failure_reason = fmt::format("interrupted (SIGINT/SIGTERM) after step {} of epoch {}; what it measured is kept",
                                    global_step_, e.epoch);
    stop_ = true;
  }
  return stop_;
}

// This rank's own reasons to stop after the current step: a signal, or the time budget spent.
dist::StopWish TrainLoop::local_stop_wish() const {
  return {.signal = hooks_.stop_requested && hooks_.stop_requested->load(),
          .budget = cfg_.time_budget_s > 0 &&
                    seconds(train_start_, Clock::now()) - eval_time_total_ >= cfg_.time_budget_s};
}

// At an epoch's end a GPU rank reads the stop votes still in flight (dist/stop_vote.h), so a stop
// voted in the epoch's last steps ends the run after this epoch on every rank, as it would in a
// one-process run, instead of 2 steps into the next.
void TrainLoop::drain_stop_votes(const EpochState& e) {
  if (dist_ && dist_->drain_stop_votes().any()) should_stop(e, steps_per_epoch_ - 1);
}

// Adds the phases of this epoch's headline steps to the run's sums (means taken in figures()).
void TrainLoop::add_epoch_phases(const EpochState& e) {
  clock_->synchronize();
  for (int64_t s = 0; s < e.steps; ++s) {
    if (!e.counted[static_cast<size_t>(s)]) continue;
    ph_.data_ms += e.host_data_ms[static_cast<size_t>(s)];
    ph_.h2d_ms += clock_->elapsed_ms(s, 0);
    ph_.forward_ms += clock_->elapsed_ms(s, 1);
    ph_.backward_ms += clock_->elapsed_ms(s, 2);
    ph_.optimizer_ms += clock_->elapsed_ms(s, 3);
    ph_.step_ms += e.host_step_ms[static_cast<size_t>(s)];
    ++ph_.steps;
  }
}

// After a step failed (an exception leaves run()): keeps what was measured up to the last
// completed step — the headline window and its steady samples/s, the phases, the training time —
// so a failed run's record holds them like an interrupted one's (docs/results.md). Best effort:
// a device that failed may refuse to synchronise, and then what could not be read stays absent.
void TrainLoop::salvage_after_failure(const EpochState* e) noexcept {
  try {
    if (headline_open_) close_headline(last_step_end_);
    headline_open_ = false;
    if (e) {
      train_time_ += std::max(0.0, seconds(e->start, last_step_end_) - epoch_paused_s_);
      add_epoch_phases(*e);
    }
    r_.train_time_s = train_time_;
  } catch (...) {
  }
  try {
    figures();
  } catch (...) {
  }
}

void TrainLoop::finish_epoch(EpochState& e) {
  device_synchronize(dev_);
  const auto epoch_end = Clock::now();
  if (hooks_.progress) hooks_.progress->end();
  if (headline_open_) {  // the window goes on in the next epoch; evaluation stays outside it
    close_headline(epoch_end);
    headline_open_ = !stop_;
  }
  const double epoch_time = seconds(e.start, epoch_end) - epoch_paused_s_;  // mid-epoch evaluations excluded
  train_time_ += epoch_time;
  add_epoch_phases(e);
  EpochRecord er;
  er.epoch = e.epoch;
  er.steps = e.steps;
  er.samples = e.samples;
  er.profiled_steps = e.profiled_steps;
  const double denom = static_cast<double>(std::max<int64_t>(e.samples * predictions_per_sample(w_.data.train), 1));
  if (graph_) graph_->drain_sums(e.sums);  // the replays' sums (graph_step.h)
  const auto sums = e.sums.cpu();
  er.train_loss = sums[0].item<double>() / denom;
  if (!w_.data.train.is_tokens()) er.train_accuracy_pct = 100.0 * sums[1].item<double>() / denom;
  er.epoch_time_s = epoch_time;
  er.samples_per_s = epoch_time > 0 ? static_cast<double>(e.samples) / epoch_time : 0;
  er.complete = e.steps == steps_per_epoch_;
  er.start_ns = ns_since(spec_.origin, e.start);
  er.end_ns = ns_since(spec_.origin, epoch_end);
  if (!std::isfinite(er.train_loss))
    throw_error(ErrorKind::kNumerical, fmt::format("mean training loss of epoch {} is not finite; lower the learning "
                                                   "rate (now {})",
                                                   e.epoch, cfg_.learning_rate));
  r_.steps_completed = global_step_;
  r_.train_time_s = train_time_;
  evaluate_epoch(er);
  r_.final_train_loss = er.train_loss;
  r_.final_train_accuracy_pct = er.train_accuracy_pct;
  if (er.complete) ++r_.epochs_completed;
  r_.epochs.push_back(er);
}

void TrainLoop::evaluate_epoch(EpochRecord& er) {
  if (r_.status == RunStatus::kInterrupted) return;
  const bool reuse = mid_eval_.step == global_step_;  // evaluated at this very step already: not twice
  Evaluation ev = mid_eval_;
  if (!reuse) {
    const auto e0 = Clock::now();
    std::tie(ev.accuracy_pct, ev.loss) = evaluate(*model_, w_.test_x, w_.test_y, dev_, eval_batch_for(w_.data.train, cfg_, batch_size_));
    ev.seconds = seconds(e0, Clock::now());
    eval_time_total_ += ev.seconds;
  }
  er.eval_time_s = ev.seconds;
  er.test_accuracy_pct = ev.accuracy_pct;
  er.test_loss = ev.loss;
  r_.test_accuracy_pct = ev.accuracy_pct;
  if (!reuse) check_target(ev.accuracy_pct, train_time_, er.end_ns);
}

// --eval-every-steps N with a target: the test set every N steps; the evaluation is outside the
// training time and the headline window (both pause while it runs).
void TrainLoop::maybe_evaluate_mid_epoch(EpochState& e) {
  if (!r_.time_to_accuracy || cfg_.eval_every_steps <= 0 || global_step_ % cfg_.eval_every_steps != 0 || stop_) return;
  device_synchronize(dev_);
  const auto t0 = Clock::now();
  const double trained_s = train_time_ + seconds(e.start, t0) - epoch_paused_s_;
  const bool was_open = headline_open_;
  if (was_open) close_headline(t0);
  auto [acc, loss] = evaluate(*model_, w_.test_x, w_.test_y, dev_, eval_batch_for(w_.data.train, cfg_, batch_size_));
  const auto t1 = Clock::now();
  epoch_paused_s_ += seconds(t0, t1);
  eval_time_total_ += seconds(t0, t1);
  mid_eval_ = {global_step_, acc, loss, seconds(t0, t1)};
  if (was_open) {
    segment_start_ = t1;
    headline_open_ = true;
  }
  check_target(acc, trained_s, ns_since(spec_.origin, t0));
}

// Books one evaluation against --target-accuracy; the first that reaches it ends the run.
void TrainLoop::check_target(double accuracy_pct, double trained_s, int64_t end_ns) {
  if (!r_.time_to_accuracy || r_.status == RunStatus::kInterrupted) return;
  auto& t = *r_.time_to_accuracy;
  ++t.evaluations;
  t.best_accuracy_pct = std::max(t.best_accuracy_pct.value_or(accuracy_pct), accuracy_pct);
  if (t.reached || accuracy_pct < t.target_pct) return;
  t.reached = true;
  t.time_s = trained_s;
  t.samples = samples_total_;
  t.steps = global_step_;
  t.end_ns = end_ns;
  stop_ = true;
  r_.stopped_early = global_step_ < planned_train_steps(cfg_, shard_samples_, batch_size_);
  if (r_.stopped_early) r_.stop_reason = "target_accuracy";
}

void TrainLoop::target_figures() {
  const auto& t = r_.time_to_accuracy;
  if (!t || t->reached) return;
  r_.notes.push_back(fmt::format("target accuracy {:.2f} % not reached: best {} in {} evaluation(s) over {} steps",
                                 t->target_pct,
                                 t->best_accuracy_pct ? fmt::format("{:.2f} %", *t->best_accuracy_pct) : "none",
                                 t->evaluations, global_step_));
}

// MFU (trainscope/mfu.h): 3 x forward FLOPs x samples/s against the peak of the variant's precision.
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

void TrainLoop::wrap_up() {
  r_.input_pipeline = batches_->section();
  if (rss_reset_) r_.peak_rss_bytes = peak_rss_bytes();
  else {
    struct rusage ru {};
    if (getrusage(RUSAGE_SELF, &ru) == 0) r_.peak_rss_bytes = static_cast<int64_t>(ru.ru_maxrss) * 1024;
    r_.notes.push_back("peak_rss_bytes is the process-lifetime peak (/proc/self/clear_refs not writable)");
  }
  auto ms = device_memory_stats(dev_);
  r_.device_peak_allocated_bytes = ms.peak_allocated_bytes;
  r_.device_peak_reserved_bytes = ms.peak_reserved_bytes;
  if (hooks_.on_trained && r_.status != RunStatus::kInterrupted) hooks_.on_trained(*model_, dev_);
  if (!spec_.checkpoint_path.empty() && r_.status != RunStatus::kInterrupted) {
    model_->to(torch::kCPU);
    model_->save(spec_.checkpoint_path);
  }
  r_.end_ns = ns_since(spec_.origin, Clock::now());
  if (r_.status == RunStatus::kRunning) r_.status = RunStatus::kOk;
}

void TrainLoop::run() {
  describe_run();
  // The variant's autocast and TF32 switches, restored when the run ends (or throws); inference
  // after training (the on_trained hook) runs under them too.
  VariantGuard guard(variant_, dev_, cfg_.cudnn_benchmark);
  set_up();
  train_start_ = last_step_end_ = Clock::now();
  if (cfg_.warmup_steps == 0 && first_touched_ > 0) open_headline();
  EpochState e;            // outside the loop: a failure's handler still reads it
  bool in_steps = false;   // a failure inside the steps, before finish_epoch booked the epoch
  try {
    for (int64_t epoch = 1; epoch <= cfg_.epochs && !stop_; ++epoch) {
      e = EpochState{};
      e.epoch = epoch;
      begin_epoch(e);
      in_steps = true;
      for (int64_t s = 0; s < steps_per_epoch_; ++s)
        if (step(e, s)) break;
      if (!stop_) drain_stop_votes(e);
      in_steps = false;
      finish_epoch(e);
    }
  } catch (...) {
    salvage_after_failure(in_steps ? &e : nullptr);
    throw;
  }
  if (hooks_.on_window_edge) hooks_.on_window_edge();
  figures();
  wrap_up();
}

}  // namespace

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

void fill_run_settings(RunRecord& r, const TrainConfig& cfg, const Workload& w) {
  const auto& tr = w.data.train;
  r.dataset = w.dataset_name;
  r.train_samples = tr.count;
  r.test_samples = w.data.test.count;
  r.input_shape = {tr.channels, tr.height, tr.width};
  r.num_classes = tr.num_classes;
  r.optimizer = cfg.optimizer;
  r.learning_rate = cfg.learning_rate;
  r.seed = cfg.seed;
  r.intra_op_threads = at::get_num_threads();
  r.epochs_requested = cfg.epochs;
  r.warmup_steps = cfg.warmup_steps;
}

RunRecord train_run(const RunSpec& spec, const Workload& w, TrainHooks& hooks, RunRecord* partial) {
  RunRecord local;
  RunRecord& r = partial ? *partial : local;
  TrainLoop(spec, w, hooks, r).run();
  return r;
}

}  // namespace trainscope

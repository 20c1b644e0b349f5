// train_run and its run: the set-up (model, optimizer, variant, batch source, resident data), the
// loop over epochs and the wrap-up (memory peaks, inference hook, checkpoint). The loop's other
// members are in the files train/train_loop.h lists.
#include "train/trainer.h"
#include "train/lm_task.h"
#include "train/task_loss.h"

#include <fmt/format.h>

#include <algorithm>

#include "train/compat.h"
#include "train/peak_rss.h"
#include "train/train_loop.h"
#include "train/variant_exec.h"
#include "trainscope/error.h"
#include "trainscope/provenance.h"
#include "workload/model_names.h"

namespace trainscope {

// Number of staging buffers: the host may run this many steps ahead of the device.
constexpr int kStaging = 4;

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

nlohmann::json checkpoint_description(const RunSpec& spec, const DataConfig& data, const Workload& w) {
  const auto& tr = w.data.train;
  return {{"schema_version", kSchemaVersion},
          {"model", spec.model},
          {"input_shape", {tr.channels, tr.height, tr.width}},
          {"num_classes", tr.num_classes},
          {"normalisation", {{"mean", w.data.mean}, {"std", w.data.std}}},
          {"data", {{"format", data.format}, {"path", data.path}, {"image_size", data.image_size},
                    {"image_channels", data.image_channels}}},
          {"weights_format", is_torchscript_path(spec.model) ? "torchscript" : "libtorch_archive"},
          {"trained_on", spec.device},
          {"batch_size", spec.batch_size},
          {"seed", spec.train.seed},
          {"task", w.data.task},
          {"language_model", lm_checkpoint_shape(spec.model, tr, spec.train)}};
}

RunRecord train_run(const RunSpec& spec, const Workload& w, TrainHooks& hooks, RunRecord* partial) {
  RunRecord local;
  RunRecord& r = partial ? *partial : local;
  TrainLoop(spec, w, hooks, r).run();
  return r;
}

void TrainLoop::run() {
  describe_run();
  // The variant's autocast and TF32 switches, restored when the run ends (or throws); inference
  // after training (the on_trained hook) runs under them too.
  VariantGuard guard(variant_, dev_, cfg_.cudnn_benchmark);
  struct Rescue {  // the rescue lock and salvage (train/trainer.h RunRescue) for the run's lifetime
    TrainLoop& t;
    explicit Rescue(TrainLoop& loop) : t(loop) {
      if (!t.hooks_.rescue) return;
      t.held_ = std::unique_lock<std::timed_mutex>(t.hooks_.rescue->mu);
      t.hooks_.rescue->salvage = [&loop = t] { loop.rescue(); };
    }
    ~Rescue() {
      if (!t.hooks_.rescue) return;
      if (!t.held_.owns_lock()) t.held_.lock();
      t.hooks_.rescue->salvage = nullptr;
      t.held_.unlock();
    }
  } rescue_scope(*this);
  set_up();
  train_start_ = last_step_end_ = Clock::now();
  if (cfg_.warmup_steps == 0 && first_touched_ > 0) open_headline();
  EpochState e;  // outside the loop: a failure's handler still reads it
  try {
    epochs(e);
  } catch (...) {
    evaluating_ = nullptr;
    salvage_after_failure(unbooked_);
    throw;
  }
  if (hooks_.on_window_edge) hooks_.on_window_edge();
  figures();
  figured_ = true;
  wrap_up();
}

// The loop over epochs; unbooked_ is the epoch while its steps run, before finish_epoch booked it.
void TrainLoop::epochs(EpochState& e) {
  for (int64_t epoch = 1; epoch <= cfg_.epochs && !stop_; ++epoch) {
    e = EpochState{};
    e.epoch = epoch;
    begin_epoch(e);
    unbooked_ = &e;
    for (int64_t s = 0; s < steps_per_epoch_; ++s)
      if (step(e, s)) break;
    if (!stop_) drain_stop_votes(e);
    unbooked_ = nullptr;
    finish_epoch(e);
  }
}

// The run hangs in its model and the process is about to end (RunRescue): the record gets what
// was measured up to there; an epoch whose evaluation hangs is kept without its test figures.
void TrainLoop::rescue() noexcept {
  if (figured_) return;  // it hangs after training (inference): the record is complete
  r_.test_accuracy_pct.reset();  // as for any interrupted run: its last epoch is not evaluated
  try {
    if (evaluating_) {
      r_.epochs.push_back(*evaluating_);
      r_.final_train_loss = evaluating_->train_loss;
      r_.final_train_accuracy_pct = evaluating_->train_accuracy_pct;
    }
  } catch (...) {
  }
  salvage_after_failure(unbooked_);
}

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
  if (cfg_.target_loss > 0 && r_.language_model) {  // --target-loss: language models (an image run ignores it)
    r_.language_model->target_loss = cfg_.target_loss;
    r_.language_model->target_loss_reached = false;
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

  shard_samples_ = dist_ ? dist_->shard_size(tr.count) : tr.count, batch_size_ = micro_batch_ * grad_accum_;
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
  forward_ = make_step_forward(*model_, format_, cfg_, dev_);
  want_graph_ = variant_.graphs && (cuda_ || cfg_.force_graph_capture);
  set_up_recipe();
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

void TrainLoop::wrap_up() {
  r_.input_pipeline = batches_->section();
  if (rss_reset_) r_.peak_rss_bytes = peak_rss_bytes();
  else {
    if (auto lifetime = lifetime_peak_rss_bytes()) r_.peak_rss_bytes = lifetime;
    r_.notes.push_back("peak_rss_bytes is the process-lifetime peak (/proc/self/clear_refs not writable)");
  }
  auto ms = device_memory_stats(dev_);
  r_.device_peak_allocated_bytes = ms.peak_allocated_bytes;
  r_.device_peak_reserved_bytes = ms.peak_reserved_bytes;
  if (hooks_.on_trained && r_.status != RunStatus::kInterrupted) {
    ModelWait wait(held_);
    hooks_.on_trained(*model_, dev_);
  }
  if (!spec_.checkpoint_path.empty() && r_.status != RunStatus::kInterrupted) {
    model_->to(torch::kCPU);
    model_->save(spec_.checkpoint_path);
  }
  r_.end_ns = ns_since(spec_.origin, Clock::now());
  if (r_.status == RunStatus::kRunning) r_.status = RunStatus::kOk;
}

}  // namespace trainscope

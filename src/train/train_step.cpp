// One training step (its batch, the eager forward/backward/optimizer, the NaN check, the decision
// to stop) and the end of an epoch (its phases, its record).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "train/step_sums.h"
#include "train/lm_task.h"
#include "train/task_loss.h"
#include "train/train_loop.h"
#include "trainscope/error.h"

namespace trainscope {

void TrainLoop::begin_epoch(EpochState& e) {
  if (hooks_.progress)
    hooks_.progress->begin(fmt::format("{} {} b{} epoch {}/{}", spec_.device, spec_.model, micro_batch_, e.epoch, cfg_.epochs),
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
  // This step's rate, before a capture: a captured step reads the rate's device tensor, which
  // must exist when it is captured (train/optimizer.h set_learning_rate).
  apply_learning_rate();
  if (want_graph_ && !graph_ && r_.variant_note.empty() && global_step_ >= capture_at_ && m == batch_size_) {
    try_capture(cuda_ ? bx.to(dev_, /*non_blocking=*/true) : bx, cuda_ ? by.to(dev_, /*non_blocking=*/true) : by, s);
    filled = graph_ != nullptr;
  }
  torch::Tensor loss;
  replayed_ = graph_ && m == batch_size_;
  {
    ModelWait wait(held_);  // the rescue may read the run's state until the compute returned
    if (replayed_) {  // a partial last batch has another shape: it runs eagerly (same optimizer)
      graph_compute(bx, by, filled, s, host_marks);
      loss = graph_->loss();  // the replay added its loss and accuracy sums inside the graph
    } else {
      auto x = cuda_ ? bx.to(dev_, /*non_blocking=*/true) : bx;
      auto y = cuda_ ? by.to(dev_, /*non_blocking=*/true) : by;
      if (grad_accum_ > 1) {
        loss = accumulated_compute(x, y, s, host_marks, e.sums);
      } else {
        torch::Tensor logits;
        std::tie(loss, logits) = eager_compute(x, y, s, host_marks);
        add_task_sums(e.sums, loss, logits, y);
      }
    }
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
                              std::isnan(lv) ? "NaN" : "Inf", global_step_ - 1, e.epoch, lr_now_));
    r_.loss_checks.push_back({global_step_, ns_since(spec_.origin, Clock::now()), lv, lr_now_});  // already on the host
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
  evaluating_ = &er;  // a rescue while the evaluation hangs keeps the epoch (TrainLoop::rescue)
  evaluate_epoch(er);
  evaluating_ = nullptr;
  r_.final_train_loss = er.train_loss;
  r_.final_train_accuracy_pct = er.train_accuracy_pct;
  if (er.complete) ++r_.epochs_completed;
  r_.epochs.push_back(er);
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

}  // namespace trainscope

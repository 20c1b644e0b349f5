// Evaluation on the test set: at each epoch's end and, with a target accuracy or a target
// validation loss, every --eval-every-steps steps (time to accuracy,
// docs/variants.md#time-to-accuracy; time to a loss, docs/language-models.md#time-to-a-target-loss).
#include <fmt/format.h>

#include <algorithm>

#include "train/train_loop.h"
#include "train/lm_task.h"
#include "train/task_loss.h"

namespace trainscope {

std::pair<double, double> evaluate(Model& model, const torch::Tensor& x, const torch::Tensor& y,
                                   const torch::Device& device, int64_t batch_size,
                                   const std::function<void()>& after_batch) {
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
    if (after_batch) after_batch();
  }
  model.set_training(true);
  double acc = 100.0 * static_cast<double>(correct.item<int64_t>()) / static_cast<double>(std::max<int64_t>(rows, 1));
  return {acc, loss_sum.item<double>() / static_cast<double>(std::max<int64_t>(rows, 1))};
}

namespace {

// on_evaluation(true) now and on_evaluation(false) when the evaluation returned or threw.
struct EvaluationEdges {
  explicit EvaluationEdges(const TrainHooks& h) : hooks(h) {
    if (hooks.on_evaluation) hooks.on_evaluation(true);
  }
  ~EvaluationEdges() {
    if (hooks.on_evaluation) hooks.on_evaluation(false);
  }
  const TrainHooks& hooks;
};

}  // namespace

std::pair<double, double> TrainLoop::evaluate_test_set() {
  EvaluationEdges edges(hooks_);
  ModelWait wait(held_);  // the rescue may read the run's state until the evaluation returned
  return evaluate(*model_, w_.test_x, w_.test_y, dev_, eval_batch_for(w_.data.train, cfg_, micro_batch_),
                  hooks_.on_eval_batch);
}

void TrainLoop::evaluate_epoch(EpochRecord& er) {
  if (r_.status == RunStatus::kInterrupted) return;
  const bool reuse = mid_eval_.step == global_step_;  // evaluated at this very step already: not twice
  Evaluation ev = mid_eval_;
  if (!reuse) {
    const auto e0 = Clock::now();
    std::tie(ev.accuracy_pct, ev.loss) = evaluate_test_set();
    ev.seconds = seconds(e0, Clock::now());
    eval_time_total_ += ev.seconds;
  }
  er.eval_time_s = ev.seconds;
  er.test_accuracy_pct = ev.accuracy_pct;
  er.test_loss = ev.loss;
  r_.test_accuracy_pct = ev.accuracy_pct;
  if (!reuse) {
    check_target(ev.accuracy_pct, train_time_, er.end_ns);
    check_target_loss(ev.loss, train_time_, er.end_ns);
  }
}

// --eval-every-steps N with a target: the test set every N steps; the evaluation is outside the
// training time and the headline window (both pause while it runs).
void TrainLoop::maybe_evaluate_mid_epoch(EpochState& e) {
  if (!has_target() || cfg_.eval_every_steps <= 0 || global_step_ % cfg_.eval_every_steps != 0 || stop_) return;
  device_synchronize(dev_);
  const auto t0 = Clock::now();
  const double trained_s = train_time_ + seconds(e.start, t0) - epoch_paused_s_;
  const bool was_open = headline_open_;
  if (was_open) close_headline(t0);
  auto [acc, loss] = evaluate_test_set();
  const auto t1 = Clock::now();
  epoch_paused_s_ += seconds(t0, t1);
  eval_time_total_ += seconds(t0, t1);
  mid_eval_ = {global_step_, acc, loss, seconds(t0, t1)};
  if (was_open) {
    segment_start_ = t1;
    headline_open_ = true;
  }
  check_target(acc, trained_s, ns_since(spec_.origin, t0));
  check_target_loss(loss, trained_s, ns_since(spec_.origin, t0));
}

bool TrainLoop::has_target() const {
  return r_.time_to_accuracy || (r_.language_model && r_.language_model->target_loss);
}

// A target is reached: the run ends after this evaluation (its reason: the target's kind).
void TrainLoop::target_reached() {
  stop_ = true;
  r_.stopped_early = global_step_ < planned_train_steps(cfg_, shard_samples_, batch_size_);
}

// Books one evaluation against --target-loss (a language model's validation loss, nats per
// token); the first at or below it ends the run. Mirrors check_target.
void TrainLoop::check_target_loss(double loss, double trained_s, int64_t end_ns) {
  if (!r_.language_model || !r_.language_model->target_loss || r_.status == RunStatus::kInterrupted) return;
  auto& l = *r_.language_model;
  l.best_val_loss = std::min(l.best_val_loss.value_or(loss), loss);
  if (l.target_loss_reached.value_or(false) || loss > *l.target_loss) return;
  l.target_loss_reached = true;
  l.time_to_target_loss_s = trained_s;
  l.tokens_to_target_loss = samples_total_ * l.seq_len;
  l.steps_to_target_loss = global_step_;
  l.target_loss_end_ns = end_ns;
  target_reached();
  if (r_.stopped_early) r_.stop_reason = "target_loss";
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
  target_reached();
  if (r_.stopped_early) r_.stop_reason = "target_accuracy";
}

void TrainLoop::target_figures() {
  if (const auto& l = r_.language_model; l && l->target_loss && !l->target_loss_reached.value_or(false))
    r_.notes.push_back(fmt::format("target validation loss {:.4g} not reached: best {} over {} steps", *l->target_loss,
                                   l->best_val_loss ? fmt::format("{:.4g}", *l->best_val_loss) : "none", global_step_));
  const auto& t = r_.time_to_accuracy;
  if (!t || t->reached) return;
  r_.notes.push_back(fmt::format("target accuracy {:.2f} % not reached: best {} in {} evaluation(s) over {} steps",
                                 t->target_pct,
                                 t->best_accuracy_pct ? fmt::format("{:.2f} %", *t->best_accuracy_pct) : "none",
                                 t->evaluations, global_step_));
}

}  // namespace trainscope

#include "train/min_time.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/text.h"
#include "trainscope/record_sections.h"

namespace trainscope {

double effective_min_time_s(const TrainConfig& train, const TelemetryConfig& telemetry) {
  if (!telemetry.enabled) return 0;
  if (train.min_time_s >= 0) return train.min_time_s;
  const double slowest = std::max(telemetry.interval_s, telemetry.slow_interval_s);
  return static_cast<double>(kMinStatsSamples + 1) * slowest;
}

bool min_time_applies(const TrainConfig& train, double min_time_s, bool single_process) {
  return min_time_s > 0 && single_process && train.max_steps == 0 && train.time_budget_s == 0 &&
         train.target_accuracy_pct == 0 && train.target_loss == 0;
}

int64_t epochs_for_min_time(int64_t requested, int64_t steps_per_epoch, double step_s, int64_t warmup,
                            int64_t tail_steps, double min_time_s) {
  if (step_s <= 0 || steps_per_epoch <= 0 || min_time_s <= 0) return requested;
  const double headline_steps = std::ceil(1.5 * min_time_s / step_s);
  const double steps = headline_steps + static_cast<double>(warmup + tail_steps);
  const auto epochs = static_cast<int64_t>(std::ceil(steps / static_cast<double>(steps_per_epoch)));
  return std::clamp<int64_t>(epochs, requested, std::max(requested, kMaxMinTimeEpochs));
}

namespace {

// The first `requested` epochs' training and evaluation time when they all ran whole and no
// profiled step fell in them; nullopt otherwise.
std::optional<double> measured_time(const RunRecord& r, int64_t requested) {
  if (static_cast<int64_t>(r.epochs.size()) < requested) return std::nullopt;
  double t = 0;
  for (int64_t i = 0; i < requested; ++i) {
    const auto& e = r.epochs[static_cast<size_t>(i)];
    if (!e.complete || e.profiled_steps > 0) return std::nullopt;
    t += e.epoch_time_s + e.eval_time_s;
  }
  return t;
}

}  // namespace

void restate_requested_epochs(RunRecord& r, int64_t requested, int64_t train_count, double min_time_s,
                              double calibrated_epoch_headline_s) {
  const int64_t trained = static_cast<int64_t>(r.epochs.size());
  if (trained <= requested) return;
  r.epochs_requested = requested;
  const auto& last = r.epochs[static_cast<size_t>(requested - 1)];
  const auto final_accuracy = r.test_accuracy_pct;
  r.test_accuracy_pct = last.test_accuracy_pct;
  if (auto t = measured_time(r, requested)) {
    r.time_for_requested_epochs_s = *t;
    r.time_for_requested_epochs_is_estimate = false;
  } else if (r.steady_samples_per_s && *r.steady_samples_per_s > 0) {
    double eval_mean = 0;
    for (const auto& e : r.epochs) eval_mean += e.eval_time_s / static_cast<double>(trained);
    r.time_for_requested_epochs_s =
        static_cast<double>(requested) * (static_cast<double>(train_count) / *r.steady_samples_per_s + eval_mean);
    r.time_for_requested_epochs_is_estimate = true;
  }
  r.notes.push_back(fmt::format(
      "trained {} for a headline window of at least {} s (--min-time; a calibration pass measured {:.2f} s of "
      "headline per epoch, too short for {} telemetry readings of every field): test accuracy {} and the time for "
      "{} are those of the first {}{}",
      count_of(trained, "epoch"), format_number(min_time_s), calibrated_epoch_headline_s, kMinStatsSamples,
      last.test_accuracy_pct ? fmt::format("{:.2f} %", *last.test_accuracy_pct) : std::string("(not measured)"),
      count_of(requested, "requested epoch"), count_of(requested, "epoch"),
      final_accuracy ? fmt::format("; after all {} it was {:.2f} %", count_of(trained, "epoch"), *final_accuracy)
                     : std::string()));
}

}  // namespace trainscope

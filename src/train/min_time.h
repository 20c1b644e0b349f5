// The minimum measured time of a cell (train.min_time_s, docs/profiling.md#minimum-measured-time):
// a cell whose requested epochs give a headline window too short for its telemetry (fewer than
// kMinStatsSamples readings of the slowest field, trainscope/record_sections.h) trains more epochs,
// chosen from a short calibration pass, and its record restates the requested epochs' figures.
// google/benchmark's --benchmark_min_time is the same idea: iterate until the timed region is
// long enough to be measured.
#pragma once

#include <cstdint>

#include "trainscope/config.h"
#include "trainscope/run_record.h"

namespace trainscope {

/// The minimum headline time in seconds: train.min_time_s when >= 0 (0 = off); auto (< 0) =
/// (kMinStatsSamples + 1) x the slowest telemetry period (sampling and slow-field intervals),
/// 6 s at the defaults; 0 when telemetry is off (nothing then needs a longer window).
double effective_min_time_s(const TrainConfig& train, const TelemetryConfig& telemetry);

/// Whether a cell's length may be raised: a minimum is in force and the user bounded neither
/// steps (--max-steps), time (--time-budget) nor the end (--target-accuracy), and the run is one
/// process (ranks would each choose; data-parallel runs keep their epochs).
bool min_time_applies(const TrainConfig& train, double min_time_s, bool single_process);

/// Epochs to train so that the headline window (the steps after `warmup` and before the
/// `tail_steps` the profiler takes) lasts at least min_time_s at `step_s` seconds per step, with
/// a 50 % margin for the calibration's error; `requested` when that already holds. At most
/// kMaxMinTimeEpochs. Errors: none (step_s <= 0 or steps_per_epoch <= 0 give `requested`).
inline constexpr int64_t kMaxMinTimeEpochs = 1000;
int64_t epochs_for_min_time(int64_t requested, int64_t steps_per_epoch, double step_s, int64_t warmup,
                            int64_t tail_steps, double min_time_s);

/// After a run trained `r.epochs.size()` epochs instead of `requested`: epochs_requested,
/// test_accuracy_pct and time_for_requested_epochs_s describe the first `requested` epochs (the
/// time measured when those epochs ran whole and unprofiled, else estimated from the steady
/// samples/s as the trainer does), and a note says what was trained and why. `train_count` is
/// the training set's sample count.
void restate_requested_epochs(RunRecord& r, int64_t requested, int64_t train_count, double min_time_s,
                              double calibrated_epoch_headline_s);

}  // namespace trainscope

// `--batch-sizes auto`: the batch-size sweep. Per (device, model) the batch size doubles from a
// start (the smallest batch size given with `auto`, else batch_sweep.start) while training
// throughput keeps rising; the sweep stops at the first of:
//   * saturation: the last doubling raised steady samples/s by less than batch_sweep.min_gain_pct
//     (default 5 %) over the previous batch (a drop counts too);
//   * memory: the run at the last batch size failed out of memory (RunRecord error_kind
//     "out_of_memory");
//   * another failure of the run at the last batch size (its reason is quoted);
//   * the data set: the next batch would exceed the training samples;
//   * the limit: the next batch would exceed batch_sweep.max_batch.
// The saturation point is the smallest measured batch whose throughput is within min_gain_pct of
// the best measured one (the batch beyond which doubling no longer pays).
//
// The same rule is replayed by the report over any matrix with two or more batch sizes of one
// (device, model) (src/report/summary.cpp), so the run and the report cannot disagree.
// Units: batch sizes in samples, throughput in samples/s. No errors are thrown.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/config.h"

namespace trainscope {

/// One measured batch size: median steady samples/s over its ok repeats (absent when none was ok).
struct BatchSweepPoint {
  int64_t batch_size = 0;
  std::optional<double> samples_per_s;
  bool out_of_memory = false;   // a repeat failed with error_kind "out_of_memory"
  std::string failure;          // the failure reason of a repeat that failed ("" when all were ok)
  /// Every repeat finished ok but none had a step after its warm-up (batch x warm-up steps >=
  /// the training set): larger batches leave even fewer, so the sweep stops for the data set.
  bool too_few_steps = false;
};

struct BatchSweepRule {
  double min_gain_pct = BatchSweepConfig{}.min_gain_pct;  // a doubling must raise samples/s by at least this much
  int64_t max_batch = 1 << 20;   // never beyond this batch size (samples)
  int64_t train_samples = 0;     // training-set size; 0 = unknown (no data-set limit)
};

/// The sweep's state after the points measured so far (in doubling order).
struct BatchSweepStep {
  std::optional<int64_t> next;            // the batch size to measure next; absent: stop
  std::string stop_reason;                // why it stopped (a sentence with the numbers); "" while going on
  std::string stop_kind;                  // "saturated", "memory", "failed", "data_set", "limit"; "" while going on
  std::optional<int64_t> saturation_batch;  // set once stopped, when any point was measured
};

/// The next step of the sweep. `start` is the first batch size (used when `done` is empty).
BatchSweepStep next_batch_size(const std::vector<BatchSweepPoint>& done, const BatchSweepRule& rule, int64_t start);

/// The smallest measured batch within rule.min_gain_pct of the best measured throughput.
std::optional<int64_t> saturation_batch(const std::vector<BatchSweepPoint>& done, const BatchSweepRule& rule);

/// Runs the whole sweep: calls `measure(batch)` for each batch size next_batch_size asks for,
/// until it stops (or `measure` returns a point with batch_size 0: interrupted). Returns the
/// points measured and the final step. The runner passes a function that trains the cell; tests
/// pass a synthetic throughput curve.
struct BatchSweepResult {
  std::vector<BatchSweepPoint> points;
  BatchSweepStep last;
};
BatchSweepResult run_batch_sweep(int64_t start, const BatchSweepRule& rule,
                                 const std::function<BatchSweepPoint(int64_t)>& measure);

}  // namespace trainscope

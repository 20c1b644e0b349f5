// The minimum measured time (train/min_time.h, docs/profiling.md#minimum-measured-time): a cell
// whose requested epochs are too short for its telemetry trains more epochs, and its record keeps
// the requested epochs' accuracy and time. No timing assertions: the tests check what was
// trained and restated, not how long it took.
#include <gtest/gtest.h>

#include "trainscope/fs.h"

#include <filesystem>

#include "train/min_time.h"
#include "trainscope/record_sections.h"
#include "trainscope/runner.h"

using namespace trainscope;
namespace fs = std::filesystem;

TEST(MinTime, AutoIsSixReadingsOfTheSlowestFieldAndOffWithoutTelemetry) {
  TrainConfig t;
  TelemetryConfig tel;
  EXPECT_DOUBLE_EQ(effective_min_time_s(t, tel), (kMinStatsSamples + 1) * tel.slow_interval_s);
  tel.slow_interval_s = 2;
  EXPECT_DOUBLE_EQ(effective_min_time_s(t, tel), (kMinStatsSamples + 1) * 2.0);
  t.min_time_s = 0.5;
  EXPECT_DOUBLE_EQ(effective_min_time_s(t, tel), 0.5);
  tel.enabled = false;
  EXPECT_DOUBLE_EQ(effective_min_time_s(t, tel), 0);
}

TEST(MinTime, UserBoundsAndRanksKeepTheRequestedLength) {
  TrainConfig t;
  EXPECT_TRUE(min_time_applies(t, 6, true));
  EXPECT_FALSE(min_time_applies(t, 0, true));
  EXPECT_FALSE(min_time_applies(t, 6, false));
  t.max_steps = 100;
  EXPECT_FALSE(min_time_applies(t, 6, true));
  t = TrainConfig{};
  t.time_budget_s = 10;
  EXPECT_FALSE(min_time_applies(t, 6, true));
  t = TrainConfig{};
  t.target_accuracy_pct = 90;
  EXPECT_FALSE(min_time_applies(t, 6, true));
}

TEST(MinTime, EpochsCoverTheWindowWithItsMarginWarmUpAndProfilerTail) {
  // 469 steps per epoch (Fashion-MNIST at b128) at 1 ms: 6 s with its 50 % margin needs 9000
  // headline steps + 10 warm-up + 5 profiled = 9015 steps = 20 epochs
  EXPECT_EQ(epochs_for_min_time(1, 469, 0.001, 10, 5, 6), 20);
  // a CPU epoch of 40 s already holds the window
  EXPECT_EQ(epochs_for_min_time(1, 469, 0.085, 10, 5, 6), 1);
  EXPECT_EQ(epochs_for_min_time(3, 469, 0.001, 10, 5, 6), 20);  // never fewer than requested
  EXPECT_EQ(epochs_for_min_time(2, 469, 0.01, 10, 5, 6), 2);
  EXPECT_EQ(epochs_for_min_time(1, 1, 1e-9, 0, 0, 6), kMaxMinTimeEpochs);  // bounded
  EXPECT_EQ(epochs_for_min_time(1, 469, 0, 10, 5, 6), 1);  // not calibrated: as requested
}

TEST(MinTime, RestatedRecordDescribesTheRequestedEpochs) {
  RunRecord r;
  r.steady_samples_per_s = 1000;
  for (int i = 1; i <= 4; ++i) {
    EpochRecord e;
    e.epoch = i;
    e.epoch_time_s = 1.0;
    e.eval_time_s = 0.25;
    e.test_accuracy_pct = 80.0 + i;
    r.epochs.push_back(e);
  }
  r.test_accuracy_pct = 84;
  r.epochs_requested = 4;
  restate_requested_epochs(r, 2, 60000, 6, 0.4);
  EXPECT_EQ(r.epochs_requested, 2);
  EXPECT_DOUBLE_EQ(*r.test_accuracy_pct, 82);
  EXPECT_DOUBLE_EQ(*r.time_for_requested_epochs_s, 2.5);  // measured: two whole unprofiled epochs
  EXPECT_FALSE(r.time_for_requested_epochs_is_estimate);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.back().find("trained 4 epochs"), std::string::npos) << r.notes.back();
  EXPECT_NE(r.notes.back().find("after all 4 epochs it was 84.00 %"), std::string::npos) << r.notes.back();
  // a profiled step in a requested epoch: the time is estimated from the steady rate
  RunRecord p = r;
  p.epochs[1].profiled_steps = 5;
  p.epochs_requested = 4;
  restate_requested_epochs(p, 2, 60000, 6, 0.4);
  EXPECT_TRUE(p.time_for_requested_epochs_is_estimate);
  EXPECT_DOUBLE_EQ(*p.time_for_requested_epochs_s, 2 * (60.0 + 0.25));
}

// Through the matrix: a synthetic cell of 16 steps an epoch trains more epochs than the one
// requested, says so, and reports epoch 1's accuracy.
TEST(MinTime, AShortCellTrainsMoreEpochsAndSaysSo) {
  MatrixConfig m;
  m.devices = {"cpu"};
  m.models = {"mlp"};
  m.batch_sizes = {32};
  m.data.format = "synthetic";
  m.data.synthetic_train = 512;
  m.data.synthetic_test = 128;
  m.data.synthetic_size = 12;
  m.train.warmup_steps = 2;
  m.train.threads = 1;
  m.train.min_time_s = 2;  // at least 2 s of headline: more than 14 steps take on any machine
  m.inference.enabled = false;
  m.profile.enabled = false;
  m.out_dir = ::testing::TempDir() + "min_time";
  m.run_name = "short";
  trainscope::remove_tree(m.out_dir + "/short");
  m.progress = false;
  const auto res = run_matrix(m);
  ASSERT_EQ(res.runs.size(), 1u);
  const auto& r = res.runs[0];
  ASSERT_EQ(r.status, RunStatus::kOk) << r.failure_reason;
  EXPECT_GT(r.epochs.size(), 1u);
  EXPECT_EQ(r.epochs_requested, 1);
  ASSERT_TRUE(r.test_accuracy_pct && r.epochs[0].test_accuracy_pct);
  EXPECT_DOUBLE_EQ(*r.test_accuracy_pct, *r.epochs[0].test_accuracy_pct);
  bool said = false;
  for (const auto& n : r.notes) said = said || n.find("--min-time") != std::string::npos;
  EXPECT_TRUE(said);
  // --min-time 0: the requested epoch only
  m.train.min_time_s = 0;
  m.run_name = "off";
  trainscope::remove_tree(m.out_dir + "/off");
  const auto off = run_matrix(m);
  ASSERT_EQ(off.runs.size(), 1u);
  EXPECT_EQ(off.runs[0].epochs.size(), 1u);
}

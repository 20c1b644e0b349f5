// The batch-size sweep's stop rule (trainscope/batch_sweep.h), which the matrix and the report share,
// on injected throughput curves.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/batch_sweep.h"
#include "trainscope/compare.h"
#include "trainscope/history.h"
#include "trainscope/report.h"
#include "trainscope/variants.h"

#include "report_helpers.h"

using namespace trainscope;
using namespace report_test;

TEST(ReportBatchScaling, ReplaysTheSweepRuleOnMeasuredBatches) {
  auto a = analyze(load_run_folder(kStudy));
  const BatchScaling* s = nullptr;
  for (const auto& b : a.batch_scaling)
    if (b.device == "cpu" && b.model == "cnn") s = &b;
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->batch_sizes, (std::vector<int64_t>{64, 128}));
  ASSERT_TRUE(s->saturation_batch);
  EXPECT_EQ(*s->saturation_batch, 128);  // 7800 -> 8500 (+9 %): still rising
  EXPECT_TRUE(s->stop_reason.empty());
  AdviceThresholds t;
  t.batch_gain_pct = 10;  // +9 % no longer pays: saturated at 64
  auto b = analyze(load_run_folder(kStudy), t);
  for (const auto& x : b.batch_scaling)
    if (x.device == "cpu" && x.model == "cnn") {
      EXPECT_EQ(x.saturation_batch, std::optional<int64_t>(64));
      EXPECT_NE(x.stop_reason.find("throughput stopped rising"), std::string::npos) << x.stop_reason;
    }
}

// --batch-sizes auto on an injected throughput curve (no timing): the sweep stops at the
// saturation point and says why.
TEST(BatchSweep, StopsWhereThroughputStopsRising) {
  std::map<int64_t, double> curve{{16, 1000}, {32, 1900}, {64, 3500}, {128, 3600}, {256, 3700}};
  std::vector<int64_t> asked;
  auto res = run_batch_sweep(16, BatchSweepRule{}, [&](int64_t b) {
    asked.push_back(b);
    return BatchSweepPoint{b, curve.at(b), false, ""};
  });
  EXPECT_EQ(asked, (std::vector<int64_t>{16, 32, 64, 128}));  // 64 -> 128 gained 2.86 % < 5 %
  EXPECT_FALSE(res.last.next);
  EXPECT_EQ(res.last.stop_kind, "saturated");
  EXPECT_EQ(res.last.saturation_batch, std::optional<int64_t>(64));  // 3500 is within 5 % of 3600
  EXPECT_NE(res.last.stop_reason.find("batch 128 gave 3600 samples/s, +2.86 % over batch 64"), std::string::npos)
      << res.last.stop_reason;
}

TEST(BatchSweep, StopsWhenMemoryOrTheDataSetRunsOut) {
  auto oom = run_batch_sweep(32, BatchSweepRule{}, [](int64_t b) {
    if (b >= 128) return BatchSweepPoint{b, std::nullopt, true, "CUDA out of memory at batch 128"};
    return BatchSweepPoint{b, b * 100.0, false, ""};
  });
  EXPECT_EQ(oom.last.stop_kind, "memory");
  EXPECT_EQ(oom.points.back().batch_size, 128);
  EXPECT_EQ(oom.last.saturation_batch, std::optional<int64_t>(64));
  EXPECT_NE(oom.last.stop_reason.find("memory ran out at batch 128"), std::string::npos);
  BatchSweepRule small;
  small.train_samples = 100;
  auto data = run_batch_sweep(16, small, [](int64_t b) { return BatchSweepPoint{b, b * 100.0, false, ""}; });
  EXPECT_EQ(data.last.stop_kind, "data_set");
  EXPECT_EQ(data.points.back().batch_size, 64);
  EXPECT_NE(data.last.stop_reason.find("batch 128 would exceed the 100 training samples"), std::string::npos);
  auto failed = run_batch_sweep(16, BatchSweepRule{}, [](int64_t b) {
    return b == 32 ? BatchSweepPoint{b, std::nullopt, false, "NaN loss at step 3"} : BatchSweepPoint{b, 10.0, false, ""};
  });
  EXPECT_EQ(failed.last.stop_kind, "failed");
  EXPECT_NE(failed.last.stop_reason.find("NaN loss at step 3"), std::string::npos);
}

// Found by a walkthrough: a batch whose run finished ok with every step inside the warm-up was
// reported as a failed run; it is the data set running out of steady steps.
TEST(BatchSweep, AnOkRunWithoutSteadyStepsStopsForTheDataSetNotAsAFailure) {
  auto res = run_batch_sweep(64, BatchSweepRule{}, [](int64_t b) {
    if (b >= 256) return BatchSweepPoint{b, std::nullopt, false, "only 8 step(s), all inside the warm-up", true};
    return BatchSweepPoint{b, b * 100.0, false, "", false};
  });
  EXPECT_EQ(res.last.stop_kind, "data_set");
  EXPECT_EQ(res.last.stop_reason.find("failed"), std::string::npos) << res.last.stop_reason;
  EXPECT_NE(res.last.stop_reason.find("only 8 step(s), all inside the warm-up"), std::string::npos)
      << res.last.stop_reason;
  EXPECT_EQ(res.last.saturation_batch, std::optional<int64_t>(128));
}

// Cell identity in the report, compare and history: variant, world size and time-to-accuracy target.
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

namespace {

// `runs` with every record turned into a data-parallel one of `world` ranks.
std::vector<RunRecord> as_world(std::vector<RunRecord> runs, int64_t world) {
  for (auto& r : runs) r.world_size = world;
  return runs;
}

std::vector<RunRecord> cpu_runs(const std::string& folder) {
  auto runs = load_run_folder(folder).runs;
  std::erase_if(runs, [](const RunRecord& r) { return r.device != "cpu"; });
  return runs;
}

}  // namespace

TEST(ReportIdentity, ModelLabelNamesVariantAndWorldSize) {
  EXPECT_EQ(model_label("mlp", "eager", 1), "mlp");
  EXPECT_EQ(model_label("cnn", "bf16", 1), "cnn [bf16]");
  EXPECT_EQ(model_label("mlp", "eager", 2), "mlp ×2 ranks");
  EXPECT_EQ(model_label("cnn", "graphs+bf16", 4), "cnn ×4 ranks [graphs+bf16]");
  // the variant stays last, so a variant's eager cell is found at the same world size
  EXPECT_EQ(split_model_variant(model_label("cnn", "bf16", 2)), (std::pair<std::string, std::string>{"cnn ×2 ranks", "bf16"}));
  RunRecord one, dp;
  one.model = dp.model = "mlp";
  one.batch_size = dp.batch_size = 64;
  dp.world_size = 2;
  EXPECT_FALSE(workload_of(one) == workload_of(dp));
  EXPECT_NE(workload_key(workload_of(one)), workload_key(workload_of(dp)));
  EXPECT_NE(workload_label(workload_of(dp)).find("`mlp ×2 ranks` b64"), std::string::npos) << workload_label(workload_of(dp));
}

// Tester: `compare one/ dp2/` (both -b 64) printed "cpu mlp 64 8008 5560 -30.6% REGRESSION".
TEST(ReportIdentity, CompareNeverPairsADataParallelRunWithAOneProcessRun) {
  auto one = cpu_runs(kStudy);  // mlp and cnn, b64 and b128, 3 repeats each
  auto dp = as_world(one, 2);
  for (auto& r : dp) *r.steady_samples_per_s *= 0.5;
  auto c = compare_runs(one, dp);
  EXPECT_TRUE(c.rows.empty());
  EXPECT_FALSE(c.regressed);
  ASSERT_EQ(c.only_in_a.size(), 4u);
  ASSERT_EQ(c.only_in_b.size(), 4u);
  EXPECT_NE(c.only_in_b[0].find("×2 ranks"), std::string::npos) << c.only_in_b[0];
  EXPECT_EQ(c.only_in_a[0].find("ranks"), std::string::npos) << c.only_in_a[0];
  // both sides with both kinds: one row each, the data-parallel one labelled
  auto both = one;
  both.insert(both.end(), dp.begin(), dp.end());
  auto d = compare_runs(both, both);
  ASSERT_EQ(d.rows.size(), 8u);
  std::set<std::string> models;
  for (const auto& row : d.rows) models.insert(row.model);
  EXPECT_TRUE(models.count("cnn ×2 ranks") && models.count("mlp ×2 ranks") && models.count("mlp"));
  EXPECT_NE(render_compare(d, "A", "B").find("mlp ×2 ranks"), std::string::npos);
}

// Tester: `report mix/ dp2/` fed the 2-rank b64 run into the b32 -> b64 batch scaling.
TEST(ReportIdentity, ReportKeepsDataParallelRunsOutOfOneProcessCellsAndBatchScaling) {
  auto base = load_run_folder(kStudy);
  const auto before = analyze(base);
  auto in = base;
  for (const auto& r : base.runs)
    if (r.device == "cpu" && r.model == "mlp" && r.batch_size == 64 && r.world_size == 1) {
      RunRecord dp = r;
      dp.world_size = 2;
      dp.run_id += "-dp2";
      *dp.steady_samples_per_s *= 12;
      in.runs.push_back(dp);
    }
  auto a = analyze(in);
  const Cell* one = nullptr;
  const Cell* dp = nullptr;
  const Cell* one_before = nullptr;
  for (const auto& c : a.cells)
    if (c.device == "cpu" && c.batch_size == 64) {
      if (c.model == "mlp") one = &c;
      if (c.model == "mlp ×2 ranks") dp = &c;
    }
  for (const auto& c : before.cells)
    if (c.device == "cpu" && c.batch_size == 64 && c.model == "mlp") one_before = &c;
  ASSERT_TRUE(one && dp && one_before);
  EXPECT_EQ(one->runs_ok, one_before->runs_ok);  // not a repeat of the one-process cell
  EXPECT_DOUBLE_EQ(one->samples_per_s.median, one_before->samples_per_s.median);
  EXPECT_EQ(dp->runs_ok, one->runs_ok);
  // the one-process batch series is unchanged; the data-parallel cell has no series (one batch)
  for (const auto& b : a.batch_comparisons) EXPECT_EQ(b.model.find("ranks"), std::string::npos) << b.model;
  for (const auto& s : a.batch_scaling) EXPECT_EQ(s.model.find("ranks"), std::string::npos) << s.model;
  EXPECT_EQ(a.batch_comparisons.size(), before.batch_comparisons.size());
  const std::string md = render_markdown(in, a);
  EXPECT_NE(md.find("mlp ×2 ranks"), std::string::npos);
}

// Tester: `compare resv resv` (--variants eager,bf16,channels_last) printed three "cpu cnn 32" rows.
TEST(ReportIdentity, CompareNamesTheVariantOfEachRow) {
  auto eager = cpu_runs(kHealthy);
  auto runs = eager;
  for (const char* v : {"bf16", "channels_last"})
    for (auto r : eager) {
      r.variant = v;
      runs.push_back(r);
    }
  auto c = compare_runs(runs, runs);
  ASSERT_EQ(c.rows.size(), 3 * eager.size());
  std::set<std::string> labels;
  for (const auto& row : c.rows) labels.insert(row.device + " " + row.model + " " + std::to_string(row.batch_size));
  EXPECT_EQ(labels.size(), c.rows.size());  // no two rows read the same
  const std::string out = render_compare(c, "A", "B");
  EXPECT_NE(out.find("cnn [bf16]"), std::string::npos) << out;
  EXPECT_NE(out.find("cnn [channels_last]"), std::string::npos) << out;
}

TEST(ReportIdentity, HistoryListsTheVariantAndWorldSize) {
  auto dir = tmpdir("history_identity");
  auto in = load_run_folder(kHealthy);
  HistoryDb db(dir + "/h.sqlite");
  auto m = db.begin_matrix(dir + "/run", in.provenance);
  RunRecord bf16 = in.runs[0], dp = in.runs[0], eager = in.runs[0];
  bf16.variant = "bf16";
  bf16.run_id += "-bf16";
  dp.world_size = 2;
  dp.run_id += "-dp";
  db.run_finished(m, eager);
  db.run_finished(m, bf16);
  db.run_finished(m, dp);
  auto rows = db.list();
  ASSERT_EQ(rows.size(), 3u);  // newest first
  EXPECT_EQ(rows[0].world_size, 2);
  EXPECT_EQ(rows[0].variant, "eager");
  EXPECT_EQ(rows[1].variant, "bf16");
  EXPECT_EQ(rows[1].world_size, 1);
  EXPECT_EQ(rows[2].variant, "eager");
  EXPECT_EQ(model_label(rows[1].model, rows[1].variant, rows[1].world_size), "cnn [bf16]");
}

namespace {

std::vector<RunRecord> with_target(std::vector<RunRecord> runs, double target, std::optional<double> time_s,
                                   double best) {
  for (auto& r : runs) {
    TimeToAccuracy t;
    t.target_pct = target;
    t.reached = time_s.has_value();
    t.time_s = time_s;
    t.best_accuracy_pct = best;
    r.time_to_accuracy = t;
  }
  return runs;
}

}  // namespace

// Tester: --target-accuracy 40 vs 75 compared as "+232% REGRESSION"; a missed target printed
// "no regression" and "nothing was compared" without the reason.
TEST(ReportIdentity, TimeToAccuracyComparesOnlyAtOneTargetAndSaysWhyNot) {
  auto runs = cpu_runs(kHealthy);
  runs.resize(1);
  auto a = with_target(runs, 40, 10.0, 41);
  auto b = with_target(runs, 75, 33.2, 76);
  auto c = compare_runs(a, b, "time_to_accuracy_s");
  EXPECT_FALSE(c.regressed);
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_FALSE(c.rows[0].delta_pct);
  EXPECT_NE(c.rows[0].why_not.find("the targets differ (A: 40.0 %; B: 75.0 %)"), std::string::npos) << c.rows[0].why_not;
  std::string out = render_compare(c, "A", "B");
  EXPECT_NE(out.find("not compared: the targets differ (A: 40.0 %; B: 75.0 %)"), std::string::npos) << out;
  EXPECT_EQ(out.find("no regression"), std::string::npos) << out;
  EXPECT_NE(out.find("nothing was compared"), std::string::npos) << out;
  // the same target compares
  auto same = compare_runs(a, with_target(runs, 40, 12.0, 42), "time_to_accuracy_s");
  ASSERT_EQ(same.rows.size(), 1u);
  ASSERT_TRUE(same.rows[0].delta_pct);
  EXPECT_NEAR(*same.rows[0].delta_pct, 20, 1e-9);
  // B never reached its target: the reason, not a bare "not measured"
  auto missed = compare_runs(with_target(runs, 75, 30.0, 76), with_target(runs, 75, std::nullopt, 62.3),
                             "time_to_accuracy_s");
  ASSERT_EQ(missed.rows.size(), 1u);
  out = render_compare(missed, "A", "B");
  EXPECT_NE(out.find("B: target 75.0 % not reached (best 62.3 %)"), std::string::npos) << out;
  EXPECT_EQ(out.find("no regression"), std::string::npos) << out;
  EXPECT_NE(out.find("nothing was compared"), std::string::npos) << out;
  // a side without --target-accuracy says so
  auto none = compare_runs(runs, with_target(runs, 75, 30.0, 76), "time_to_accuracy_s");
  ASSERT_EQ(none.rows.size(), 1u);
  EXPECT_NE(none.rows[0].why_not.find("A: trained without --target-accuracy"), std::string::npos) << none.rows[0].why_not;
}

// Tester: `report` on a folder whose rank 0 died (0 runs) exited 0 with an empty summary.
TEST(ReportIdentity, FolderWithoutRunsIsRefusedNamingTheRankRecords) {
  auto dir = tmpdir("no_runs");
  write_file_atomic(dir + "/results.json", R"({"provenance": {}, "runs": []})");
  auto in = resolve_runs(dir, dir + "/none.sqlite");
  EXPECT_TRUE(in.runs.empty());
  try {
    require_runs(in, dir);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kDataFormat);
    EXPECT_NE(std::string(e.what()).find("holds no runs"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("ranks/"), std::string::npos) << e.what();
  }
  std::filesystem::create_directories(dir + "/ranks/rank1");
  write_file_atomic(dir + "/ranks/rank1/results.json", R"({"runs": []})");
  try {
    require_runs(in, dir);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(dir + "/ranks/rank1/results.json"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(require_runs(load_run_folder(kHealthy), kHealthy));
}

// `compare` of two run sets (trainscope/compare.h): regression beyond the threshold and the noise,
// and the differences between the two sides it names.
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

TEST(ReportCompare, WarnsWhenTheSidesUsedDifferentDataOrStoppedDifferently) {
  auto a = load_run_folder(kStudy).runs;
  auto same = compare_runs(a, a);
  EXPECT_TRUE(same.warnings.empty());
  auto b = a;
  for (auto& r : b) r.dataset = "synthetic";
  auto c = compare_runs(a, b);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("different data sets"), std::string::npos) << c.warnings[0];
  EXPECT_NE(render_compare(c, "A", "B").find("warning: the sides trained on different data sets"), std::string::npos);
  for (auto& r : b) r.dataset = a[0].dataset, r.stop_reason = "max_steps";
  auto d = compare_runs(a, b);
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].find("differ in settings (the differs: lines): a change in the figures may come"), std::string::npos) << d.warnings[0];
  ASSERT_EQ(d.setting_differences.size(), 1u);
  EXPECT_EQ(d.setting_differences[0].rfind("end: A complete; B max steps ", 0), 0u) << d.setting_differences[0];
  // every setting that changes the figures is named, each side's values apart
  for (auto& r : b) r.stop_reason.clear(), r.test_samples = 1000, r.telemetry.reset();
  const auto e = compare_runs(a, b);
  const std::string out = render_compare(e, "A", "B");
  EXPECT_NE(out.find("differs: test samples: A " + std::to_string(a[0].test_samples) + "; B 1000\n"), std::string::npos) << out;
  EXPECT_NE(out.find("differs: telemetry: A on; B off\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("differs: end:"), std::string::npos) << out;
  // both sides mixing the same two endings alike: nothing differs between them
  auto mixed = a;
  mixed[0].stop_reason = "max_steps";
  const auto f = compare_runs(mixed, mixed);
  EXPECT_TRUE(f.setting_differences.empty()) << f.setting_differences.front();
  EXPECT_TRUE(f.warnings.empty());
}

// The same usable CPU count from different limits (taskset on one side, a cgroup quota on the
// other) is a difference compare names: the two runs' CPUs were not the same.
TEST(ReportCompare, NamesTheCpuLimitOfEachSide) {
  auto a = load_run_folder(kStudy);
  auto b = a;
  a.provenance.cpu_usable_cores = b.provenance.cpu_usable_cores = 1;
  a.provenance.cpu_limit = "affinity mask: 1 of 16 CPUs, set by taskset, Slurm or a cpuset";
  b.provenance.cpu_limit = "cgroup CPU quota: 0.5 CPUs, set by a container or job limit";
  const std::string out = render_compare(compare_inputs(a, b), "A", "B");
  EXPECT_NE(out.find("differs: CPU limit: affinity mask: 1 of 16 CPUs, set by taskset, Slurm or a cpuset vs cgroup CPU "
                     "quota: 0.5 CPUs, set by a container or job limit\n"),
            std::string::npos)
      << out;
  b.provenance.cpu_limit.clear();
  b.provenance.cpu_usable_cores = 16;
  const std::string out2 = render_compare(compare_inputs(a, b), "A", "B");
  EXPECT_NE(out2.find("differs: CPU: Intel(R) Xeon(R) Platinum 8480C (16 logical CPUs, 1 usable) vs Intel(R) Xeon(R) "
                      "Platinum 8480C (16 logical CPUs)\n"),
            std::string::npos)
      << out2;
  EXPECT_NE(out2.find("vs none\n"), std::string::npos) << out2;
}

// One side's host tensors from tcmalloc, the other's from glibc: host-side step time may differ by
// that alone (bench/RESULTS.md, "The allocator, not the sampler"), so compare names it; a record from before the
// field says so rather than showing an empty allocator.
TEST(ReportCompare, NamesADifferingHostAllocator) {
  auto a = load_run_folder(kStudy);
  auto b = a;
  a.provenance.host_allocator = "glibc 2.36 malloc, fixed thresholds: mmap 1024 MiB, trimming off";
  b.provenance.host_allocator = "tcmalloc (replaces glibc malloc; malloc tuning does not apply)";
  std::string out = render_compare(compare_inputs(a, b), "A", "B");
  EXPECT_NE(out.find("differs: host allocator: glibc 2.36 malloc, fixed thresholds: mmap 1024 MiB, trimming off vs "
                     "tcmalloc (replaces glibc malloc; malloc tuning does not apply)\n"),
            std::string::npos)
      << out;
  b.provenance.host_allocator.clear();
  out = render_compare(compare_inputs(a, b), "A", "B");
  EXPECT_NE(out.find("trimming off vs not recorded\n"), std::string::npos) << out;
  b.provenance.host_allocator = a.provenance.host_allocator;
  out = render_compare(compare_inputs(a, b), "A", "B");
  EXPECT_EQ(out.find("host allocator"), std::string::npos) << out;
}

// Threads differ in the provenances and in the runs: compare_inputs says it once, as the
// provenance's "intra-op threads: 2 vs 1" line.
TEST(ReportCompare, ASettingThatTheProvenancesAlreadyDifferInIsSaidOnce) {
  auto a = load_run_folder(kStudy);
  auto b = a;
  b.provenance.intra_op_threads = a.provenance.intra_op_threads + 1;
  for (auto& r : b.runs) r.intra_op_threads = b.provenance.intra_op_threads, r.learning_rate *= 2;
  const auto c = compare_inputs(a, b);
  const std::string out = render_compare(c, "A", "B");
  size_t threads_lines = 0;
  for (size_t at = out.find("differs: intra-op threads"); at != std::string::npos;
       at = out.find("differs: intra-op threads", at + 1))
    ++threads_lines;
  EXPECT_EQ(threads_lines, 1u) << out;
  EXPECT_NE(out.find("differs: learning rate: A "), std::string::npos) << out;  // the others stay
}

TEST(ReportCompare, NoCommonCellSaysNothingWasCompared) {
  auto a = load_run_folder(kStudy).runs;
  auto b = a;
  for (auto& r : b) r.batch_size += 1;  // no cell in common
  std::string out = render_compare(compare_runs(a, b), "A", "B");
  EXPECT_NE(out.find("nothing was compared"), std::string::npos) << out;
  EXPECT_EQ(out.find("no regression"), std::string::npos) << out;  // no verdict without a comparison
}

TEST(ReportCompare, RegressionBeyondThresholdAndNoise) {
  auto a = load_run_folder(kStudy).runs;
  auto b = a;
  for (auto& r : b)
    if (r.model == "cnn" && r.batch_size == 128 && r.device == "cuda:0") {  // 20 % slower
      *r.steady_samples_per_s *= 0.8;
      *r.mean_epoch_time_s /= 0.8;
    }
  auto c = compare_runs(a, b, "steady_samples_per_s", 5);
  EXPECT_TRUE(c.regressed);
  int regressions = 0;
  for (const auto& row : c.rows) {
    if (row.regression) {
      ++regressions;
      EXPECT_EQ(row.model, "cnn");
      EXPECT_NEAR(*row.delta_pct, -20, 1e-9);
    }
  }
  EXPECT_EQ(regressions, 1);
  EXPECT_NE(render_compare(c, "A", "B").find("REGRESSION"), std::string::npos);
  // same data: no regression
  EXPECT_FALSE(compare_runs(a, a).regressed);
  // a larger threshold tolerates it
  EXPECT_FALSE(compare_runs(a, b, "steady_samples_per_s", 25).regressed);
  // lower-is-better metric: a longer epoch time is the regression
  auto t = compare_runs(a, b, "mean_epoch_time_s", 5);
  EXPECT_TRUE(t.regressed);
  EXPECT_FALSE(t.higher_is_better);
}

TEST(ReportCompare, ChangeInsideTheSpreadIsNoise) {
  auto a = load_run_folder(kStudy).runs;
  auto b = a;
  // mlp b128 repeats spread by about 15 %; a 6 % drop is inside it
  for (auto& r : b)
    if (r.model == "mlp" && r.batch_size == 128) *r.steady_samples_per_s *= 0.94;
  auto c = compare_runs(a, b, "steady_samples_per_s", 5);
  EXPECT_FALSE(c.regressed);
  bool saw = false;
  for (const auto& row : c.rows)
    if (row.model == "mlp" && row.batch_size == 128) {
      saw = true;
      EXPECT_TRUE(row.noise);
    }
  EXPECT_TRUE(saw);
}

TEST(ReportCompare, OneRepeatVerdictSaysItMayBeNoise) {
  auto a = load_run_folder(kHealthy).runs;
  a.resize(1);  // one repeat per side
  auto b = a;
  *b[0].steady_samples_per_s *= 0.88;  // -12 %
  auto c = compare_runs(a, b, "steady_samples_per_s", 5);
  EXPECT_TRUE(c.regressed);  // still gates (exit 4), but says why it may be wrong
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_TRUE(c.rows[0].single_repeat);
  auto out = render_compare(c, "A", "B");
  EXPECT_NE(out.find("REGRESSION (1 repeat: may be noise)"), std::string::npos) << out;
  EXPECT_NE(out.find("note: 1 verdict(s) rest on one repeat per side"), std::string::npos) << out;
  // cells with repeats (most of the study fixture) carry no such caveat
  auto s = load_run_folder(kStudy).runs;
  auto t = s;
  for (auto& r : t) *r.steady_samples_per_s *= 0.5;
  auto sc = compare_runs(s, t);
  for (const auto& row : sc.rows) EXPECT_EQ(row.single_repeat, row.a.n < 2 && row.b.n < 2) << row.model;
  auto st = render_compare(sc, "A", "B");
  EXPECT_NE(st.find("REGRESSION\n"), std::string::npos) << st;
}

TEST(ReportCompare, PrintsEnoughDigitsToTellMediansApart) {
  auto a = load_run_folder(kHealthy).runs;
  a.resize(1);
  auto b = a;
  a[0].steady_samples_per_s = 0.0712;
  b[0].steady_samples_per_s = 0.0748;
  auto out = render_compare(compare_runs(a, b), "A", "B");
  EXPECT_NE(out.find("0.07120"), std::string::npos) << out;  // 4 significant digits, not "0.07"
  EXPECT_NE(out.find("0.07480"), std::string::npos) << out;
  a[0].steady_samples_per_s = 1.000012;
  b[0].steady_samples_per_s = 1.000034;
  out = render_compare(compare_runs(a, b), "A", "B");
  EXPECT_NE(out.find("1.00001 "), std::string::npos) << out;  // more digits until they differ
  EXPECT_NE(out.find("1.00003 "), std::string::npos) << out;
}

TEST(ReportCompare, UnknownMetricIsAnError) {
  auto a = load_run_folder(kHealthy).runs;
  EXPECT_THROW(compare_runs(a, a, "speed"), Error);
  EXPECT_THROW(compare_runs(a, a, "steady_samples_per_s", -1), Error);
}

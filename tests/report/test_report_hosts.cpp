// Run folders from two machines: one comparison naming both hosts and the workloads only one measured.
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

TEST(ReportHosts, TwoHostsGiveOneComparisonNamingBoth) {
  auto in = merge_inputs({load_run_folder(kStudy), second_host()});
  ASSERT_EQ(in.sources.size(), 2u);
  auto a = analyze(in);
  EXPECT_TRUE(a.multi_host);
  ASSERT_EQ(a.host_comparisons.size(), 1u);
  const HostComparison& h = a.host_comparisons[0];
  EXPECT_NE(h.host_a.find("fixture-host"), std::string::npos);
  EXPECT_NE(h.host_b.find("gpu-box"), std::string::npos);
  auto has = [](const std::vector<std::string>& v, const std::string& s) {
    return std::any_of(v.begin(), v.end(), [&](const std::string& x) { return x.find(s) != std::string::npos; });
  };
  EXPECT_TRUE(has(h.differences, "LibTorch: 2.11.0 vs 2.1.0")) << ::testing::PrintToString(h.differences);
  EXPECT_TRUE(has(h.differences, "intra-op threads"));
  EXPECT_TRUE(has(h.not_comparable, "`cnn` b64 (fashion-mnist, seed 42): measured only on fixture-host"))
      << ::testing::PrintToString(h.not_comparable);
  for (const auto& r : h.rows) {
    EXPECT_EQ(r.workload.find("`cnn` b64"), std::string::npos);  // never compared
    ASSERT_TRUE(r.ratio);
    EXPECT_NEAR(*r.ratio, 2.0, 1e-9) << r.workload;
  }
  // mlp b64, mlp b128, cnn b128, and the 2-rank cnn b128 run: its own workload (world size), never
  // the fastest device of the one-process cnn b128
  EXPECT_EQ(h.rows.size(), 4u);
  EXPECT_EQ(std::count_if(h.rows.begin(), h.rows.end(),
                          [](const auto& r) { return r.workload.find("`cnn ×2 ranks` b128") != std::string::npos; }),
            1);
  std::string md = render_markdown(in, a);
  EXPECT_NE(md.find("## Across machines"), std::string::npos);
  EXPECT_NE(md.find("cuda:0 on gpu-box"), std::string::npos);  // the cells name their host
  EXPECT_NE(md.find("folder /elsewhere/run"), std::string::npos);  // each side keeps its provenance
  // a GPU host without a CPU run: its speed-up is over the other host's CPU of the same workload
  // (cnn b128: 2 x 53000 / 8500 = 12.5x), each host's GPU row with its own figure
  auto gpu_only = second_host();
  std::erase_if(gpu_only.runs, [](const RunRecord& r) { return r.device == "cpu"; });
  auto a3 = analyze(merge_inputs({load_run_folder(kStudy), gpu_only}));
  std::string md3 = render_markdown(in, a3);
  EXPECT_NE(md3.find("| cuda:0 on gpu-box | 128 | 106000 (±2650, n=3) | 12.5× |"), std::string::npos) << md3.substr(0, 3000);
  EXPECT_NE(md3.find("| cuda:0 on fixture-host | 128 | 53000 (±1325, n=3) | 6.24× |"), std::string::npos);
  // a different seed is another workload: not comparable either
  auto c = second_host();
  for (auto& r : c.runs) r.seed = 7;
  auto a2 = analyze(merge_inputs({load_run_folder(kStudy), c}));
  ASSERT_EQ(a2.host_comparisons.size(), 1u);
  EXPECT_TRUE(a2.host_comparisons[0].rows.empty());
}

TEST(ReportHosts, CompareNamesBothHostsAndTheirDifferences) {
  auto res = compare_inputs(load_run_folder(kStudy), second_host());
  EXPECT_NE(res.host_a.find("fixture-host"), std::string::npos);
  EXPECT_NE(res.host_b.find("gpu-box"), std::string::npos);
  std::string out = render_compare(res, "A", "B");
  EXPECT_NE(out.find("on gpu-box"), std::string::npos) << out;
  EXPECT_NE(out.find("differs: LibTorch"), std::string::npos) << out;
  EXPECT_NE(out.find("not comparable"), std::string::npos) << out;
  EXPECT_FALSE(res.only_in_a.empty());
}

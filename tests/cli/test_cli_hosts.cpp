// Run folders measured on two machines: `report` and `history import` name both hosts and the
// workloads only one of them measured.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "../test_helpers.h"
#include "cli_helpers.h"
#include "common/text.h"
#include "trainscope/config.h"
#include "trainscope/cpu_budget.h"
#include "trainscope/fs.h"
#include "trainscope/inference_reporter.h"
#include "trainscope/provenance.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace cli_test;

namespace {

// The study fixture as measured on this host (A) and on "gpu-box" (B: another LibTorch, its
// provenance edited, the cnn b64 workload not measured there).
std::pair<std::string, std::string> two_hosts(const std::string& dir) {
  trainscope::remove_tree(dir);
  auto study = json::parse(std::ifstream(std::string(TS_FIXTURES_DIR) + "/report/study/results.json"));
  fs::create_directories(dir + "/a");
  std::ofstream(dir + "/a/results.json") << study.dump();
  auto b = study;
  b["provenance"]["host"] = "gpu-box";
  b["provenance"]["libtorch_version"] = "2.1.0";
  json runs = json::array();
  for (const auto& r : b["runs"])
    if (!(r["model"] == "cnn" && r["batch_size"] == 64)) runs.push_back(r);
  b["runs"] = runs;
  fs::create_directories(dir + "/b");
  std::ofstream(dir + "/b/results.json") << b.dump();
  return {dir + "/a", dir + "/b"};
}

}  // namespace

TEST(CliHosts, ReportOnTwoHostsNamesBothAndListsMismatchedWorkloads) {
  std::string dir = test_path("cli_hosts");
  auto [a, b] = two_hosts(dir);
  std::string out;
  ASSERT_EQ(run({"report", a, b, "-o", dir + "/out", "--db", dir + "/none.sqlite"}, &out), 0) << out;
  EXPECT_NE(out.find("Across machines: A = fixture-host"), std::string::npos) << out;
  EXPECT_NE(out.find("B = gpu-box"), std::string::npos) << out;
  EXPECT_NE(out.find("differs: LibTorch: "), std::string::npos) << out;
  EXPECT_NE(out.find("not comparable: `cnn` b64 (fashion-mnist, seed 42): measured only on fixture-host"),
            std::string::npos)
      << out;
  auto md = trainscope::test::read_text(dir + "/out/report.md");
  size_t n = 0;
  for (size_t p = md.find("## Across machines"); p != std::string::npos; p = md.find("## Across machines", p + 1)) ++n;
  EXPECT_EQ(n, 1u);  // one comparison
  EXPECT_TRUE(fs::exists(dir + "/out/report.html"));
  // compare: each side names its host; the mismatched workload is not compared
  ASSERT_EQ(run({"compare", a, b, "--db", dir + "/none.sqlite", "--threshold-pct", "1000"}, &out), 0) << out;
  EXPECT_NE(out.find("on gpu-box"), std::string::npos) << out;
  EXPECT_NE(out.find("differs: LibTorch"), std::string::npos) << out;
  EXPECT_NE(out.find("not comparable"), std::string::npos) << out;
}

TEST(CliHosts, HistoryImportAddsAFolderOnceAndRefusesANonRunFolder) {
  std::string dir = test_path("cli_import");
  auto [a, b] = two_hosts(dir);
  std::string db = dir + "/h.sqlite", out;
  ASSERT_EQ(run({"history", "import", b, "--db", db}, &out), 0) << out;
  EXPECT_NE(out.find("imported 19 run(s) from host gpu-box"), std::string::npos) << out;
  ASSERT_EQ(run({"history", "import", b, "--db", db}, &out), 0) << out;
  EXPECT_NE(out.find("nothing added"), std::string::npos) << out;
  ASSERT_EQ(run({"history", "--db", db, "-n", "0"}, &out), 0) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 19 + 3) << out;  // header, 19 runs, blank, hint
  EXPECT_EQ(run({"history", "import", dir, "--db", db}, &out), 2) << out;
  EXPECT_NE(out.find("is not a run folder: it has no results.json"), std::string::npos) << out;
}

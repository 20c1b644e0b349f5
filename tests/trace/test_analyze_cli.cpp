// `trainscope analyze` end to end: console summary, --json and --markdown files, exit statuses.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../test_helpers.h"

namespace {

const std::string kBin = std::string(TS_BINARY_DIR) + "/trainscope";
const std::string kDir = std::string(TS_FIXTURES_DIR) + "/trace";

struct Result {
  int status = -1;
  std::string out;
};

// Runs the binary with `args` (shell words), stdout and stderr together.
Result run(const std::string& args) {
  Result r;
  FILE* p = popen((kBin + " analyze " + args + " 2>&1").c_str(), "r");
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "pid" + std::to_string(getpid()) + "_" + name;
}

}  // namespace

TEST(AnalyzeCli, FolderOfTracesToConsoleJsonAndMarkdown) {
  const std::string json_path = temp_path("analysis.json"), md_path = temp_path("analysis.md");
  const Result r = run(kDir + " --json " + json_path + " --markdown " + md_path);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("ProfilerStep#1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GPU idle time per stream"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(trainscope::test::read_text(json_path));
  ASSERT_EQ(j["traces"].size(), 4u);
  for (const auto& t : j["traces"])
    for (const auto& s : t["steps"]) {
      int64_t sum = 0;
      for (const auto& [k, v] : s["categories_ns"].items()) sum += v.get<int64_t>();
      EXPECT_EQ(sum, s["duration_ns"].get<int64_t>()) << t["path"] << " " << s["name"];
    }
  EXPECT_NE(trainscope::test::read_text(md_path).find("# Trace analysis"), std::string::npos);
}

TEST(AnalyzeCli, BadTraceIsReportedAndTheOthersAreAnalysed) {
  const std::string bad = temp_path("bad.pt.trace.json");
  std::ofstream(bad) << R"({"schemaVersion": 1, "traceEvents": [{"ph": "X")";
  const Result r = run(bad + " " + kDir + "/kineto_hand");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("trainscope: error (data_format): " + bad + ": truncated at byte"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ProfilerStep#2"), std::string::npos) << "the good trace is still analysed: " << r.out;
}

TEST(AnalyzeCli, UsageErrors) {
  EXPECT_EQ(run("").status, 2);  // `trainscope analyze` without a trace
  const Result r = run(temp_path("nowhere"));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("no such file or folder"), std::string::npos) << r.out;
}

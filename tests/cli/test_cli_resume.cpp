// --resume after SIGKILL or SIGINT: finished runs kept, not repeated; one telemetry series; flags
// that would change the matrix refused.
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

TEST(Cli, SigkillThenResumeCompletesWithoutRepeatingFinishedRuns) {
  std::string dir = test_path("cli_resume");
  trainscope::remove_tree(dir);
  auto p = spawn(small_matrix(dir, "m"), test_path("kill_out.txt"));
  const std::string results = dir + "/m/results.json";
  wait_for_runs(results, 2);
  kill(p.pid, SIGKILL);
  wait_status(p.pid);
  auto before = json::parse(std::ifstream(results))["runs"];
  ASSERT_GE(before.size(), 2u);
  ASSERT_LT(before.size(), 4u);
  int64_t kept_end = 0;
  for (size_t i = 0; i < before.size(); ++i) kept_end = std::max(kept_end, before[i]["end_ns"].get<int64_t>());
  // The finished runs' telemetry survived the SIGKILL (it is rewritten after every run).
  ASSERT_TRUE(fs::exists(dir + "/m/telemetry.csv.gz"));
  auto killed_rows = telemetry_times(dir + "/m/telemetry.csv.gz");
  EXPECT_TRUE(std::any_of(killed_rows.begin(), killed_rows.end(), [&](int64_t t) { return t <= kept_end; }))
      << "no sample of the finished runs";
  std::string out;
  std::ofstream(dir + "/m/results.csv.tmp.12345") << "half-written";  // as a killed write leaves it
  ASSERT_EQ(run({"run", "--resume", dir + "/m", "--no-progress"}, &out), 0) << out;
  EXPECT_FALSE(fs::exists(dir + "/m/results.csv.tmp.12345")) << "leftover temporary files are removed";
  auto after = json::parse(std::ifstream(results))["runs"];
  ASSERT_EQ(after.size(), 4u);
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(after[i]["run_id"], before[i]["run_id"]);
    EXPECT_EQ(after[i]["start_ns"], before[i]["start_ns"]);  // kept, not re-run
  }
  for (const auto& r : after) EXPECT_EQ(r["status"], "ok");
  // The resumed session is a new matrix in the history (docs/report.md#history-and-compare: `--resume` gets a new id).
  std::string hist;
  ASSERT_EQ(run({"history", "--db", dir + "/history.sqlite"}, &hist), 0) << hist;
  EXPECT_NE(hist.find(" m1 "), std::string::npos) << hist;
  EXPECT_NE(hist.find(" m2 "), std::string::npos) << hist;
  // Provenance keeps the command that started the matrix and adds the resume.
  auto cmd = json::parse(std::ifstream(results))["provenance"]["command_line"].get<std::string>();
  EXPECT_NE(cmd.find("--batch-sizes 8,16,32,64"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("; resumed: "), std::string::npos) << cmd;
  size_t kept = 0;
  for (size_t pos = 0; (pos = out.find("already measured, kept", pos)) != std::string::npos; ++pos) ++kept;
  EXPECT_EQ(kept, before.size());
  // One matrix clock across the two sessions: the resumed runs start after the kept ones end.
  for (size_t i = before.size(); i < after.size(); ++i) EXPECT_GT(after[i]["start_ns"].get<int64_t>(), kept_end);
  // telemetry.csv.gz: the killed session's rows are kept, first; the resumed session's follow,
  // under one header, on the shared clock.
  auto resumed_rows = telemetry_times(dir + "/m/telemetry.csv.gz");
  ASSERT_GT(resumed_rows.size(), killed_rows.size());
  EXPECT_TRUE(std::equal(killed_rows.begin(), killed_rows.end(), resumed_rows.begin()));
  auto tel = trainscope::read_file_bytes(dir + "/m/telemetry.csv.gz");
  std::string text(tel.begin(), tel.end());
  size_t headers = 0;
  for (size_t pos = 0; (pos = text.find("t_ns,device", pos)) != std::string::npos; ++pos) ++headers;
  EXPECT_EQ(headers, 1u);
}

// A resume after SIGINT (which writes telemetry.csv.gz) keeps the first invocation's samples and
// appends the second's after them.
TEST(Cli, ResumeAppendsTelemetry) {
  std::string dir = test_path("cli_resume_tel");
  trainscope::remove_tree(dir);
  auto p = spawn(small_matrix(dir, "m"), test_path("resume_tel_out.txt"));
  const std::string results = dir + "/m/results.json";
  wait_for_runs(results, 1);
  kill(p.pid, SIGINT);
  ASSERT_EQ(wait_status(p.pid), 130);
  auto rows = [&] { return telemetry_times(dir + "/m/telemetry.csv.gz"); };
  auto first = rows();
  ASSERT_FALSE(first.empty());
  std::string out;
  ASSERT_EQ(run({"run", "--resume", dir + "/m", "--no-progress"}, &out), 0) << out;
  auto both = rows();
  ASSERT_GT(both.size(), first.size());
  EXPECT_TRUE(std::equal(first.begin(), first.end(), both.begin())) << "the first invocation's samples are kept";
  EXPECT_GT(both[first.size()], first.back()) << "the second session's samples follow on the same clock";
}

// --resume repeats the recorded matrix: a flag that would change it is refused before anything
// is touched, and the finished folder is left exactly as it was.
TEST(Cli, ResumeRefusesSettingFlagsAndChangesNothing) {
  std::string dir = test_path("cli_resume_flags");
  trainscope::remove_tree(dir);
  auto args = small_matrix(dir, "m");
  args[6] = "16,32";
  args[10] = "1";  // --epochs
  std::string out;
  ASSERT_EQ(run(args, &out), 0) << out;
  const std::string before = slurp(dir + "/m/results.json"), matrix = slurp(dir + "/m/matrix.json");
  ASSERT_FALSE(before.empty());
  EXPECT_EQ(run({"run", "--resume", dir + "/m", "--models", "cnn", "--lr", "0.5"}, &out), 2);
  EXPECT_NE(out.find("--models, --lr cannot be combined"), std::string::npos) << out;
  EXPECT_EQ(run({"run", "--resume", dir + "/m", "--name", "other"}, &out), 2);
  EXPECT_FALSE(fs::exists(dir + "/other")) << "a refused resume must not create folders";
  EXPECT_EQ(slurp(dir + "/m/results.json"), before);
  EXPECT_EQ(slurp(dir + "/m/matrix.json"), matrix);
  // The allowed form, from another working directory ("--resume ." style absolute resolution):
  EXPECT_EQ(run({"run", "--resume", dir + "/m/", "--no-progress"}, &out), 0) << out;
  EXPECT_NE(out.find("2 of 2 runs already measured are kept"), std::string::npos) << out;
}

// `trainscope measure` end to end: the program's exit status is trainscope's, the options before
// the command are measure's and everything from the command on is the program's.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "../test_helpers.h"

namespace {

const std::string kBin = std::string(TS_BINARY_DIR) + "/trainscope";
const std::string kFixtures = std::string(TS_FIXTURES_DIR) + "/measure";

struct Result {
  int status = -1;
  std::string out;
};

Result run(const std::string& args) {
  Result r;
  FILE* p = popen((kBin + " measure " + args + " 2>&1").c_str(), "r");
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string out_dir() { return ::testing::TempDir() + "pid" + std::to_string(getpid()) + "_measure_cli"; }

}  // namespace

TEST(MeasureCli, ExitStatusOutputAndSummary) {
  const Result r = run("-o " + out_dir() + " --run-name fake --items-per-step 32 --warmup-steps 2 --no-telemetry -- "
                       "/usr/bin/python3 " + kFixtures + "/fake_steps.py 6 0.01 3");
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_NE(r.out.find("fake_steps: done"), std::string::npos) << "the program's output reaches the console: " << r.out;
  EXPECT_NE(r.out.find("the program exited 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("6 steps reported"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(trainscope::test::read_text(out_dir() + "/fake/measure.json"));
  EXPECT_EQ(j["command"].at(0), "/usr/bin/python3");
  EXPECT_EQ(j["items_reported"], 6 * 32);
  EXPECT_NE(j["provenance"]["command_line"].get<std::string>().find("measure"), std::string::npos);
}

TEST(MeasureCli, CommandWithoutDoubleDashKeepsItsOwnOptions) {
  const Result r = run("-o " + out_dir() + " --run-name sh --no-telemetry /bin/sh -c 'echo -n args; exit 5' --ignored");
  EXPECT_EQ(r.status, 5) << r.out;
  EXPECT_NE(r.out.find("args"), std::string::npos) << r.out;
}

TEST(MeasureCli, CommandNotFoundIsAUsageError) {
  const Result r = run("-o " + out_dir() + " -- no-such-program-ts38");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("command 'no-such-program-ts38' not found on PATH"), std::string::npos) << r.out;
}

TEST(MeasureCli, RunsAreRecordedInTheHistory) {
  const std::string db = out_dir() + "/hist.sqlite";
  std::filesystem::remove(db);
  const Result r = run("-o " + out_dir() + " --run-name hist --history-db " + db + " --no-telemetry --warmup-steps 2 -- "
                       "/usr/bin/python3 " + kFixtures + "/fake_steps.py 5 0.01 0");
  EXPECT_EQ(r.status, 0) << r.out;
  FILE* p = popen((kBin + " history --db " + db + " 2>&1").c_str(), "r");
  std::string listed;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) listed.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << listed;
  EXPECT_NE(listed.find("fake_steps"), std::string::npos) << "the measured program is a row of the history: " << listed;
  const Result none = run("-o " + out_dir() + " --run-name hist2 --history-db " + db + "2 --no-history --no-telemetry -- /bin/true");
  EXPECT_EQ(none.status, 0) << none.out;
  EXPECT_FALSE(std::filesystem::exists(db + "2")) << "--no-history writes no database";
}

TEST(MeasureCli, DevicesOneRunEachAndTheMatrixTable) {
  const Result r = run("-o " + out_dir() + " --run-name devs --devices cpu --no-history --no-telemetry -- "
                       "/bin/sh -c 'echo on-{device}'");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("on-cpu"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("results: " + out_dir() + "/devs/results.json"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(trainscope::test::read_text(out_dir() + "/devs/results.json"));
  EXPECT_EQ(j["runs"].at(0)["device"], "cpu");
  const Result bad = run("-o " + out_dir() + " --run-name devs2 --devices cpu,tpu -- /bin/true");
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("'tpu' is not a device"), std::string::npos) << bad.out;
  const Result badp = run("-o " + out_dir() + " --run-name p --profile-steps 9-3 -- /bin/true");
  EXPECT_EQ(badp.status, 2) << badp.out;
  EXPECT_NE(badp.out.find("--profile-steps '9-3'"), std::string::npos) << badp.out;
}

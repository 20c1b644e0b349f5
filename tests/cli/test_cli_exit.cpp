// Exit statuses of failures (README.md#exit-status): a failed run (3), an I/O error (5), an
// internal error (6), compare's regression (4), and what each keeps.
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

TEST(Cli, FailedRunGivesExitStatus3AndOthersAreMeasured) {
  std::string dir = test_path("cli_fail");
  trainscope::remove_tree(dir);
  auto args = small_matrix(dir, "m");
  args[6] = "16,32";
  args[10] = "1";  // --epochs
  args.insert(args.end(), {"--inject-nan-at-step", "3"});
  std::string out;
  EXPECT_EQ(run(args, &out), 3) << out;
  auto j = json::parse(std::ifstream(dir + "/m/results.json"));
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][0]["status"], "failed");
  EXPECT_EQ(j["runs"][1]["status"], "failed");
}

// A write failure (disk full, folder removed) in the middle of a matrix: exit 5, and the runs
// finished before it are kept in results.json.
TEST(CliExit, WriteFailureMidMatrixExits5AndKeepsFinishedRuns) {
  std::string dir = test_path("cli_exit5");
  trainscope::remove_tree(dir);
  auto args = small_matrix(dir, "m");
  args[10] = "1";  // --epochs
  args.insert(args.end(), {"--inject-reporter-failure", "io"});
  std::string out;
  EXPECT_EQ(run(args, &out), 5) << out;
  EXPECT_NE(out.find("injected write failure"), std::string::npos) << out;
  EXPECT_NE(out.find("1 run(s) finished before are kept in"), std::string::npos) << out;
  auto j = json::parse(std::ifstream(dir + "/m/results.json"));
  ASSERT_EQ(j["runs"].size(), 1u);  // the matrix stopped after the failure
  EXPECT_EQ(j["runs"][0]["status"], "ok");
}

// An internal error (a bug) in the middle of a matrix: exit 6, finished runs kept.
TEST(CliExit, InternalErrorMidMatrixExits6AndKeepsFinishedRuns) {
  std::string dir = test_path("cli_exit6");
  trainscope::remove_tree(dir);
  auto args = small_matrix(dir, "m");
  args[10] = "1";  // --epochs
  args.insert(args.end(), {"--inject-reporter-failure", "internal"});
  std::string out;
  EXPECT_EQ(run(args, &out), 6) << out;
  EXPECT_NE(out.find("injected internal error"), std::string::npos) << out;
  auto j = json::parse(std::ifstream(dir + "/m/results.json"));
  ASSERT_EQ(j["runs"].size(), 1u);
  EXPECT_EQ(j["runs"][0]["status"], "ok");
}

// compare with one repeat per side: the verdict still gates (exit 4) but says it may be noise,
// and the medians get enough digits to differ.
TEST(CliExit, CompareWithOneRepeatSaysItMayBeNoise) {
  std::string dir = test_path("cli_compare1");
  trainscope::remove_tree(dir);
  auto healthy = json::parse(std::ifstream(std::string(TS_FIXTURES_DIR) + "/report/healthy/results.json"));
  healthy["runs"] = json::array({healthy["runs"][0]});
  auto write_side = [&](const std::string& name, double p99) {
    auto doc = healthy;
    doc["runs"][0]["inference"] = {{"single_stream", {{"p50_ms", p99 / 2}, {"p99_ms", p99}}}};
    fs::create_directories(dir + "/" + name);
    std::ofstream(dir + "/" + name + "/results.json") << doc.dump();
  };
  write_side("a", 0.0712);
  write_side("b", 0.07482);  // +5.08 %
  std::string out;
  EXPECT_EQ(run({"compare", dir + "/a", dir + "/b", "--metric", "inference_p99_ms", "--db", dir + "/none.sqlite"}, &out),
            4)
      << out;
  EXPECT_NE(out.find("REGRESSION (1 repeat: may be noise)"), std::string::npos) << out;
  EXPECT_NE(out.find("0.07120"), std::string::npos) << out;
  EXPECT_NE(out.find("0.07482"), std::string::npos) << out;
  EXPECT_NE(out.find("note:"), std::string::npos) << out;
}

// A run that fails in its first epoch: the console's profiler warning ("the run had N step(s)")
// and the record's steps_completed count the same steps (before: "1 step(s)" beside 0).
TEST(Cli, FailedRunStepCountAgreesWithTheProfilerWarning) {
  std::string dir = ::testing::TempDir() + "cli_fail_steps";
  trainscope::remove_tree(dir);
  for (int nan_step : {0, 3}) {
    auto args = small_matrix(dir, "m" + std::to_string(nan_step));
    args[6] = "16";
    args[10] = "1";  // --epochs
    args.erase(std::find(args.begin(), args.end(), "--no-profile"));
    args.insert(args.end(), {"--inject-nan-at-step", std::to_string(nan_step)});
    std::string out;
    EXPECT_EQ(run(args, &out), 3) << out;
    auto r = json::parse(std::ifstream(dir + "/m" + std::to_string(nan_step) + "/results.json"))["runs"][0];
    ASSERT_EQ(r["status"], "failed") << out;
    const int64_t steps = r["steps_completed"].get<int64_t>();
    EXPECT_EQ(steps, nan_step) << "the steps before the one whose loss was NaN";
    EXPECT_EQ(r["profile"]["window"]["run_steps"].get<int64_t>(), steps);
    EXPECT_NE(out.find("the run had " + std::to_string(steps) + " step(s)"), std::string::npos) << out;
  }
}

// A disk that fills while the checkpoint is written (a 300 KB tmpfs as --out; the mlp's checkpoint
// is ~1.6 MB) used to abort the process in LibTorch's zip writer (SIGABRT, exit 134), losing the
// run and leaving a partial .pt.tmp file: exit 5, the run's measurements kept, no temporary left.
TEST(CliExit, AFullDiskWhileSavingTheCheckpointExits5AndKeepsTheRun) {
  const std::string mnt = test_path("cli_full_disk");
  trainscope::remove_tree(mnt);
  fs::create_directories(mnt);
  if (mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=300k") != 0)
    GTEST_SKIP() << "cannot mount a small tmpfs here: " << std::strerror(errno);
  struct Unmount {
    std::string d;
    ~Unmount() { umount2(d.c_str(), MNT_DETACH); }
  } unmount{mnt};
  auto args = small_matrix(mnt, "m");
  args[6] = "16";
  args.insert(args.end(), {"--max-steps", "3", "--no-tensorboard"});
  std::string out;
  EXPECT_EQ(run(args, &out), 5) << out;
  auto runs = json::parse(std::ifstream(mnt + "/m/results.json"))["runs"];
  ASSERT_EQ(runs.size(), 1u) << out;
  EXPECT_EQ(runs[0]["error_kind"], "io") << runs[0].dump();
  EXPECT_GT(runs[0]["steps_completed"].get<int64_t>(), 0) << runs[0].dump();
  EXPECT_NE(runs[0]["failure_reason"].get<std::string>().find("measurements are kept"), std::string::npos);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(mnt + "/m/checkpoints", ec))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
}

// The checkpoint's description (checkpoints/<run id>.json) that cannot be written used to leave
// the checkpoint behind without one: both go, the run is kept with its measurements, exit 5.
TEST(CliExit, ACheckpointWhoseDescriptionCannotBeWrittenIsRemoved) {
  std::string dir = test_path("cli_orphan_ckpt");
  trainscope::remove_tree(dir);
  fs::create_directories(dir + "/m/checkpoints/cpu-mlp-b16-r0.json");  // a folder: the rename onto it fails
  auto args = small_matrix(dir, "m");
  args[6] = "16";
  args.insert(args.end(), {"--max-steps", "3"});
  std::string out;
  EXPECT_EQ(run(args, &out), 5) << out;
  EXPECT_FALSE(fs::exists(dir + "/m/checkpoints/cpu-mlp-b16-r0.pt")) << out;
  auto runs = json::parse(std::ifstream(dir + "/m/results.json"))["runs"];
  ASSERT_EQ(runs.size(), 1u) << out;
  EXPECT_EQ(runs[0]["error_kind"], "io") << runs[0].dump();
  EXPECT_TRUE(runs[0]["checkpoint_path"].is_null()) << runs[0].dump();
}

// SIGINT mid-matrix: the step or the inference scenario in progress finishes, what was measured
// is written, exit 130.
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

TEST(Cli, SigintFinishesStepWritesPartialRunAndExits130) {
  std::string dir = test_path("cli_sigint");
  trainscope::remove_tree(dir);
  auto p = spawn(small_matrix(dir, "m"), test_path("sigint_out.txt"));
  const std::string results = dir + "/m/results.json";
  wait_for_runs(results, 1);
  ASSERT_GE(finished_runs(results), 1u);
  kill(p.pid, SIGINT);  // the next run (hundreds of steps) is in progress or about to start
  EXPECT_EQ(wait_status(p.pid), 130);
  auto j = json::parse(std::ifstream(results));
  auto runs = j["runs"];
  ASSERT_GE(runs.size(), 2u);
  ASSERT_LT(runs.size(), 4u);  // the matrix stopped
  for (size_t i = 0; i + 1 < runs.size(); ++i) EXPECT_EQ(runs[i]["status"], "ok");
  EXPECT_EQ(runs.back()["status"], "interrupted");
  EXPECT_GT(runs.back()["steps_completed"].get<int>(), 0);  // what it measured is kept
  // any trace written must be complete JSON (gzip readers are tested with the profiler)
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().extension() == ".json") {
      json parsed;  // GCC ignores a (void) cast on a [[nodiscard]] call
      EXPECT_NO_THROW(parsed = json::parse(std::ifstream(e.path()))) << e.path();
    }
}

// Ctrl-C while a trained model's inference is being measured: the run is kept (it finished
// training), the inference result says it was cut short, and the matrix stops with 130 long
// before the 120 s inference budgets would have ended.
TEST(Cli, SigintDuringInferenceKeepsTheRunAndExits130) {
  std::string dir = test_path("cli_sigint_infer");
  trainscope::remove_tree(dir);
  fs::create_directories(dir);
  std::ofstream(dir + "/slow_inference.toml") << "[inference]\nsingle_stream_budget_s = 120\noffline_budget_s = 120\n";
  auto args = small_matrix(dir, "m");
  args[6] = "16,32";
  args[10] = "1";
  args.erase(std::find(args.begin(), args.end(), "--no-inference"));
  args.insert(args.end(), {"--config", dir + "/slow_inference.toml", "--max-steps", "5"});
  const std::string log = test_path("sigint_infer_out.txt");
  fs::remove(log);  // an earlier run's log would answer wait_for_output before this process starts
  auto p = spawn(args, log);
  ASSERT_TRUE(wait_for_output(p.pid, log, "measuring inference")) << slurp(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // inside the single-stream scenario
  auto t0 = std::chrono::steady_clock::now();
  kill(p.pid, SIGINT);
  int st = -1;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
    if (waitpid(p.pid, &st, WNOHANG) == p.pid) break;
    else std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (std::chrono::steady_clock::now() - t0 >= std::chrono::seconds(60)) {
    kill(p.pid, SIGKILL);
    waitpid(p.pid, &st, 0);
    FAIL() << "SIGINT during inference was not honoured within 60 s:\n" << slurp(log);
  }
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 130) << slurp(log);
  auto runs = json::parse(std::ifstream(dir + "/m/results.json"))["runs"];
  ASSERT_EQ(runs.size(), 1u) << "the matrix must stop after the interrupted inference";
  EXPECT_EQ(runs[0]["status"], "ok");
  EXPECT_TRUE(runs[0]["inference"]["single_stream"].value("interrupted", false)) << runs[0]["inference"].dump();
}

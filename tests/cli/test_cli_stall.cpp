// A model that hangs (its forward pass never returns): the stall is named within its timeout,
// what was measured is written, and SIGTERM/SIGINT end the process.
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
#include "train/script_models.h"
#include <torch/library.h>
#include "trainscope/config.h"
#include "trainscope/cpu_budget.h"
#include "trainscope/fs.h"
#include "trainscope/inference_reporter.h"
#include "trainscope/provenance.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace cli_test;

// A model whose forward pass never returns hung trainscope in the pre-flight check: no output,
// SIGTERM ignored. Its stall is named after --dist-timeout, and SIGTERM ends the process (after
// the grace period: the longer of --dist-timeout and 30 s) with 130.
TEST(CliModels, AModelThatHangsIsNamedAndSigtermEndsTheProcess) {
  std::string dir = test_path("cli_model_hangs");
  trainscope::remove_tree(dir);
  fs::create_directories(dir);
  const std::string pt = dir + "/hangs.pt";
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  torch::jit::Module net("HangingNet", cu);
  net.register_module("head", ts_test::script_linear(cu, "Head", 784, 10));
  net.define("def forward(self, x):\n  i = 0\n  while i >= 0:\n    i = i + 1\n  return self.head.forward(x.flatten(1))\n");
  net.save(pt);
  auto args = model_matrix(dir, "m", pt);
  args.insert(args.end(), {"--dist-timeout", "2"});
  const std::string out_path = test_path("hangs.txt");
  Proc p = spawn(args, out_path);
  auto slurp = [&] {
    std::ifstream f(out_path);
    return std::string((std::istreambuf_iterator<char>(f)), {});
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (slurp().find("stalled") == std::string::npos && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_NE(slurp().find("the pre-flight forward pass of model '" + pt + "' stalled: no progress for 2 s"),
            std::string::npos)
      << slurp();
  kill(p.pid, SIGTERM);
  int st = 0;
  pid_t done = 0;
  while ((done = waitpid(p.pid, &st, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (done == 0) {
    kill(p.pid, SIGKILL);
    waitpid(p.pid, &st, 0);
    FAIL() << "SIGTERM did not end the process: " << slurp();
  }
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 130) << slurp();
  EXPECT_NE(slurp().find("did not stop within 30 s of the interrupt"), std::string::npos) << slurp();
}

namespace {

// A TorchScript model whose forward pass never returns for more than 16 samples: the pre-flight
// check (1 sample) and training at batch 16 pass; an evaluation batch or an offline inference
// batch of 64 hangs.
std::string save_net_hanging_above_16(const std::string& path) {
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  torch::jit::Module net("HangsAbove16", cu);
  net.register_module("head", ts_test::script_linear(cu, "Head", 784, 10));
  net.define("def forward(self, x):\n  i = 0\n  while x.size(0) > 16 and i >= 0:\n    i = i + 1\n"
             "  return self.head.forward(x.flatten(1))\n");
  net.save(path);
  return path;
}

// Waits until the process's output holds `needle` (2 minutes at most), then sends `sig` and
// waits for the exit status (2 more minutes at most; then SIGKILL and -1).
int stall_then_signal(const Proc& p, const std::string& needle, int sig) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (slurp(p.out_path).find(needle) == std::string::npos && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  kill(p.pid, sig);
  int st = 0;
  pid_t done = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while ((done = waitpid(p.pid, &st, WNOHANG)) == 0 && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (done == 0) {
    kill(p.pid, SIGKILL);
    waitpid(p.pid, &st, 0);
    return -1;
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// The run `id` of the run folder `run_dir` whose model hung after 3 steps (model_matrix: 2
// warm-up steps, 1 headline step): kept as interrupted with its steps, step times, epoch,
// stall note and telemetry (`out`: the console, for the messages).
void expect_hung_run_kept(const std::string& run_dir, const std::string& id, const std::string& out) {
  EXPECT_NE(out.find("the hung run's measurements so far are written as interrupted"), std::string::npos) << out;
  const json results = json::parse(slurp(run_dir + "/results.json"));
  const auto& runs = results.at("runs");
  const auto it = std::find_if(runs.begin(), runs.end(), [&](const json& r) { return r.at("run_id") == id; });
  ASSERT_NE(it, runs.end()) << results.dump(1);
  const json& r = *it;
  EXPECT_EQ(r.at("status"), "interrupted");
  EXPECT_NE(r.at("failure_reason").get<std::string>().find("while its model hung"), std::string::npos) << r.dump(1);
  EXPECT_EQ(r.at("steps_completed"), 3);
  EXPECT_EQ(r.at("measurement").at("headline_steps"), 1);
  EXPECT_GT(r.at("measurement").at("headline_step_ms_mean").get<double>(), 0.0);
  EXPECT_GT(r.at("steady_samples_per_s").get<double>(), 0.0);
  ASSERT_EQ(r.at("epochs").size(), 1u);  // the epoch whose evaluation hung, without test figures
  EXPECT_EQ(r.at("epochs").at(0).at("steps"), 3);
  EXPECT_TRUE(r.at("epochs").at(0).at("test_accuracy_pct").is_null());
  EXPECT_TRUE(r.at("telemetry").is_object()) << r.dump(1);
  const std::string notes = r.at("notes").dump();
  EXPECT_NE(notes.find("the evaluation on the test set stalled"), std::string::npos) << notes;
  EXPECT_NE(slurp(run_dir + "/results.csv").find(id), std::string::npos);
}

}  // namespace

// A model that hangs in the evaluation after training (no stall note even with a 2 s timeout):
// the stall is named after --dist-timeout, in the console and with what hangs, and SIGTERM
// ends the process with 130. The hung run is kept (before: results.json never held it): what
// it measured before the evaluation hung, as interrupted, with its stall note and telemetry.
TEST(CliStall, AModelThatHangsInEvaluationIsNamedAndSigtermEndsTheProcess) {
  std::string dir = test_path("cli_eval_hangs");
  trainscope::remove_tree(dir);
  fs::create_directories(dir);
  const std::string pt = save_net_hanging_above_16(dir + "/hangs.pt");
  auto args = model_matrix(dir, "m", pt);
  args.insert(args.end(), {"--dist-timeout", "2"});
  const Proc p = spawn(args, test_path("eval_hangs.txt"));
  const std::string needle = "cpu-hangs-b16-r0: the evaluation on the test set stalled: no progress for 2 s";
  EXPECT_EQ(stall_then_signal(p, needle, SIGTERM), 130) << slurp(p.out_path);
  EXPECT_NE(slurp(p.out_path).find(needle), std::string::npos) << slurp(p.out_path);
  EXPECT_NE(slurp(p.out_path).find("did not stop within 30 s of the interrupt"), std::string::npos) << slurp(p.out_path);
  expect_hung_run_kept(dir + "/m", "cpu-hangs-b16-r0", slurp(p.out_path));
}

// `trainscope infer` on a model that hangs: the measurement is named as stalled after
// --dist-timeout, and SIGINT ends the process with 130 (before: the first Ctrl-C did nothing).
TEST(CliStall, AModelThatHangsInInferIsNamedAndSigintEndsTheProcess) {
  std::string dir = test_path("cli_infer_hangs");
  trainscope::remove_tree(dir);
  fs::create_directories(dir);
  const std::string pt = save_net_hanging_above_16(dir + "/hangs.pt");
  const Proc p = spawn({"infer", "--model", pt, "--data-format", "synthetic", "--devices", "cpu", "--no-telemetry",
                        "--scenario", "offline", "-b", "64", "--limit", "128", "--threads", "1", "--dist-timeout", "2",
                        "--out", dir + "/inference.json"},
                       test_path("infer_hangs.txt"));
  const std::string needle = "stalled: no progress for 2 s";
  EXPECT_EQ(stall_then_signal(p, needle, SIGINT), 130) << slurp(p.out_path);
  const std::string out = slurp(p.out_path);
  EXPECT_NE(out.find("trainscope: warning: infer: the measurement of "), std::string::npos) << out;
  EXPECT_NE(out.find(" on cpu stalled: no progress for 2 s (--dist-timeout)"), std::string::npos) << out;
  EXPECT_NE(out.find("the measurements finished before are in " + dir + "/inference.json"), std::string::npos) << out;
}

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

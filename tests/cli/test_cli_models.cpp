// Models given to `run` and `infer`: TorchScript files built in C++ at test time
// (tests/train/script_models.h) that do not fit, cannot load, raise, or changed since the matrix started.
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

// `-m mlp,DIR/mlp.pt`: both used to become cpu-mlp-b16-r0 (checkpoints overwrote each other).
// The second gets mlp-2 from its place in the list, and --resume finds the same ids.
TEST(CliModels, TwoModelsWithOneNameGetDistinctRunIds) {
  std::string dir = ::testing::TempDir() + "cli_same_name";
  trainscope::remove_tree(dir);
  fs::create_directories(dir);
  auto pt = ts_test::save_shared_linear_net(dir + "/mlp.pt");
  std::string out;
  ASSERT_EQ(run(model_matrix(dir, "m", "mlp," + pt), &out), 0) << out;
  auto runs = json::parse(std::ifstream(dir + "/m/results.json"))["runs"];
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0]["run_id"], "cpu-mlp-b16-r0");
  EXPECT_EQ(runs[1]["run_id"], "cpu-mlp-2-b16-r0");
  EXPECT_EQ(runs[1]["model"], pt);
  EXPECT_TRUE(fs::exists(dir + "/m/checkpoints/cpu-mlp-b16-r0.pt"));
  EXPECT_TRUE(fs::exists(dir + "/m/checkpoints/cpu-mlp-2-b16-r0.pt"));
  ASSERT_EQ(run({"run", "--resume", dir + "/m", "--no-progress"}, &out), 0) << out;
  EXPECT_NE(out.find("2 of 2 runs already measured are kept"), std::string::npos) << out;
}

// A TorchScript model made for 3x32x32 on 1x28x28 data: a clear bad-input error (exit 2) before
// any run starts, also when it is second in the list; no interpreter traceback. `infer` alike.
TEST(CliModels, ModelThatDoesNotFitTheDataIsBadInputBeforeAnythingRuns) {
  std::string dir = ::testing::TempDir() + "cli_wrong_shape";
  trainscope::remove_tree(dir);
  fs::create_directories(dir);
  auto pt = ts_test::save_cifar_shaped_net(dir + "/wrong3.pt");
  for (const std::string& models : {pt, "mlp," + pt}) {
    std::string out;
    EXPECT_EQ(run(model_matrix(dir, "m", models), &out), 2) << out;
    EXPECT_NE(out.find(pt), std::string::npos) << out;
    EXPECT_NE(out.find("1x28x28"), std::string::npos) << out;
    EXPECT_NE(out.find("mat1 and mat2 shapes cannot be multiplied"), std::string::npos) << out;
    EXPECT_EQ(out.find("Traceback"), std::string::npos) << out;
    EXPECT_FALSE(fs::exists(dir + "/m/results.json")) << "nothing may run";
  }
  std::string out;
  EXPECT_EQ(run({"infer", "--model", pt, "--data-format", "synthetic", "--devices", "cpu", "--no-telemetry", "--out",
                 dir + "/inference.json"},
                &out),
            2)
      << out;
  EXPECT_NE(out.find(pt), std::string::npos) << out;
  EXPECT_NE(out.find("1x28x28"), std::string::npos) << out;
  EXPECT_NE(out.find("mat1 and mat2 shapes cannot be multiplied"), std::string::npos) << out;
  EXPECT_EQ(out.find("Traceback"), std::string::npos) << out;
}

// A model with nothing to train cannot be trained: bad input (exit 2) naming the file.
TEST(CliModels, ModelWithNothingToTrainIsBadInput) {
  std::string dir = ::testing::TempDir() + "cli_no_params";
  trainscope::remove_tree(dir);
  fs::create_directories(dir);
  auto pt = ts_test::save_parameterless_net(dir + "/frozen.pt");
  std::string out;
  EXPECT_EQ(run(model_matrix(dir, "m", "mlp," + pt), &out), 2) << out;
  EXPECT_NE(out.find(pt), std::string::npos) << out;
  EXPECT_NE(out.find("no trainable parameters"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir + "/m/results.json")) << "nothing may run";
}

// A model file whose name makes run ids too long for a file name used to train fully and then
// fail writing its checkpoint (exit 5, the run lost): bad input before anything runs.
TEST(CliModels, AModelNameTooLongForTheRunFilesIsBadInputBeforeTraining) {
  std::string dir = test_path("cli_long_name");
  trainscope::remove_tree(dir);
  fs::create_directories(dir);
  auto pt = ts_test::save_shared_linear_net(dir + "/" + std::string(245, 'a') + ".pt");
  std::string out;
  EXPECT_EQ(run(model_matrix(dir, "m", pt), &out), 2) << out;
  EXPECT_NE(out.find("too long for the files named after them"), std::string::npos) << out;
  EXPECT_NE(out.find("at least "), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir + "/m/results.json")) << "nothing may run";
}

// An operator of the test binary's own (registered here, absent from trainscope): a TorchScript
// file that calls it cannot be loaded by trainscope, as a file from a newer LibTorch cannot. It
// goes among the aten builtins, which `define` resolves as torch.<name> without Python.
TORCH_LIBRARY_FRAGMENT(aten, m) {
  m.def("tstest_twice", [](const at::Tensor& x) { return x * 2; });
}

// A TorchScript file that calls an operator this LibTorch lacks used to end in "internal error"
// (exit 6) without naming the file: bad input (exit 2) naming it and the operator.
TEST(CliModels, AModelWithAnUnknownOperatorIsBadInputNamingTheFile) {
  std::string dir = test_path("cli_unknown_op");
  trainscope::remove_tree(dir);
  fs::create_directories(dir);
  const std::string pt = dir + "/odd.pt";
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  torch::jit::Module net("OddNet", cu);
  net.register_module("head", ts_test::script_linear(cu, "Head", 784, 10));
  net.define("def forward(self, x):\n  return self.head.forward(torch.tstest_twice(x).flatten(1))\n");
  net.save(pt);
  std::string out;
  EXPECT_EQ(run(model_matrix(dir, "m", pt), &out), 2) << out;
  EXPECT_NE(out.find("cannot load model '" + pt + "'"), std::string::npos) << out;
  EXPECT_NE(out.find("tstest_twice"), std::string::npos) << out;
  EXPECT_EQ(out.find("internal"), std::string::npos) << out;
}

// A model's own exception (TorchScript `raise`) during training used to be recorded with
// error_kind "internal" (a bug of trainscope): it is the model's, with its message.
TEST(CliModels, AModelsOwnExceptionIsRecordedAsTheModels) {
  std::string dir = test_path("cli_model_raises");
  trainscope::remove_tree(dir);
  fs::create_directories(dir);
  const std::string pt = dir + "/raises.pt";
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  torch::jit::Module net("RaisingNet", cu);
  net.register_module("head", ts_test::script_linear(cu, "Head", 784, 10));
  // one sample passes the pre-flight check; a training batch raises (AssertionError)
  net.define("def forward(self, x):\n  assert x.size(0) <= 1, 'no batches here'\n"
             "  return self.head.forward(x.flatten(1))\n");
  net.save(pt);
  std::string out;
  EXPECT_EQ(run(model_matrix(dir, "m", pt), &out), 3) << out;
  auto r = json::parse(std::ifstream(dir + "/m/results.json"))["runs"][0];
  EXPECT_EQ(r["status"], "failed");
  EXPECT_EQ(r["error_kind"], "model") << r.dump();
  EXPECT_NE(r["failure_reason"].get<std::string>().find("no batches here"), std::string::npos) << r.dump();
}

// A folder named like a model file was reported as a file that "does not exist".
TEST(CliModels, AFolderGivenAsAModelFileIsNamedAsAFolder) {
  std::string dir = test_path("cli_model_folder");
  trainscope::remove_tree(dir);
  fs::create_directories(dir + "/net.pt");
  std::string out;
  EXPECT_EQ(run(model_matrix(dir, "m", dir + "/net.pt"), &out), 2) << out;
  EXPECT_NE(out.find("model '" + dir + "/net.pt' (--models / models) is a folder, not a TorchScript file"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("does not exist"), std::string::npos) << out;
}

// --resume read the model files again without a word when they had changed: a record then held
// cells of 623,290 and 7,850 parameters as one model. Refused, naming the model and both counts.
TEST(CliModels, ResumeRefusesAModelFileThatChangedSinceTheMatrixStarted) {
  std::string dir = test_path("cli_resume_changed");
  trainscope::remove_tree(dir);
  fs::create_directories(dir);
  auto pt = ts_test::save_shared_linear_net(dir + "/net.pt");
  std::string out;
  ASSERT_EQ(run(model_matrix(dir, "m", pt), &out), 0) << out;
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  torch::jit::Module other("Other", cu);
  other.register_module("head", ts_test::script_linear(cu, "Head", 784, 10));
  other.define("def forward(self, x):\n  return self.head.forward(x.flatten(1))\n");
  other.save(pt);
  EXPECT_EQ(run({"run", "--resume", dir + "/m", "--no-progress"}, &out), 2) << out;
  EXPECT_NE(out.find("model '" + pt + "' now has 7850 parameters; the kept run cpu-net-b16-r0 trained one of 623290"),
            std::string::npos)
      << out;
}

// A model file replaced by another model of the same parameter count (7,850 both: the count
// check cannot tell them apart) merged the two under one name: matrix.json records each model
// file's size and CRC-32 when the matrix starts, and --resume refuses a file that differs.
TEST(CliModels, ResumeRefusesAModelFileReplacedByOneOfTheSameParameterCount) {
  std::string dir = test_path("cli_resume_same_count");
  trainscope::remove_tree(dir);
  fs::create_directories(dir);
  const std::string pt = dir + "/net.pt";
  auto save = [&](const std::string& forward) {
    auto cu = std::make_shared<torch::jit::CompilationUnit>();
    torch::jit::Module net("Net", cu);
    net.register_module("head", ts_test::script_linear(cu, "Head", 784, 10));
    net.define(forward);
    net.save(pt);
  };
  save("def forward(self, x):\n  return self.head.forward(x.flatten(1))\n");
  std::string out;
  ASSERT_EQ(run(model_matrix(dir, "m", pt), &out), 0) << out;
  EXPECT_NE(slurp(dir + "/m/matrix.json").find("\"" + pt + "\": \""), std::string::npos) << slurp(dir + "/m/matrix.json");
  const std::string results = slurp(dir + "/m/results.json");
  save("def forward(self, x):\n  return self.head.forward(x.flatten(1) * 2.0)\n");
  EXPECT_EQ(run({"run", "--resume", dir + "/m", "--no-progress"}, &out), 2) << out;
  EXPECT_NE(out.find("cannot resume '" + dir + "/m': model file '" + pt + "' changed since the matrix started ("),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("put the original file back, or start a new run folder without --resume"), std::string::npos) << out;
  EXPECT_EQ(slurp(dir + "/m/results.json"), results) << "a refused resume changes nothing";
}

// Files a run writes: inference.json through the reporters, the profile window, TensorBoard event
// files, the batch sweep's runs.
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

// `trainscope infer` reports through its reporters: inference.json holds the provenance first and
// one run in the record's InferenceRun form, no temporary is left, and the console's table is the
// file's runs formatted (trainscope/inference_reporter.h).
TEST(Cli, InferWritesItsFileAndTableThroughTheReporters) {
  const std::string dir = test_path("cli_infer_reporters");
  trainscope::remove_tree(dir);
  fs::create_directories(dir);
  const std::string file = dir + "/inference.json";
  std::string out;
  ASSERT_EQ(run({"infer", "--model", "mlp", "--untrained", "--data-format", "synthetic", "--devices", "cpu",
                 "--no-telemetry", "--budget", "0.05", "--min-queries", "10", "--limit", "128", "--threads", "1",
                 "--out", file},
                &out),
            0)
      << out;
  std::ifstream f(file);
  const std::string text((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(text.find("{\n  \"provenance\""), 0u) << text.substr(0, 200);
  auto runs = trainscope::inference_runs_from_json(text);
  ASSERT_EQ(runs.size(), 1u) << text;
  EXPECT_EQ(runs[0].label, "mlp");
  EXPECT_EQ(runs[0].weights, "untrained");
  EXPECT_EQ(runs[0].test_samples, 128);
  ASSERT_TRUE(runs[0].inference && runs[0].inference->single_stream) << text;
  EXPECT_NE(out.find("mlp on cpu (128 samples of synthetic test)"), std::string::npos) << out;
  EXPECT_NE(out.find(trainscope::format_inference_table(runs, 1) + "results: " + file), std::string::npos) << out;
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

// A run that ends inside the profiling window: the window is closed before inference, so the
// operator table holds the profiled training steps only (before the fix: tens of thousands of
// inference addmm calls).
TEST(Cli, ProfileWindowClosesBeforeInference) {
  std::string dir = test_path("cli_profile_infer");
  trainscope::remove_tree(dir);
  auto args = small_matrix(dir, "m");
  args[6] = "16";
  args[10] = "1";
  args.erase(std::find(args.begin(), args.end(), "--no-inference"));
  args.erase(std::find(args.begin(), args.end(), "--no-profile"));
  // skip 10 + warm-up 2: steps 12 and 13 are profiled, then the run ends inside the window
  args.insert(args.end(), {"--max-steps", "14"});
  std::string out;
  ASSERT_EQ(run(args, &out), 0) << out;
  auto r = json::parse(std::ifstream(dir + "/m/results.json"))["runs"][0];
  ASSERT_TRUE(r["profile"].contains("op_table")) << r["profile"].dump();
  int64_t addmm = 0;
  for (const auto& op : r["profile"]["op_table"])
    if (op["name"] == "aten::addmm") addmm += op["calls"].get<int64_t>();
  EXPECT_GT(addmm, 0);
  EXPECT_LE(addmm, 2 * 3 * 2) << "2 profiled steps of a 3-layer mlp (forward, maybe recomputed): " << addmm;
  EXPECT_TRUE(r["inference"].contains("single_stream"));
}

// --batch-sizes auto on a synthetic CPU workload: the sweep doubles from the number given and
// stops with a reason; with 128 training samples it cannot go past batch 128. Where it saturates
// depends on the machine, so either stop is accepted (the rule itself: BatchSweep.* in
// tests/report/test_batch_sweep.cpp, on an injected throughput curve).
TEST(CliHosts, BatchSizesAutoSweepsAndSaysWhyItStopped) {
  std::string dir = test_path("cli_sweep");
  trainscope::remove_tree(dir);
  auto args = small_matrix(dir, "s");
  args[6] = "16,auto";
  args[14] = "128";  // --limit-train; 20 epochs: even batch 128 has steady steps after the warm-up
  std::string out;
  ASSERT_EQ(run(args, &out), 0) << out;
  EXPECT_NE(out.find("batch sweep of mlp on cpu: saturation point batch "), std::string::npos) << out;
  EXPECT_NE(out.find("stopped because "), std::string::npos) << out;
  EXPECT_EQ(out.find("[2/1]"), std::string::npos) << out;  // the counter never overruns the plan
  EXPECT_TRUE(out.find("throughput stopped rising") != std::string::npos ||
              out.find("the data set ran out: batch 256 would exceed the 128 training samples") != std::string::npos)
      << out;
  auto j = json::parse(std::ifstream(dir + "/s/results.json"));
  std::vector<int64_t> batches;
  for (const auto& r : j["runs"]) batches.push_back(r["batch_size"].get<int64_t>());
  ASSERT_GE(batches.size(), 2u);
  for (size_t i = 0; i < batches.size(); ++i) EXPECT_EQ(batches[i], int64_t{16} << i);
  EXPECT_LE(batches.back(), 128);
}

// TensorBoard event files (docs/tensorboard.md): by default in <run folder>/tensorboard/<run_id>/,
// with --tensorboard DIR in DIR/<run folder name>/<run_id>/ (stored absolute in matrix.json for
// --resume), and none with --no-tensorboard.
TEST(Cli, TensorBoardFilesGoToTheRunFolderToAGivenFolderOrNowhere) {
  const std::string dir = test_path("cli_tb");
  trainscope::remove_tree(dir);
  auto matrix = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> a = {"run", "--devices", "cpu", "--models", "mlp", "--batch-sizes", "16", "--data-format",
                                  "synthetic", "--max-steps", "5", "--warmup-steps", "1", "--limit-train", "256",
                                  "--no-inference", "--no-profile", "--threads", "1", "--no-progress", "--out", dir,
                                  "--name", name};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  auto event_files = [](const std::string& d) {
    size_t n = 0;
    if (fs::is_directory(d))
      for (const auto& f : fs::directory_iterator(d)) n += f.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
    return n;
  };
  std::string out;
  ASSERT_EQ(run(matrix("a", {}), &out), 0) << out;
  EXPECT_EQ(event_files(dir + "/a/tensorboard/cpu-mlp-b16-r0"), 1u);
  const std::string logs = dir + "/logs";
  ASSERT_EQ(run(matrix("b", {"--tensorboard", logs}), &out), 0) << out;
  EXPECT_EQ(event_files(logs + "/b/cpu-mlp-b16-r0"), 1u);
  EXPECT_FALSE(fs::exists(dir + "/b/tensorboard"));
  EXPECT_NE(slurp(dir + "/b/matrix.json").find("\"dir\": \"" + fs::absolute(logs).lexically_normal().string() + "\""),
            std::string::npos)
      << slurp(dir + "/b/matrix.json");
  ASSERT_EQ(run(matrix("c", {"--no-tensorboard"}), &out), 0) << out;
  EXPECT_FALSE(fs::exists(dir + "/c/tensorboard"));
  EXPECT_FALSE(fs::exists(logs + "/c"));
}

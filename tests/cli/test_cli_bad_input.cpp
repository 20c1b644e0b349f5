// Bad input to the `trainscope` binary is refused before training (exit 2), with a message
// naming the setting, what is wrong and the fix; warnings about settings that oversubscribe the CPUs.
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

TEST(Cli, BadInputExitsWithUsageStatusBeforeTraining) {
  std::string out;
  EXPECT_EQ(run({"run", "--batch-sizes", "0", "--data-format", "synthetic", "--out", ::testing::TempDir()}, &out), 2);
  EXPECT_NE(out.find("batch size 0"), std::string::npos) << out;
  EXPECT_EQ(run({"run", "--models", "nosuchnet", "--data-format", "synthetic", "--out", ::testing::TempDir()}, &out), 2);
  EXPECT_NE(out.find("unknown model 'nosuchnet'"), std::string::npos) << out;
  EXPECT_EQ(out.find("did you mean"), std::string::npos) << "nothing is near 'nosuchnet': " << out;
  // a bad input's error comes alone (on a machine without CUDA the no-GPU note used to come first)
  EXPECT_EQ(out.find("note:"), std::string::npos) << out;
  EXPECT_EQ(run({"run", "--models", "restnet18", "--data-format", "synthetic", "--out", ::testing::TempDir()}, &out), 2);
  EXPECT_NE(out.find("unknown model 'restnet18' (did you mean resnet18?)"), std::string::npos) << out;
  // a value of the wrong type, in the option's words rather than CLI11's "Could not convert"
  EXPECT_EQ(run({"run", "--max-steps", "abc"}, &out), 2);
  EXPECT_NE(out.find("--max-steps takes a whole number, not 'abc'"), std::string::npos) << out;
  EXPECT_EQ(run({"run", "--lr", "fast"}, &out), 2);
  EXPECT_NE(out.find("--lr takes a number, not 'fast'"), std::string::npos) << out;
  // a unit written after the number: the error names the setting's unit (settings table)
  EXPECT_EQ(run({"run", "--telemetry-pcie-interval", "1s"}, &out), 2);
  EXPECT_NE(out.find("--telemetry-pcie-interval takes a number, not '1s'; write the number alone: its unit is s"),
            std::string::npos)
      << out;
  // the same for an option `infer` names its own way (inference.single_stream_budget_s)
  EXPECT_EQ(run({"infer", "--model", "mlp", "--untrained", "--budget", "2s"}, &out), 2);
  EXPECT_NE(out.find("--budget takes a number, not '2s'; write the number alone: its unit is s"), std::string::npos)
      << out;
  EXPECT_EQ(run({"run", "--batch-sizes", "64,abc"}, &out), 2);
  EXPECT_NE(out.find("--batch-sizes: 'abc' in '64,abc' is not a whole number"), std::string::npos) << out;
  EXPECT_EQ(run({"run", "--models", "MLP", "--data-format", "synthetic", "--out", ::testing::TempDir()}, &out), 2);
  EXPECT_NE(out.find("(did you mean mlp?)"), std::string::npos) << out;
  EXPECT_EQ(run({"run", "--no-such-option"}, &out), 2);
  EXPECT_EQ(run({"run", "--data", "/nonexistent", "--out", ::testing::TempDir()}, &out), 2);
  EXPECT_NE(out.find("/nonexistent"), std::string::npos) << out;
  EXPECT_EQ(run({"run", "--devices", "cuda:9", "--data-format", "synthetic", "--out", ::testing::TempDir()}, &out), 2);
  EXPECT_NE(out.find("devices found: cpu"), std::string::npos) << out;
  // without CUDA (no cuda:0 among the devices found), cuda:N gets the same advice as --devices gpu
  if (out.find("cuda:0") == std::string::npos) {
    EXPECT_NE(out.find("no CUDA device is visible"), std::string::npos) << out;
    EXPECT_NE(out.find("Use --devices cpu"), std::string::npos) << out;
    EXPECT_EQ(out.find("does not exist"), std::string::npos) << out;
  }
  // Refused before training: no history database is left behind either.
  const std::string fresh = test_path("cli_bad_out");
  trainscope::remove_tree(fresh);
  EXPECT_EQ(run({"run", "--batch-sizes", "0", "--data-format", "synthetic", "--out", fresh}, &out), 2);
  EXPECT_FALSE(fs::exists(fresh + "/history.sqlite"));
  // A range error in a value from a file names the file.
  const std::string cfg = test_path("epochs0.toml");
  std::ofstream(cfg) << "[train]\nepochs = 0\n";
  EXPECT_EQ(run({"run", "--config", cfg, "--data-format", "synthetic", "--out", ::testing::TempDir()}, &out), 2);
  EXPECT_NE(out.find("epochs 0 is out of range"), std::string::npos) << out;
  EXPECT_NE(out.find(cfg), std::string::npos) << out;
}

// Messages a new user meets first: each names the setting, what is wrong and the fix.
TEST(Cli, NewUserMistakesGetMessagesNamingTheSettingAndTheFix) {
  std::string out;
  EXPECT_EQ(run({"run", "--data-format", "cifar10", "--data", "/nonexistent", "--out", ::testing::TempDir()}, &out), 2);
  EXPECT_NE(out.find("--data / data.path"), std::string::npos) << out;
  EXPECT_NE(out.find("data_batch_1.bin .. data_batch_5.bin and test_batch.bin"), std::string::npos) << out;
  EXPECT_EQ(run({"run", "--data-format", "synthetic", "--models", "./nope.pt", "--out", ::testing::TempDir()}, &out), 2);
  EXPECT_NE(out.find("the file does not exist"), std::string::npos) << out;
  EXPECT_EQ(out.find("torch.jit.save"), std::string::npos) << out;
  const std::string base = test_path("cli_db");
  trainscope::remove_tree(base);
  const std::string db = base + "/nope/h.sqlite";
  EXPECT_EQ(run({"history", "-n", "-1", "--db", db}, &out), 2);
  EXPECT_NE(out.find("row limit -1 is out of range"), std::string::npos) << out;
  EXPECT_NE(out.find("-n/--limit"), std::string::npos) << out;
  // read-only commands never create a database
  EXPECT_EQ(run({"history", "--db", db}, &out), 2);
  EXPECT_NE(out.find("--db '" + db + "'"), std::string::npos) << out;
  EXPECT_EQ(run({"report", "m7", "--db", db}, &out), 2);
  EXPECT_NE(out.find("--db '" + db + "'"), std::string::npos) << out;
  EXPECT_EQ(run({"compare", "m2", "m99", "--db", db}, &out), 2);
  EXPECT_FALSE(fs::exists(base + "/nope"));
  // a device from the config file: the error names the file and the key (cuda:99: no machine has
  // it; cuda:0 ran on the H200 host, where it exists)
  const std::string cfg = test_path("gpu.toml");
  std::ofstream(cfg) << "devices = [\"cuda:99\"]\n";
  EXPECT_EQ(run({"run", "--config", cfg, "--data-format", "synthetic", "--out", ::testing::TempDir()}, &out), 2);
  EXPECT_NE(out.find("key 'devices' in the config file " + cfg), std::string::npos) << out;
}

// A misspelt option or command gets trainscope's error prefix, the nearest spelling and where
// the options are listed, with the usage exit status.
TEST(Cli, MisspeltOptionsAndCommandsGetTheNearestSpelling) {
  std::string out;
  EXPECT_EQ(run({"run", "--modles", "mlp"}, &out), 2);
  EXPECT_EQ(out.rfind("trainscope: error (usage): ", 0), 0u) << out;
  EXPECT_NE(out.find("unknown option --modles (did you mean --models?)"), std::string::npos) << out;
  EXPECT_NE(out.find("Run 'trainscope run --help' for the options."), std::string::npos) << out;
  EXPECT_EQ(run({"runn", "--models", "mlp"}, &out), 2);
  EXPECT_NE(out.find("unknown command 'runn'; commands: run, devices"), std::string::npos) << out;
  EXPECT_NE(out.find("(did you mean 'run'?)"), std::string::npos) << out;
  EXPECT_NE(out.find("Run 'trainscope --help' for the commands."), std::string::npos) << out;
  EXPECT_EQ(run({}, &out), 2);
  EXPECT_NE(out.find("trainscope: error (usage): name a command: run, devices"), std::string::npos) << out;
  EXPECT_EQ(run({"run", "--zzzzzzzzzz"}, &out), 2);  // nothing near: no guess
  EXPECT_EQ(out.find("did you mean"), std::string::npos) << out;
  EXPECT_EQ(run({"--help"}, &out), 0);  // help is not an error
  EXPECT_EQ(out.find("trainscope: error"), std::string::npos) << out;
}

TEST(Text, NearestSpellingIsAPlausibleMisspellingOrNothing) {
  EXPECT_EQ(trainscope::edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(trainscope::edit_distance("", "abc"), 3u);
  EXPECT_EQ(trainscope::edit_distance("same", "same"), 0u);
  EXPECT_EQ(trainscope::nearest_spelling("--modles", {"--epochs", "--models", "--model"}), "--models");
  EXPECT_EQ(trainscope::nearest_spelling("runn", {"run", "devices"}), "run");
  EXPECT_EQ(trainscope::nearest_spelling("--xyz", {"--models", "--epochs"}), "");
}

TEST(Text, AsciiLowerChangesOnlyAsciiCapitals) {
  EXPECT_EQ(trainscope::ascii_lower("ResNet18"), "resnet18");
  EXPECT_EQ(trainscope::ascii_lower(".JPG"), ".jpg");
  EXPECT_EQ(trainscope::ascii_lower("NVIDIA H200 NVL-2"), "nvidia h200 nvl-2");
  EXPECT_EQ(trainscope::ascii_lower("\xC3\x89t\xC3\xA9"), "\xC3\x89t\xC3\xA9");  // UTF-8 bytes untouched
}

// --name is one folder under --out: a path is refused (exit 2) before anything is created.
TEST(Cli, RunNameMustBeOneSafeFolderName) {
  const std::string base = ::testing::TempDir() + "cli_name";
  trainscope::remove_tree(base);
  fs::create_directories(base);
  const std::string out = base + "/out";
  for (const std::string& name : std::vector<std::string>{"../escaped", base + "/abs/path", ".", "a/b", ".."}) {
    std::string log;
    EXPECT_EQ(run({"run", "--data-format", "synthetic", "--devices", "cpu", "--models", "mlp", "--out", out, "--name",
                   name},
                  &log),
              2)
        << name << ": " << log;
    EXPECT_NE(log.find("run folder name '" + name + "' is not one safe folder name"), std::string::npos) << log;
    EXPECT_NE(log.find("--name"), std::string::npos) << log;
  }
  // Nothing was written: no --out folder, no escaped folder beside it, no history database.
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(base + "/escaped"));
  EXPECT_FALSE(fs::exists(base + "/abs"));
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(base)) left.push_back(e.path().filename().string());
  EXPECT_TRUE(left.empty()) << "created: " << left.front();
}

// `report` over the same folder twice would count its runs twice, as repeats: refused.
TEST(Cli, ReportRefusesTheSameFolderTwice) {
  std::string out;
  const std::string dir = ::testing::TempDir();
  EXPECT_EQ(run({"report", dir, dir + "/."}, &out), 2);
  EXPECT_NE(out.find("is given twice"), std::string::npos) << out;
}

// More intra-op threads than online CPUs oversubscribes the cores: `run` says so before it loads
// anything (here the data folder is missing, so it stops there with exit 2).
TEST(Cli, MoreThreadsThanCpusIsWarnedAbout) {
  std::string out;
  EXPECT_EQ(run({"run", "--threads", "4096", "--data", ::testing::TempDir() + "no_such_data_dir", "--devices", "cpu",
                 "--models", "mlp", "--out", ::testing::TempDir()},
                &out),
            2);
  const auto cpus = trainscope::read_cpu_budget();
  EXPECT_NE(out.find("--threads 4096 is more than the " + trainscope::count_of(cpus.usable, "CPU") +
                     (cpus.limited_by.empty() ? " online" : " this process may use")),
            std::string::npos)
      << out;
  EXPECT_EQ(run({"run", "--threads", "1", "--data", ::testing::TempDir() + "no_such_data_dir", "--devices", "cpu",
                 "--models", "mlp", "--out", ::testing::TempDir()},
                &out),
            2);
  EXPECT_EQ(out.find("is more than the"), std::string::npos) << out;
}

// `taskset -c 0 trainscope run --threads 2`: the process may use one CPU, whatever the machine
// has; the warning counts that one and names the affinity mask (a Slurm job or container, too).
TEST(Cli, ThreadsAreCheckedAgainstTheAffinityMaskNotTheMachine) {
  cpu_set_t saved, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  if (CPU_COUNT(&saved) < 2 || std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs 2 CPUs to pin to one";
  CPU_ZERO(&one);
  int first = 0;
  while (!CPU_ISSET(first, &saved)) ++first;
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);  // the child inherits the mask
  std::string out;
  const int rc = run({"run", "--threads", "2", "--data", ::testing::TempDir() + "no_such_data_dir", "--devices", "cpu",
                      "--models", "mlp", "--out", ::testing::TempDir()},
                     &out);
  sched_setaffinity(0, sizeof saved, &saved);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(out.find("trainscope: warning: --threads 2 is more than the 1 CPU this process may use (affinity mask: 1 of"),
            std::string::npos)
      << out;
}

// `infer` checks a flag it shares with `run` against the same range, before loading anything.
TEST(Cli, InferChecksSharedFlagsWithTheRunRanges) {
  std::string out;
  EXPECT_EQ(run({"infer", "--model", "mlp", "--untrained", "--data-format", "synthetic", "--budget", "0"}, &out), 2);
  EXPECT_NE(out.find("0 is out of range; use (0, 3600] s (--budget; TOML key inference.single_stream_budget_s)"),
            std::string::npos)
      << out;
  EXPECT_EQ(run({"infer", "--model", "mlp", "--untrained", "--data-format", "synthetic", "--telemetry-interval", "5"},
                &out),
            2);
  EXPECT_NE(out.find("telemetry interval 5 is out of range; use [0.001, 1] s"), std::string::npos) << out;
  // the slow NVML fields' and PCIe throughput's periods, as `run` has them
  EXPECT_EQ(run({"infer", "--model", "mlp", "--untrained", "--data-format", "synthetic", "--telemetry-pcie-interval",
                 "0"},
                &out),
            2);
  EXPECT_NE(out.find("telemetry PCIe interval 0 is out of range; use [0.001, 3600] s"), std::string::npos) << out;
  EXPECT_EQ(run({"infer", "--model", "mlp", "--untrained", "--data-format", "synthetic", "--telemetry-slow-interval",
                 "7200"},
                &out),
            2);
  EXPECT_NE(out.find("telemetry slow-field interval 7200 is out of range; use [0.001, 3600] s"), std::string::npos) << out;
  EXPECT_EQ(run({"run", "--data-format", "synthetic", "--telemetry-interval", "5", "--out", ::testing::TempDir()}, &out),
            2);
  EXPECT_NE(out.find("telemetry interval 5 is out of range; use [0.001, 1] s"), std::string::npos) << out;
}

// The fused Adam kernel exists only on CUDA: asking for it on a CPU matrix is bad input before
// anything runs, not a failure of every run.
TEST(Cli, FusedOptimizerOnTheCpuIsBadInputBeforeTraining) {
  std::string dir = test_path("cli_fused");
  trainscope::remove_tree(dir);
  auto args = small_matrix(dir, "m");
  args.insert(args.end(), {"--optimizer-impl", "fused"});
  std::string out;
  EXPECT_EQ(run(args, &out), 2) << out;
  EXPECT_NE(out.find("--optimizer-impl fused needs a CUDA device"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir + "/m/results.json"));
}

// A --tensorboard folder that is a file is bad input before training, naming the flag.
TEST(Cli, UnwritableTensorBoardFolderIsBadInputBeforeTraining) {
  std::string dir = test_path("cli_tb");
  trainscope::remove_tree(dir);
  fs::create_directories(dir);
  std::ofstream(dir + "/afile") << "x";
  auto args = small_matrix(dir, "m");
  args.insert(args.end(), {"--tensorboard", dir + "/afile"});
  std::string out;
  EXPECT_EQ(run(args, &out), 2) << out;
  EXPECT_NE(out.find("--tensorboard (TOML tensorboard.dir)"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir + "/m/results.json"));
}

// A matrix whose every cell is not applicable measured nothing: bad input (2), with the reason,
// not success.
TEST(Cli, MatrixOfOnlyNotApplicableCellsIsBadInput) {
  std::string dir = test_path("cli_na");
  trainscope::remove_tree(dir);
  auto args = small_matrix(dir, "m");
  args[6] = "16";
  args.insert(args.end(), {"--variants", "channels_last"});  // mlp has no 4-D parameters
  std::string out;
  EXPECT_EQ(run(args, &out), 2) << out;
  EXPECT_NE(out.find("nothing was measured"), std::string::npos) << out;
  EXPECT_NE(out.find("channels_last needs a model with 4-D parameters"), std::string::npos) << out;
  // the not-applicable record carries the matrix's settings, not zeros
  auto j = json::parse(std::ifstream(dir + "/m/results.json"));
  ASSERT_EQ(j["runs"].size(), 1u);
  const auto& r = j["runs"][0];
  EXPECT_EQ(r["status"], "not_applicable");
  EXPECT_EQ(r["dataset"], "synthetic");
  EXPECT_EQ(r["epochs_requested"], 20);
  EXPECT_GT(r["learning_rate"].get<double>(), 0);
  EXPECT_EQ(r["warmup_steps"], 2);
}

// A data-parallel run's folder cannot be resumed, so the refusal does not suggest --resume.
TEST(Cli, UsedDataParallelFolderIsRefusedWithoutSuggestingResume) {
  std::string dir = test_path("cli_dp_used");
  trainscope::remove_tree(dir);
  fs::create_directories(dir + "/m/ranks/rank1");
  std::ofstream(dir + "/m/results.json") << "{\"runs\": []}\n";
  std::string out;
  EXPECT_NE(run(small_matrix(dir, "m"), &out), 0) << out;
  EXPECT_NE(out.find("data-parallel run, which cannot be resumed"), std::string::npos) << out;
  EXPECT_EQ(out.find("--resume"), std::string::npos) << out;
}

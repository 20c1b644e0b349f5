// End-to-end tests of the `trainscope` binary: exit statuses, bad input before training,
// SIGINT mid-matrix, SIGKILL then --resume.
#include <gtest/gtest.h>

#include "common/text.h"
#include <nlohmann/json.hpp>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include "../test_helpers.h"
#include "train/script_models.h"
#include <torch/library.h>
#include "trainscope/config.h"
#include "trainscope/cpu_budget.h"
#include "trainscope/fs.h"
#include "trainscope/provenance.h"
#include "trainscope/inference_reporter.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kBin = std::string(TS_BINARY_DIR) + "/trainscope";

struct Proc {
  pid_t pid = -1;
  std::string out_path;
};

Proc spawn(std::vector<std::string> args, const std::string& out_path) {
  Proc p;
  p.out_path = out_path;
  p.pid = fork();
  if (p.pid == 0) {
    FILE* f = fopen(out_path.c_str(), "w");
    dup2(fileno(f), 1);
    dup2(fileno(f), 2);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(kBin.c_str()));
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(kBin.c_str(), argv.data());
    _exit(127);
  }
  return p;
}

// A path under the test temp folder, unique to this process: engineers and CI jobs that run the
// suite at the same time on one machine share /tmp.
std::string test_path(const std::string& name) {
  return ::testing::TempDir() + "pid" + std::to_string(getpid()) + "_" + name;
}

int wait_status(pid_t pid) {
  int st = 0;
  waitpid(pid, &st, 0);
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return -1;
}

int run(std::vector<std::string> args, std::string* output = nullptr) {
  // ctest runs these tests in parallel: one output file per call.
  static int counter = 0;
  std::string out = ::testing::TempDir() + "cli_out_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + ".txt";
  auto p = spawn(std::move(args), out);
  int rc = wait_status(p.pid);
  if (output) {
    std::ifstream f(out);
    *output = std::string((std::istreambuf_iterator<char>(f)), {});
  }
  return rc;
}

size_t finished_runs(const std::string& results) {
  std::ifstream f(results);
  if (!f) return 0;
  try {
    return json::parse(f)["runs"].size();
  } catch (...) {
    return 0;  // never happens with atomic writes; counted as "not yet"
  }
}

// Polls results.json until it lists `n` runs (or 5 minutes passed; the caller asserts).
void wait_for_runs(const std::string& results, size_t n) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (finished_runs(results) < n && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

// The t_ns column of a telemetry.csv.gz, in file order.
std::vector<int64_t> telemetry_times(const std::string& path) {
  auto b = trainscope::read_file_bytes(path);
  std::vector<int64_t> t;
  std::string s(b.begin(), b.end());
  size_t pos = s.find('\n') + 1;  // after the header
  while (pos < s.size()) {
    t.push_back(std::stoll(s.substr(pos, s.find(',', pos) - pos)));
    pos = s.find('\n', pos) + 1;
    if (pos == 0) break;
  }
  return t;
}

std::vector<std::string> small_matrix(const std::string& out, const std::string& name) {
  return {"run", "--devices", "cpu", "--models", "mlp", "--batch-sizes", "8,16,32,64", "--data-format", "synthetic",
          "--epochs", "20", "--warmup-steps", "2", "--limit-train", "1024", "--no-inference", "--no-profile",
          // one thread: a tiny mlp gains nothing from more, and ctest -j8 on a 16-core host made
          // 16-thread runs crawl (OpenMP threads of parallel tests contending for the cores)
          "--threads", "1",
          "--no-progress", "--out", out, "--name", name, "--min-time", "0"};
}

}  // namespace

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

// `trainscope settings --markdown` prints the table docs/configuration.md holds.
TEST(Cli, SettingsPrintsTheTable) {
  std::string out;
  EXPECT_EQ(run({"settings", "--markdown"}, &out), 0) << out;
  EXPECT_NE(out.find("| `train.epochs` | `-e,--epochs` | `1` | 1..100000 |"), std::string::npos) << out;
  EXPECT_EQ(run({"settings"}, &out), 0) << out;
  EXPECT_NE(out.find("train.learning_rate"), std::string::npos) << out;
}

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

// A resume after SIGINT (which writes telemetry.csv.gz) keeps the first session's samples and
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
  EXPECT_TRUE(std::equal(first.begin(), first.end(), both.begin())) << "the first session's samples are kept";
  EXPECT_GT(both[first.size()], first.back()) << "the second session's samples follow on the same clock";
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

TEST(Cli, DevicesListsCpu) {
  std::string out;
  EXPECT_EQ(run({"devices"}, &out), 0);
  EXPECT_EQ(out.rfind("cpu", 0), 0u) << out;
}

namespace {
std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

// Waits until `path` contains `needle` (or the process ended, or 5 minutes passed).
bool wait_for_output(pid_t pid, const std::string& path, const std::string& needle) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (std::chrono::steady_clock::now() < deadline) {
    if (slurp(path).find(needle) != std::string::npos) return true;
    if (waitpid(pid, nullptr, WNOHANG) == pid) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}
}  // namespace

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

// ---- Models given to `run` and `infer`. The TorchScript files are built in C++ at
// test time (tests/train/script_models.h).
namespace {
std::vector<std::string> model_matrix(const std::string& out, const std::string& name, const std::string& models) {
  auto args = small_matrix(out, name);
  args[4] = models;  // --models
  args[6] = "16";    // --batch-sizes
  args.insert(args.end(), {"--max-steps", "3"});
  return args;
}
}  // namespace

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

// ---------------------------------------------------------------- across machines

namespace {

// The study fixture as measured on this host (A) and on "gpu-box" (B: another LibTorch, its
// provenance edited, the cnn b64 workload not measured there).
std::pair<std::string, std::string> two_hosts(const std::string& dir) {
  trainscope::remove_tree(dir);
  auto study = json::parse(std::ifstream(std::string(TS_FIXTURES_DIR) + "/report/study/results.json"));
  fs::create_directories(dir + "/a");
  std::ofstream(dir + "/a/results.json") << study.dump();
  auto b = study;
  b["provenance"]["host"] = "gpu-box";
  b["provenance"]["libtorch_version"] = "2.1.0";
  json runs = json::array();
  for (const auto& r : b["runs"])
    if (!(r["model"] == "cnn" && r["batch_size"] == 64)) runs.push_back(r);
  b["runs"] = runs;
  fs::create_directories(dir + "/b");
  std::ofstream(dir + "/b/results.json") << b.dump();
  return {dir + "/a", dir + "/b"};
}

}  // namespace

TEST(CliHosts, ReportOnTwoHostsNamesBothAndListsMismatchedWorkloads) {
  std::string dir = test_path("cli_hosts");
  auto [a, b] = two_hosts(dir);
  std::string out;
  ASSERT_EQ(run({"report", a, b, "-o", dir + "/out", "--db", dir + "/none.sqlite"}, &out), 0) << out;
  EXPECT_NE(out.find("Across machines: A = fixture-host"), std::string::npos) << out;
  EXPECT_NE(out.find("B = gpu-box"), std::string::npos) << out;
  EXPECT_NE(out.find("differs: LibTorch: "), std::string::npos) << out;
  EXPECT_NE(out.find("not comparable: `cnn` b64 (fashion-mnist, seed 42): measured only on fixture-host"),
            std::string::npos)
      << out;
  auto md = trainscope::test::read_text(dir + "/out/report.md");
  size_t n = 0;
  for (size_t p = md.find("## Across machines"); p != std::string::npos; p = md.find("## Across machines", p + 1)) ++n;
  EXPECT_EQ(n, 1u);  // one comparison
  EXPECT_TRUE(fs::exists(dir + "/out/report.html"));
  // compare: each side names its host; the mismatched workload is not compared
  ASSERT_EQ(run({"compare", a, b, "--db", dir + "/none.sqlite", "--threshold-pct", "1000"}, &out), 0) << out;
  EXPECT_NE(out.find("on gpu-box"), std::string::npos) << out;
  EXPECT_NE(out.find("differs: LibTorch"), std::string::npos) << out;
  EXPECT_NE(out.find("not comparable"), std::string::npos) << out;
}

TEST(CliHosts, HistoryImportAddsAFolderOnceAndRefusesANonRunFolder) {
  std::string dir = test_path("cli_import");
  auto [a, b] = two_hosts(dir);
  std::string db = dir + "/h.sqlite", out;
  ASSERT_EQ(run({"history", "import", b, "--db", db}, &out), 0) << out;
  EXPECT_NE(out.find("imported 19 run(s) from host gpu-box"), std::string::npos) << out;
  ASSERT_EQ(run({"history", "import", b, "--db", db}, &out), 0) << out;
  EXPECT_NE(out.find("nothing added"), std::string::npos) << out;
  ASSERT_EQ(run({"history", "--db", db, "-n", "0"}, &out), 0) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 19 + 3) << out;  // header, 19 runs, blank, hint
  EXPECT_EQ(run({"history", "import", dir, "--db", db}, &out), 2) << out;
  EXPECT_NE(out.find("is not a run folder: it has no results.json"), std::string::npos) << out;
}

// ---------------------------------------------------------------- cell identity (tester's wave-5 findings)

namespace {

// A run folder `dir/name` holding the healthy fixture's CPU run, edited by `edit` (one record in,
// any number out), with its own provenance date (history import keys a folder on host and date).
std::string identity_folder(const std::string& dir, const std::string& name,
                            const std::function<json(const json&)>& edit) {
  auto doc = json::parse(std::ifstream(std::string(TS_FIXTURES_DIR) + "/report/healthy/results.json"));
  json cpu;
  for (const auto& r : doc["runs"])
    if (r["device"] == "cpu") cpu = r;
  doc["runs"] = edit(cpu);
  doc["provenance"]["date_utc"] = "2026-12-01T10:00:0" + std::to_string(name.size()) + "Z";
  fs::create_directories(dir + "/" + name);
  std::ofstream(dir + "/" + name + "/results.json") << doc.dump();
  return dir + "/" + name;
}

}  // namespace

TEST(CliIdentity, CompareAndHistoryNameTheVariantAndTheWorldSize) {
  std::string dir = test_path("cli_identity");
  trainscope::remove_tree(dir);
  auto one = identity_folder(dir, "one", [](const json& r) { return json::array({r}); });
  auto dp2 = identity_folder(dir, "dp2x", [](const json& r) {
    json d = r;
    d["world_size"] = 2;
    d["steady_samples_per_s"] = 0.5 * d["steady_samples_per_s"].get<double>();
    return json::array({d});
  });
  auto vars = identity_folder(dir, "variants", [](const json& r) {
    json out = json::array({r});
    for (const char* v : {"bf16", "channels_last"}) {
      json x = r;
      x["variant"] = v;
      x["run_id"] = r["run_id"].get<std::string>() + "-" + v;
      out.push_back(x);
    }
    return out;
  });
  std::string db = dir + "/h.sqlite", out;
  // one process vs 2 ranks: never paired, so no regression (was: -50 % REGRESSION, exit 4)
  EXPECT_EQ(run({"compare", one, dp2, "--db", db}, &out), 2) << out;
  EXPECT_EQ(out.find("REGRESSION"), std::string::npos) << out;
  EXPECT_NE(out.find("only in B (no ok run of this workload in A; not comparable): cpu `cnn ×2 ranks` b128"),
            std::string::npos) << out;
  EXPECT_NE(out.find("is in both A and B"), std::string::npos) << out;
  // variants: one row each, named
  EXPECT_EQ(run({"compare", vars, vars, "--db", db}, &out), 0) << out;
  EXPECT_NE(out.find("cpu        cnn [bf16]"), std::string::npos) << out;
  EXPECT_NE(out.find("cpu        cnn [channels_last]"), std::string::npos) << out;
  // history: the model as the report names it
  ASSERT_EQ(run({"history", "import", vars, "--db", db}, &out), 0) << out;
  ASSERT_EQ(run({"history", "import", dp2, "--db", db}, &out), 0) << out;
  ASSERT_EQ(run({"history", "--db", db, "-n", "0"}, &out), 0) << out;
  EXPECT_NE(out.find(" cnn [bf16] "), std::string::npos) << out;
  EXPECT_NE(out.find(" cnn [channels_last] "), std::string::npos) << out;
  EXPECT_NE(out.find(" cnn ×2 ranks "), std::string::npos) << out;
}

// `report` on a data-parallel folder whose rank 0 died (0 runs) exited 0 with an empty summary.
TEST(CliIdentity, ReportAndCompareRefuseAFolderWithoutRuns) {
  std::string dir = test_path("cli_no_runs");
  trainscope::remove_tree(dir);
  auto empty = identity_folder(dir, "empty", [](const json&) { return json::array(); });
  fs::create_directories(empty + "/ranks/rank1");
  std::ofstream(empty + "/ranks/rank1/results.json") << R"({"runs": []})";
  std::string out;
  EXPECT_EQ(run({"report", empty, "--db", dir + "/none.sqlite"}, &out), 2) << out;
  EXPECT_NE(out.find("holds no runs"), std::string::npos) << out;
  EXPECT_NE(out.find(empty + "/ranks/rank1/results.json"), std::string::npos) << out;
  EXPECT_EQ(out.find("RQ2"), std::string::npos) << out;  // no report of nothing
  EXPECT_FALSE(fs::exists(empty + "/report.md"));
  EXPECT_EQ(run({"compare", empty, empty, "--db", dir + "/none.sqlite"}, &out), 2) << out;
  EXPECT_NE(out.find("holds no runs"), std::string::npos) << out;
}

// --resume names a kept variant's cell as the report does ("cpu mlp [bf16] b8").
TEST(CliIdentity, ResumeNamesTheVariantOfAKeptRun) {
  std::string dir = test_path("cli_resume_variant");
  trainscope::remove_tree(dir);
  auto args = small_matrix(dir, "v");
  args[6] = "8";                      // --batch-sizes
  args[10] = "1";                     // --epochs
  args.insert(args.end(), {"--variants", "eager,bf16", "--max-steps", "4"});
  std::string out;
  ASSERT_EQ(run(args, &out), 0) << out;
  ASSERT_EQ(run({"run", "--resume", dir + "/v", "--no-progress"}, &out), 0) << out;
  EXPECT_NE(out.find("cpu mlp [bf16] b8: already measured, kept (resume)"), std::string::npos) << out;
  EXPECT_NE(out.find("cpu mlp b8: already measured, kept (resume)"), std::string::npos) << out;
}

// --variants eager,threads1: the threads1 run trains (and infers) on one intra-op thread, the eager
// run on the invocation's --threads; each run records its own count, and `infer --run` on the
// threads1 checkpoint takes that run's count, not the invocation's.
// The host allocator (docs/configuration.md#host-memory-allocator): the record names it and how
// it was set, by default, with --no-malloc-tuning and with a threshold from the environment.
TEST(CliIdentity, RecordNamesTheHostAllocatorAndHowItWasSet) {
  std::string dir = test_path("cli_host_malloc");
  trainscope::remove_tree(dir);
  auto allocator = [&](const std::string& name, std::vector<std::string> extra) {
    auto args = small_matrix(dir, name);
    args[6] = "32";   // --batch-sizes
    args[10] = "1";   // --epochs
    args.insert(args.end(), {"--max-steps", "3"});
    args.insert(args.end(), extra.begin(), extra.end());
    std::string out;
    EXPECT_EQ(run(args, &out), 0) << out;
    return json::parse(std::ifstream(dir + "/" + name + "/results.json"))["provenance"]["host_allocator"].get<std::string>();
  };
  const std::string tuned = allocator("tuned", {});
  if (tuned.find("replaces glibc malloc") != std::string::npos) GTEST_SKIP() << tuned;  // e.g. an ASan build
  EXPECT_NE(tuned.find("glibc "), std::string::npos) << tuned;
  EXPECT_NE(tuned.find("malloc, fixed thresholds: mmap 1024 MiB, trimming off"), std::string::npos) << tuned;
  EXPECT_NE(allocator("dynamic", {"--no-malloc-tuning"}).find("dynamic thresholds (malloc tuning off)"),
            std::string::npos);
  struct Env {  // the child inherits it; unset however the test ends
    Env() { setenv("MALLOC_MMAP_THRESHOLD_", "67108864", 1); }
    ~Env() { unsetenv("MALLOC_MMAP_THRESHOLD_"); }
  } env_guard;
  const std::string env = allocator("env", {});
  EXPECT_NE(env.find("as MALLOC_MMAP_THRESHOLD_ sets it (malloc tuning leaves it)"), std::string::npos) << env;
}

TEST(CliIdentity, ThreadsVariantSetsEachRunsIntraOpThreads) {
  cpu_set_t mask;
  ASSERT_EQ(sched_getaffinity(0, sizeof mask, &mask), 0);
  if (CPU_COUNT(&mask) < 2) GTEST_SKIP() << "needs 2 usable CPUs to tell 1 thread from --threads 2";
  std::string dir = test_path("cli_threads_variant");
  trainscope::remove_tree(dir);
  auto args = small_matrix(dir, "t");
  args[6] = "32";    // --batch-sizes
  args[10] = "1";    // --epochs
  args[18] = "2";    // --threads
  args.insert(args.end(), {"--variants", "eager,threads1", "--max-steps", "6"});
  std::string out;
  ASSERT_EQ(run(args, &out), 0) << out;
  const json j = json::parse(std::ifstream(dir + "/t/results.json"));
  std::map<std::string, int64_t> threads;
  // .at: a record without a field fails the test showing the record (this test crashed once on
  // the H200 build before printing anything; bench/RESULTS.md, sixteenth session)
  for (const auto& r : j.at("runs")) {
    ASSERT_NO_THROW(threads[r.at("run_id").get<std::string>()] = r.at("intra_op_threads").get<int64_t>())
        << r.dump().substr(0, 2000) << out;
  }
  EXPECT_EQ(threads["cpu-mlp-b32-r0"], 2);
  EXPECT_EQ(threads["cpu-mlp-b32-r0-threads1"], 1);
  EXPECT_EQ(j.at("provenance").at("intra_op_threads").get<int64_t>(), 2);
  // infer on the threads1 checkpoint runs as its training run did: one thread
  const std::string json_out = dir + "/infer.json";
  ASSERT_EQ(run({"infer", "--checkpoint", dir + "/t/checkpoints/cpu-mlp-b32-r0-threads1.pt", "--devices", "cpu",
                 "--budget", "0.2", "--batch-sizes", "8", "--limit", "128", "--no-telemetry", "--out", json_out},
                &out),
            0)
      << out;
  // .at: a record without the field fails the test with the record, not a crash (the H200 ran
  // this test into a segfault once, its output lost with it)
  const json one = json::parse(std::ifstream(json_out));
  ASSERT_NO_THROW(one.at("runs").at(0).at("inference").at("intra_op_threads")) << one.dump().substr(0, 2000) << out;
  EXPECT_EQ(one["runs"][0]["inference"]["intra_op_threads"].get<int64_t>(), 1) << out;
  // infer --run: each checkpoint at its own run's count
  ASSERT_EQ(run({"infer", "--run", dir + "/t", "--devices", "cpu", "--budget", "0.2", "--batch-sizes", "8", "--limit",
                 "128", "--no-telemetry", "--out", json_out},
                &out),
            0)
      << out;
  std::map<std::string, int64_t> infer_threads;
  const json measured = json::parse(std::ifstream(json_out));
  for (const auto& r : measured["runs"]) {
    ASSERT_NO_THROW(r.at("inference").at("intra_op_threads")) << r.dump().substr(0, 2000) << out;
    infer_threads[fs::path(r.at("checkpoint").get<std::string>()).stem().string()] =
        r["inference"]["intra_op_threads"].get<int64_t>();
  }
  EXPECT_EQ(infer_threads["cpu-mlp-b32-r0"], 2) << out;
  EXPECT_EQ(infer_threads["cpu-mlp-b32-r0-threads1"], 1) << out;
  // a thread count above the usable CPUs is measured, with a note saying it oversubscribes them
  trainscope::remove_tree(dir);
  args[args.size() - 3] = "threads64";
  ASSERT_EQ(run(args, &out), 0) << out;
  EXPECT_NE(out.find("variant threads64: 64 intra-op threads on "), std::string::npos) << out;
}

// --batch-sizes auto on a synthetic CPU workload: the sweep doubles from the number given and
// stops with a reason; with 128 training samples it cannot go past batch 128. Where it saturates
// depends on the machine, so either stop is accepted (the rule itself: BatchSweep.* in
// tests/report/test_report.cpp, on an injected throughput curve).
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

// ---- The console: the answer first; an output that cannot be written does not stop the matrix.
namespace {
// Runs the binary with its standard output on `stdout_fd` (closed here after the fork) and its
// standard error into `err`; the exit status as run() gives it.
int run_with_stdout(std::vector<std::string> args, int stdout_fd, std::string* err) {
  const std::string err_path = test_path("stderr_" + std::to_string(stdout_fd) + ".txt");
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = fopen(err_path.c_str(), "w");
    dup2(stdout_fd, 1);
    dup2(fileno(f), 2);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(kBin.c_str()));
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(kBin.c_str(), argv.data());
    _exit(127);
  }
  close(stdout_fd);
  const int rc = wait_status(pid);
  std::ifstream f(err_path);
  *err = std::string((std::istreambuf_iterator<char>(f)), {});
  return rc;
}
}  // namespace

// Users read the top of the output: after the matrix table come the summary, advice and research
// questions, and only then the operator tables (short by default) and the paths.
TEST(CliConsole, TheAnswerComesBeforeTheOperatorTables) {
  std::string dir = test_path("cli_answer_first");
  trainscope::remove_tree(dir);
  auto args = small_matrix(dir, "m");
  args[6] = "16";
  args[10] = "1";
  args.erase(std::find(args.begin(), args.end(), "--no-profile"));
  args.insert(args.end(), {"--max-steps", "14"});
  std::string out;
  ASSERT_EQ(run(args, &out), 0) << out;
  const size_t table = out.find("samples/s  "), answer = out.find("Research questions"),
               ops = out.find("top operators of"), results = out.find("results: ");
  ASSERT_NE(answer, std::string::npos) << out;
  ASSERT_NE(ops, std::string::npos) << out;
  EXPECT_LT(table, answer) << out;
  EXPECT_LT(answer, ops) << out;
  EXPECT_LT(ops, results) << out;
  EXPECT_EQ(trainscope::MatrixConfig{}.profile.top_n, 5) << "operator tables are short by default";
}

// The console is optional: `trainscope run | head -4` (a closed pipe: SIGPIPE used to end the
// process) and a full disk under stdout (an internal error used to stop the matrix) leave every
// cell measured, with a note on stderr.
TEST(CliConsole, AClosedPipeOrAFullDiskAsStdoutDoesNotStopTheMatrix) {
  for (const std::string how : {"pipe", "full"}) {
    std::string dir = test_path("cli_console_" + how);
    trainscope::remove_tree(dir);
    auto args = small_matrix(dir, "m");
    args[6] = "8,16";
    args.insert(args.end(), {"--max-steps", "3"});
    int fd = -1;
    if (how == "pipe") {
      int p[2];
      ASSERT_EQ(pipe(p), 0);
      close(p[0]);  // nobody reads: the first write fails with EPIPE
      fd = p[1];
    } else {
      fd = open("/dev/full", O_WRONLY);
      ASSERT_GE(fd, 0);
    }
    std::string err;
    EXPECT_EQ(run_with_stdout(args, fd, &err), 0) << how << ": " << err;
    EXPECT_EQ(finished_runs(dir + "/m/results.json"), 2u) << how << ": " << err;
    EXPECT_NE(err.find("the console output stopped (standard output could not be written"), std::string::npos)
        << how << ": " << err;
  }
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

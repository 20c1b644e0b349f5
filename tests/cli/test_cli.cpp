// End-to-end tests of the `trainscope` binary: exit statuses, bad input before training,
// SIGINT mid-matrix, SIGKILL then --resume.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

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

std::vector<std::string> small_matrix(const std::string& out, const std::string& name) {
  return {"run", "--devices", "cpu", "--models", "mlp", "--batch-sizes", "8,16,32,64", "--data-format", "synthetic",
          "--epochs", "20", "--warmup-steps", "2", "--limit-train", "1024", "--no-inference", "--no-profile",
          // one thread: a tiny mlp gains nothing from more, and ctest -j8 on a 16-core host made
          // 16-thread runs crawl (OpenMP threads of parallel tests contending for the cores)
          "--threads", "1",
          "--no-progress", "--out", out, "--name", name};
}

}  // namespace

TEST(Cli, BadInputExitsWithUsageStatusBeforeTraining) {
  std::string out;
  EXPECT_EQ(run({"run", "--batch-sizes", "0", "--data-format", "synthetic", "--out", ::testing::TempDir()}, &out), 2);
  EXPECT_NE(out.find("batch size 0"), std::string::npos) << out;
  EXPECT_EQ(run({"run", "--models", "nosuchnet", "--data-format", "synthetic", "--out", ::testing::TempDir()}, &out), 2);
  EXPECT_NE(out.find("unknown model 'nosuchnet'"), std::string::npos) << out;
  EXPECT_EQ(run({"run", "--no-such-option"}, &out), 2);
  EXPECT_EQ(run({"run", "--data", "/nonexistent", "--out", ::testing::TempDir()}, &out), 2);
  EXPECT_NE(out.find("/nonexistent"), std::string::npos) << out;
  EXPECT_EQ(run({"run", "--devices", "cuda:9", "--data-format", "synthetic", "--out", ::testing::TempDir()}, &out), 2);
  EXPECT_NE(out.find("devices found: cpu"), std::string::npos) << out;
}

TEST(Cli, FailedRunGivesExitStatus3AndOthersAreMeasured) {
  std::string dir = ::testing::TempDir() + "cli_fail";
  fs::remove_all(dir);
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

TEST(Cli, SigintFinishesStepWritesPartialRunAndExits130) {
  std::string dir = ::testing::TempDir() + "cli_sigint";
  fs::remove_all(dir);
  auto p = spawn(small_matrix(dir, "m"), ::testing::TempDir() + "sigint_out.txt");
  const std::string results = dir + "/m/results.json";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (finished_runs(results) < 1 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
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
  std::string dir = ::testing::TempDir() + "cli_resume";
  fs::remove_all(dir);
  auto p = spawn(small_matrix(dir, "m"), ::testing::TempDir() + "kill_out.txt");
  const std::string results = dir + "/m/results.json";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (finished_runs(results) < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  kill(p.pid, SIGKILL);
  wait_status(p.pid);
  auto before = json::parse(std::ifstream(results))["runs"];
  ASSERT_GE(before.size(), 2u);
  ASSERT_LT(before.size(), 4u);
  std::string out;
  ASSERT_EQ(run({"run", "--resume", dir + "/m", "--no-progress"}, &out), 0) << out;
  auto after = json::parse(std::ifstream(results))["runs"];
  ASSERT_EQ(after.size(), 4u);
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(after[i]["run_id"], before[i]["run_id"]);
    EXPECT_EQ(after[i]["start_ns"], before[i]["start_ns"]);  // kept, not re-run
  }
  for (const auto& r : after) EXPECT_EQ(r["status"], "ok");
  size_t kept = 0;
  for (size_t pos = 0; (pos = out.find("already measured, kept", pos)) != std::string::npos; ++pos) ++kept;
  EXPECT_EQ(kept, before.size());
}

TEST(Cli, DevicesListsCpu) {
  std::string out;
  EXPECT_EQ(run({"devices"}, &out), 0);
  EXPECT_EQ(out.rfind("cpu", 0), 0u) << out;
}

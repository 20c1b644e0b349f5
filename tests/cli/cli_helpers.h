// Helpers of the `trainscope` binary's end-to-end tests (tests/cli/test_cli_*.cpp): start the built
// binary, wait for it, read what it wrote. One copy each: `inline`, in namespace cli_test.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_helpers.h"
#include "trainscope/fs.h"

namespace cli_test {

struct Proc {
  pid_t pid = -1;
  std::string out_path;
};

inline Proc spawn(std::vector<std::string> args, const std::string& out_path) {
  Proc p;
  p.out_path = out_path;
  p.pid = fork();
  if (p.pid == 0) {
    FILE* f = fopen(out_path.c_str(), "w");
    trainscope::test::exec_trainscope(args, fileno(f), fileno(f));
  }
  return p;
}

// A path under the test temp folder, unique to this process: engineers and CI jobs that run the
// suite at the same time on one machine share /tmp.
inline std::string test_path(const std::string& name) {
  return ::testing::TempDir() + "pid" + std::to_string(getpid()) + "_" + name;
}

inline int wait_status(pid_t pid) {
  int st = 0;
  waitpid(pid, &st, 0);
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return -1;
}

inline int run(std::vector<std::string> args, std::string* output = nullptr) {
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

inline size_t finished_runs(const std::string& results) {
  std::ifstream f(results);
  if (!f) return 0;
  try {
    return nlohmann::json::parse(f)["runs"].size();
  } catch (...) {
    return 0;  // never happens with atomic writes; counted as "not yet"
  }
}

// Polls results.json until it lists `n` runs (or 5 minutes passed; the caller asserts).
inline void wait_for_runs(const std::string& results, size_t n) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (finished_runs(results) < n && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

// The t_ns column of a telemetry.csv.gz, in file order.
inline std::vector<int64_t> telemetry_times(const std::string& path) {
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

inline std::vector<std::string> small_matrix(const std::string& out, const std::string& name) {
  return {"run", "--devices", "cpu", "--models", "mlp", "--batch-sizes", "8,16,32,64", "--data-format", "synthetic",
          "--epochs", "20", "--warmup-steps", "2", "--limit-train", "1024", "--no-inference", "--no-profile",
          // one thread: a tiny mlp gains nothing from more, and ctest -j8 on a 16-core host made
          // 16-thread runs crawl (OpenMP threads of parallel tests contending for the cores)
          "--threads", "1",
          "--no-progress", "--out", out, "--name", name, "--min-time", "0"};
}


inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

// Waits until `path` contains `needle` (or the process ended, or 5 minutes passed).
inline bool wait_for_output(pid_t pid, const std::string& path, const std::string& needle) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (std::chrono::steady_clock::now() < deadline) {
    if (slurp(path).find(needle) != std::string::npos) return true;
    if (waitpid(pid, nullptr, WNOHANG) == pid) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// small_matrix() for the models under test (a TorchScript file from tests/train/script_models.h,
// or a built-in name): batch 16, 3 steps.
inline std::vector<std::string> model_matrix(const std::string& out, const std::string& name, const std::string& models) {
  auto args = small_matrix(out, name);
  args[4] = models;  // --models
  args[6] = "16";    // --batch-sizes
  args.insert(args.end(), {"--max-steps", "3"});
  return args;
}

}  // namespace cli_test

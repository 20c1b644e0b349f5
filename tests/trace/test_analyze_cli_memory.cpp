// `trainscope analyze --memory-mb`: a trace past the budget (its records sorted through a
// temporary file) gives the JSON of the same trace analysed in memory; a budget of 0 and a
// temporary folder that cannot be written are reported with the fix.
#include <gtest/gtest.h>
#include <fmt/core.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "../test_helpers.h"

namespace {

const std::string kBin = std::string(TS_BINARY_DIR) + "/trainscope";

struct Result {
  int status = -1;
  std::string out;
};

// Runs `env trainscope analyze args` (shell words), stdout and stderr together.
Result run(const std::string& env, const std::string& args) {
  Result r;
  FILE* p = popen((env + " " + kBin + " analyze " + args + " 2>&1").c_str(), "r");
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "pid" + std::to_string(getpid()) + "_" + name;
}

// 3000 steps of 12 operators, runtime calls and kernels each (about 110 000 events): its
// sorted records take more than 1 MiB.
std::string big_trace() {
  const std::string path = temp_path("mem.pt.trace.json");
  std::ofstream f(path);
  f << R"({"schemaVersion": 1, "traceEvents": [)";
  for (int i = 0; i < 3000; ++i) {
    const int64_t t = 1000 + int64_t{i} * 100;
    f << fmt::format(R"({{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{}","pid":1,"tid":1,"ts":{},"dur":90}},)", i, t);
    for (int k = 0; k < 12; ++k)
      f << fmt::format(R"({{"ph":"X","cat":"cpu_op","name":"aten::op{}","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"External id":{}}}}},)",
                       k, t + 2 + 7 * k, i * 100 + k)
        << fmt::format(R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":1,"args":{{"correlation":{}}}}},)",
                       t + 3 + 7 * k, i * 100 + k);
  }
  for (int i = 0; i < 3000; ++i)
    for (int k = 0; k < 12; ++k)
      f << fmt::format(R"({}{{"ph":"X","cat":"kernel","name":"k{}","pid":0,"tid":7,"ts":{},"dur":4,"args":{{"stream":7,"correlation":{},"External id":{}}}}})",
                       i + k == 0 ? "" : ",", k, 1000 + i * 100 + 30 + 7 * k, i * 100 + k, i * 100 + k);
  f << "]}";
  return path;
}

}  // namespace

TEST(AnalyzeCliMemory, PastTheBudgetTheJsonIsTheInMemoryOne) {
  const std::string trace = big_trace(), spilled = temp_path("spilled.json"), held = temp_path("held.json");
  const Result a = run("", "--quiet --memory-mb 1 --json " + spilled + " " + trace);
  ASSERT_EQ(a.status, 0) << a.out;
  const Result b = run("", "--quiet --memory-mb 1024 --json " + held + " " + trace);
  ASSERT_EQ(b.status, 0) << b.out;
  const std::string json = trainscope::test::read_text(spilled);
  EXPECT_NE(json.find("\"ProfilerStep#2999\""), std::string::npos);
  EXPECT_EQ(json, trainscope::test::read_text(held));
}

TEST(AnalyzeCliMemory, BadBudgetAndUnwritableTemporaryFolder) {
  const std::string trace = big_trace();
  EXPECT_EQ(run("", "--memory-mb 0 " + trace).status, 2);
  const Result r = run("TMPDIR=/nonexistent-trainscope-tmp", "--quiet --memory-mb 1 " + trace);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("/nonexistent-trainscope-tmp: cannot create a temporary file"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--memory-mb"), std::string::npos) << r.out;
}

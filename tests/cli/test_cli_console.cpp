// The console: the answer first, then the operator tables; an output that cannot be written does
// not stop the matrix; `devices` and `settings`.
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

// `trainscope settings --markdown` prints the table docs/configuration.md holds.
TEST(Cli, SettingsPrintsTheTable) {
  std::string out;
  EXPECT_EQ(run({"settings", "--markdown"}, &out), 0) << out;
  EXPECT_NE(out.find("| `train.epochs` | `-e,--epochs` | `1` | 1..100000 |"), std::string::npos) << out;
  EXPECT_EQ(run({"settings"}, &out), 0) << out;
  EXPECT_NE(out.find("train.learning_rate"), std::string::npos) << out;
}

TEST(Cli, DevicesListsCpu) {
  std::string out;
  EXPECT_EQ(run({"devices"}, &out), 0);
  EXPECT_EQ(out.rfind("cpu", 0), 0u) << out;
}

namespace {
// Runs the binary with its standard output on `stdout_fd` (closed here after the fork) and its
// standard error into `err`; the exit status as run() gives it.
int run_with_stdout(std::vector<std::string> args, int stdout_fd, std::string* err) {
  const std::string err_path = test_path("stderr_" + std::to_string(stdout_fd) + ".txt");
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = fopen(err_path.c_str(), "w");
    trainscope::test::exec_trainscope(args, stdout_fd, fileno(f));
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

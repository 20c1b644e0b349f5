// The language-model checkpoint the generation end-to-end tests start from (test_generate_e2e.cpp,
// test_cli_server_e2e.cpp, test_generate_outputs_e2e.cpp): a tiny GPT trained for two steps on a
// text corpus the test writes, through the built `trainscope` binary. One copy each: `inline`, in
// namespace lm_checkpoint.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "test_helpers.h"
#include "trainscope/fs.h"

namespace lm_checkpoint {

/// This test process's folder, TempDir()/<name>_<pid>: ctest runs the test binaries in parallel
/// and engineers share /tmp.
inline std::string process_root(const std::string& name) {
  return ::testing::TempDir() + name + "_" + std::to_string(getpid());
}

/// Runs the built `trainscope` with `args` and returns its exit status; its stdout and stderr go
/// to the log file <root>_<n>.log (one per call) and from there to *out.
inline int run_binary(const std::string& root, const std::vector<std::string>& args, std::string* out) {
  static int n = 0;
  const std::string log = root + "_" + std::to_string(n++) + ".log";
  const int rc = trainscope::test::run_trainscope(args, log);
  *out = trainscope::test::read_text(log);
  return rc;
}

/// Empties `root`, has `write_corpus` write text files into the folder <root>/corpus (made for it),
/// then trains gpt-mini of one block (width 32, 2 heads, windows of 32 tokens: context 256) for two
/// steps of batch 4 on the CPU, one thread, no inference. Returns the run folder <root>/runs/lm;
/// the test fails (EXPECT) where the run does not exit 0.
inline std::string train_tiny_gpt(const std::string& root,
                                  const std::function<void(const std::string& corpus)>& write_corpus) {
  trainscope::remove_tree(root);
  std::filesystem::create_directories(root + "/corpus");
  write_corpus(root + "/corpus");
  std::string out;
  const int rc = run_binary(root,
                            {"run", "--devices", "cpu", "-m", "gpt-mini", "--data-format", "text", "--data",
                             root + "/corpus", "--max-steps", "2", "--lm-layers", "1", "--lm-width", "32",
                             "--lm-heads", "2", "--seq-len", "32", "-b", "4", "--warmup-steps", "0", "--min-time", "0",
                             "--eval-windows", "2", "--no-inference", "--threads", "1", "--no-progress", "--out",
                             root + "/runs", "--name", "lm"},
                            &out);
  EXPECT_EQ(rc, 0) << out;
  return root + "/runs/lm";
}

}  // namespace lm_checkpoint

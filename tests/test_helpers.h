// Small helpers shared by the test suites (one copy of each).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/error.h"
#include "trainscope/fs.h"

namespace trainscope::test {

/// A whole file as text; ".gz" files are decompressed by the project's own reader
/// (trainscope/fs.h read_file_bytes), which throws Error naming the file when it cannot.
inline std::string read_text(const std::string& path) {
  auto bytes = read_file_bytes(path);
  return std::string(bytes.begin(), bytes.end());
}

/// The message of the trainscope::Error that `f` throws, or "(no error)".
inline std::string what_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

/// The kind and message of the trainscope::Error that `f` throws, or {kInternal, "no error"} where
/// it throws none.
inline std::pair<ErrorKind, std::string> error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.kind(), e.what()};
  }
  return {ErrorKind::kInternal, "no error"};
}

/// The kind of the trainscope::Error that `f` throws, or kInternal where it throws none.
inline ErrorKind kind_of(const std::function<void()>& f) { return error_of(f).first; }

#ifdef TS_BINARY_DIR
/// In a forked child: becomes the built `trainscope` binary run with `args`, its stdout on the
/// file descriptor `out_fd` and its stderr on `err_fd`; exits 127 where the binary cannot start.
[[noreturn]] inline void exec_trainscope(const std::vector<std::string>& args, int out_fd, int err_fd) {
  const std::string bin = std::string(TS_BINARY_DIR) + "/trainscope";
  dup2(out_fd, 1);
  dup2(err_fd, 2);
  std::vector<char*> argv{const_cast<char*>(bin.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(bin.c_str(), argv.data());
  _exit(127);
}

/// Runs the built `trainscope` binary with `args`, its stdout and stderr into the file `log`;
/// returns its exit status (-1 when it did not exit normally).
inline int run_trainscope(const std::vector<std::string>& args, const std::string& log) {
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = fopen(log.c_str(), "w");
    exec_trainscope(args, fileno(f), fileno(f));
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
#endif

}  // namespace trainscope::test

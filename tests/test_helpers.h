// Small helpers shared by the test suites (one copy of each).
#pragma once

#include <functional>
#include <string>

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

}  // namespace trainscope::test

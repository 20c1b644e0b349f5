// Helpers for the telemetry tests: temporary copies of the fixture trees and file writing.
#pragma once

#include <gtest/gtest.h>

#include "trainscope/fs.h"
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace ts_test {

inline std::filesystem::path fresh_tree(const std::string& tag) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("ts_telemetry_" + tag + "_" + std::to_string(::getpid()));
  trainscope::remove_tree(dir);
  fs::create_directories(dir);
  fs::copy(fs::path(TS_FIXTURES_DIR) / "telemetry", dir, fs::copy_options::recursive);
  return dir;
}

inline void write_file(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::trunc) << text;
}

}  // namespace ts_test

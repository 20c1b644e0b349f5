// Byte-level helpers for the tests that damage model files on purpose: a scratch path per test
// process, a file's bytes, and writing them back.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace trainscope::test {

// `name` inside a folder of the temporary directory named `folder` + this process's id.
inline std::string scratch_path(const std::string& folder, const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / (folder + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

inline std::vector<char> bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(f)), {});
}

inline void write_bytes(const std::string& path, const std::vector<char>& b) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(b.data(), static_cast<std::streamsize>(b.size()));
}

}  // namespace trainscope::test

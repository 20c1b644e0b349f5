// Helpers shared by the tests of `trainscope measure`'s library (test_measure.cpp,
// test_measure_window.cpp): the fixtures, Debian's Python, and a config for one child program.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/fs.h"
#include "trainscope/measure.h"

namespace measure_test {

inline const std::string kFixtures = std::string(TS_FIXTURES_DIR) + "/measure";
inline const std::string kPython = "/usr/bin/python3";  // Debian's: the one with python3-torch

/// A path under the test's temporary folder, unique to this process.
inline std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "pid" + std::to_string(getpid()) + "_" + name;
}

/// A measurement of `command` into a fresh folder temp_path(name): no echo, no NVML (the
/// sampler reads /proc only), 2 warm-up steps.
inline trainscope::measure::MeasureConfig config(const std::string& name, std::vector<std::string> command) {
  trainscope::measure::MeasureConfig c;
  c.command = std::move(command);
  c.out_dir = temp_path(name);
  trainscope::remove_tree(c.out_dir);
  c.echo_output = false;
  c.telemetry_options.nvml_library = "";  // no GPU here; keeps the sampler to /proc
  c.warmup_steps = 2;
  return c;
}

/// Whether Debian's Python has torch (python3-torch).
inline bool has_torch() { return std::system((kPython + " -c 'import torch' >/dev/null 2>&1").c_str()) == 0; }

}  // namespace measure_test

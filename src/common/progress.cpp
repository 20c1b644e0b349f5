#include "trainscope/progress.h"

#include <algorithm>
#include <fmt/core.h>
#include <unistd.h>

#include <cstdio>

namespace trainscope {

ProgressBar::ProgressBar(bool enabled) : enabled_(enabled && ::isatty(STDERR_FILENO) == 1) {}

ProgressBar::~ProgressBar() { end(); }

void ProgressBar::begin(const std::string& label, int64_t total) {
  label_ = label;
  total_ = total;
  start_ = std::chrono::steady_clock::now();
  last_draw_ = {};
}

void ProgressBar::update(int64_t done) {
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(200) && done != total_) return;
  last_draw_ = now;
  double el = std::chrono::duration<double>(now - start_).count();
  double rate = el > 0 ? static_cast<double>(done) / el : 0;
  std::string bar;
  if (total_ > 0) {
    int width = 24;
    // Clamped: `done` can pass the planned total (an estimate), and a negative fill would throw.
    int filled = std::clamp(static_cast<int>(width * static_cast<double>(done) / static_cast<double>(total_)), 0, width);
    bar = fmt::format("[{}{}]", std::string(static_cast<size_t>(filled), '#'), std::string(static_cast<size_t>(width - filled), '.'));
    double eta = rate > 0 ? std::max(0.0, static_cast<double>(total_ - done) / rate) : 0;
    fmt::print(stderr, "\r\033[K{} {} {}/{} steps  {:.1f} steps/s  ETA {:.0f} s", label_, bar, done, total_, rate, eta);
  } else {
    fmt::print(stderr, "\r\033[K{} {} steps  {:.1f} steps/s", label_, done, rate);
  }
  std::fflush(stderr);
}

void ProgressBar::end() {
  if (!enabled_) return;
  fmt::print(stderr, "\r\033[K");
  std::fflush(stderr);
}

}  // namespace trainscope

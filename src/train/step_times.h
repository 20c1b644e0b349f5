// Host-timed step durations of one protocol window (headline, profiled, after the profiler), and
// the ratio that tells whether the headline window was disturbed (docs/profiling.md).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "trainscope/stats.h"

namespace trainscope {

/// Host step times of one protocol window, ms: the mean (of every step) prices the window's
/// time; the median compares typical steps (a few slow steps, such as an epoch's first, move a
/// mean by percents) and is taken over the window's last kKept steps, which bounds memory on
/// runs of millions of steps and keeps the headline's steps nearest the profiled ones.
struct StepMs {
  static constexpr size_t kKept = 4096;
  double sum = 0;
  int64_t n = 0;
  std::vector<double> last;  // ring of the last kKept step times
  void add(double ms) {
    sum += ms;
    if (last.size() < kKept) last.push_back(ms);
    else last[static_cast<size_t>(n) % kKept] = ms;
    ++n;
  }
  std::optional<double> mean() const { return n > 0 ? std::optional<double>(sum / static_cast<double>(n)) : std::nullopt; }
  std::optional<double> median() const { return trainscope::median(last); }
};

/// profile_step_time_ratio: profiled step time / headline step time, dimensionless; below 1 the
/// profiled steps, which do extra work, ran faster, so something else slowed the headline.
/// Eager steps compare medians (robust to a few slow steps). Steps replayed from a captured CUDA
/// graph (`replayed`) compare window means, i.e. wall time per step: a replay returns to the host
/// as soon as it is queued, so one replayed step's host time is its place in the launch queue
/// (near zero, or a whole queue's wait), not its work, and the medians of two windows of such
/// times are not comparable; over a window the waits add up to the device's time. Absent
/// (nullopt) when either window is empty or the headline time is 0.
inline std::optional<double> profile_step_time_ratio(const StepMs& headline, const StepMs& profiled, bool replayed) {
  const auto h = replayed ? headline.mean() : headline.median();
  const auto p = replayed ? profiled.mean() : profiled.median();
  if (!h || !p || *h <= 0) return std::nullopt;
  return *p / *h;
}

}  // namespace trainscope

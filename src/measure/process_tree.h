// The measured program's process tree from /proc (include/trainscope/measure.h): the root
// process and every descendant, CPU time, resident memory, threads. The root of /proc is a
// parameter (docs/design.md#readers-take-a-root-folder), so tests use a fake tree.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "trainscope/measure.h"

namespace trainscope::measure {

class ProcessTree {
 public:
  explicit ProcessTree(int root_pid, std::string proc_root = "/proc");
  /// Reads the tree now; appends a sample. cpu_pct is the tree's CPU time since the previous
  /// sample over the wall time between them (100 = one core): utime + stime + cutime + cstime of
  /// every live process (cutime keeps the time of children that exited and were waited for); a
  /// fall (a process left unwaited) counts as 0. The first sample has no cpu_pct (-1). Zombies
  /// and exiting processes (no resident pages left) are left out; a tree whose root is gone or
  /// exiting adds no sample.
  void sample(int64_t t_ns);
  const std::vector<TreeSample>& samples() const { return samples_; }
  /// The pids of the tree at the last sample (the root first); empty before one.
  const std::vector<int>& pids() const { return pids_; }

 private:
  int root_;
  std::string proc_;
  long ticks_per_s_, page_bytes_;
  int64_t last_ticks_ = -1, last_t_ns_ = 0;
  std::vector<TreeSample> samples_;
  std::vector<int> pids_;
};

/// The tree's latest pids, shared with the telemetry sampler's thread (TelemetryOptions::
/// gpu_process_pids: the program's own GPU memory is that of these pids in NVML's process list).
class PidSet {
 public:
  void set(std::vector<int> pids) {
    std::lock_guard<std::mutex> lock(mu_);
    pids_ = std::move(pids);
  }
  std::vector<int> get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return pids_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<int> pids_;
};

/// Mean and max of the samples in [t0_ns, t1_ns] (cpu_pct only where measured).
TreeSummary summarize_tree(const std::vector<TreeSample>& samples, int64_t t0_ns, int64_t t1_ns);

/// The samples as CSV: "t_ns,cpu_pct,rss_bytes,threads,processes".
std::string tree_csv(const std::vector<TreeSample>& samples);

}  // namespace trainscope::measure

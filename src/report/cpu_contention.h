// The cpu_contention advice rule's test on one CPU measurement (docs/report.md#advice-rules): the
// process got clearly fewer cores than its intra-op threads while other processes kept the
// machine busy, so its throughput measures the contention, not the model. The report's rule
// (src/report/advice.cpp, on each run of a matrix) and `infer` (a warning after each CPU
// measurement) both ask it, so the two say the same thing from the same thresholds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "trainscope/report.h"
#include "trainscope/telemetry.h"

namespace trainscope {

struct CpuContention {
  std::string advice;    // what to do
  std::string evidence;  // the figures that fired it, with their telemetry field names
};

/// Fires when h.process_cpu_pct_mean / 100 (cores used) is below t.cpu_contention_core_ratio x
/// `intra_op_threads` while h.cpu_util_pct_mean is at least t.busy_machine_pct and (when
/// `logical_cores` > 0) the other processes held at least t.other_load_cores cores (machine
/// utilisation x logical cores - the process's cores). Absent when it does not fire, or when the
/// headline lacks either utilisation (no /proc/stat or telemetry off).
std::optional<CpuContention> cpu_contention_of(const TelemetryHeadline& h, int64_t intra_op_threads,
                                               int64_t logical_cores, const AdviceThresholds& t = {});

}  // namespace trainscope

// The peak resident set size of this process (Linux), for a run's peak_rss_bytes.
#pragma once

#include <cstdint>
#include <optional>

namespace trainscope {

/// Resets the peak RSS to the current RSS (writes "5" to /proc/self/clear_refs, Linux >= 4.0,
/// proc(5)); false when that file cannot be written.
bool reset_peak_rss();

/// Peak RSS in bytes since the last successful reset_peak_rss() (VmHWM in /proc/self/status);
/// absent when that file cannot be read.
std::optional<int64_t> peak_rss_bytes();

/// Peak RSS in bytes over the process's lifetime (getrusage's ru_maxrss); the fallback where
/// reset_peak_rss() fails. Absent when getrusage fails.
std::optional<int64_t> lifetime_peak_rss_bytes();

}  // namespace trainscope

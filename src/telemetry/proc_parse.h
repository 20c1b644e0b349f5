// Parsers for /proc and /sys text formats (see proc(5)); pure functions, tested on fixtures.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainscope::telemetry {

/// Jiffies of one "cpu"/"cpuN" line of /proc/stat (proc(5)). total is
/// user+nice+system+idle+iowait+irq+softirq+steal (guest time is already inside user/nice);
/// steal is the 8th value (0 when the line has fewer): time a virtual machine's vCPU was ready
/// but the hypervisor ran something else. busy excludes idle, iowait and steal: stolen time is
/// not work this machine did (top(1) shows it apart, as "st").
struct CpuJiffies {
  uint64_t busy = 0, total = 0, steal = 0;
};
/// Keys "cpu" (all) and "cpu0".."cpuN". Malformed lines are skipped.
std::map<std::string, CpuJiffies> parse_proc_stat(std::string_view text);

/// /proc/self/stat: utime+stime (clock ticks, fields 14 and 15) and num_threads (field 20).
/// The comm field may hold spaces and ')', so fields are counted after the last ')'.
struct SelfStat {
  uint64_t cpu_ticks = 0;
  int64_t threads = 0;
};
std::optional<SelfStat> parse_self_stat(std::string_view text);

/// Value of a "Key:   1234 kB" line of /proc/self/status or /proc/meminfo, in bytes.
std::optional<uint64_t> parse_kb_field(std::string_view text, std::string_view key);

/// "cpu MHz : 2400.000" lines of /proc/cpuinfo, in order of appearance.
std::vector<double> parse_cpuinfo_mhz(std::string_view text);

/// The memory cgroup of this process from /proc/self/cgroup (cgroups(7): lines
/// "hierarchy-ID:controller-list:path"): the cgroup v1 line whose controller list holds
/// "memory" (v2 = false), else the unified v2 line "0::path" (v2 = true); nullopt when neither.
struct MemoryCgroup {
  bool v2 = false;
  std::string path;  // e.g. "/system.slice/x.scope", "/" inside a cgroup namespace
};
std::optional<MemoryCgroup> parse_self_cgroup(std::string_view text);

/// A whole-file unsigned integer (sysfs style, trailing newline allowed).
std::optional<uint64_t> parse_u64(std::string_view text);
/// A whole-file signed integer.
std::optional<int64_t> parse_i64(std::string_view text);

/// Busy share in percent between two readings; nullopt when total did not advance or the
/// counters went backwards (CPU hot-unplug resets them).
std::optional<double> cpu_util_pct(const CpuJiffies& before, const CpuJiffies& after);

/// Steal share in percent between two readings (100 * steal delta / total delta); nullopt as
/// for cpu_util_pct.
std::optional<double> cpu_steal_pct(const CpuJiffies& before, const CpuJiffies& after);

}  // namespace trainscope::telemetry

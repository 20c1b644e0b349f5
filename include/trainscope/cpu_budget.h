// The CPU budget of this process: the CPUs it may run on (affinity mask, cgroup quota), read
// from /proc and the cgroup files (src/common/cpu_budget.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace trainscope {

/// The CPUs this process may run on, which is what intra-op threads, data workers and decode
/// threads should be sized to; std::thread::hardware_concurrency counts every online CPU, also
/// those a job scheduler or container keeps this process off.
struct CpuBudget {
  int64_t online = 0;    // logical CPUs online (std::thread::hardware_concurrency; >= 1)
  int64_t affinity = 0;  // CPUs in the affinity mask (/proc/self/status Cpus_allowed_list: taskset,
                         // Slurm --cpus-per-task binding, docker --cpuset-cpus); 0 when unreadable
  /// The cgroup's CPU quota in CPUs: quota / period of cgroup v2 cpu.max (docker --cpus,
  /// Kubernetes CPU limits) or of cgroup v1 cpu.cfs_quota_us / cpu.cfs_period_us; absent when
  /// unlimited or unreadable.
  std::optional<double> quota_cpus;
  /// min(affinity (or online when unreadable), ceil(quota_cpus)), at least 1. Ceil, as the JVM
  /// and Go runtimes size their thread pools: a 1.5-CPU quota runs 2 threads at 75 % each.
  int64_t usable = 1;
  /// What made usable smaller than online: "affinity mask: 4 of 16 CPUs, set by taskset, Slurm or
  /// a cpuset", "cgroup CPU quota: 2.5 CPUs, set by a container or job limit", both joined by
  /// "; ", or "".
  std::string limited_by;
  /// limited_by, or "every online CPU" when nothing limits the process (warnings' words).
  std::string limit_words() const { return limited_by.empty() ? "every online CPU" : limited_by; }
};

/// Reads the budget from `proc_root`/self/status, `proc_root`/self/cgroup and the cgroup's
/// files under `cgroup_root` (v2: <root><path>/cpu.max, else <root>/cpu.max; v1:
/// <root>/cpu,cpuacct<path>/ or <root>/cpu<path>/). Files that are missing or unreadable are
/// skipped (their part of the budget is then unknown, not an error). `online` overrides the
/// online count (0: std::thread::hardware_concurrency), for tests.
CpuBudget read_cpu_budget(const std::string& proc_root = "/proc", const std::string& cgroup_root = "/sys/fs/cgroup",
                          int64_t online = 0);

/// read_cpu_budget().usable of this process, read anew on each call (an affinity change by the
/// process itself takes effect).
int64_t usable_cpus();

}  // namespace trainscope

// Provenance: the block every trainscope output begins with (docs/design.md#provenance-first;
// the shape follows google/benchmark's JSON "context" block).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/record_sections.h"

namespace trainscope {

/// Bumped whenever a field of results.json / results.csv / the history database changes meaning.
inline constexpr int kSchemaVersion = 1;

struct GpuDescription {
  std::string name;          // e.g. "NVIDIA H200"
  int64_t memory_total_bytes = 0;
  std::string compute_capability;  // "9.0"
  std::string pci_bus_id;          // "0000:19:00.0" when known
  /// The JSON keys (src/results/record_json.h), as trainscope/record_sections.h lists fields.
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("name", s.name, Better::kNone, kLiteral);
    v("memory_total_bytes", s.memory_total_bytes, Better::kNone);
    v("compute_capability", s.compute_capability, Better::kNone, kLiteral);
    v("pci_bus_id", s.pci_bus_id, Better::kNone, kLiteral);
  }
};

struct Provenance {
  std::string date_utc;         // ISO 8601, e.g. 2026-11-29T22:52:13Z
  std::string host;
  std::string cpu_model;        // /proc/cpuinfo "model name"
  int64_t cpu_logical_cores = 0;  // online logical CPUs (std::thread::hardware_concurrency)
  /// The CPUs this process may use (CpuBudget::usable): below cpu_logical_cores under taskset,
  /// Slurm's CPU binding or a container's cpuset or CPU quota; 0 in records written before it.
  int64_t cpu_usable_cores = 0;
  std::string cpu_limit;  // CpuBudget::limited_by: what made cpu_usable_cores smaller; "" when nothing
  /// What serves malloc and how (host_allocator()): "glibc 2.36 malloc, fixed thresholds: mmap
  /// 1024 MiB, trimming off"; "" in records written before it.
  std::string host_allocator;
  std::vector<GpuDescription> gpus;
  std::string gpu_driver;       // "" when unknown (no NVML)
  std::string nvml_version;     // "" when unknown
  std::string cuda_runtime;     // "" without CUDA
  std::string libtorch_version; // e.g. "1.13.0"
  std::string trainscope_version, build_type, compiler;
  /// The commit of the source built, 12 hex digits, read on every build (cmake/git_commit.cmake);
  /// "<commit>-dirty" when tracked files differed from it; "unknown" outside a git checkout.
  std::string git_commit;
  std::string command_line;
  uint64_t seed = 0;
  int64_t intra_op_threads = 0;
  int schema_version = kSchemaVersion;
  /// The JSON keys; gpu_driver, nvml_version and cuda_runtime are null when unknown.
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("schema_version", s.schema_version, Better::kNone);
    v("date_utc", s.date_utc, Better::kNone, kLiteral);
    v("host", s.host, Better::kNone, kLiteral);
    v("cpu_model", s.cpu_model, Better::kNone, kLiteral);
    v("cpu_logical_cores", s.cpu_logical_cores, Better::kNone);
    v("cpu_usable_cores", s.cpu_usable_cores, Better::kNone);
    v("cpu_limit", s.cpu_limit, Better::kNone, kLiteral);
    v("host_allocator", s.host_allocator, Better::kNone, kLiteral);
    v("gpus", s.gpus, Better::kNone);
    v("gpu_driver", s.gpu_driver, Better::kNone);
    v("nvml_version", s.nvml_version, Better::kNone);
    v("cuda_runtime", s.cuda_runtime, Better::kNone);
    v("libtorch_version", s.libtorch_version, Better::kNone, kLiteral);
    v("trainscope_version", s.trainscope_version, Better::kNone, kLiteral);
    v("git_commit", s.git_commit, Better::kNone, kLiteral);
    v("build_type", s.build_type, Better::kNone, kLiteral);
    v("compiler", s.compiler, Better::kNone, kLiteral);
    v("command_line", s.command_line, Better::kNone, kLiteral);
    v("seed", s.seed, Better::kNone);
    v("intra_op_threads", s.intra_op_threads, Better::kNone);
  }
};

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

/// The CPU counts in words: "16 logical CPUs", or "16 logical CPUs, 4 usable" when the process
/// could use fewer (cpu_usable_cores); report headers and compare's host differences.
std::string cpu_count_words(const Provenance& p);

/// glibc malloc's mmap threshold when trainscope fixes it: blocks up to 1 GiB come from the heap
/// (a step's largest host tensors, cnn b128's 49 and 98 MiB buffers among them; bench/RESULTS.md,
/// "The allocator, not the sampler"). glibc 2.36 accepts any value that fits mallopt's int.
inline constexpr int64_t kFixedMmapThresholdBytes = int64_t{1} << 30;
/// The largest mmap threshold older glibc versions accept (their mallopt refuses more than
/// HEAP_MAX_SIZE / 2 = 32 MiB on 64-bit), tried when mallopt refuses kFixedMmapThresholdBytes.
inline constexpr int64_t kFallbackMmapThresholdBytes = int64_t{32} << 20;

/// The host memory allocator, set once per process before the workload allocates
/// (docs/configuration.md#host-memory-allocator; src/common/host_malloc.cpp says why). With `tune`
/// and glibc's malloc serving this process, fixes its mmap threshold at kFixedMmapThresholdBytes
/// (or kFallbackMmapThresholdBytes) and turns trimming of the main heap off (mallopt(3)
/// M_MMAP_THRESHOLD, M_TRIM_THRESHOLD = -1): host blocks below it are then served from the heap and
/// reused instead of being mapped, unmapped and faulted in again each step, and glibc no longer
/// moves the thresholds as blocks are freed. Threads' own arenas still map blocks larger than
/// their 64 MiB heaps and still unmap whole heaps they empty. Left as it is: a malloc served by
/// another object than the C library (tcmalloc, jemalloc, mimalloc, a sanitizer's runtime;
/// dladdr of the `malloc` the process resolves to), and a glibc malloc whose thresholds the
/// environment sets (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, MALLOC_TOP_PAD_,
/// MALLOC_MMAP_MAX_, or those GLIBC_TUNABLES); when those leave the mmap threshold at its
/// 128 KiB start, `warning` (when not null) says so and how to fix it. Fixed thresholds last for
/// the process: a later call with `tune` false cannot undo them. Call it before the workload's
/// threads allocate (mallopt updates glibc's parameters without the other arenas' locks). Returns
/// the words host_allocator() gives from then on. Never throws except std::bad_alloc.
std::string set_host_malloc(bool tune, std::string* warning = nullptr);

/// What serves malloc in this process and how set_host_malloc left it, for
/// Provenance::host_allocator: "glibc 2.36 malloc, fixed thresholds: mmap 1024 MiB, trimming off",
/// "glibc 2.36 malloc, dynamic thresholds (malloc tuning off)", "libtcmalloc_minimal.so.4
/// (replaces glibc malloc; malloc tuning does not apply)"; before any set_host_malloc, "glibc 2.36
/// malloc, dynamic thresholds".
std::string host_allocator();

/// Fills the host-side fields (date, host, CPU, build info). The LibTorch half adds
/// libtorch/CUDA/GPU fields (see trainscope/runner.h).
Provenance collect_host_provenance(const std::string& proc_root = "/proc");

// JSON form: src/common/provenance_json.h (private).

/// "# key: value" lines for the head of CSV files.
std::string provenance_csv_comment(const Provenance& p);

}  // namespace trainscope

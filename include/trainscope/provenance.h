// Provenance: the block every trainscope output begins with (docs/design.md#provenance-first;
// the shape follows google/benchmark's JSON "context" block).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/fields.h"

namespace trainscope {

/// Bumped whenever a field of results.json / results.csv / the history database changes meaning.
/// 2: task, throughput_unit and the language_model section (records of 1 read as classification).
inline constexpr int kSchemaVersion = 2;

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

/// The CPU counts in words: "16 logical CPUs", or "16 logical CPUs, 4 usable" when the process
/// could use fewer (cpu_usable_cores); report headers and compare's host differences.
std::string cpu_count_words(const Provenance& p);

/// Fills the host-side fields (date, host, CPU, build info). The LibTorch half adds
/// libtorch/CUDA/GPU fields (see trainscope/runner.h).
Provenance collect_host_provenance(const std::string& proc_root = "/proc");

// JSON form: src/common/provenance_json.h (private).

/// "# key: value" lines for the head of CSV files.
std::string provenance_csv_comment(const Provenance& p);

}  // namespace trainscope

// The host memory allocator: glibc malloc's thresholds fixed or left alone, and what serves
// malloc in this process (src/common/host_malloc.cpp; Provenance::host_allocator reports it).
#pragma once

#include <cstdint>
#include <string>

namespace trainscope {

/// glibc malloc's mmap threshold when trainscope fixes it: blocks up to 1 GiB come from the heap,
/// so a step's largest host tensors are reused rather than mapped anew each step.
/// glibc 2.36 accepts any value that fits mallopt's int.
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

}  // namespace trainscope

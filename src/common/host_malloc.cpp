// The host memory allocator: which one serves malloc in this process, and glibc malloc's
// thresholds fixed so that a step's host tensors reuse freed memory (trainscope/provenance.h
// set_host_malloc; docs/configuration.md#host-memory-allocator).
//
// Why: glibc malloc (mallopt(3)) serves a request above M_MMAP_THRESHOLD (128 KiB at start) with
// its own mmap, and gives a freed heap top above M_TRIM_THRESHOLD back to the kernel. Both
// thresholds move at run time ("dynamic mmap threshold": freeing an mmapped chunk raises them to
// its size). Which tensors end up mmapped, or trimmed and faulted in again, therefore depends on
// the order of the process's first allocations and frees, which any extra thread shifts. Measured
// on a 2-core VM (bench/RESULTS.md, "the allocator, not the sampler"): cpu cnn b128 ran in one of
// two states, 1 500 or 750 samples/s, with 1.4 or 2.8 million page faults per 150 steps, whether
// telemetry was on or off. Fixed thresholds (mmap 32 MiB, the largest mallopt accepts on 64-bit;
// trimming off) put every run in the fast state. Allocations above 32 MiB are still mmapped.
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "trainscope/provenance.h"

namespace trainscope {
namespace {

std::mutex g_mu;
std::string g_words;  // set_host_malloc's result; "" before it ran
bool g_fixed = false;  // glibc keeps fixed thresholds for the life of the process

// A replacement allocator found by a symbol only it exports (it is preloaded or linked in).
std::string replacement_allocator() {
  if (dlsym(RTLD_DEFAULT, "tc_malloc")) return "tcmalloc";
  if (dlsym(RTLD_DEFAULT, "mallctl") || dlsym(RTLD_DEFAULT, "je_mallctl")) return "jemalloc";
  if (dlsym(RTLD_DEFAULT, "mi_malloc")) return "mimalloc";
  if (dlsym(RTLD_DEFAULT, "__asan_init")) return "AddressSanitizer's allocator";  // a sanitizer build
  return "";
}

// The environment variable that sets one of the thresholds trainscope would fix, when one is set
// (mallopt(3) ENVIRONMENT; tunables(7) glibc.malloc.*): the user's choice, left as it is. Others
// (MALLOC_ARENA_MAX, MALLOC_PERTURB_) do not touch them and do not count.
std::string malloc_environment() {
  static const char* const kVariables[] = {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                                           "MALLOC_MMAP_MAX_"};
  for (const char* v : kVariables)
    if (std::getenv(v)) return v;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  for (const char* t : {"glibc.malloc.mmap_threshold", "glibc.malloc.trim_threshold", "glibc.malloc.top_pad",
                        "glibc.malloc.mmap_max"})
    if (tunables && std::strstr(tunables, t)) return std::string("GLIBC_TUNABLES ") + t;
  return "";
}

std::string glibc_words() { return fmt::format("glibc {} malloc", gnu_get_libc_version()); }

std::string fixed_words() {
  return fmt::format("{}, fixed thresholds: mmap {} MiB, trimming off", glibc_words(), kFixedMmapThresholdBytes >> 20);
}

std::string choose(bool tune) {
  if (g_fixed) return fixed_words();  // mallopt cannot give glibc its dynamic thresholds back
  if (const auto other = replacement_allocator(); !other.empty())
    return fmt::format("{} (replaces glibc malloc; malloc tuning does not apply)", other);
  if (!tune) return glibc_words() + ", dynamic thresholds (malloc tuning off)";
  if (const auto env = malloc_environment(); !env.empty())
    return fmt::format("{}, as {} sets it (malloc tuning leaves it)", glibc_words(), env);
  // mallopt returns 1 on success; the mmap threshold's upper limit is DEFAULT_MMAP_THRESHOLD_MAX
  // (4 MiB * sizeof(long) = 32 MiB on 64-bit), and -1 turns trimming off (mallopt(3)).
  const bool ok = mallopt(M_MMAP_THRESHOLD, static_cast<int>(kFixedMmapThresholdBytes)) == 1 &&
                  mallopt(M_TRIM_THRESHOLD, -1) == 1;
  if (!ok) return glibc_words() + ", dynamic thresholds (mallopt refused the fixed ones)";
  g_fixed = true;
  return fixed_words();
}

}  // namespace

std::string set_host_malloc(bool tune) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_words = choose(tune);
  return g_words;
}

std::string host_allocator() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_words.empty()) return g_words;
  const auto other = replacement_allocator();
  return other.empty() ? glibc_words() + ", dynamic thresholds" : other + " (replaces glibc malloc)";
}

}  // namespace trainscope

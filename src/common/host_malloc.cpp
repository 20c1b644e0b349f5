// The host memory allocator: which one serves malloc in this process, and glibc malloc's
// thresholds fixed so that a step's host tensors reuse freed memory (trainscope/provenance.h
// set_host_malloc; docs/configuration.md#host-memory-allocator).
//
// Why: glibc malloc (mallopt(3), malloc/malloc.c) serves a request above M_MMAP_THRESHOLD (128 KiB
// at start) with its own mmap, unmapped again when freed, and gives a freed top of the main heap
// above M_TRIM_THRESHOLD back to the kernel. Both move at run time: freeing a mapped block of up to
// 32 MiB raises the mmap threshold to its size and the trim threshold to twice that. Which tensors
// are mapped, unmapped and faulted in again each step therefore depends on the order of the
// process's first allocations and frees, which one more thread shifts: the same CPU run then lands
// in a fast or a slow state by chance; with the thresholds fixed it always runs in the fast one
// (bench/RESULTS.md, "Figures the code's choices rest on").
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>

#include <fmt/format.h>

#include "trainscope/host_malloc.h"
#include "trainscope/provenance.h"

namespace trainscope {
namespace {

std::mutex g_mu;
std::string g_words;         // set_host_malloc's result; "" before it ran
int64_t g_fixed_bytes = 0;   // the mmap threshold set; glibc keeps it for the life of the process

std::string glibc_words() { return fmt::format("glibc {} malloc", gnu_get_libc_version()); }

// The shared object (or executable) whose `malloc` this process's calls resolve to, when it is not
// the C library's: a preloaded or linked-in allocator (libtcmalloc_minimal.so.4, libjemalloc.so.2,
// libmimalloc.so.2) or a sanitizer runtime (libasan.so.8). "" when glibc's own malloc serves it.
std::string replacement_allocator() {
  Dl_info serving{}, libc{};
  void* m = dlsym(RTLD_DEFAULT, "malloc");
  void* v = dlsym(RTLD_DEFAULT, "gnu_get_libc_version");
  if (!m || !v || !dladdr(m, &serving) || !dladdr(v, &libc) || !serving.dli_fname || !libc.dli_fname) return "";
  if (std::strcmp(serving.dli_fname, libc.dli_fname) == 0) return "";
  std::string_view file = serving.dli_fname;
  if (auto slash = file.rfind('/'); slash != std::string_view::npos) file.remove_prefix(slash + 1);
  return file.empty() ? std::string("the executable's own malloc") : std::string(file);
}

// The environment variables that set the thresholds trainscope would fix (mallopt(3)
// ENVIRONMENT; tunables(7) glibc.malloc.*): the user's choice, left as it is. MALLOC_ARENA_MAX,
// MALLOC_PERTURB_ and the like do not touch them and do not count.
struct MallocEnvironment {
  std::string names;          // "MALLOC_TOP_PAD_", "GLIBC_TUNABLES glibc.malloc.mmap_threshold", ...
  bool sets_mmap_threshold = false;
};
MallocEnvironment malloc_environment() {
  MallocEnvironment e;
  auto add = [&](const std::string& name, bool mmap) {
    e.names += (e.names.empty() ? "" : ", ") + name;
    e.sets_mmap_threshold |= mmap;
  };
  for (const char* v : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_"})
    if (std::getenv(v)) add(v, std::string_view(v) == "MALLOC_MMAP_THRESHOLD_");
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  for (const char* t : {"glibc.malloc.mmap_threshold", "glibc.malloc.trim_threshold", "glibc.malloc.top_pad",
                        "glibc.malloc.mmap_max"})
    if (tunables && std::strstr(tunables, t))
      add(std::string("GLIBC_TUNABLES ") + t, std::string_view(t) == "glibc.malloc.mmap_threshold");
  return e;
}

std::string fixed_words() {
  return fmt::format("{}, fixed thresholds: mmap {} MiB, trimming off", glibc_words(), g_fixed_bytes >> 20);
}

// mallopt returns 1 on success. Older glibc versions refuse an mmap threshold above HEAP_MAX_SIZE / 2
// (32 MiB on 64-bit), so that is the fallback; -1 turns trimming of the main heap off (mallopt(3)).
bool fix_thresholds() {
  for (int64_t bytes : {kFixedMmapThresholdBytes, kFallbackMmapThresholdBytes}) {
    if (mallopt(M_MMAP_THRESHOLD, static_cast<int>(bytes)) == 1) {
      g_fixed_bytes = bytes;
      return mallopt(M_TRIM_THRESHOLD, -1) == 1;
    }
  }
  return false;
}

std::string choose(bool tune, std::string* warning) {
  if (g_fixed_bytes > 0) return fixed_words();  // mallopt cannot give glibc its moving thresholds back
  if (const auto other = replacement_allocator(); !other.empty())
    return fmt::format("{} (replaces glibc malloc; malloc tuning does not apply)", other);
  if (!tune) return glibc_words() + ", dynamic thresholds (malloc tuning off)";
  if (const auto env = malloc_environment(); !env.names.empty()) {
    // Any of them stops glibc moving the mmap threshold; without the threshold itself it stays at
    // 128 KiB, where every larger block is mapped and faulted in per use (the slowest state measured).
    if (!env.sets_mmap_threshold && warning)
      *warning = fmt::format("{} in the environment stops glibc malloc moving its mmap threshold, which then stays at "
                             "128 KiB: every larger host block is mapped and faulted in on each use (cpu cnn b128 ran 5x "
                             "slower that way on a 2-core VM); unset it, or set MALLOC_MMAP_THRESHOLD_ too "
                             "(docs/configuration.md#host-memory-allocator)",
                             env.names);
    return fmt::format("{}, as {} sets it (malloc tuning leaves it)", glibc_words(), env.names);
  }
  if (!fix_thresholds()) return glibc_words() + ", dynamic thresholds (mallopt refused the fixed ones)";
  return fixed_words();
}

}  // namespace

std::string set_host_malloc(bool tune, std::string* warning) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_words = choose(tune, warning);
  return g_words;
}

std::string host_allocator() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_words.empty()) return g_words;
  const auto other = replacement_allocator();
  return other.empty() ? glibc_words() + ", dynamic thresholds" : other + " (replaces glibc malloc)";
}

}  // namespace trainscope

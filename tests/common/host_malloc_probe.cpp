// A fresh process for tests/common/test_host_malloc.cpp: glibc's thresholds are process-wide and
// move with the process's history, so each case measures in a process of its own.
//
// Usage: host_malloc_probe MODE[,MODE...] [MIB ...]      MODE = tune | keep
// Calls set_host_malloc once per MODE (true for tune), then allocates, touches and frees a block of each size in turn,
// and prints one line: "<what set_host_malloc returned>|<per block: mapped grown kept>|<warning>",
// where mapped = blocks glibc mapped for it (mallinfo2 hblks), grown = MiB the heap grew by to
// serve it (arena while held minus before), kept = MiB of that growth the heap still holds after
// the free (arena after minus before).
#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "trainscope/host_malloc.h"
#include "trainscope/provenance.h"

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  std::string warning, words, modes = argv[1];
  for (size_t at = 0; at <= modes.size();) {
    const size_t comma = std::min(modes.find(',', at), modes.size());
    words = trainscope::set_host_malloc(modes.substr(at, comma - at) == "tune", &warning);
    at = comma + 1;
  }
  // through volatile pointers: the compiler may otherwise elide a malloc/free pair it can see
  void* (*volatile alloc)(size_t) = malloc;
  void (*volatile release)(void*) = free;
  std::string blocks;
  for (int i = 2; i < argc; ++i) {
    const size_t bytes = std::strtoull(argv[i], nullptr, 10) << 20;
    const auto before = mallinfo2();
    auto* p = static_cast<char*>(alloc(bytes));
    std::memset(p, 1, bytes);  // touched, as a tensor's pages are
    const auto held = mallinfo2();
    release(p);
    const auto after = mallinfo2();
    auto mib = [](size_t a, size_t b) { return a > b ? static_cast<long>((a - b) >> 20) : 0L; };
    blocks += (blocks.empty() ? "" : " ") + std::to_string(static_cast<long>(held.hblks) - static_cast<long>(before.hblks)) +
              " " + std::to_string(mib(held.arena, before.arena)) + " " + std::to_string(mib(after.arena, before.arena));
  }
  std::printf("%s|%s|%s\n", words.c_str(), blocks.c_str(), warning.c_str());
  return 0;
}

// set_host_malloc (trainscope/provenance.h): glibc malloc's thresholds fixed, so host blocks up
// to 32 MiB come from the heap and stay there, in place of glibc's moving thresholds
// (docs/configuration.md#host-memory-allocator). Each case runs in a forked child: the settings
// are process-wide and last for the process.
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "trainscope/provenance.h"

namespace {

// Runs `body` in a forked child and returns what it wrote ("" when it wrote nothing).
std::string in_child(const std::function<std::string()>& body) {
  int fd[2];
  if (pipe(fd) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    const std::string out = body();
    (void)!write(fd[1], out.data(), out.size());
    _exit(0);
  }
  close(fd[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = read(fd[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return out;
}

// The blocks glibc mapped for single allocations (mallinfo2 hblks) while `bytes` is held, minus
// before; the free bytes the heap holds once it is freed (fordblks: the block's pages kept by the
// process rather than returned to the kernel), in MiB, capped at the block's size.
struct Footprint {
  long mapped_blocks, heap_free_mib;
};
Footprint footprint_of(size_t bytes) {
  // through volatile pointers: the compiler may otherwise elide a malloc/free pair it can see
  void* (*volatile alloc)(size_t) = malloc;
  void (*volatile release)(void*) = free;
  const auto before = mallinfo2();
  auto* p = static_cast<char*>(alloc(bytes));
  memset(p, 1, bytes);  // touched, as a tensor's pages are
  const auto held = mallinfo2();
  release(p);
  const auto after = mallinfo2();
  return {static_cast<long>(held.hblks) - static_cast<long>(before.hblks),
          static_cast<long>(std::min(after.fordblks, bytes) >> 20)};
}

}  // namespace

// With the thresholds fixed, a 20 MiB block (a conv activation of cnn b128 is 12.8 MiB) comes
// from the heap and its pages stay there when freed; a 48 MiB block, above the largest threshold
// glibc accepts, is still mapped for its own use. glibc's default at process start maps anything
// above 128 KiB, and trims a freed heap top above 128 KiB.
TEST(HostMalloc, FixedThresholdsKeepBlocksUpTo32MiBInTheHeap) {
  const std::string out = in_child([] {
    const std::string words = trainscope::set_host_malloc(true);
    const Footprint small = footprint_of(20u << 20), large = footprint_of(48u << 20);
    return words + "|" + std::to_string(small.mapped_blocks) + " " + std::to_string(small.heap_free_mib) + " " +
           std::to_string(large.mapped_blocks);
  });
  if (out.find("replaces glibc") != std::string::npos) GTEST_SKIP() << "another allocator serves malloc: " << out;
  ASSERT_NE(out.find("|"), std::string::npos) << out;
  EXPECT_NE(out.find("glibc "), std::string::npos) << out;
  EXPECT_NE(out.find("fixed thresholds: mmap 32 MiB, trimming off"), std::string::npos) << out;
  // 20 MiB: not mapped, and the heap kept its 20 MiB after the free; 48 MiB: mapped
  EXPECT_EQ(out.substr(out.find('|') + 1), "0 20 1") << out;
}

// Without tuning, glibc's start-of-process thresholds map a 20 MiB block: the same measurement
// tells the two states apart (in a child whose parent never freed a mapped block that large).
TEST(HostMalloc, WithoutTuningGlibcMapsTheSameBlock) {
  const std::string out = in_child([] {
    const std::string words = trainscope::set_host_malloc(false);
    const Footprint small = footprint_of(20u << 20);
    return words + "|" + std::to_string(small.mapped_blocks);
  });
  if (out.find("replaces glibc") != std::string::npos) GTEST_SKIP() << "another allocator serves malloc: " << out;
  EXPECT_NE(out.find("dynamic thresholds (malloc tuning off)"), std::string::npos) << out;
  EXPECT_EQ(out.substr(out.find('|') + 1), "1") << out;
}

// A glibc malloc the user tuned through the environment is theirs: trainscope names the variable
// and sets nothing, so the 20 MiB block is mapped as glibc's defaults map it.
TEST(HostMalloc, TheEnvironmentsTuningIsLeftAsItIs) {
  const std::string out = in_child([] {
    setenv("MALLOC_TOP_PAD_", "131072", 1);
    const std::string words = trainscope::set_host_malloc(true);
    return words + "|" + std::to_string(footprint_of(20u << 20).mapped_blocks) + "|" + trainscope::host_allocator();
  });
  if (out.find("replaces glibc") != std::string::npos) GTEST_SKIP() << "another allocator serves malloc: " << out;
  EXPECT_NE(out.find("as MALLOC_TOP_PAD_ sets it (malloc tuning leaves it)|1|"), std::string::npos) << out;
  // host_allocator() repeats what set_host_malloc decided
  EXPECT_EQ(out.substr(0, out.find('|')), out.substr(out.rfind('|') + 1)) << out;
}

// Fixed thresholds last for the process (glibc has no way back to the moving ones), so a second
// call that asks for no tuning still reports them rather than a state the process is not in.
TEST(HostMalloc, ASecondCallCannotUndoFixedThresholds) {
  const std::string out = in_child([] {
    trainscope::set_host_malloc(true);
    return trainscope::set_host_malloc(false) + "|" + std::to_string(footprint_of(20u << 20).mapped_blocks);
  });
  if (out.find("replaces glibc") != std::string::npos) GTEST_SKIP() << "another allocator serves malloc: " << out;
  EXPECT_NE(out.find("fixed thresholds"), std::string::npos) << out;
  EXPECT_EQ(out.substr(out.find('|') + 1), "0") << out;
}

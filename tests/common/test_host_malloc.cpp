// set_host_malloc (trainscope/provenance.h): glibc malloc's thresholds fixed, so host blocks come
// from the heap and stay there, in place of glibc's moving thresholds
// (docs/configuration.md#host-memory-allocator). glibc's thresholds are process-wide and move with
// the process's history, so every case measures in a fresh process (tests/common/host_malloc_probe.cpp)
// started with an empty environment plus the variables the case names.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include "trainscope/host_malloc.h"

namespace {

struct Probe {
  std::string words, blocks, warning;  // the probe's three '|'-separated fields
};

// host_malloc_probe MODES MIB... under `env -i VARS`.
Probe probe(const std::string& modes, const std::string& mib, const std::string& vars = "") {
  const std::string cmd = "env -i " + vars + " " + TS_HOST_MALLOC_PROBE + " " + modes + " " + mib + " 2>&1";
  std::string out;
  if (FILE* f = popen(cmd.c_str(), "r")) {
    char buf[512];
    while (fgets(buf, sizeof buf, f)) out += buf;
    pclose(f);
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  const size_t a = out.find('|'), b = out.find('|', a == std::string::npos ? a : a + 1);
  if (a == std::string::npos || b == std::string::npos) return {out, "?", "?"};
  return {out.substr(0, a), out.substr(a + 1, b - a - 1), out.substr(b + 1)};
}

// A sanitizer build's runtime serves malloc: nothing of glibc's to measure.
bool glibc_serves(const Probe& p) { return p.words.find("replaces glibc malloc") == std::string::npos; }

}  // namespace

// With the thresholds fixed, a 20 MiB block (a conv activation of cnn b128 is 12.8 MiB) and a
// 200 MiB one come from the heap, which keeps them when they are freed. glibc's start-of-process
// thresholds map both: the same measurement tells the two states apart.
TEST(HostMalloc, FixedThresholdsServeBlocksFromTheHeapAndKeepThem) {
  const Probe tuned = probe("tune", "20");
  if (!glibc_serves(tuned)) GTEST_SKIP() << tuned.words;
  EXPECT_NE(tuned.words.find("glibc "), std::string::npos) << tuned.words;
  EXPECT_NE(tuned.words.find("malloc, fixed thresholds: mmap 1024 MiB, trimming off"), std::string::npos) << tuned.words;
  EXPECT_EQ(tuned.blocks, "0 20 20") << "not mapped, the heap grew by it and kept it after the free";
  EXPECT_EQ(probe("tune", "200").blocks, "0 200 200");
  const Probe plain = probe("keep", "20");
  EXPECT_NE(plain.words.find("dynamic thresholds (malloc tuning off)"), std::string::npos) << plain.words;
  EXPECT_EQ(plain.blocks, "1 0 0") << "glibc's default maps a block above 128 KiB";
  EXPECT_EQ(probe("keep", "200").blocks, "1 0 0");
  EXPECT_EQ(tuned.warning, "");
}

// Fixed thresholds last for the process (glibc has no way back to the moving ones), so a second
// call that asks for no tuning still reports them rather than a state the process is not in.
TEST(HostMalloc, ASecondCallCannotUndoFixedThresholds) {
  const Probe p = probe("tune,keep", "20");
  if (!glibc_serves(p)) GTEST_SKIP() << p.words;
  EXPECT_NE(p.words.find("fixed thresholds"), std::string::npos) << p.words;
  EXPECT_EQ(p.blocks, "0 20 20");
}

// Thresholds the user set through the environment are theirs: trainscope names the variable and
// sets nothing. One that leaves the mmap threshold at its 128 KiB start (MALLOC_TOP_PAD_ alone
// stops glibc moving it) is warned about; MALLOC_MMAP_THRESHOLD_ is not; a variable that sets no
// threshold (MALLOC_ARENA_MAX) does not count.
TEST(HostMalloc, TheEnvironmentsThresholdsAreLeftAsTheyAre) {
  const Probe pad = probe("tune", "20", "MALLOC_TOP_PAD_=131072");
  if (!glibc_serves(pad)) GTEST_SKIP() << pad.words;
  EXPECT_NE(pad.words.find("as MALLOC_TOP_PAD_ sets it (malloc tuning leaves it)"), std::string::npos) << pad.words;
  EXPECT_EQ(pad.blocks, "1 0 0");
  EXPECT_NE(pad.warning.find("MALLOC_TOP_PAD_ in the environment stops glibc malloc moving its mmap threshold, which "
                             "then stays at 128 KiB"),
            std::string::npos)
      << pad.warning;
  const Probe mmap = probe("tune", "20", "MALLOC_MMAP_THRESHOLD_=67108864");
  EXPECT_NE(mmap.words.find("as MALLOC_MMAP_THRESHOLD_ sets it"), std::string::npos) << mmap.words;
  EXPECT_EQ(mmap.blocks.substr(0, 2), "0 ") << mmap.blocks;  // the user's 64 MiB threshold, not mapped
  EXPECT_EQ(mmap.warning, "");
  const Probe tunable = probe("tune", "20", "GLIBC_TUNABLES=glibc.malloc.trim_threshold=1048576");
  EXPECT_NE(tunable.words.find("as GLIBC_TUNABLES glibc.malloc.trim_threshold sets it"), std::string::npos)
      << tunable.words;
  EXPECT_NE(tunable.warning, "");
  const Probe arenas = probe("tune", "20", "MALLOC_ARENA_MAX=2");
  EXPECT_NE(arenas.words.find("fixed thresholds"), std::string::npos) << arenas.words;
}

// Another allocator serving malloc is named by its library and left alone (here tcmalloc, when
// the machine has it: Debian's libtcmalloc-minimal4).
TEST(HostMalloc, APreloadedAllocatorIsNamedAndLeftAlone) {
  const std::string lib = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4";
  if (FILE* f = std::fopen(lib.c_str(), "r")) std::fclose(f);
  else GTEST_SKIP() << lib << " is not installed";
  if (!glibc_serves(probe("keep", ""))) GTEST_SKIP() << "a sanitizer's runtime serves malloc";
  const Probe p = probe("tune", "20", "LD_PRELOAD=" + lib);
  EXPECT_EQ(p.words, "libtcmalloc_minimal.so.4 (replaces glibc malloc; malloc tuning does not apply)");
  EXPECT_EQ(p.warning, "");
}

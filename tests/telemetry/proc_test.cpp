// /proc parsing on real-format files, and the proc source against a fake tree.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "telemetry/proc_parse.h"
#include "telemetry/source.h"
#include "trainscope/telemetry.h"
#include "test_util.h"

using namespace trainscope::telemetry;

namespace {
std::string fixture(const std::string& rel) {
  return read_text_file(std::string(TS_FIXTURES_DIR) + "/telemetry/" + rel).text.value();
}
std::optional<double> value(const SampleBatch& b, const std::string& dev, const std::string& metric) {
  for (const auto& r : b.values)
    if (r.device == dev && r.metric == metric) return r.value;
  return std::nullopt;
}
int drops(const SampleBatch& b, const std::string& metric, const std::string& reason) {
  int n = 0;
  for (const auto& d : b.drops) n += d.metric == metric && d.reason == reason;
  return n;
}
}  // namespace

TEST(telemetry_ProcParse, ProcStatRealFormat) {
  auto cpus = parse_proc_stat(fixture("proc/stat"));
  ASSERT_EQ(cpus.size(), 3u);  // cpu, cpu0, cpu1; intr/ctxt/softirq ignored
  // cpu: user 10090 nice 0 system 2304 idle 148095 iowait 367 irq 0 softirq 95 steal 14
  EXPECT_EQ(cpus["cpu"].total, 10090u + 2304 + 148095 + 367 + 95 + 14);
  EXPECT_EQ(cpus["cpu"].busy, 10090u + 2304 + 95);  // steal is not this machine's work
  EXPECT_EQ(cpus["cpu"].steal, 14u);
  EXPECT_EQ(cpus["cpu1"].busy, 4094u + 1016 + 56);
  EXPECT_EQ(cpus["cpu1"].steal, 6u);
  // An old kernel's 7-value line has no steal column: steal 0, busy as before.
  EXPECT_EQ(parse_proc_stat("cpu  10 0 5 100 1 0 2\n")["cpu"].steal, 0u);
  EXPECT_EQ(parse_proc_stat("cpu  10 0 5 100 1 0 2\n")["cpu"].busy, 17u);
}

// A virtual machine whose hypervisor ran other guests: over 100 jiffies, 30 of this machine's
// work, 20 stolen, 50 idle. Utilisation counts only the 30 (top's us+sy+...); steal reads 20 %.
TEST(telemetry_ProcParse, StealIsNeitherBusyNorIdle) {
  auto a = parse_proc_stat("cpu  1000 0 0 5000 0 0 0 300 0 0\n")["cpu"];
  auto b = parse_proc_stat("cpu  1030 0 0 5050 0 0 0 320 0 0\n")["cpu"];
  EXPECT_DOUBLE_EQ(cpu_util_pct(a, b).value(), 30.0);
  EXPECT_DOUBLE_EQ(cpu_steal_pct(a, b).value(), 20.0);
  EXPECT_FALSE(cpu_steal_pct(b, a).has_value());  // counters went backwards
  EXPECT_FALSE(cpu_steal_pct(a, a).has_value());  // no time passed
}

TEST(telemetry_ProcParse, CpuUtilDeltasAndBackwardsCounters) {
  CpuJiffies a{100, 1000}, b{150, 1100};
  EXPECT_DOUBLE_EQ(cpu_util_pct(a, b).value(), 50.0);
  EXPECT_FALSE(cpu_util_pct(b, a).has_value());  // went backwards (hot-unplug)
  EXPECT_FALSE(cpu_util_pct(a, a).has_value());  // no time passed
}

// The run note on steal: the share of the time the CPUs had work (steal over busy + steal),
// none without both readings or at the threshold, the share and the window above it. A VM that
// trains on 2 of 16 vCPUs with 20 % of their time stolen reads about 2.5 % steal machine-wide,
// yet its steps lost 20 %.
TEST(telemetry_Headline, StealOfTheTimeTheCpusHadWorkEarnsANote) {
  trainscope::TelemetryHeadline h;
  h.window = "headline";
  EXPECT_EQ(trainscope::steal_note(h), "");  // no steal reading (telemetry off, or fewer than two polls)
  h.cpu_steal_pct_mean = 2.5;
  EXPECT_FALSE(trainscope::stolen_share_pct(h));  // no utilisation beside it
  h.cpu_util_pct_mean = 10.0;                     // 2 of 16 vCPUs busy 80 % of the time
  EXPECT_DOUBLE_EQ(trainscope::stolen_share_pct(h).value(), 20.0);
  const std::string n = trainscope::steal_note(h);
  EXPECT_NE(n.find("gave other guests 20.0 % of the time this virtual machine's CPUs had work"), std::string::npos)
      << n;
  EXPECT_NE(n.find("during the headline window"), std::string::npos) << n;
  h.window = "run";
  EXPECT_NE(trainscope::steal_note(h).find("during the run ("), std::string::npos) << trainscope::steal_note(h);
  h.cpu_util_pct_mean = 98.0;
  h.cpu_steal_pct_mean = 2.0;  // 2 / 100: at the threshold, no note
  EXPECT_DOUBLE_EQ(trainscope::stolen_share_pct(h).value(), trainscope::kStealNotePct);
  EXPECT_EQ(trainscope::steal_note(h), "");
  h.cpu_steal_pct_mean = 0.0;  // bare metal
  EXPECT_EQ(trainscope::steal_note(h), "");
}

TEST(telemetry_ProcParse, SelfStatWithParenthesesInComm) {
  auto s = parse_self_stat(fixture("proc/self/stat"));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->cpu_ticks, 300u);  // utime 250 + stime 50
  EXPECT_EQ(s->threads, 7);
  EXPECT_FALSE(parse_self_stat("garbage without parens"));
  EXPECT_FALSE(parse_self_stat("1 (x) R 1 2"));  // truncated
}

TEST(telemetry_ProcParse, StatusMeminfoCpuinfo) {
  auto status = fixture("proc/self/status");
  EXPECT_EQ(parse_kb_field(status, "VmRSS").value(), 102400ull * 1024);
  EXPECT_EQ(parse_kb_field(status, "VmHWM").value(), 204800ull * 1024);
  EXPECT_FALSE(parse_kb_field(status, "VmNope"));
  EXPECT_FALSE(parse_kb_field("VmRSS:\t12 MB\n", "VmRSS"));  // unknown unit: not guessed
  auto meminfo = fixture("proc/meminfo");
  EXPECT_EQ(parse_kb_field(meminfo, "MemTotal").value(), 16384000ull * 1024);
  auto mhz = parse_cpuinfo_mhz(fixture("proc/cpuinfo"));
  ASSERT_EQ(mhz.size(), 2u);
  EXPECT_DOUBLE_EQ(mhz[0], 1800.5);
  EXPECT_FALSE(parse_u64("12x"));
  EXPECT_EQ(parse_u64("42\n").value(), 42u);
}

TEST(telemetry_ProcSource, UtilisationMemoryFrequencyFromFakeTree) {
  auto root = ts_test::fresh_tree("proc");
  auto src = make_proc_source((root / "proc").string(), (root / "sys").string(), {});
  auto probe = src->probe();
  ASSERT_TRUE(probe.available) << probe.reason;
  SampleBatch b1;
  src->sample(1'000'000'000, b1);
  EXPECT_FALSE(value(b1, "cpu", "util_pct"));  // needs two readings
  EXPECT_DOUBLE_EQ(value(b1, "process", "rss_bytes").value(), 102400.0 * 1024);
  EXPECT_DOUBLE_EQ(value(b1, "process", "peak_rss_bytes").value(), 204800.0 * 1024);
  EXPECT_DOUBLE_EQ(value(b1, "process", "threads_count").value(), 7);
  EXPECT_DOUBLE_EQ(value(b1, "cpu", "mem_used_bytes").value(), (16384000.0 - 12288000.0) * 1024);
  EXPECT_DOUBLE_EQ(value(b1, "cpu0", "freq_mhz").value(), 2400);  // cpufreq kHz preferred over cpuinfo
  EXPECT_DOUBLE_EQ(value(b1, "cpu", "freq_mhz").value(), 2700);
  // cpu0: +30 busy of +100 total; cpu1: +100 idle only.
  ts_test::write_file(root / "proc/stat",
                      "cpu  10120 0 2304 148165 367 0 95 14 0 0\n"
                      "cpu0 6015 0 1298 72966 214 0 39 7 0 0\n"
                      "cpu1 4094 0 1016 75259 152 0 56 6 0 0\n");
  long tck = ::sysconf(_SC_CLK_TCK);
  ts_test::write_file(root / "proc/self/stat",
                      "5911 (my (odd) proc) S 5906 5906 4661 0 -1 4194304 102 0 0 0 " + std::to_string(250 + tck) +
                          " 50 0 0 20 0 7 0 80540 3133440 412 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0");
  SampleBatch b2;
  src->sample(3'000'000'000, b2);  // 2 s later
  EXPECT_DOUBLE_EQ(value(b2, "cpu0", "util_pct").value(), 100.0 * 30 / 60);
  EXPECT_DOUBLE_EQ(value(b2, "cpu1", "util_pct").value(), 0.0);
  EXPECT_DOUBLE_EQ(value(b2, "cpu", "util_pct").value(), 100.0 * 30 / 100);
  EXPECT_DOUBLE_EQ(value(b2, "cpu", "steal_pct").value(), 0.0);  // steal stayed at 14
  EXPECT_FALSE(value(b2, "cpu0", "steal_pct"));                   // the machine-wide line only
  // Then the hypervisor takes 25 of the next 100 jiffies; 25 more are this machine's work.
  ts_test::write_file(root / "proc/stat",
                      "cpu  10145 0 2304 148215 367 0 95 39 0 0\n"
                      "cpu0 6040 0 1298 72991 214 0 39 32 0 0\n"
                      "cpu1 4094 0 1016 75259 152 0 56 6 0 0\n");
  SampleBatch b3;
  src->sample(4000000000, b3);  // 4 s (no digit separators: pmccabe reads ' as a quote)
  EXPECT_DOUBLE_EQ(value(b3, "cpu", "steal_pct").value(), 25.0);
  EXPECT_DOUBLE_EQ(value(b3, "cpu", "util_pct").value(), 25.0);  // the stolen 25 are not busy
  EXPECT_NEAR(value(b2, "process", "cpu_pct").value(), 50.0, 1e-9);  // 1 s CPU in 2 s wall
}

// With a slow interval, utilisation and memory are read every poll (a short run keeps its peak
// memory) and frequency (a file per CPU) only on the first poll and once per interval after
// it; the files are counted through the reader, so a source that read them anyway fails.
TEST(telemetry_ProcSource, FrequencyOncePerSlowIntervalMemoryEveryPoll) {
  auto root = ts_test::fresh_tree("procslow");
  std::map<std::string, int> reads;
  FileReader counting = [&](const std::string& p) {
    ++reads[p.substr(p.find("/proc/") != std::string::npos ? p.find("/proc/") : p.find("/sys/"))];
    return read_text_file(p);
  };
  auto src = make_proc_source((root / "proc").string(), (root / "sys").string(), counting, 1'000'000'000);
  ASSERT_TRUE(src->probe().available);
  reads.clear();
  auto poll = [&](int64_t t) {
    SampleBatch b;
    src->sample(t, b);
    return b;
  };
  auto first = poll(0);
  EXPECT_TRUE(value(first, "cpu", "freq_mhz"));
  EXPECT_TRUE(value(first, "cpu0", "freq_mhz"));
  for (int64_t t = 100'000'000; t < 1'000'000'000; t += 100'000'000) {  // 9 polls inside the interval
    auto b = poll(t);
    EXPECT_TRUE(value(b, "process", "threads_count")) << t;
    EXPECT_TRUE(value(b, "process", "rss_bytes")) << t;
    EXPECT_TRUE(value(b, "cpu", "mem_used_bytes")) << t;
    EXPECT_FALSE(value(b, "cpu", "freq_mhz")) << t;
    EXPECT_FALSE(value(b, "cpu0", "freq_mhz")) << t;
  }
  EXPECT_EQ(reads["/proc/stat"], 10);
  EXPECT_EQ(reads["/proc/self/stat"], 10);
  EXPECT_EQ(reads["/proc/self/status"], 10);
  EXPECT_EQ(reads["/proc/meminfo"], 10);
  EXPECT_EQ(reads["/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq"], 1);
  EXPECT_EQ(reads["/sys/devices/system/cpu/cpu1/cpufreq/scaling_cur_freq"], 1);
  auto later = poll(1'000'000'000);  // one interval after the first poll
  EXPECT_TRUE(value(later, "cpu", "freq_mhz"));
  EXPECT_EQ(reads["/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq"], 2);
  // A poll that wakes a few µs before the next due time (a poller at the slow period itself)
  // still reads it, and the schedule stays on the nominal 1 s grid.
  EXPECT_TRUE(value(poll(2'000'000'000 - 3'000), "cpu", "freq_mhz"));
  EXPECT_FALSE(value(poll(2'500'000'000), "cpu", "freq_mhz"));
  EXPECT_TRUE(value(poll(3'000'000'000 - 3'000), "cpu", "freq_mhz"));
  // Interval 0 (the default): everything every poll.
  auto every = make_proc_source((root / "proc").string(), (root / "sys").string(), {});
  ASSERT_TRUE(every->probe().available);
  for (int64_t t : {0, 1}) {
    SampleBatch b;
    every->sample(t, b);
    EXPECT_TRUE(value(b, "cpu", "freq_mhz")) << t;
  }
}

// The catalogue's slow flag (TelemetryField::slow, src/telemetry/fields.cpp) is what the monitor
// and the summaries rely on: every metric proc reports on its first poll is read again on the
// next poll inside the slow interval exactly when the catalogue calls it fast.
TEST(telemetry_ProcSource, TheCataloguesSlowFlagMatchesWhatTheSourceReadsOncePerInterval) {
  auto root = ts_test::fresh_tree("procslowflag");
  auto src = make_proc_source((root / "proc").string(), (root / "sys").string(), {}, 1'000'000'000);
  ASSERT_TRUE(src->probe().available);
  SampleBatch first, next;
  src->sample(0, first);
  src->sample(100'000'000, next);
  int slow_seen = 0, fast_seen = 0;
  for (const auto& r : first.values) {
    const auto* field = find_field(r.metric);
    ASSERT_TRUE(field) << r.metric;
    const bool read_again = value(next, r.device, r.metric).has_value();
    EXPECT_EQ(field->slow, !read_again) << r.device << " " << r.metric;
    ++(field->slow ? slow_seen : fast_seen);
  }
  EXPECT_GE(slow_seen, 1);  // freq_mhz
  EXPECT_GE(fast_seen, 3);  // threads_count, rss_bytes, mem_used_bytes, ...
}

TEST(telemetry_ProcSource, GarbageAndMissingFiles) {
  auto root = ts_test::fresh_tree("procbad");
  auto src = make_proc_source((root / "proc").string(), (root / "sys").string(), {});
  ASSERT_TRUE(src->probe().available);
  ts_test::write_file(root / "proc/stat", "this is not /proc/stat\n");
  ts_test::write_file(root / "proc/self/status", "VmRSS:\tlots kB\n");
  std::filesystem::remove(root / "sys/devices/system/cpu/cpu1/cpufreq/scaling_cur_freq");
  SampleBatch b;
  src->sample(1, b);
  EXPECT_EQ(drops(b, "util_pct", "parse_error"), 1);
  EXPECT_EQ(drops(b, "rss_bytes", "parse_error"), 1);
  EXPECT_EQ(drops(b, "freq_mhz", "unreadable"), 1);
  EXPECT_FALSE(value(b, "process", "rss_bytes"));

  auto none = make_proc_source((root / "nonexistent").string(), (root / "sys").string(), {});
  auto p = none->probe();
  EXPECT_FALSE(p.available);
  EXPECT_NE(p.reason.find("ENOENT"), std::string::npos) << p.reason;
}

// Container memory: /proc/meminfo is the host's inside a container, so the cgroup's
// own usage and limit are read beside the process RSS. cgroup v2: /proc/self/cgroup "0::PATH",
// files memory.current / memory.max under <sys>/fs/cgroup/PATH.
TEST(telemetry_ProcSource, CgroupV2MemoryUsageAndLimit) {
  auto root = ts_test::fresh_tree("cgroup2");
  ts_test::write_file(root / "proc/self/cgroup", "0::/system.slice/trainscope.scope\n");
  auto cg = root / "sys/fs/cgroup/system.slice/trainscope.scope";
  ts_test::write_file(cg / "memory.current", "123456789\n");
  ts_test::write_file(cg / "memory.max", "2147483648\n");  // 2 GiB, below MemTotal (15.6 GiB)
  auto src = make_proc_source((root / "proc").string(), (root / "sys").string(), {});
  ASSERT_TRUE(src->probe().available);
  auto fields = src->fields_supported();
  EXPECT_NE(std::find(fields.begin(), fields.end(), "cgroup_mem_used_bytes"), fields.end());
  SampleBatch b;
  src->sample(1, b);
  EXPECT_DOUBLE_EQ(value(b, "process", "cgroup_mem_used_bytes").value(), 123456789.0);
  EXPECT_DOUBLE_EQ(value(b, "process", "cgroup_mem_limit_bytes").value(), 2147483648.0);
  EXPECT_DOUBLE_EQ(value(b, "process", "rss_bytes").value(), 102400.0 * 1024);  // unchanged beside it
  // "max" (no limit): usage only, no limit value.
  ts_test::write_file(cg / "memory.max", "max\n");
  SampleBatch b2;
  src->sample(2, b2);
  EXPECT_TRUE(value(b2, "process", "cgroup_mem_used_bytes"));
  EXPECT_FALSE(value(b2, "process", "cgroup_mem_limit_bytes"));
  // A parent's limit binds the cgroup too: the smallest limit up the tree is reported.
  ts_test::write_file(root / "sys/fs/cgroup/system.slice/memory.max", "1073741824\n");
  SampleBatch b3;
  src->sample(3, b3);
  EXPECT_DOUBLE_EQ(value(b3, "process", "cgroup_mem_limit_bytes").value(), 1073741824.0);
}

// cgroup v1: the memory controller's line of /proc/self/cgroup; a limit at or above MemTotal
// (the "unlimited" 9223372036854771712) is no limit. Inside a container the cgroup path is not
// mounted under its host name: the controller's root folder is the container's own cgroup.
TEST(telemetry_ProcSource, CgroupV1MemoryUsageAndLimit) {
  auto root = ts_test::fresh_tree("cgroup1");
  ts_test::write_file(root / "proc/self/cgroup",
                      "12:cpu,cpuacct:/docker/abc\n7:memory:/docker/abc\n1:name=systemd:/docker/abc\n");
  auto mem = root / "sys/fs/cgroup/memory";
  ts_test::write_file(mem / "docker/abc/memory.usage_in_bytes", "5000000\n");
  ts_test::write_file(mem / "docker/abc/memory.limit_in_bytes", "9223372036854771712\n");
  auto src = make_proc_source((root / "proc").string(), (root / "sys").string(), {});
  ASSERT_TRUE(src->probe().available);
  SampleBatch b;
  src->sample(1, b);
  EXPECT_DOUBLE_EQ(value(b, "process", "cgroup_mem_used_bytes").value(), 5000000.0);
  EXPECT_FALSE(value(b, "process", "cgroup_mem_limit_bytes"));

  auto inside = ts_test::fresh_tree("cgroup1_container");
  ts_test::write_file(inside / "proc/self/cgroup", "7:memory:/docker/abc\n");
  ts_test::write_file(inside / "sys/fs/cgroup/memory/memory.usage_in_bytes", "6000000\n");
  ts_test::write_file(inside / "sys/fs/cgroup/memory/memory.limit_in_bytes", "1073741824\n");
  auto src2 = make_proc_source((inside / "proc").string(), (inside / "sys").string(), {});
  ASSERT_TRUE(src2->probe().available);
  SampleBatch b2;
  src2->sample(1, b2);
  EXPECT_DOUBLE_EQ(value(b2, "process", "cgroup_mem_used_bytes").value(), 6000000.0);
  EXPECT_DOUBLE_EQ(value(b2, "process", "cgroup_mem_limit_bytes").value(), 1073741824.0);
}

// No /proc/self/cgroup (the fixture tree): no cgroup fields and no drops, the rest unchanged.
TEST(telemetry_ProcSource, NoCgroupNoCgroupFields) {
  auto root = ts_test::fresh_tree("nocgroup");
  auto src = make_proc_source((root / "proc").string(), (root / "sys").string(), {});
  ASSERT_TRUE(src->probe().available);
  auto fields = src->fields_supported();
  EXPECT_EQ(std::find(fields.begin(), fields.end(), "cgroup_mem_used_bytes"), fields.end());
  SampleBatch b;
  src->sample(1, b);
  EXPECT_FALSE(value(b, "process", "cgroup_mem_used_bytes"));
  EXPECT_EQ(drops(b, "cgroup_mem_used_bytes", "unreadable"), 0);
}

TEST(telemetry_ProcParse, SelfCgroupMemoryController) {
  auto v2 = parse_self_cgroup("0::/user.slice/session-2.scope\n");
  ASSERT_TRUE(v2);
  EXPECT_TRUE(v2->v2);
  EXPECT_EQ(v2->path, "/user.slice/session-2.scope");
  // Hybrid hierarchy: the memory controller is on v1, so its line wins over the "0::" one.
  auto hybrid = parse_self_cgroup("4:cpu,cpuacct:/a\n9:blkio,memory:/docker/x\n0::/init.scope\n");
  ASSERT_TRUE(hybrid);
  EXPECT_FALSE(hybrid->v2);
  EXPECT_EQ(hybrid->path, "/docker/x");
  EXPECT_FALSE(parse_self_cgroup("4:cpu:/a\n1:name=systemd:/b\n"));  // no memory controller
  EXPECT_FALSE(parse_self_cgroup("garbage\n0::relative\n"));
}

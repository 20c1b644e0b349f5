// results.json's `git_commit` names the code the binary was built from (cmake/git_commit.cmake).
#include <gtest/gtest.h>

#include "trainscope/fs.h"

#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "trainscope/build_info.h"
#include "trainscope/cpu_budget.h"
#include "trainscope/provenance.h"

namespace {

std::string output_of(const std::string& cmd) {
  std::string out;
  if (FILE* f = popen(cmd.c_str(), "r")) {
    char buf[256];
    while (fgets(buf, sizeof buf, f)) out += buf;
    pclose(f);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

// The source tree's HEAD when the tests were built, with "-dirty" when its tracked files differed
// from it. Read at configure time, it kept naming the commit the build folder was configured at
// after later commits and incremental builds (results.json said fc2e9deb59ef for 4905b0e's code).
TEST(Provenance, GitCommitIsTheSourceTreesHeadAtBuildTime) {
  const std::string git = std::string("git -C '") + TRAINSCOPE_SOURCE_DIR + "' ";
  const std::string head = output_of(git + "rev-parse --short=12 HEAD 2>/dev/null");
  const auto p = trainscope::collect_host_provenance();
  if (head.empty()) {
    EXPECT_EQ(p.git_commit, "unknown");
    return;
  }
  const bool dirty = std::system((git + "diff --quiet HEAD -- 2>/dev/null").c_str()) != 0;
  EXPECT_EQ(p.git_commit, dirty ? head + "-dirty" : head)
      << "rebuild after committing or editing: the binary must describe the code it runs";
}

// ---- The CPUs this process may use (src/common/cpu_budget.cpp) ----

namespace {

namespace fs = std::filesystem;

// A fake /proc and /sys/fs/cgroup under a temporary folder.
struct FakeRoots {
  fs::path dir = fs::temp_directory_path() / ("ts_cpus_" + std::to_string(::getpid()) + "_" +
                                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
  FakeRoots() { fs::create_directories(dir / "proc/self"); }
  ~FakeRoots() { trainscope::remove_tree(dir); }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((dir / rel).parent_path());
    std::ofstream(dir / rel) << text;
  }
  trainscope::CpuBudget read(int64_t online) const {
    return trainscope::read_cpu_budget((dir / "proc").string(), (dir / "cg").string(), online);
  }
};

}  // namespace

// taskset -c 0-3,8-11 on a 16-CPU host: 8 usable, and the record says why.
TEST(CpuBudget, AffinityMaskNarrowsTheUsableCpus) {
  FakeRoots r;
  r.write("proc/self/status", "Name:\ttrainscope\nCpus_allowed:\tf0f\nCpus_allowed_list:\t0-3,8-11\n");
  const auto b = r.read(16);
  EXPECT_EQ(b.online, 16);
  EXPECT_EQ(b.affinity, 8);
  EXPECT_EQ(b.usable, 8);
  EXPECT_FALSE(b.quota_cpus.has_value());
  EXPECT_EQ(b.limited_by, "affinity mask: 8 of 16 CPUs, set by taskset, Slurm or a cpuset");
}

TEST(CpuBudget, NothingLimitsAWholeMachine) {
  FakeRoots r;
  r.write("proc/self/status", "Cpus_allowed_list:\t0-15\n");
  r.write("proc/self/cgroup", "0::/user.slice\n");
  r.write("cg/user.slice/cpu.max", "max 100000\n");
  const auto b = r.read(16);
  EXPECT_EQ(b.usable, 16);
  EXPECT_EQ(b.limited_by, "");
}

// docker --cpus 2.5: cgroup v2 cpu.max "250000 100000" caps 16 CPUs at ceil(2.5) = 3 threads.
TEST(CpuBudget, CgroupV2QuotaCapsTheUsableCpusRoundedUp) {
  FakeRoots r;
  r.write("proc/self/status", "Cpus_allowed_list:\t0-15\n");
  r.write("proc/self/cgroup", "0::/\n");
  r.write("cg/cpu.max", "250000 100000\n");
  const auto b = r.read(16);
  ASSERT_TRUE(b.quota_cpus.has_value());
  EXPECT_DOUBLE_EQ(*b.quota_cpus, 2.5);
  EXPECT_EQ(b.usable, 3);
  EXPECT_EQ(b.limited_by, "cgroup CPU quota: 2.5 CPUs, set by a container or job limit");
}

// A Slurm job's limit sits on the job's cgroup; the process lives in a step below it.
TEST(CpuBudget, TheSmallestQuotaOnTheCgroupOrItsParentsBinds) {
  FakeRoots r;
  r.write("proc/self/cgroup", "0::/slurm/job_7/step_0\n");
  r.write("cg/slurm/job_7/step_0/cpu.max", "max 100000\n");
  r.write("cg/slurm/job_7/cpu.max", "400000 100000\n");
  r.write("cg/slurm/cpu.max", "800000 100000\n");
  const auto b = r.read(32);
  EXPECT_EQ(b.usable, 4);
  EXPECT_EQ(b.affinity, 0) << "no status file: the mask is unknown, not zero CPUs";
}

TEST(CpuBudget, CgroupV1QuotaAndBothLimitsAreNamed) {
  FakeRoots r;
  r.write("proc/self/status", "Cpus_allowed_list:\t0-5\n");
  r.write("proc/self/cgroup", "12:cpu,cpuacct:/docker/abc\n3:memory:/docker/abc\n");
  r.write("cg/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "150000\n");
  r.write("cg/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  const auto b = r.read(8);
  EXPECT_EQ(b.usable, 2);
  EXPECT_EQ(b.limited_by, "affinity mask: 6 of 8 CPUs, set by taskset, Slurm or a cpuset; "
                          "cgroup CPU quota: 1.5 CPUs, set by a container or job limit");
}

TEST(CpuBudget, UnreadableOrMalformedFilesLeaveTheOnlineCount) {
  FakeRoots r;
  r.write("proc/self/status", "Cpus_allowed_list:\t3-1\n");
  r.write("proc/self/cgroup", "0::/a\n");
  r.write("cg/a/cpu.max", "lots 100000\n");
  const auto b = r.read(4);
  EXPECT_EQ(b.usable, 4);
  EXPECT_EQ(b.affinity, 0);
  EXPECT_FALSE(b.quota_cpus.has_value());
}

// The real process: pinned to one CPU by sched_setaffinity, the budget and the provenance read 1.
TEST(CpuBudget, ThisProcessPinnedToOneCpuHasOneUsable) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  int first = 0;
  while (!CPU_ISSET(first, &saved)) ++first;
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const int64_t usable = trainscope::usable_cpus();
  const auto p = trainscope::collect_host_provenance();
  sched_setaffinity(0, sizeof saved, &saved);
  EXPECT_EQ(usable, 1);
  EXPECT_EQ(p.cpu_usable_cores, 1);
  if (p.cpu_logical_cores > 1) EXPECT_NE(p.cpu_limit.find("affinity mask: 1 of"), std::string::npos) << p.cpu_limit;
}

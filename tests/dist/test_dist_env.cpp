// The rank environment contracts (src/dist/env.h): torchrun, Slurm, trainscope's launcher.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "dist/env.h"
#include "dist/rank_table.h"
#include "trainscope/cpu_budget.h"
#include "trainscope/error.h"

using namespace trainscope;

namespace {

std::optional<dist::DistEnv> detect(const std::map<std::string, std::string>& vars) {
  return dist::detect_env([&](const char* n) -> const char* {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

TEST(DistEnv, NoLauncherIsASingleProcess) { EXPECT_FALSE(detect({}).has_value()); }

TEST(DistEnv, TorchrunAgentStoreWithAttemptPrefix) {
  auto e = detect({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
                   {"MASTER_ADDR", "node7"}, {"MASTER_PORT", "29400"}, {"TORCHELASTIC_RUN_ID", "x"},
                   {"TORCHELASTIC_USE_AGENT_STORE", "True"}, {"TORCHELASTIC_RESTART_COUNT", "2"}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->launcher, "torchrun");
  EXPECT_EQ(e->rank, 3);
  EXPECT_EQ(e->world_size, 8);
  EXPECT_EQ(e->local_rank, 1);
  EXPECT_EQ(e->local_world_size, 2);
  EXPECT_EQ(e->master_addr, "node7");
  EXPECT_EQ(e->port, 29400);
  EXPECT_TRUE(e->agent_store);
  EXPECT_EQ(e->store_prefix, "/worker/attempt_2");
}

TEST(DistEnv, TorchrunWithoutAgentStoreMakesRankZeroTheServer) {
  auto e = detect({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"TORCHELASTIC_RUN_ID", "x"}});
  ASSERT_TRUE(e);
  EXPECT_FALSE(e->agent_store);
  EXPECT_EQ(e->store_prefix, "");
  EXPECT_EQ(e->master_addr, "127.0.0.1");
  EXPECT_EQ(e->port, 29500);
}

TEST(DistEnv, TrainscopeLauncherHostsTheStore) {
  auto e = detect({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"TRAINSCOPE_LAUNCHER", "1"}, {"MASTER_PORT", "4000"}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->launcher, "trainscope");
  EXPECT_TRUE(e->agent_store);
  EXPECT_EQ(e->store_prefix, "");
}

TEST(DistEnv, OneRankThroughRankVariablesIsDistributed) {
  auto e = detect({{"RANK", "0"}, {"WORLD_SIZE", "1"}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->launcher, "env");
  EXPECT_EQ(e->world_size, 1);
}

TEST(DistEnv, SlurmTakesTheFirstHostOfTheNodeList) {
  auto e = detect({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"},
                   {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"}, {"SLURM_JOB_NODELIST", "gpu[07-08,11],cpu1"},
                   {"SLURM_CPUS_PER_TASK", "6"}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->launcher, "slurm");
  EXPECT_EQ(e->cpus_per_task, 6);
  EXPECT_EQ(e->rank, 5);
  EXPECT_EQ(e->world_size, 8);
  EXPECT_EQ(e->local_rank, 1);
  EXPECT_EQ(e->local_world_size, 4);
  EXPECT_EQ(e->master_addr, "gpu07");
  EXPECT_FALSE(e->agent_store);
  EXPECT_FALSE(detect({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}).has_value()) << "a one-task job is one process";
}

TEST(DistEnv, FirstSlurmHost) {
  EXPECT_EQ(dist::first_slurm_host("a,b"), "a");
  EXPECT_EQ(dist::first_slurm_host("gn[01-04,7],cpu3"), "gn01");
  EXPECT_EQ(dist::first_slurm_host("node12"), "node12");
  EXPECT_EQ(dist::first_slurm_host("x[3,5]"), "x3");
}

TEST(DistEnv, BadValuesNameTheVariable) {
  try {
    detect({{"RANK", "one"}, {"WORLD_SIZE", "2"}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("RANK='one'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(detect({{"RANK", "2"}, {"WORLD_SIZE", "2"}}), Error);
  EXPECT_THROW(detect({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}), Error);
}

// The scaling baseline of a data-parallel run is a one-process run of the same workload and
// variant: a graphs run is not the baseline of an eager data-parallel run.
TEST(DistScaling, BaselineMatchesModelBatchVariantDataAndDeviceKind) {
  RunRecord run;
  run.model = "cnn", run.batch_size = 128, run.variant = "eager", run.dataset = "fashion-mnist", run.device = "cpu";
  run.world_size = 2;
  RunRecord b = run;
  b.world_size = 1, b.status = RunStatus::kOk, b.steady_samples_per_s = 1000;
  EXPECT_TRUE(dist::is_scaling_baseline(b, run));
  auto differs = [&](auto change) {
    RunRecord c = b;
    change(c);
    return !dist::is_scaling_baseline(c, run);
  };
  EXPECT_TRUE(differs([](RunRecord& c) { c.variant = "graphs+bf16"; }));
  EXPECT_TRUE(differs([](RunRecord& c) { c.model = "mlp"; }));
  EXPECT_TRUE(differs([](RunRecord& c) { c.batch_size = 64; }));
  EXPECT_TRUE(differs([](RunRecord& c) { c.dataset = "cifar10"; }));
  EXPECT_TRUE(differs([](RunRecord& c) { c.device = "cuda:0"; }));
  EXPECT_TRUE(differs([](RunRecord& c) { c.world_size = 2; }));
  EXPECT_TRUE(differs([](RunRecord& c) { c.status = RunStatus::kFailed; }));
  EXPECT_TRUE(differs([](RunRecord& c) { c.steady_samples_per_s.reset(); }));
  run.intra_op_threads = 1;  // each of 2 ranks on 1 of 2 cores: a 2-thread run is no baseline
  b.intra_op_threads = 1;
  EXPECT_TRUE(dist::is_scaling_baseline(b, run));
  EXPECT_TRUE(differs([](RunRecord& c) { c.intra_op_threads = 2; }));
}

// Found by a tester: WORLD_SIZE=2 without RANK (or RANK=0 alone) silently trained as one process.
TEST(DistEnv, OnlyOneOfRankAndWorldSizeIsBadInputNamingTheMissingOne) {
  try {
    detect({{"WORLD_SIZE", "2"}});
    FAIL() << "WORLD_SIZE alone was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("WORLD_SIZE is set but RANK is not"), std::string::npos) << e.what();
  }
  try {
    detect({{"RANK", "0"}, {"MASTER_PORT", "29500"}});
    FAIL() << "RANK alone was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("RANK is set but WORLD_SIZE is not"), std::string::npos) << e.what();
  }
  auto slurm = detect({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"RANK", "1"}});
  ASSERT_TRUE(slurm) << "inside a Slurm step the Slurm variables decide, as before";
  EXPECT_EQ(slurm->launcher, "slurm");
}

// --threads 0 in a data-parallel run: the usable CPUs split between the host's ranks, except a
// Slurm task's own narrower mask, which is already its share.
TEST(DistEnv, DefaultRankThreadsSplitTheUsableCpus) {
  dist::DistEnv e;
  e.local_world_size = 4;
  e.launcher = "torchrun";
  CpuBudget whole;
  whole.online = whole.affinity = whole.usable = 16;
  EXPECT_EQ(dist::default_rank_threads(e, whole), 4);
  CpuBudget taskset = whole;  // taskset -c 0-7 torchrun ...: every rank shares the 8
  taskset.affinity = taskset.usable = 8;
  EXPECT_EQ(dist::default_rank_threads(e, taskset), 2);
  e.launcher = "slurm";  // srun without per-task binding: the job's 8 CPUs, shared by the node's 4 tasks
  EXPECT_EQ(dist::default_rank_threads(e, taskset), 2);
  e.cpus_per_task = 8;   // srun --cpus-per-task 8 with binding: each task its own 8
  EXPECT_EQ(dist::default_rank_threads(e, taskset), 8);
  e.cpus_per_task = 2;   // a mask wider than --cpus-per-task is not one task's: split it
  EXPECT_EQ(dist::default_rank_threads(e, taskset), 2);
  CpuBudget quota = whole;  // a cgroup quota of 2 CPUs over 4 ranks: at least 1 each
  quota.usable = 2;
  e.launcher = "trainscope";
  EXPECT_EQ(dist::default_rank_threads(e, quota), 1);
}

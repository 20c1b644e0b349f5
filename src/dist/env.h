// Where a data-parallel rank learns who it is: the environment torchrun, Slurm or trainscope's
// own launcher (--nproc-per-node) sets. No LibTorch here (unit-tested in trainscope_core).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "trainscope/cpu_budget.h"
#include "trainscope/provenance.h"

namespace trainscope {
namespace dist {

/// One rank's place in the job. Sources (docs/distributed.md#launching):
/// torchrun: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, and
/// TORCHELASTIC_USE_AGENT_STORE / TORCHELASTIC_RESTART_COUNT (the agent hosts the TCPStore;
/// every rank is a client under the prefix "/worker/attempt_<restart count>", as
/// torch/distributed/rendezvous.py does). trainscope's launcher sets the same variables plus
/// TRAINSCOPE_LAUNCHER=1 (the launcher hosts the store, like torchrun's agent).
/// Slurm (srun): SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, the first host of
/// SLURM_STEP_NODELIST / SLURM_JOB_NODELIST (or MASTER_ADDR when set), MASTER_PORT or
/// 29500; rank 0 hosts the store.
struct DistEnv {
  int64_t rank = 0, world_size = 1, local_rank = 0, local_world_size = 1;
  std::string master_addr;     // host of the TCPStore
  int port = 29500;            // its port
  std::string launcher;        // "trainscope" | "torchrun" | "slurm" | "env" (RANK/WORLD_SIZE only)
  bool agent_store = false;    // true: a store server already runs (every rank is a client)
  std::string store_prefix;    // "" or torchrun's "/worker/attempt_N"
  int64_t cpus_per_task = 0;   // Slurm: SLURM_CPUS_PER_TASK (0 when unset or another launcher)
};

/// Reads a variable: nullptr when unset (std::getenv in production, a map in tests).
using EnvReader = std::function<const char*(const char*)>;

/// The rank's environment, or nullopt when none of the launchers above set one (a plain
/// single-process run; also a one-task Slurm job). RANK=0 WORLD_SIZE=1 is a one-rank
/// distributed run (the same code path as larger worlds). Throws Error(kInvalidArgument) naming the variable when a value is not
/// a number, a rank is outside [0, world size), MASTER_PORT is not a port, or only one of
/// RANK and WORLD_SIZE is set (outside a Slurm job step).
std::optional<DistEnv> detect_env(const EnvReader& get);
std::optional<DistEnv> detect_env();  // from the process environment

/// The intra-op threads a rank runs when --threads is 0: the CPUs this process may use
/// (CpuBudget::usable) split evenly between the host's ranks (local_world_size), at least 1.
/// Under Slurm an affinity mask no wider than SLURM_CPUS_PER_TASK is this task's own (Slurm's
/// task/affinity binds each task to its --cpus-per-task CPUs), so it is not split again; a
/// wider mask (no per-task binding) is split like any other.
int64_t default_rank_threads(const DistEnv& env, const CpuBudget& cpus);

/// First host of a Slurm node list: "gn[01-04,7],cpu3" -> "gn01", "a,b" -> "a".
std::string first_slurm_host(const std::string& nodelist);

}  // namespace dist
}  // namespace trainscope

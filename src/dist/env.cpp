#include "dist/env.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "trainscope/cpu_budget.h"
#include "trainscope/error.h"

namespace trainscope {
namespace dist {

namespace {

int64_t env_int(const EnvReader& get, const char* name, int64_t fallback) {
  const char* v = get(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  if (*end != '\0')
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("environment variable {}='{}' is not an integer; set it as the launcher "
                            "(torchrun, srun) would",
                            name, v));
  return x;
}

std::string env_str(const EnvReader& get, const char* name, const std::string& fallback) {
  const char* v = get(name);
  return v && *v ? std::string(v) : fallback;
}

void check_env(const DistEnv& e) {
  if (e.world_size < 1 || e.rank < 0 || e.rank >= e.world_size)
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("rank {} is outside world size {} ({} environment); check RANK/WORLD_SIZE or "
                            "SLURM_PROCID/SLURM_NTASKS",
                            e.rank, e.world_size, e.launcher));
  if (e.local_world_size < 1 || e.local_rank < 0 || e.local_rank >= e.local_world_size)
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("local rank {} is outside local world size {} ({} environment); check LOCAL_RANK/"
                            "LOCAL_WORLD_SIZE or SLURM_LOCALID",
                            e.local_rank, e.local_world_size, e.launcher));
  if (e.port < 1 || e.port > 65535)
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("MASTER_PORT {} is not a TCP port (1..65535)", e.port));
}

DistEnv from_torchrun_vars(const EnvReader& get) {
  DistEnv e;
  e.rank = env_int(get, "RANK", 0);
  e.world_size = env_int(get, "WORLD_SIZE", 1);
  e.local_rank = env_int(get, "LOCAL_RANK", e.rank);
  e.local_world_size = env_int(get, "LOCAL_WORLD_SIZE", e.world_size);
  e.master_addr = env_str(get, "MASTER_ADDR", "127.0.0.1");
  e.port = static_cast<int>(env_int(get, "MASTER_PORT", 29500));
  if (get("TRAINSCOPE_LAUNCHER")) {
    e.launcher = "trainscope";
    e.agent_store = true;
  } else if (get("TORCHELASTIC_RUN_ID")) {
    e.launcher = "torchrun";
    e.agent_store = env_str(get, "TORCHELASTIC_USE_AGENT_STORE", "") == "True";
    if (e.agent_store) e.store_prefix = "/worker/attempt_" + env_str(get, "TORCHELASTIC_RESTART_COUNT", "0");
  } else {
    e.launcher = "env";
  }
  return e;
}

DistEnv from_slurm_vars(const EnvReader& get) {
  DistEnv e;
  e.launcher = "slurm";
  e.rank = env_int(get, "SLURM_PROCID", 0);
  e.world_size = env_int(get, "SLURM_NTASKS", env_int(get, "SLURM_NPROCS", 1));
  e.local_rank = env_int(get, "SLURM_LOCALID", 0);
  // Tasks on this node: SLURM_NTASKS_PER_NODE exists only when requested; SLURM_STEP_TASKS_PER_NODE
  // ("4(x2)") starts with this layout's count.
  e.local_world_size = env_int(get, "SLURM_NTASKS_PER_NODE", 0);
  if (e.local_world_size == 0) {
    std::string t = env_str(get, "SLURM_STEP_TASKS_PER_NODE", env_str(get, "SLURM_TASKS_PER_NODE", ""));
    e.local_world_size = t.empty() ? e.world_size : std::strtoll(t.c_str(), nullptr, 10);
    if (e.local_world_size < 1) e.local_world_size = e.world_size;
  }
  std::string nodes = env_str(get, "SLURM_STEP_NODELIST", env_str(get, "SLURM_JOB_NODELIST", "127.0.0.1"));
  e.master_addr = env_str(get, "MASTER_ADDR", first_slurm_host(nodes));
  e.port = static_cast<int>(env_int(get, "MASTER_PORT", 29500));
  e.cpus_per_task = env_int(get, "SLURM_CPUS_PER_TASK", 0);
  return e;
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  std::string first;
  int depth = 0;
  for (char c : nodelist) {  // the first comma outside brackets ends the first entry
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) break;
    first += c;
  }
  auto lb = first.find('[');
  if (lb == std::string::npos) return first;
  std::string range = first.substr(lb + 1);
  auto end = range.find_first_of(",-]");
  return first.substr(0, lb) + range.substr(0, end);
}

std::optional<DistEnv> detect_env(const EnvReader& get) {
  std::optional<DistEnv> e;
  if (get("RANK") && get("WORLD_SIZE")) e = from_torchrun_vars(get);
  else if (get("SLURM_PROCID") && (get("SLURM_NTASKS") || get("SLURM_NPROCS"))) e = from_slurm_vars(get);
  else if (get("RANK") || get("WORLD_SIZE"))  // torchrun sets both: one alone is a mistake, not one process
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("{} is set but {} is not; a data-parallel rank needs RANK and WORLD_SIZE (and "
                            "MASTER_ADDR, MASTER_PORT): set both, unset {} to train as one process, or use "
                            "--nproc-per-node / torchrun",
                            get("RANK") ? "RANK" : "WORLD_SIZE", get("RANK") ? "WORLD_SIZE" : "RANK",
                            get("RANK") ? "RANK" : "WORLD_SIZE"));
  if (e) check_env(*e);
  if (e && e->launcher == "slurm" && e->world_size == 1) e.reset();  // a one-task job trains as one process
  return e;
}

std::optional<DistEnv> detect_env() {
  return detect_env([](const char* n) -> const char* { return std::getenv(n); });
}

int64_t default_rank_threads(const DistEnv& env, const CpuBudget& cpus) {
  // Slurm binds a task to its --cpus-per-task CPUs only with task/affinity binding on: a mask no
  // wider than that is the task's own; a wider one (--cpu-bind=none, cgroup-only setups) is
  // the node's share of the job, which the ranks split.
  const bool own_mask = env.launcher == "slurm" && env.cpus_per_task > 0 && cpus.affinity > 0 &&
                        cpus.affinity <= env.cpus_per_task && cpus.affinity < cpus.online;
  if (own_mask) return std::max<int64_t>(1, cpus.usable);
  return std::max<int64_t>(1, cpus.usable / std::max<int64_t>(env.local_world_size, 1));
}

}  // namespace dist
}  // namespace trainscope

// setup_rank and finish_run_record (dist/context.h): the rank's side of `trainscope run`.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/text.h"
#include "dist/context.h"
#include "train/device.h"
#include "trainscope/cpu_budget.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"

namespace trainscope {
namespace dist {

std::unique_ptr<Context>& context_slot();

namespace {

// "gloo" when every device is the CPU, "nccl" when every device is a GPU (this rank's becomes
// cuda:LOCAL_RANK); anything else is bad input.
std::string pick_backend(MatrixConfig& m, const DistEnv& e) {
  if (m.devices.empty()) m.devices = {visible_devices().size() > 1 ? "cuda" : "cpu"};  // [] = the GPUs when any
  const auto& d = m.devices;
  const bool all_cpu = !d.empty() && std::all_of(d.begin(), d.end(), [](const std::string& x) { return x == "cpu"; });
  const bool all_gpu =
      !d.empty() && std::all_of(d.begin(), d.end(), [](const std::string& x) { return x.rfind("cuda", 0) == 0; });
  if (!all_cpu && !all_gpu)
    throw_error(ErrorKind::kInvalidArgument,
                "a data-parallel run trains on one device kind: give --devices cpu (Gloo) or --devices cuda (NCCL, "
                "one GPU per rank: cuda:LOCAL_RANK)");
  if (all_cpu) {
    m.devices = {"cpu"};
    return "gloo";
  }
  const int64_t gpus = static_cast<int64_t>(visible_devices().size()) - 1;  // visible_devices lists "cpu" first
  if (e.local_rank >= gpus)
    throw_error(ErrorKind::kDevice,
                fmt::format("local rank {} has no GPU: this host shows {} GPU(s) and runs {} ranks; use "
                            "--nproc-per-node (or LOCAL_WORLD_SIZE) <= {}",
                            e.local_rank, gpus, e.local_world_size, gpus));
  m.devices = {fmt::format("cuda:{}", e.local_rank)};
  return "nccl";
}

// Every rank compares the settings that must agree (the whole matrix but the command line and
// the rank-local view of devices).
std::string settings_json(const MatrixConfig& m) {
  auto j = nlohmann::json::parse(matrix_config_to_json(m));
  j.erase("command_line");
  return j.dump();
}

// The run folder name, rank 0's choice; "!" + message when rank 0 refuses it.
std::string agree_run_name(Context& c, const MatrixConfig& m) {
  std::string name;
  if (c.rank() == 0) {
    name = m.run_name.empty() ? utc_timestamp(UtcFormat::kFolder) : m.run_name;
    if (auto refusal = run_folder_refusal(m, name); !refusal.empty()) name = "!" + refusal;
  }
  name = c.from_rank0("run_name", name);
  if (!name.empty() && name[0] == '!') throw_error(ErrorKind::kIo, name.substr(1));
  return name;
}

}  // namespace

std::string run_folder_refusal(const MatrixConfig& m, const std::string& name) {
  const std::string dir = m.out_dir + "/" + name;
  if (!file_exists(dir + "/results.json")) return "";
  return fmt::format("run folder '{}' already holds results; choose another --name (a distributed run cannot be "
                     "resumed)",
                     dir);
}

bool setup_rank(MatrixConfig& m) {
  auto env = detect_env();
  if (!env) return false;
  if (m.resume)
    throw_error(ErrorKind::kInvalidArgument, "--resume is not supported for data-parallel runs; start a new run");
  auto& slot = context_slot();
  slot = std::make_unique<Context>(*env, m.dist);
  Context& c = *slot;
  c.check_same("settings", settings_json(m));
  const std::string backend = pick_backend(m, *env);
  if (backend == "nccl" && !std::getenv("NCCL_NVLS_ENABLE")) ::setenv("NCCL_NVLS_ENABLE", "0", 0);
  if (m.train.threads == 0) m.train.threads = default_rank_threads(*env, read_cpu_budget());
  c.history_db = m.history_db.empty() ? m.out_dir + "/history.sqlite" : m.history_db;
  const std::string name = agree_run_name(c, m);
  if (c.rank() == 0) {
    m.run_name = name;
  } else {
    m.out_dir = (std::filesystem::path(m.out_dir) / name / "ranks").string();
    m.run_name = fmt::format("rank{}", c.rank());
    m.progress = false;
  }
  c.connect(backend);
  return true;
}

}  // namespace dist
}  // namespace trainscope

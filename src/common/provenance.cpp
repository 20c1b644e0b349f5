#include "common/provenance_json.h"

#include "common/text.h"

#include <fmt/format.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <thread>

#include "trainscope/build_info.h"

namespace trainscope {

Provenance collect_host_provenance(const std::string& proc_root) {
  Provenance p;
  p.date_utc = utc_timestamp();
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) == 0) p.host = host;
  std::ifstream cpuinfo(proc_root + "/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto pos = line.find(':');
      if (pos != std::string::npos) p.cpu_model = line.substr(pos + 2);
      break;
    }
  }
  p.cpu_logical_cores = static_cast<int64_t>(std::thread::hardware_concurrency());
  p.trainscope_version = TRAINSCOPE_VERSION;
  p.git_commit = TRAINSCOPE_GIT_COMMIT;
  p.build_type = TRAINSCOPE_BUILD_TYPE;
  p.compiler = TRAINSCOPE_CXX_COMPILER;
  return p;
}

nlohmann::json to_json(const Provenance& p) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : p.gpus)
    gpus.push_back({{"name", g.name},
                    {"memory_total_bytes", g.memory_total_bytes},
                    {"compute_capability", g.compute_capability},
                    {"pci_bus_id", g.pci_bus_id}});
  auto opt = [](const std::string& s) -> nlohmann::json { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  return {{"schema_version", p.schema_version},
          {"date_utc", p.date_utc},
          {"host", p.host},
          {"cpu_model", p.cpu_model},
          {"cpu_logical_cores", p.cpu_logical_cores},
          {"gpus", gpus},
          {"gpu_driver", opt(p.gpu_driver)},
          {"nvml_version", opt(p.nvml_version)},
          {"cuda_runtime", opt(p.cuda_runtime)},
          {"libtorch_version", p.libtorch_version},
          {"trainscope_version", p.trainscope_version},
          {"git_commit", p.git_commit},
          {"build_type", p.build_type},
          {"compiler", p.compiler},
          {"command_line", p.command_line},
          {"seed", p.seed},
          {"intra_op_threads", p.intra_op_threads}};
}

Provenance provenance_from_json(const nlohmann::json& j) {
  Provenance p;
  auto s = [&](const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string(); };
  p.schema_version = j.value("schema_version", 0);
  p.date_utc = s("date_utc");
  p.host = s("host");
  p.cpu_model = s("cpu_model");
  p.cpu_logical_cores = j.value("cpu_logical_cores", int64_t{0});
  if (j.contains("gpus"))
    for (const auto& g : j["gpus"]) {
      GpuDescription d;
      d.name = g.value("name", "");
      d.memory_total_bytes = g.value("memory_total_bytes", int64_t{0});
      d.compute_capability = g.value("compute_capability", "");
      d.pci_bus_id = g.value("pci_bus_id", "");
      p.gpus.push_back(d);
    }
  p.gpu_driver = s("gpu_driver");
  p.nvml_version = s("nvml_version");
  p.cuda_runtime = s("cuda_runtime");
  p.libtorch_version = s("libtorch_version");
  p.trainscope_version = s("trainscope_version");
  p.git_commit = s("git_commit");
  p.build_type = s("build_type");
  p.compiler = s("compiler");
  p.command_line = s("command_line");
  p.seed = j.value("seed", uint64_t{0});
  p.intra_op_threads = j.value("intra_op_threads", int64_t{0});
  return p;
}

std::string provenance_csv_comment(const Provenance& p) {
  std::string out;
  auto j = to_json(p);
  for (auto& [k, v] : j.items()) {
    std::string val = v.is_string() ? v.get<std::string>() : v.dump();
    for (auto& c : val)
      if (c == '\n' || c == '\r') c = ' ';
    out += fmt::format("# {}: {}\n", k, val);
  }
  return out;
}

}  // namespace trainscope

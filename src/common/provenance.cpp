#include "common/provenance_json.h"

#include "common/text.h"

#include <fmt/format.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <thread>

#include "trainscope/build_info.h"
#include "trainscope/cpu_budget.h"
#include "trainscope/git_commit.h"

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
  const CpuBudget cpus = read_cpu_budget(proc_root);
  p.cpu_logical_cores = cpus.online;
  p.cpu_usable_cores = cpus.usable;
  p.cpu_limit = cpus.limited_by;
  p.trainscope_version = TRAINSCOPE_VERSION;
  p.git_commit = TRAINSCOPE_GIT_COMMIT;
  p.build_type = TRAINSCOPE_BUILD_TYPE;
  p.compiler = TRAINSCOPE_CXX_COMPILER;
  return p;
}

// to_json(Provenance) and provenance_from_json: src/results/record_json.cpp (Provenance::fields).

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

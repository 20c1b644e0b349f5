// libFuzzer target: the /proc text parsers of the telemetry component (src/telemetry/
// proc_parse.h). They never throw; every result must be self-consistent.
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "telemetry/proc_parse.h"

using namespace trainscope::telemetry;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto cpus = parse_proc_stat(text);
  const CpuJiffies* prev = nullptr;
  for (const auto& [name, j] : cpus) {
    if (name.rfind("cpu", 0) != 0) std::abort();
    if (prev) {
      auto u = cpu_util_pct(*prev, j);
      if (u && (!(*u >= 0) || *u > 100)) std::abort();
    }
    prev = &j;
  }
  (void)parse_self_stat(text);
  (void)parse_kb_field(text, "VmRSS");
  (void)parse_kb_field(text, "MemTotal");
  for (double mhz : parse_cpuinfo_mhz(text)) (void)std::isfinite(mhz);
  if (auto cg = parse_self_cgroup(text); cg && (cg->path.empty() || cg->path.front() != '/')) std::abort();
  (void)parse_u64(text);
  (void)parse_i64(text);
  return 0;
}

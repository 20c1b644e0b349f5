// The devices and provenance of this process (trainscope/runner.h).
#include "train/device.h"
#include "trainscope/host_malloc.h"
#include "trainscope/runner.h"

namespace trainscope {

std::vector<std::pair<std::string, std::string>> list_devices() {
  auto host = collect_host_provenance();
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& d : visible_devices()) out.emplace_back(d, device_display_name(d, host.cpu_model));
  return out;
}

Provenance collect_provenance(const std::string& command_line, uint64_t seed) {
  Provenance p = collect_host_provenance();
  add_torch_provenance(p);
  p.command_line = command_line;
  p.seed = seed;
  p.intra_op_threads = at::get_num_threads();
  p.host_allocator = host_allocator();
  return p;
}

}  // namespace trainscope

#include "workload/model_names.h"

#include <algorithm>
#include <filesystem>

namespace trainscope {

bool is_torchscript_path(const std::string& m) {
  auto ends = [&](const char* s) {
    std::string e(s);
    return m.size() > e.size() && m.compare(m.size() - e.size(), e.size(), e) == 0;
  };
  return ends(".pt") || ends(".pth") || ends(".ts") || m.find('/') != std::string::npos;
}

std::vector<std::string> run_id_model_names(const std::vector<std::string>& models) {
  std::vector<std::string> names;
  for (const auto& m : models) {
    const std::string base = is_torchscript_path(m) ? std::filesystem::path(m).stem().string() : m;
    std::string name = base;
    for (int k = 2; std::find(names.begin(), names.end(), name) != names.end(); ++k)
      name = base + "-" + std::to_string(k);
    names.push_back(name);
  }
  return names;
}

}  // namespace trainscope

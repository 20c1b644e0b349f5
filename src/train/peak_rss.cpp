#include "train/peak_rss.h"

#include <sys/resource.h>

#include <fstream>
#include <string>

namespace trainscope {

bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  if (!f) return false;
  f << "5";
  return static_cast<bool>(f.flush());
}

std::optional<int64_t> peak_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return std::nullopt;
}

std::optional<int64_t> lifetime_peak_rss_bytes() {
  struct rusage ru {};
  if (getrusage(RUSAGE_SELF, &ru) != 0) return std::nullopt;
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;
}

}  // namespace trainscope

// The CPUs this process may use: affinity mask and cgroup CPU quota (trainscope/provenance.h CpuBudget).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "common/text.h"
#include "trainscope/cpu_budget.h"
#include "trainscope/provenance.h"

namespace trainscope {
namespace {

// The first line of a file, "" when it cannot be read.
std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// CPUs in a kernel CPU list ("0-3,8-11" -> 8, "5" -> 1); 0 when it does not parse.
int64_t count_cpu_list(const std::string& list) {
  int64_t n = 0;
  std::stringstream ss(list);
  std::string part;
  while (std::getline(ss, part, ',')) {
    unsigned lo = 0, hi = 0;
    char dash = 0;
    std::stringstream ps(part);
    if (!(ps >> lo)) return 0;
    if (ps >> dash) {
      if (dash != '-' || !(ps >> hi) || hi < lo) return 0;
    } else {
      hi = lo;
    }
    n += hi - lo + 1;
  }
  return n;
}

// Cpus_allowed_list of /proc/self/status, counted; 0 when absent.
int64_t affinity_cpus(const std::string& proc_root) {
  std::ifstream in(proc_root + "/self/status");
  std::string line;
  const std::string key = "Cpus_allowed_list:";
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) {
      auto v = line.substr(key.size());
      v.erase(0, v.find_first_not_of(" \t"));
      return count_cpu_list(v);
    }
  return 0;
}

// The cgroup path of a controller in /proc/self/cgroup: v2's "0::/path" when `controller` is
// "", else the v1 line whose controller list holds it ("4:cpu,cpuacct:/path"); nullopt if none.
std::optional<std::string> cgroup_path(const std::string& proc_root, const std::string& controller,
                                       std::string* v1_mount) {
  std::ifstream in(proc_root + "/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string ctrls = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controller.empty() && line.rfind("0::", 0) == 0) return path;
    if (controller.empty()) continue;
    std::stringstream cs(ctrls);
    std::string c;
    while (std::getline(cs, c, ','))
      if (c == controller) {
        if (v1_mount) *v1_mount = ctrls;
        return path;
      }
  }
  return std::nullopt;
}

// A quota / period pair in CPUs, nullopt when unlimited ("max", -1) or not numbers.
std::optional<double> quota_of(const std::string& quota, const std::string& period) {
  try {
    if (quota.empty() || quota == "max" || quota[0] == '-') return std::nullopt;
    const double q = std::stod(quota), p = std::stod(period);
    if (q > 0 && p > 0) return q / p;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// The smallest quota on `path` and its ancestors under `dir` (a limit on a parent cgroup, e.g.
// a Slurm job's, binds its children too); `read` gives one folder's quota.
template <class Read>
std::optional<double> smallest_quota(const std::string& dir, std::string path, Read read) {
  std::optional<double> best;
  while (true) {
    if (auto q = read(dir + (path == "/" ? "" : path)); q && (!best || *q < *best)) best = q;
    if (path.empty() || path == "/") break;
    const auto slash = path.find_last_of('/');
    path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  }
  return best;
}

std::optional<double> cgroup_quota(const std::string& proc_root, const std::string& root) {
  if (auto p2 = cgroup_path(proc_root, "", nullptr)) {
    auto v2 = [](const std::string& d) {
      std::stringstream ss(first_line(d + "/cpu.max"));
      std::string q, p;
      ss >> q >> p;
      return quota_of(q, p);
    };
    if (auto q = smallest_quota(root, *p2, v2)) return q;
  }
  std::string mount;
  auto p1 = cgroup_path(proc_root, "cpu", &mount);
  if (!p1) return std::nullopt;
  auto v1 = [](const std::string& d) {
    return quota_of(first_line(d + "/cpu.cfs_quota_us"), first_line(d + "/cpu.cfs_period_us"));
  };
  if (auto q = smallest_quota(root + "/" + mount, *p1, v1)) return q;
  return smallest_quota(root + "/cpu", *p1, v1);
}

}  // namespace

CpuBudget read_cpu_budget(const std::string& proc_root, const std::string& cgroup_root, int64_t online) {
  CpuBudget b;
  b.online = online > 0 ? online : std::max<int64_t>(1, std::thread::hardware_concurrency());
  b.affinity = affinity_cpus(proc_root);
  b.quota_cpus = cgroup_quota(proc_root, cgroup_root);
  b.usable = b.affinity > 0 ? std::min(b.affinity, b.online) : b.online;
  std::vector<std::string> why;
  if (b.usable < b.online)
    why.push_back(fmt::format("affinity mask: {} of {} CPUs, set by taskset, Slurm or a cpuset", b.usable, b.online));
  if (b.quota_cpus) {
    const auto q = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(*b.quota_cpus - 1e-9)));
    if (q < b.usable) {
      b.usable = q;
      why.push_back(fmt::format("cgroup CPU quota: {:g} CPU{}, set by a container or job limit", *b.quota_cpus,
                                *b.quota_cpus == 1 ? "" : "s"));
    }
  }
  b.limited_by = fmt::format("{}", fmt::join(why, "; "));
  return b;
}

int64_t usable_cpus() { return read_cpu_budget().usable; }

std::string cpu_count_words(const Provenance& p) {
  std::string s = fmt::format("{} logical CPU{}", p.cpu_logical_cores, p.cpu_logical_cores == 1 ? "" : "s");
  if (p.cpu_usable_cores > 0 && p.cpu_usable_cores < p.cpu_logical_cores) s += fmt::format(", {} usable", p.cpu_usable_cores);
  return s;
}

}  // namespace trainscope

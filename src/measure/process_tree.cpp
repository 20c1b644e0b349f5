// ProcessTree (process_tree.h): one /proc scan per sample, parents from each stat's ppid.
#include "measure/process_tree.h"

#include <dirent.h>
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

namespace trainscope::measure {
namespace {

struct Stat {
  int ppid = 0;
  int64_t ticks = 0, threads = 0, rss_pages = 0;
};

// /proc/<pid>/stat: the fields after the command name's closing parenthesis, from field 3 (state).
bool read_stat(const std::string& path, Stat& s) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(text.substr(close + 1));
  std::vector<std::string> f;
  for (std::string w; rest >> w;) f.push_back(w);
  // a zombie (exited, not yet waited for) holds no memory and runs nothing: not part of the tree
  if (f.size() < 22 || f[0] == "Z" || f[0] == "X") return false;
  try {
    s.ppid = std::stoi(f[1]);
    s.ticks = std::stoll(f[11]) + std::stoll(f[12]) + std::stoll(f[13]) + std::stoll(f[14]);
    s.threads = std::stoll(f[17]);
    s.rss_pages = std::stoll(f[21]);
  } catch (const std::exception&) {
    return false;
  }
  return s.rss_pages > 0;  // 0: exiting, its memory already released (a user process always has pages)
}

}  // namespace

ProcessTree::ProcessTree(int root_pid, std::string proc_root)
    : root_(root_pid), proc_(std::move(proc_root)), ticks_per_s_(sysconf(_SC_CLK_TCK)), page_bytes_(sysconf(_SC_PAGESIZE)) {}

void ProcessTree::sample(int64_t t_ns) {
  std::map<int, Stat> all;
  if (DIR* d = ::opendir(proc_.c_str())) {
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
      Stat s;
      if (read_stat(proc_ + "/" + name + "/stat", s)) all[std::stoi(name)] = s;
    }
    ::closedir(d);
  }
  std::multimap<int, int> children;
  for (const auto& [pid, s] : all) children.emplace(s.ppid, pid);
  TreeSample out;
  out.t_ns = t_ns;
  int64_t ticks = 0;
  std::vector<int> todo{root_}, seen;
  while (!todo.empty()) {
    const int pid = todo.back();
    todo.pop_back();
    const auto it = all.find(pid);
    if (it == all.end()) continue;
    ticks += it->second.ticks, out.threads += it->second.threads, ++out.processes;
    seen.push_back(pid);
    out.rss_bytes += it->second.rss_pages * page_bytes_;
    for (auto [b, e] = children.equal_range(pid); b != e; ++b) todo.push_back(b->second);
  }
  if (out.processes == 0) return;  // gone
  pids_ = std::move(seen);
  if (last_ticks_ >= 0 && t_ns > last_t_ns_)
    out.cpu_pct = 100.0 * static_cast<double>(std::max<int64_t>(0, ticks - last_ticks_)) / static_cast<double>(ticks_per_s_) /
                  (static_cast<double>(t_ns - last_t_ns_) * 1e-9);
  last_ticks_ = ticks, last_t_ns_ = t_ns;
  samples_.push_back(out);
}

TreeSummary summarize_tree(const std::vector<TreeSample>& samples, int64_t t0_ns, int64_t t1_ns) {
  TreeSummary s;
  double cpu_sum = 0;
  int64_t cpu_n = 0;
  for (const TreeSample& x : samples) {
    if (x.t_ns < t0_ns || x.t_ns > t1_ns) continue;
    ++s.samples;
    s.rss_bytes_max = std::max(s.rss_bytes_max.value_or(0), x.rss_bytes);
    s.threads_max = std::max(s.threads_max.value_or(0), x.threads);
    s.processes_max = std::max(s.processes_max.value_or(0), x.processes);
    if (x.cpu_pct < 0) continue;
    cpu_sum += x.cpu_pct, ++cpu_n;
    s.cpu_pct_max = std::max(s.cpu_pct_max.value_or(0.0), x.cpu_pct);
  }
  if (cpu_n) s.cpu_pct_mean = cpu_sum / static_cast<double>(cpu_n);
  return s;
}

std::string tree_csv(const std::vector<TreeSample>& samples) {
  std::string s = "t_ns,cpu_pct,rss_bytes,threads,processes\n";
  for (const TreeSample& x : samples)
    s += fmt::format("{},{},{},{},{}\n", x.t_ns, x.cpu_pct < 0 ? "" : fmt::format("{:.2f}", x.cpu_pct), x.rss_bytes,
                     x.threads, x.processes);
  return s;
}

}  // namespace trainscope::measure

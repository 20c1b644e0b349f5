// CPU, host memory and this process, from /proc (proc(5)) and cpufreq in /sys; the memory of
// this process's cgroup (a container's own usage and limit) from /sys/fs/cgroup (cgroups(7)).
// Every poll reads utilisation (/proc/stat, /proc/self/stat) and memory (/proc/self/status,
// /proc/meminfo, the cgroup's files: a run shorter than a second still gets its peak memory);
// CPU frequency (one cpufreq file per CPU, or /proc/cpuinfo, both growing with the CPU count)
// is read once per slow interval (docs/telemetry.md#cost-to-the-workload).
#include <unistd.h>

#include <filesystem>

#include "telemetry/proc_parse.h"
#include "telemetry/source.h"

namespace trainscope::telemetry {
namespace {

class ProcSource final : public TelemetrySource {
 public:
  ProcSource(std::string proc_root, std::string sys_root, FileReader reader, int64_t slow_interval_ns)
      : proc_(std::move(proc_root)), sys_(std::move(sys_root)), read_(std::move(reader)), slow_(slow_interval_ns) {
    long tck = ::sysconf(_SC_CLK_TCK);
    ticks_per_s_ = tck > 0 ? static_cast<double>(tck) : 100.0;
  }

  std::string name() const override { return "proc"; }

  SourceProbe probe() override {
    auto stat = read_(proc_ + "/stat");
    if (!stat.text) return {false, proc_ + "/stat: " + errno_text(stat.error)};
    auto cpus = parse_proc_stat(*stat.text);
    if (!cpus.count("cpu")) return {false, proc_ + "/stat: no 'cpu' line (not a procfs stat file)"};
    for (const auto& [name, j] : cpus)
      if (name != "cpu") cpu_names_.push_back(name);
    fields_ = {"util_pct", "steal_pct"};
    has_self_stat_ = parse_self_stat(read_(proc_ + "/self/stat").text.value_or("")).has_value();
    if (has_self_stat_) fields_.insert(fields_.end(), {"cpu_pct", "threads_count"});
    else notes_.push_back(proc_ + "/self/stat unreadable");
    auto status = read_(proc_ + "/self/status").text.value_or("");
    has_status_ = parse_kb_field(status, "VmRSS").has_value();
    if (has_status_) fields_.insert(fields_.end(), {"rss_bytes", "peak_rss_bytes"});
    else notes_.push_back(proc_ + "/self/status has no VmRSS");
    auto meminfo = read_(proc_ + "/meminfo").text.value_or("");
    has_meminfo_ = parse_kb_field(meminfo, "MemTotal").has_value();
    if (has_meminfo_) fields_.insert(fields_.end(), {"mem_total_bytes", "mem_used_bytes", "mem_available_bytes"});
    else notes_.push_back(proc_ + "/meminfo has no MemTotal");
    // Frequency: cpufreq (per CPU, kHz) when the kernel exposes it, else /proc/cpuinfo MHz.
    for (const auto& c : cpu_names_) {
      auto p = sys_ + "/devices/system/cpu/" + c + "/cpufreq/scaling_cur_freq";
      if (read_(p).text) freq_files_.emplace_back(c, p);
    }
    if (freq_files_.empty()) {
      auto mhz = parse_cpuinfo_mhz(read_(proc_ + "/cpuinfo").text.value_or(""));
      freq_from_cpuinfo_ = !mhz.empty();
      if (!freq_from_cpuinfo_) notes_.push_back("no cpufreq scaling_cur_freq and no 'cpu MHz' in cpuinfo");
    }
    if (!freq_files_.empty() || freq_from_cpuinfo_) fields_.push_back("freq_mhz");
    probe_cgroup();
    return {true, ""};
  }

  std::vector<std::string> fields_supported() const override { return fields_; }

  nlohmann::json details() const override {
    return {{"logical_cpus", cpu_names_.size()},
            {"freq_source", !freq_files_.empty() ? "cpufreq" : freq_from_cpuinfo_ ? "cpuinfo" : "none"},
            {"cgroup_memory", cgroup_usage_.empty() ? nlohmann::json(nullptr) : nlohmann::json(cgroup_usage_)},
            {"slow_fields_interval_s", static_cast<double>(slow_.period_ns()) * 1e-9},
            {"notes", notes_}};
  }

  void sample(int64_t t_ns, SampleBatch& out) override {
    sample_utilisation(t_ns, out);
    sample_memory(out);
    sample_cgroup(out);
    if (slow_.due(t_ns)) sample_freq(out);
  }

 private:
  // Every poll: per-CPU utilisation (/proc/stat deltas), this process's CPU and threads.
  void sample_utilisation(int64_t t_ns, SampleBatch& out) {
    auto stat = read_(proc_ + "/stat");
    if (!stat.text) {
      out.drop("cpu", "util_pct", drop_reason::kUnreadable);
    } else {
      auto cpus = parse_proc_stat(*stat.text);
      if (cpus.empty()) out.drop("cpu", "util_pct", drop_reason::kParseError);
      for (const auto& [name, j] : cpus) {
        auto it = last_jiffies_.find(name);
        if (it != last_jiffies_.end()) {
          if (auto u = cpu_util_pct(it->second, j)) out.add(name, "util_pct", *u);
          if (name == "cpu")  // the machine-wide line only
            if (auto st = cpu_steal_pct(it->second, j)) out.add(name, "steal_pct", *st);
        }
        last_jiffies_[name] = j;
      }
    }
    if (has_self_stat_) {
      auto s = parse_self_stat(read_(proc_ + "/self/stat").text.value_or(""));
      if (!s) {
        out.drop("process", "cpu_pct", drop_reason::kParseError);
      } else {
        out.add("process", "threads_count", static_cast<double>(s->threads));
        if (last_self_ && t_ns > last_self_t_ns_ && s->cpu_ticks >= last_self_->cpu_ticks) {
          double cpu_s = static_cast<double>(s->cpu_ticks - last_self_->cpu_ticks) / ticks_per_s_;
          out.add("process", "cpu_pct", 100.0 * cpu_s / (static_cast<double>(t_ns - last_self_t_ns_) * 1e-9));
        }
        last_self_ = s;
        last_self_t_ns_ = t_ns;
      }
    }
  }

  // This process's RSS and peak RSS, the host's memory.
  void sample_memory(SampleBatch& out) {
    if (has_status_) {
      auto text = read_(proc_ + "/self/status").text.value_or("");
      auto rss = parse_kb_field(text, "VmRSS"), hwm = parse_kb_field(text, "VmHWM");
      if (rss) out.add("process", "rss_bytes", static_cast<double>(*rss));
      else out.drop("process", "rss_bytes", drop_reason::kParseError);
      if (hwm) out.add("process", "peak_rss_bytes", static_cast<double>(*hwm));
      else out.drop("process", "peak_rss_bytes", drop_reason::kParseError);
    }
    if (has_meminfo_) {
      auto text = read_(proc_ + "/meminfo").text.value_or("");
      auto total = parse_kb_field(text, "MemTotal"), avail = parse_kb_field(text, "MemAvailable");
      mem_total_ = total;
      if (total) out.add("cpu", "mem_total_bytes", static_cast<double>(*total));
      else out.drop("cpu", "mem_total_bytes", drop_reason::kParseError);
      if (avail) out.add("cpu", "mem_available_bytes", static_cast<double>(*avail));
      if (total && avail && *avail <= *total) out.add("cpu", "mem_used_bytes", static_cast<double>(*total - *avail));
      else out.drop("cpu", "mem_used_bytes", drop_reason::kParseError);
    }
  }

  // The memory cgroup's files: v2 memory.current/memory.max, v1 memory.usage_in_bytes/
  // memory.limit_in_bytes, in the folder /proc/self/cgroup names under <sys>/fs/cgroup (v1:
  // its memory/ hierarchy). Inside a container that path is the host's name for it and is
  // not mounted; the container's own cgroup is then the hierarchy's root folder.
  void probe_cgroup() {
    auto cg = parse_self_cgroup(read_(proc_ + "/self/cgroup").text.value_or(""));
    if (!cg) return;
    const std::string root = sys_ + (cg->v2 ? "/fs/cgroup" : "/fs/cgroup/memory");
    const char* usage = cg->v2 ? "/memory.current" : "/memory.usage_in_bytes";
    const char* limit = cg->v2 ? "/memory.max" : "/memory.limit_in_bytes";
    std::vector<std::string> dirs = {root};
    if (cg->path != "/" && cg->path.find("/..") == std::string::npos) dirs.insert(dirs.begin(), root + cg->path);
    for (const auto& d : dirs)
      if (parse_u64(read_(d + usage).text.value_or(""))) {
        cgroup_usage_ = d + usage;
        // A parent's limit binds its children too: the folder's own and each ancestor's.
        for (std::string a = d; a.size() >= root.size(); a = a.substr(0, a.rfind('/')))
          cgroup_limits_.push_back(a + limit);
        fields_.insert(fields_.end(), {"cgroup_mem_used_bytes", "cgroup_mem_limit_bytes"});
        return;
      }
    notes_.push_back("memory cgroup " + cg->path + ": no readable " + std::string(usage + 1) + " under " + root);
  }

  // Usage always; the limit (the smallest of the folder's and its ancestors') only when there
  // is one: v2 "max" and v1's huge "unlimited" value (at or above MemTotal) are no limit.
  void sample_cgroup(SampleBatch& out) {
    if (cgroup_usage_.empty()) return;
    if (auto used = parse_u64(read_(cgroup_usage_).text.value_or("")))
      out.add("process", "cgroup_mem_used_bytes", static_cast<double>(*used));
    else
      out.drop("process", "cgroup_mem_used_bytes", drop_reason::kUnreadable);
    std::optional<uint64_t> limit;
    for (const auto& f : cgroup_limits_)
      if (auto l = parse_u64(read_(f).text.value_or("")); l && (!limit || *l < *limit)) limit = l;
    if (limit && (!mem_total_ || *limit < *mem_total_))
      out.add("process", "cgroup_mem_limit_bytes", static_cast<double>(*limit));
  }

  void sample_freq(SampleBatch& out) {
    double sum = 0;
    int n = 0;
    if (!freq_files_.empty()) {
      for (const auto& [cpu, path] : freq_files_) {
        auto khz = parse_u64(read_(path).text.value_or(""));
        if (!khz) {
          out.drop(cpu, "freq_mhz", drop_reason::kUnreadable);
          continue;
        }
        double mhz = static_cast<double>(*khz) / 1000.0;
        out.add(cpu, "freq_mhz", mhz);
        sum += mhz;
        ++n;
      }
    } else if (freq_from_cpuinfo_) {
      auto mhz = parse_cpuinfo_mhz(read_(proc_ + "/cpuinfo").text.value_or(""));
      for (size_t i = 0; i < mhz.size(); ++i) {
        out.add("cpu" + std::to_string(i), "freq_mhz", mhz[i]);
        sum += mhz[i];
        ++n;
      }
    }
    if (n > 0) out.add("cpu", "freq_mhz", sum / n);
  }

  std::string proc_, sys_;
  FileReader read_;
  SlowFieldClock slow_;                      // frequency's period; 0: every poll
  double ticks_per_s_ = 100;
  std::vector<std::string> cpu_names_, fields_, notes_;
  std::vector<std::pair<std::string, std::string>> freq_files_;
  std::string cgroup_usage_;                 // file path; empty: no memory cgroup found
  std::vector<std::string> cgroup_limits_;   // the cgroup's limit file, then its ancestors'
  std::optional<uint64_t> mem_total_;        // bytes, from the last /proc/meminfo read
  bool freq_from_cpuinfo_ = false, has_self_stat_ = false, has_status_ = false, has_meminfo_ = false;
  std::map<std::string, CpuJiffies> last_jiffies_;
  std::optional<SelfStat> last_self_;
  int64_t last_self_t_ns_ = 0;
};

}  // namespace

std::unique_ptr<TelemetrySource> make_proc_source(std::string proc_root, std::string sys_root, FileReader reader,
                                                  int64_t slow_interval_ns) {
  return std::make_unique<ProcSource>(std::move(proc_root), std::move(sys_root),
                                      reader ? std::move(reader) : FileReader(read_text_file), slow_interval_ns);
}

}  // namespace trainscope::telemetry

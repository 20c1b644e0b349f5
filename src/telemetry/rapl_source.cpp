// CPU package and DRAM energy from the Linux powercap RAPL driver
// (<sys>/class/powercap/intel-rapl:*; Documentation/power/powercap/powercap.rst).
// energy_uj is a wrapping counter; max_energy_range_uj is its range, so a reading below the
// previous one means it wrapped once (the sampler polls far more often than the ~60 s a
// package needs to wrap at 200+ W with a 2^32 uJ range).
#include <algorithm>
#include <filesystem>
#include <map>

#include "telemetry/proc_parse.h"
#include "telemetry/source.h"

namespace trainscope::telemetry {
namespace {

namespace fs = std::filesystem;

struct Domain {
  std::string zone;    // "intel-rapl:0"
  std::string kind;    // "package" or "dram"
  std::string energy_path;
  uint64_t max_range_uj = 0;
  std::optional<uint64_t> last_uj;
  double accumulated_j = 0;
  uint64_t wraps = 0;
};

class RaplSource final : public TelemetrySource {
 public:
  RaplSource(std::string sys_root, FileReader reader) : sys_(std::move(sys_root)), read_(std::move(reader)) {}

  std::string name() const override { return "rapl"; }

  SourceProbe probe() override {
    fs::path dir = fs::path(sys_) / "class" / "powercap";
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return {false, dir.string() + " does not exist: no RAPL powercap driver, or a virtual machine"};
    std::vector<std::string> zones;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      auto n = e.path().filename().string();
      if (n.rfind("intel-rapl:", 0) == 0) zones.push_back(n);
    }
    std::sort(zones.begin(), zones.end());
    if (zones.empty()) return {false, dir.string() + " has no intel-rapl:* zones"};
    std::vector<std::string> problems;
    for (const auto& z : zones) {
      std::string base = (dir / z).string();
      auto name = read_(base + "/name");
      if (!name.text) {
        problems.push_back(z + "/name: " + errno_text(name.error));
        continue;
      }
      std::string n = name.text->substr(0, name.text->find('\n'));
      std::string kind = n.rfind("package", 0) == 0 ? "package" : n == "dram" ? "dram" : "";
      if (kind.empty()) continue;  // core/uncore/psys: inside the package or overlapping
      Domain d{z, kind, base + "/energy_uj", 0, std::nullopt, 0, 0};
      auto range = read_(base + "/max_energy_range_uj");
      uint64_t range_uj = 0;  // 0 = unreadable (a plain value: GCC 12 misreports the optional as uninitialised)
      if (range.text)
        if (auto v = parse_u64(*range.text)) range_uj = *v;
      auto energy = read_(d.energy_path);
      if (!energy.text) {
        std::string why = z + "/energy_uj: " + errno_text(energy.error);
        if (energy.error == EACCES || energy.error == EPERM)
          why += "; since Linux 5.10 energy_uj is readable by root only (CVE-2020-8694): run as root or "
                 "grant read access (e.g. a udev rule)";
        problems.push_back(why);
        continue;
      }
      if (range_uj == 0) {
        problems.push_back(z + "/max_energy_range_uj unreadable or zero: wrap-around could not be handled");
        continue;
      }
      d.max_range_uj = range_uj;
      domains_.push_back(std::move(d));
    }
    problems_ = problems;
    if (domains_.empty()) return SourceProbe::none("no readable package/dram RAPL domain", problems);
    return {true, ""};
  }

  std::vector<std::string> fields_supported() const override {
    std::vector<std::string> f;
    for (const char* k : {"package", "dram"})
      if (std::any_of(domains_.begin(), domains_.end(), [&](const Domain& d) { return d.kind == k; })) {
        f.push_back(std::string(k) + "_energy_j");
        f.push_back(std::string(k) + "_power_w");
      }
    return f;
  }

  nlohmann::json details() const override {
    nlohmann::json doms = nlohmann::json::array();
    for (const auto& d : domains_)
      doms.push_back({{"zone", d.zone}, {"kind", d.kind}, {"max_energy_range_uj", d.max_range_uj}, {"wraps", d.wraps}});
    return {{"domains", doms}, {"unavailable", problems_}};
  }

  void sample(int64_t t_ns, SampleBatch& out) override {
    for (const char* kind : {"package", "dram"}) {
      bool any = false, all_ok = true;
      double total_j = 0, delta_j = 0;
      for (auto& d : domains_) {
        if (d.kind != kind) continue;
        any = true;
        auto r = read_(d.energy_path);
        auto v = r.text ? parse_u64(*r.text) : std::nullopt;
        if (!v) {
          out.drop("cpu", std::string(kind) + "_energy_j", r.text ? drop_reason::kParseError : drop_reason::kUnreadable);
          all_ok = false;
          continue;
        }
        if (*v > d.max_range_uj) {
          out.drop("cpu", std::string(kind) + "_energy_j", drop_reason::kOutOfRange);
          all_ok = false;
          continue;
        }
        double dj = 0;
        if (d.last_uj) {
          uint64_t du = *v >= *d.last_uj ? *v - *d.last_uj : (d.max_range_uj - *d.last_uj) + *v;
          if (*v < *d.last_uj) ++d.wraps;
          dj = static_cast<double>(du) * 1e-6;
          d.accumulated_j += dj;
        }
        d.last_uj = *v;
        total_j += d.accumulated_j;
        delta_j += dj;
      }
      if (!any || !all_ok) continue;
      out.add("cpu", std::string(kind) + "_energy_j", total_j);
      auto last = last_t_ns_.find(kind);
      if (last != last_t_ns_.end() && t_ns > last->second)
        out.add("cpu", std::string(kind) + "_power_w", delta_j / (static_cast<double>(t_ns - last->second) * 1e-9));
      last_t_ns_[kind] = t_ns;
    }
  }

 private:
  std::string sys_;
  FileReader read_;
  std::vector<Domain> domains_;
  std::vector<std::string> problems_;
  std::map<std::string, int64_t> last_t_ns_;  // last complete reading per kind
};

}  // namespace

std::unique_ptr<TelemetrySource> make_rapl_source(std::string sys_root, FileReader reader) {
  return std::make_unique<RaplSource>(std::move(sys_root), reader ? std::move(reader) : FileReader(read_text_file));
}

}  // namespace trainscope::telemetry

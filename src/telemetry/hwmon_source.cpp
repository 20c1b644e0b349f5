// Temperatures from hwmon (Documentation/hwmon/sysfs-interface.rst: temp*_input in
// millidegrees Celsius, temp*_label) for the CPU drivers coretemp, k10temp and zenpower, and
// from thermal zones (<sys>/class/thermal/thermal_zone*/{type,temp}, millidegrees).
// "cpu" temp_c is the package sensor (coretemp "Package id N", k10temp/zenpower "Tctl"/"Tdie",
// thermal zone "x86_pkg_temp"), the hottest one when there are several.
#include <algorithm>
#include <filesystem>
#include <set>

#include "telemetry/proc_parse.h"
#include "telemetry/source.h"

namespace trainscope::telemetry {
namespace {

namespace fs = std::filesystem;

struct Sensor {
  std::string device;  // "hwmon:coretemp:Core 0", "thermal:x86_pkg_temp"
  std::string path;    // the *_input / temp file
  bool is_cpu_package = false;
};

bool is_cpu_chip(const std::string& chip) { return chip == "coretemp" || chip == "k10temp" || chip == "zenpower"; }

std::string first_line(const std::optional<std::string>& t) {
  if (!t) return "";
  return t->substr(0, t->find('\n'));
}

class HwmonSource final : public TelemetrySource {
 public:
  HwmonSource(std::string sys_root, FileReader reader) : sys_(std::move(sys_root)), read_(std::move(reader)) {}

  std::string name() const override { return "hwmon"; }

  SourceProbe probe() override {
    std::vector<std::string> reasons;
    std::set<std::string> used;
    std::error_code ec;
    fs::path hw = fs::path(sys_) / "class" / "hwmon";
    if (!fs::is_directory(hw, ec)) {
      reasons.push_back(hw.string() + " does not exist");
    } else {
      std::vector<fs::path> dirs;
      for (const auto& e : fs::directory_iterator(hw, ec)) dirs.push_back(e.path());
      std::sort(dirs.begin(), dirs.end());
      int cpu_chips = 0;
      for (const auto& d : dirs) {
        std::string chip = first_line(read_((d / "name").string()).text);
        if (!is_cpu_chip(chip)) continue;
        ++cpu_chips;
        std::vector<std::string> inputs;
        for (const auto& f : fs::directory_iterator(d, ec)) {
          auto n = f.path().filename().string();
          if (n.rfind("temp", 0) == 0 && n.size() > 10 && n.substr(n.size() - 6) == "_input") inputs.push_back(n);
        }
        std::sort(inputs.begin(), inputs.end());
        for (const auto& in : inputs) {
          std::string stem = in.substr(0, in.size() - 6);
          std::string label = first_line(read_((d / (stem + "_label")).string()).text);
          if (label.empty()) label = d.filename().string() + "_" + stem;
          auto probe_read = read_((d / in).string());
          if (!probe_read.text) {
            reasons.push_back((d / in).string() + ": " + errno_text(probe_read.error));
            continue;
          }
          bool pkg = label.rfind("Package id", 0) == 0 || label == "Tctl" || label == "Tdie";
          std::string dev = unique(used, "hwmon:" + chip + ":" + label);
          sensors_.push_back({dev, (d / in).string(), pkg});
        }
      }
      if (cpu_chips == 0) reasons.push_back(hw.string() + " has no coretemp/k10temp/zenpower chip");
    }
    fs::path th = fs::path(sys_) / "class" / "thermal";
    std::vector<fs::path> zones;
    if (fs::is_directory(th, ec))
      for (const auto& e : fs::directory_iterator(th, ec))
        if (e.path().filename().string().rfind("thermal_zone", 0) == 0) zones.push_back(e.path());
    std::sort(zones.begin(), zones.end());
    for (const auto& z : zones) {
      std::string type = first_line(read_((z / "type").string()).text);
      auto t = read_((z / "temp").string());
      if (type.empty() || !t.text) {
        reasons.push_back(z.string() + ": " + (t.text ? "no type" : errno_text(t.error)));
        continue;
      }
      sensors_.push_back({unique(used, "thermal:" + type), (z / "temp").string(), type == "x86_pkg_temp"});
    }
    if (zones.empty()) reasons.push_back(th.string() + " has no thermal zones");
    has_cpu_package_ = std::any_of(sensors_.begin(), sensors_.end(), [](const Sensor& s) { return s.is_cpu_package; });
    reasons_ = reasons;
    if (sensors_.empty()) return SourceProbe::none("no temperature sensor", reasons);
    return {true, ""};
  }

  std::vector<std::string> fields_supported() const override { return {"temp_c"}; }

  nlohmann::json details() const override {
    nlohmann::json s = nlohmann::json::array();
    for (const auto& x : sensors_) s.push_back({{"device", x.device}, {"path", x.path}, {"cpu_package", x.is_cpu_package}});
    return {{"sensors", s}, {"notes", reasons_}};
  }

  void sample(int64_t, SampleBatch& out) override {
    std::optional<double> pkg_max;
    for (const auto& s : sensors_) {
      auto r = read_(s.path);
      auto v = r.text ? parse_i64(*r.text) : std::nullopt;
      if (!v) {
        out.drop(s.device, "temp_c", r.text ? drop_reason::kParseError : drop_reason::kUnreadable);
        continue;
      }
      double c = static_cast<double>(*v) / 1000.0;
      size_t before = out.values.size();
      out.add(s.device, "temp_c", c);
      if (s.is_cpu_package && out.values.size() > before) pkg_max = std::max(pkg_max.value_or(c), c);
    }
    if (pkg_max) out.add("cpu", "temp_c", *pkg_max);
  }

 private:
  static std::string unique(std::set<std::string>& used, std::string name) {
    std::string n = name;
    for (int i = 2; used.count(n); ++i) n = name + "#" + std::to_string(i);
    used.insert(n);
    return n;
  }

  std::string sys_;
  FileReader read_;
  std::vector<Sensor> sensors_;
  std::vector<std::string> reasons_;
  bool has_cpu_package_ = false;
};

}  // namespace

std::unique_ptr<TelemetrySource> make_hwmon_source(std::string sys_root, FileReader reader) {
  return std::make_unique<HwmonSource>(std::move(sys_root), reader ? std::move(reader) : FileReader(read_text_file));
}

}  // namespace trainscope::telemetry

// RAPL (wrap-around, EACCES, missing, garbage) and hwmon/thermal readers on fake sysfs trees.
#include <gtest/gtest.h>

#include "trainscope/fs.h"

#include "telemetry/source.h"
#include "test_util.h"

using namespace trainscope::telemetry;

namespace {
std::optional<double> value(const SampleBatch& b, const std::string& dev, const std::string& metric) {
  for (const auto& r : b.values)
    if (r.device == dev && r.metric == metric) return r.value;
  return std::nullopt;
}
bool dropped(const SampleBatch& b, const std::string& metric, const std::string& reason) {
  for (const auto& d : b.drops)
    if (d.metric == metric && d.reason == reason) return true;
  return false;
}
constexpr uint64_t kMax = 262143328850;  // package max_energy_range_uj in the fixture
}  // namespace

TEST(telemetry_Rapl, WrapAroundKeepsEnergyMonotonicAndCorrect) {
  auto root = ts_test::fresh_tree("rapl");
  auto pkg = root / "sys/class/powercap/intel-rapl:0/energy_uj";
  auto src = make_rapl_source((root / "sys").string(), {});
  auto probe = src->probe();
  ASSERT_TRUE(probe.available) << probe.reason;
  auto fields = src->fields_supported();
  EXPECT_NE(std::find(fields.begin(), fields.end(), "dram_energy_j"), fields.end());
  // Counter: 262143000000 -> wraps -> 500000 -> 2500000 (uJ).
  std::vector<uint64_t> readings = {262143000000ull, 500000ull, 2500000ull};
  std::vector<double> energy;
  int64_t t = 0;
  for (uint64_t r : readings) {
    ts_test::write_file(pkg, std::to_string(r) + "\n");
    SampleBatch b;
    src->sample(t += 1'000'000'000, b);
    energy.push_back(value(b, "cpu", "package_energy_j").value());
  }
  double wrap_j = static_cast<double>(kMax - 262143000000ull + 500000ull) * 1e-6;
  EXPECT_DOUBLE_EQ(energy[0], 0.0);
  EXPECT_NEAR(energy[1], wrap_j, 1e-9);
  EXPECT_NEAR(energy[2], wrap_j + 2.0, 1e-9);
  EXPECT_TRUE(std::is_sorted(energy.begin(), energy.end()));
  EXPECT_EQ(src->details()["domains"][0]["wraps"], 1);
}

TEST(telemetry_Rapl, PowerFromDeltasAndGarbageDropped) {
  auto root = ts_test::fresh_tree("rapl2");
  auto dram = root / "sys/class/powercap/intel-rapl:0:1/energy_uj";
  auto src = make_rapl_source((root / "sys").string(), {});
  ASSERT_TRUE(src->probe().available);
  SampleBatch b1, b2, b3, b4;
  src->sample(1'000'000'000, b1);
  ts_test::write_file(dram, "garbage\n");
  src->sample(2'000'000'000, b2);
  EXPECT_TRUE(dropped(b2, "dram_energy_j", "parse_error"));
  EXPECT_FALSE(value(b2, "cpu", "dram_energy_j"));
  ts_test::write_file(dram, "99999999999999\n");  // above max_energy_range_uj
  src->sample(2'500'000'000, b3);
  EXPECT_TRUE(dropped(b3, "dram_energy_j", "out_of_range"));
  ts_test::write_file(dram, "9000000\n");  // +4 J since the last good reading (t = 1 s)
  src->sample(3'000'000'000, b4);
  EXPECT_NEAR(value(b4, "cpu", "dram_energy_j").value(), 4.0, 1e-9);
  EXPECT_NEAR(value(b4, "cpu", "dram_power_w").value(), 2.0, 1e-9);  // 4 J over 2 s
}

TEST(telemetry_Rapl, EaccesMeansUnavailableWithReason) {
  // Tests run as root, which ignores chmod 000; the reader is injected instead.
  auto root = ts_test::fresh_tree("rapl3");
  FileReader deny = [](const std::string& path) -> FileRead {
    if (path.find("energy_uj") != std::string::npos) return {std::nullopt, EACCES};
    return read_text_file(path);
  };
  auto src = make_rapl_source((root / "sys").string(), deny);
  auto p = src->probe();
  EXPECT_FALSE(p.available);
  EXPECT_NE(p.reason.find("EACCES"), std::string::npos) << p.reason;
  EXPECT_NE(p.reason.find("intel-rapl:0/energy_uj"), std::string::npos) << p.reason;
}

TEST(telemetry_Rapl, MissingPowercapIsUnavailable) {
  auto root = ts_test::fresh_tree("rapl4");
  trainscope::remove_tree(root / "sys/class/powercap");
  auto p = make_rapl_source((root / "sys").string(), {})->probe();
  EXPECT_FALSE(p.available);
  EXPECT_NE(p.reason.find("does not exist"), std::string::npos) << p.reason;
}

TEST(telemetry_Hwmon, CpuPackageTemperatureAndZones) {
  auto root = ts_test::fresh_tree("hwmon");
  auto src = make_hwmon_source((root / "sys").string(), {});
  auto p = src->probe();
  ASSERT_TRUE(p.available) << p.reason;
  SampleBatch b;
  src->sample(1, b);
  EXPECT_DOUBLE_EQ(value(b, "hwmon:coretemp:Package id 0", "temp_c").value(), 45.0);
  EXPECT_DOUBLE_EQ(value(b, "hwmon:coretemp:Core 0", "temp_c").value(), 43.0);
  EXPECT_DOUBLE_EQ(value(b, "thermal:acpitz", "temp_c").value(), 27.8);
  EXPECT_DOUBLE_EQ(value(b, "cpu", "temp_c").value(), 46.0);  // hottest package sensor (x86_pkg_temp)
  EXPECT_FALSE(value(b, "hwmon:nvme:hwmon1_temp1", "temp_c"));  // not a CPU chip
  // Garbage and out-of-range readings are dropped, not stored.
  ts_test::write_file(root / "sys/class/hwmon/hwmon0/temp2_input", "n/a\n");
  ts_test::write_file(root / "sys/class/thermal/thermal_zone1/temp", "-274000\n");
  SampleBatch b2;
  src->sample(2, b2);
  EXPECT_TRUE(dropped(b2, "temp_c", "parse_error"));
  EXPECT_TRUE(dropped(b2, "temp_c", "out_of_range"));
  EXPECT_FALSE(value(b2, "thermal:acpitz", "temp_c"));
}

TEST(telemetry_Hwmon, NoSensorsIsUnavailable) {
  auto root = ts_test::fresh_tree("hwmon2");
  trainscope::remove_tree(root / "sys/class");
  auto p = make_hwmon_source((root / "sys").string(), {})->probe();
  EXPECT_FALSE(p.available);
  EXPECT_NE(p.reason.find("hwmon does not exist"), std::string::npos) << p.reason;
}

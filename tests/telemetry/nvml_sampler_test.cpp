// The NVML path against libfake_nvml.so, and the sampler's store, summaries and files.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "results/record_json.h"
#include "telemetry/source.h"
#include "test_util.h"
#include "trainscope/error.h"
#include "trainscope/telemetry.h"

using trainscope::TelemetryField;
using trainscope::TelemetryOptions;
using trainscope::TelemetrySampler;
using trainscope::to_json;
namespace record_json = trainscope::record_json;

namespace {

TelemetryOptions nvml_only(const std::string& lib) {
  TelemetryOptions o;
  o.nvml_library = lib;
  o.enable_proc = o.enable_rapl = o.enable_hwmon = false;
  o.slow_interval_s = 3600;  // slow fields: polled on the first sample only
  return o;
}

std::string write_config(const std::string& tag, const nlohmann::json& cfg) {
  auto p = std::filesystem::temp_directory_path() / ("ts_fake_nvml_" + tag + "_" + std::to_string(::getpid()) + ".json");
  ts_test::write_file(p, cfg.dump());
  ::setenv("TS_FAKE_NVML_CONFIG", p.c_str(), 1);
  return p.string();
}

const nlohmann::json kTwoGpus = R"({
  "driver_version": "580.159.04", "nvml_version": "13.580.159.04",
  "devices": [
    {"name": "Fake H200", "uuid": "GPU-aaaa", "pci_bus_id": "00000000:19:00.0", "power_limit_mw": 700000, "gpm": true,
     "readings": {
       "util_gpu": [10, 20, 4294967295, 40, 50, 60], "util_mem": 5,
       "mem_total": 150000000000, "mem_used": [1000, 2000], "mem_reserved": 500,
       "power_mw": [100000, 100000, 100000, 200000, 200000, 200000, 4294967295, 300000],
       "power_avg_mw": 150000, "power_instant_mw": [160000, 4294967295],
       "energy_mj": [1000000, 1500000], "temp_c": [40, 41, 200],
       "sm_clock_mhz": 1980, "mem_clock_mhz": 2619, "clocks_event_reasons": 1,
       "process_mem_bytes": 4096,
       "gpm_sm_util": 55.5, "gpm_sm_occupancy": 30.25, "gpm_tensor": 12.0}},
    {"name": "Fake H200", "uuid": "GPU-bbbb", "pci_bus_id": "00000000:2A:00.0", "lost_after_calls": 30,
     "readings": {"util_gpu": 1, "util_mem": 1, "mem_total": 1000, "mem_used": 1, "power_mw": 23000, "temp_c": 30}}
  ]})"_json;

}  // namespace

TEST(telemetry_Nvml, FakeLibraryFieldsSentinelsUnsupportedAndLostGpu) {
  write_config("two", kTwoGpus);
  TelemetrySampler s(nvml_only(TS_FAKE_NVML), std::chrono::steady_clock::now());
  s.probe();
  auto src = record_json::write(s.sources());
  ASSERT_EQ(src.size(), 4u);
  ASSERT_TRUE(src[0]["available"].get<bool>()) << src.dump(2);
  EXPECT_EQ(src[0]["details"]["driver_version"], "580.159.04");
  EXPECT_FALSE(src[1]["available"].get<bool>());  // proc disabled, with reason
  EXPECT_NE(src[1]["reason"].get<std::string>().find("disabled"), std::string::npos);
  auto gpus = s.gpus();
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].uuid, "GPU-aaaa");
  EXPECT_EQ(gpus[1].pci_bus_id, "00000000:2A:00.0");
  EXPECT_DOUBLE_EQ(gpus[0].power_limit_w.value(), 700.0);
  EXPECT_EQ(gpus[0].memory_total_bytes.value(), 150000000000ull);

  for (int i = 0; i < 8; ++i) s.sample_now();
  auto sum = to_json(s.summarize(0, s.now_ns(), 1000));
  auto g0 = sum["devices"]["gpu0"]["fields"];
  // power_mw: 8 readings, one sentinel -> 7 stored, 1 dropped.
  EXPECT_EQ(g0["power_w"]["count"], 7);
  EXPECT_EQ(g0["power_w"]["dropped"], 1);
  EXPECT_EQ(g0["power_w"]["drop_reasons"]["sentinel"], 1);
  EXPECT_DOUBLE_EQ(g0["power_w"]["max"].get<double>(), 300.0);
  EXPECT_EQ(g0["util_pct"]["dropped"], 1);
  EXPECT_EQ(g0["temp_c"]["drop_reasons"]["out_of_range"], 6);  // 200 C repeats from call 3 on
  EXPECT_EQ(g0["mem_reserved_bytes"]["count"], 8);
  EXPECT_DOUBLE_EQ(g0["power_avg_w"]["mean"].get<double>(), 150.0);
  EXPECT_EQ(g0["power_instant_w"]["count"], 1);
  EXPECT_DOUBLE_EQ(g0["process_mem_bytes"]["max"].get<double>(), 4096);  // own pid only
  EXPECT_EQ(g0["energy_j"]["count"], 1);  // slow field: once per slow interval, not per sample
  // PCIe is absent from the config: not supported, counted once, not polled again.
  EXPECT_EQ(g0["pcie_tx_bytes_per_s"]["count"], 0);
  EXPECT_EQ(g0["pcie_tx_bytes_per_s"]["dropped"], 1);
  auto fields = record_json::write(s.sources())[0]["fields_supported"];
  EXPECT_EQ(std::count(fields.begin(), fields.end(), "pcie_tx_bytes_per_s"), 0);
  EXPECT_EQ(std::count(fields.begin(), fields.end(), "power_w"), 1);
  // GPM needs two samples an interval apart: the first slow poll only primes it.
  EXPECT_FALSE(g0.contains("sm_activity_pct"));

  // gpu1 is lost after 12 calls; gpu0 goes on.
  auto details = record_json::write(s.sources())[0]["details"];
  EXPECT_TRUE(details["gpus"][1]["lost"].get<bool>()) << details.dump(2);
  EXPECT_FALSE(details["gpus"][0]["lost"].get<bool>());
  auto g1 = sum["devices"]["gpu1"]["fields"];
  // Budget of 30 calls: probe 2, first sample 13 (unsupported fields are tried once), then 4
  // per sample; the 5th sample's power call is the 30th, its temperature call finds it lost.
  EXPECT_EQ(g1["power_w"]["count"], 5);
  EXPECT_EQ(g1["temp_c"]["count"], 4);
  EXPECT_EQ(g1["temp_c"]["drop_reasons"]["gpu_lost"], 1);
  EXPECT_EQ(g0["util_pct"]["count"], 7);

  // Duplicate readings: the real update period is the mean time between changes.
  for (const auto& series : s.series()) {
    if (series.device != "gpu0" || series.metric != "power_w") continue;
    const auto& p = series.points;  // 100,100,100,200,200,200,300 (sentinel dropped)
    ASSERT_EQ(p.size(), 7u);
    double expected = static_cast<double>(p[6].first - p[0].first) * 1e-9 / 2;
    EXPECT_NEAR(g0["power_w"]["update_period_s"].get<double>(), expected, 1e-12);
  }
}

TEST(telemetry_Nvml, EnergyCounterPreferredAndGpmAfterTwoSamples) {
  write_config("energy", kTwoGpus);
  auto opt = nvml_only(TS_FAKE_NVML);
  opt.slow_interval_s = 1e-3;  // interval >= slow interval: every sample polls slow fields too
  opt.interval_s = 1e-3;
  TelemetrySampler s(opt, std::chrono::steady_clock::now());
  auto a = s.sample_now();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto b = s.sample_now();
  auto sum = to_json(s.summarize(a.t_ns, b.t_ns + 1'000'000, 10));
  auto e = sum["devices"]["gpu0"]["energy"];
  EXPECT_EQ(e["energy_method"], "counter");
  EXPECT_NEAR(e["energy_j"].get<double>(), 500.0, 1e-6);  // 1 500 000 - 1 000 000 mJ
  EXPECT_NEAR(e["joules_per_sample"].get<double>(), 50.0, 1e-6);
  EXPECT_TRUE(e["short_window"].get<bool>());  // the window reaches past the last reading
  EXPECT_DOUBLE_EQ(b.get("gpu0", "sm_activity_pct").value(), 55.5);
  EXPECT_DOUBLE_EQ(b.get("gpu0", "sm_occupancy_pct").value(), 30.25);
  EXPECT_DOUBLE_EQ(b.get("gpu0", "tensor_activity_pct").value(), 12.0);
  // gpu1 has no counter: energy comes from power integration, labelled as such.
  auto e1 = sum["devices"]["gpu1"]["energy"];
  EXPECT_EQ(e1["energy_method"], "power_integration");
  EXPECT_NEAR(e1["energy_j"].get<double>(), 23.0 * static_cast<double>(b.t_ns - a.t_ns) * 1e-9, 1e-6);
}

// The slow fields only for the run's GPU (TelemetrySampler::set_run_devices): none before a run,
// at the first poll after a GPU becomes the run's GPU even when the slow interval is not due, and
// with a fresh GPM baseline then.
TEST(telemetry_Nvml, SlowFieldsOnlyForTheRunsGpuAndAtOnceWhenItBecomesOne) {
  write_config("rundev", kTwoGpus);
  TelemetrySampler s(nvml_only(TS_FAKE_NVML), std::chrono::steady_clock::now());  // slow: first poll only
  s.set_run_devices(std::vector<std::string>{});  // before the probe: applies at it
  auto a = s.sample_now();                        // the slow fields are due, but no GPU is the run's
  EXPECT_TRUE(a.get("gpu0", "power_w"));
  EXPECT_FALSE(a.get("gpu0", "energy_j"));
  EXPECT_FALSE(a.get("gpu0", "process_mem_bytes"));
  s.set_run_devices(std::vector<std::string>{"gpu0"});
  auto b = s.sample_now();  // not due for an hour, but gpu0 just became the run's GPU
  EXPECT_DOUBLE_EQ(b.get("gpu0", "energy_j").value(), 1000.0);
  EXPECT_DOUBLE_EQ(b.get("gpu0", "process_mem_bytes").value(), 4096.0);
  EXPECT_FALSE(b.get("gpu0", "sm_activity_pct"));  // GPM's first sample is the baseline
  EXPECT_TRUE(b.get("gpu1", "power_w"));
  EXPECT_FALSE(b.get("gpu1", "energy_j"));  // gpu1 is not the run's GPU
  auto c = s.sample_now();
  EXPECT_FALSE(c.get("gpu0", "energy_j"));  // once, not on every poll
  EXPECT_TRUE(c.get("gpu0", "power_w"));
}

// PCIe throughput (two ~21 ms calls waiting in the driver) has its own, longer period: the
// other slow fields come every slow interval, PCIe only when its own interval is due, and at once
// when a GPU becomes the run's.
TEST(telemetry_Nvml, PcieThroughputIsReadAtItsOwnLongerIntervalAndWhenAGpuBecomesTheRuns) {
  write_config("pcie", R"({"devices": [{"name": "Fake H200", "uuid": "GPU-dddd", "pci_bus_id": "00000000:19:00.0",
    "readings": {"util_gpu": 50, "mem_total": 1000, "mem_used": 1, "power_mw": 200000,
                 "energy_mj": [1000000, 1500000], "pcie_tx_kbps": 4, "pcie_rx_kbps": 8}}]})"_json);
  auto opt = nvml_only(TS_FAKE_NVML);
  opt.slow_interval_s = opt.interval_s = 1e-3;  // every poll reads the energy counter
  opt.pcie_interval_s = 3600;                   // PCIe once an hour
  TelemetrySampler s(opt, std::chrono::steady_clock::now());
  auto poll = [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return s.sample_now();
  };
  auto first = poll();
  EXPECT_DOUBLE_EQ(first.get("gpu0", "pcie_tx_bytes_per_s").value(), 4 * 1024.0);  // due at the first poll
  EXPECT_DOUBLE_EQ(first.get("gpu0", "pcie_rx_bytes_per_s").value(), 8 * 1024.0);
  for (int i = 0; i < 3; ++i) {
    auto b = poll();
    EXPECT_TRUE(b.get("gpu0", "energy_j"));              // the slow interval: every poll
    EXPECT_FALSE(b.get("gpu0", "pcie_tx_bytes_per_s"));  // not due for an hour
  }
  s.set_run_devices(std::vector<std::string>{});
  EXPECT_FALSE(poll().get("gpu0", "pcie_tx_bytes_per_s"));
  s.set_run_devices(std::vector<std::string>{"gpu0"});
  EXPECT_TRUE(poll().get("gpu0", "pcie_tx_bytes_per_s"));  // the run's start: read at once
  EXPECT_FALSE(poll().get("gpu0", "pcie_tx_bytes_per_s"));

  opt.slow_interval_s = opt.interval_s = 2e-3;
  opt.pcie_interval_s = 1e-3;  // below the slow interval: raised to it, every poll
  TelemetrySampler every(opt, std::chrono::steady_clock::now());
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    EXPECT_TRUE(every.sample_now().get("gpu0", "pcie_rx_bytes_per_s"));
  }
  opt.pcie_interval_s = 0;
  EXPECT_THROW(TelemetrySampler(opt, std::chrono::steady_clock::now()), trainscope::Error);
}

// read_energy_now: the run GPU's energy counter between slow polls (a window's edge), not the
// other slow fields, and not another GPU's counter.
TEST(telemetry_Nvml, ReadEnergyNowReadsTheRunGpusCounterBetweenSlowPolls) {
  write_config("edge", kTwoGpus);
  TelemetrySampler s(nvml_only(TS_FAKE_NVML), std::chrono::steady_clock::now());  // slow: first poll only
  s.set_run_devices(std::vector<std::string>{"gpu0"});
  EXPECT_TRUE(s.sample_now().get("gpu0", "energy_j"));  // the first poll: slow fields due
  EXPECT_FALSE(s.sample_now().get("gpu0", "energy_j"));  // not due for an hour
  auto edge = s.read_energy_now();
  EXPECT_DOUBLE_EQ(edge.get("gpu0", "energy_j").value(), 1500.0);  // the counter's second reading
  EXPECT_FALSE(edge.get("gpu0", "process_mem_bytes"));  // only the counter
  EXPECT_FALSE(edge.get("gpu1", "energy_j"));           // not the run's GPU
  EXPECT_TRUE(edge.get("gpu0", "power_w"));             // the fast fields as at every poll
  EXPECT_FALSE(s.sample_now().get("gpu0", "energy_j"));  // once
}

TEST(telemetry_Nvml, GpmStartsAFreshBaselineWhenItsGpuBecomesTheRunsAgain) {
  write_config("rundev_gpm", kTwoGpus);
  auto opt = nvml_only(TS_FAKE_NVML);
  opt.slow_interval_s = opt.interval_s = 1e-3;  // every poll reads the slow fields of run GPUs
  TelemetrySampler s(opt, std::chrono::steady_clock::now());
  auto poll = [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return s.sample_now();
  };
  EXPECT_FALSE(poll().get("gpu0", "sm_activity_pct"));  // nullopt (every GPU): the baseline
  EXPECT_TRUE(poll().get("gpu0", "sm_activity_pct"));
  s.set_run_devices(std::vector<std::string>{});
  auto off = poll();
  EXPECT_FALSE(off.get("gpu0", "sm_activity_pct"));
  EXPECT_FALSE(off.get("gpu0", "energy_j"));
  s.set_run_devices(std::vector<std::string>{"gpu0"});
  auto back = poll();
  EXPECT_TRUE(back.get("gpu0", "energy_j"));
  EXPECT_FALSE(back.get("gpu0", "sm_activity_pct"));  // not a value spanning the time it was not read
  EXPECT_DOUBLE_EQ(poll().get("gpu0", "sm_activity_pct").value(), 55.5);
  s.set_run_devices(std::vector<std::string>{"gpu1"});  // gpu0 no longer the run's
  auto other = poll();
  EXPECT_FALSE(other.get("gpu0", "energy_j"));
  EXPECT_TRUE(other.get("gpu0", "power_w"));
  s.set_run_devices(std::nullopt);  // every GPU again: gpu0's slow fields come back
  EXPECT_TRUE(poll().get("gpu0", "energy_j"));
}

TEST(telemetry_Nvml, RunSectionHeadlineCarriesThePowerLimitOfTheRunsGpu) {
  write_config("limit", kTwoGpus);
  TelemetrySampler s(nvml_only(TS_FAKE_NVML), std::chrono::steady_clock::now());
  for (int i = 0; i < 4; ++i) s.sample_now();
  auto sec = s.run_section(0, s.now_ns(), 10, "gpu0");
  EXPECT_EQ(sec.headline.device, "gpu0");
  ASSERT_TRUE(sec.headline.power_limit_w);
  EXPECT_DOUBLE_EQ(*sec.headline.power_limit_w, 700.0);  // power_limit_mw 700000
  EXPECT_TRUE(sec.headline.power_w_mean);
  EXPECT_TRUE(sec.summary.metric("gpu1", "power_w"));  // the other GPU stays in the summary
  // The second GPU reports no limit: its headline has none.
  EXPECT_FALSE(s.run_section(0, s.now_ns(), 10, "gpu1").headline.power_limit_w);
}

// One GPU with both an energy counter and a constant power reading: both energies are kept,
// the counter's is the headline's, and their difference is counter - power integration.
const nlohmann::json kBothEnergySources = R"({
  "devices": [{"name": "Fake H200", "uuid": "GPU-cccc", "pci_bus_id": "00000000:19:00.0",
    "readings": {"util_gpu": 50, "mem_total": 1000, "mem_used": 1, "power_mw": 200000,
                 "energy_mj": [1000000, 1500000]}}]})"_json;

TEST(telemetry_Nvml, EnergyFromCounterAndPowerIntegrationWithTheirDifference) {
  write_config("both", kBothEnergySources);
  auto opt = nvml_only(TS_FAKE_NVML);
  opt.slow_interval_s = opt.interval_s = 1e-3;  // every sample polls the counter too
  TelemetrySampler s(opt, std::chrono::steady_clock::now());
  auto a = s.sample_now();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto b = s.sample_now();
  const double dt = static_cast<double>(b.t_ns - a.t_ns) * 1e-9, power_j = 200.0 * dt;
  auto sec = s.run_section(a.t_ns, b.t_ns, 10, "gpu0");
  ASSERT_TRUE(sec.summary.device("gpu0") && sec.summary.device("gpu0")->energy);
  const auto& e = *sec.summary.device("gpu0")->energy;
  EXPECT_EQ(e.energy_method, "counter");
  EXPECT_NEAR(e.energy_j.value(), 500.0, 1e-6);  // 1 500 000 - 1 000 000 mJ
  EXPECT_NEAR(e.counter_energy_j.value(), 500.0, 1e-6);
  EXPECT_NEAR(e.power_integration_energy_j.value(), power_j, 1e-6);  // 200 W constant over the window
  EXPECT_EQ(e.power_field, "power_w");
  EXPECT_NEAR(e.covered_s.value(), dt, 1e-12);
  EXPECT_NEAR(e.sources_diff_j.value(), 500.0 - power_j, 1e-6);
  EXPECT_NEAR(e.sources_diff_pct.value(), 100.0 * (500.0 - power_j) / 500.0, 1e-6);
  EXPECT_NEAR(sec.headline.energy_j.value(), 500.0, 1e-6);
  EXPECT_EQ(sec.headline.energy_method, "counter");
  EXPECT_NEAR(sec.headline.energy_power_integration_j.value(), power_j, 1e-6);
  EXPECT_NEAR(sec.headline.energy_sources_diff_pct.value(), *e.sources_diff_pct, 1e-12);
  // Only power readings (kTwoGpus' gpu1): one energy, no difference.
  write_config("both_gpu1", kTwoGpus);
  TelemetrySampler s1(opt, std::chrono::steady_clock::now());
  auto c = s1.sample_now();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  auto d = s1.sample_now();
  auto sec1 = s1.run_section(c.t_ns, d.t_ns, 10, "gpu1");
  const auto& e1 = *sec1.summary.device("gpu1")->energy;
  EXPECT_EQ(e1.energy_method, "power_integration");
  EXPECT_FALSE(e1.counter_energy_j);
  EXPECT_FALSE(e1.sources_diff_j);
  EXPECT_FALSE(e1.sources_diff_pct);
  EXPECT_FALSE(sec1.headline.energy_power_integration_j);  // energy_j already is that one
  EXPECT_FALSE(sec1.headline.energy_sources_diff_pct);
}

// Statistics from fewer than 5 readings are marked as such; from 5 they are not.
TEST(telemetry_Sampler, StatisticsFromFewerThanFiveSamplesAreMarked) {
  write_config("few", kBothEnergySources);
  TelemetrySampler s(nvml_only(TS_FAKE_NVML), std::chrono::steady_clock::now());
  std::vector<int64_t> t;
  for (int i = 0; i < 5; ++i) t.push_back(s.sample_now().t_ns);
  auto three = s.run_section(t[0], t[2], 10, "gpu0");
  const auto* p3 = three.summary.metric("gpu0", "power_w");
  ASSERT_TRUE(p3);
  EXPECT_EQ(p3->count, 3);
  EXPECT_TRUE(p3->too_few_samples);
  EXPECT_EQ(three.headline.stats_samples_min, 3);
  EXPECT_EQ(three.headline.stats_too_few_samples, true);
  auto five = s.run_section(t[0], t[4], 10, "gpu0");
  const auto* p5 = five.summary.metric("gpu0", "power_w");
  ASSERT_TRUE(p5);
  EXPECT_EQ(p5->count, 5);
  EXPECT_FALSE(p5->too_few_samples);
  EXPECT_EQ(five.headline.stats_samples_min, 5);  // util_gpu and power_w, every sample
  EXPECT_EQ(five.headline.stats_too_few_samples, false);
  EXPECT_EQ(to_json(three.summary)["devices"]["gpu0"]["fields"]["power_w"]["too_few_samples"], true);
}

// The new energy and sample-count fields survive results.json's write and read.
TEST(telemetry_Sampler, EnergySourcesAndTooFewSamplesRoundTripThroughJson) {
  write_config("roundtrip", kBothEnergySources);
  auto opt = nvml_only(TS_FAKE_NVML);
  opt.slow_interval_s = opt.interval_s = 1e-3;
  TelemetrySampler s(opt, std::chrono::steady_clock::now());
  auto a = s.sample_now();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  auto b = s.sample_now();
  auto sec = s.run_section(a.t_ns, b.t_ns, 10, "gpu0");
  auto j = record_json::write(sec);
  EXPECT_TRUE(j["summary"]["devices"]["gpu0"]["energy"]["power_integration_energy_j"].is_number());
  EXPECT_TRUE(j["summary"]["devices"]["gpu0"]["energy"]["sources_diff_pct"].is_number());
  EXPECT_TRUE(j["headline"]["energy_power_integration_j"].is_number());
  EXPECT_EQ(j["headline"]["stats_too_few_samples"], true);
  trainscope::TelemetrySection back;
  record_json::read(j, back);
  EXPECT_EQ(back.summary.device("gpu0")->energy->sources_diff_j, sec.summary.device("gpu0")->energy->sources_diff_j);
  EXPECT_EQ(back.summary.device("gpu0")->energy->counter_energy_j, 500.0);
  EXPECT_TRUE(back.summary.metric("gpu0", "power_w")->too_few_samples);
  EXPECT_EQ(back.headline.energy_sources_diff_pct, sec.headline.energy_sources_diff_pct);
  EXPECT_EQ(back.headline.stats_samples_min, 2);
  EXPECT_EQ(record_json::write(back), j);
}

// An inference scenario's telemetry (src/infer/bench.cpp) carries what the training headline
// carries: energy from the counter and from power integration with their difference, and the
// fewer-than-5-samples mark; 5 samples are not marked.
TEST(telemetry_Sampler, ScenarioTelemetryHasBothEnergiesTheirDifferenceAndTheTooFewMark) {
  write_config("scenario", kBothEnergySources);
  auto opt = nvml_only(TS_FAKE_NVML);
  opt.slow_interval_s = opt.interval_s = 1e-3;  // every sample polls the counter too
  TelemetrySampler s(opt, std::chrono::steady_clock::now());
  std::vector<int64_t> t;
  for (int i = 0; i < 5; ++i) {
    t.push_back(s.sample_now().t_ns);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  auto three = trainscope::scenario_telemetry(s.summarize(t[0], t[2], 10), "gpu0");
  const auto e = *s.summarize(t[0], t[2], 10).device("gpu0")->energy;
  EXPECT_EQ(three.device, "gpu0");
  EXPECT_EQ(three.energy_method, "counter");
  EXPECT_NEAR(three.energy_j.value(), 500.0, 1e-6);  // the fake counter's two values: 1 500 000 - 1 000 000 mJ
  ASSERT_TRUE(three.energy_power_integration_j);
  EXPECT_NEAR(*three.energy_power_integration_j, *e.power_integration_energy_j, 1e-9);
  EXPECT_NEAR(*three.energy_power_integration_j, 200.0 * static_cast<double>(t[2] - t[0]) * 1e-9, 1e-6);
  EXPECT_NEAR(three.energy_sources_diff_pct.value(), *e.sources_diff_pct, 1e-12);
  EXPECT_NEAR(three.power_w_mean.value(), 200.0, 1e-9);
  EXPECT_NEAR(three.joules_per_sample.value(), 50.0, 1e-6);  // 500 J / 10 samples
  EXPECT_EQ(three.stats_samples_min, 3);
  EXPECT_EQ(three.stats_too_few_samples, true);
  EXPECT_TRUE(three.absent_reason.empty());
  auto five = trainscope::scenario_telemetry(s.summarize(t[0], t[4], 10), "gpu0");
  EXPECT_EQ(five.stats_samples_min, 5);
  EXPECT_EQ(five.stats_too_few_samples, false);
  auto j = record_json::write(three);  // and in inference.json / results.json
  EXPECT_EQ(j["stats_too_few_samples"], true);
  EXPECT_TRUE(j["energy_power_integration_j"].is_number());
  EXPECT_TRUE(j["energy_sources_diff_pct"].is_number());
  trainscope::ScenarioTelemetry back;
  record_json::read(j, back);
  EXPECT_EQ(record_json::write(back), j);
  auto none = trainscope::scenario_telemetry(s.summarize(t[0], t[4], 10), "gpu7");
  EXPECT_NE(none.absent_reason.find("no readings for 'gpu7'"), std::string::npos) << none.absent_reason;
}

TEST(telemetry_Nvml, OldLibraryFallsBackPerEntryPoint) {
  write_config("old", kTwoGpus);
  TelemetrySampler s(nvml_only(TS_FAKE_NVML_OLD), std::chrono::steady_clock::now());
  s.sample_now();
  auto snap = s.sample_now();
  auto src = record_json::write(s.sources())[0];
  ASSERT_TRUE(src["available"].get<bool>()) << src.dump(2);
  auto missing = src["details"]["missing_entry_points"];
  EXPECT_GE(std::count(missing.begin(), missing.end(), "memory_info_v2"), 1);
  EXPECT_GE(std::count(missing.begin(), missing.end(), "gpm_metrics_get"), 1);
  auto resolved = src["details"]["entry_points"].dump();
  EXPECT_NE(resolved.find("nvmlDeviceGetCurrentClocksThrottleReasons"), std::string::npos);
  EXPECT_NE(resolved.find("nvmlDeviceGetCount_v2"), std::string::npos);
  EXPECT_EQ(snap.get("gpu0", "mem_used_bytes").value(), 2000);  // via nvmlDeviceGetMemoryInfo (v1)
  EXPECT_FALSE(snap.get("gpu0", "mem_reserved_bytes"));
  EXPECT_FALSE(snap.get("gpu0", "power_avg_w"));
  EXPECT_TRUE(snap.get("gpu0", "clocks_event_reasons_mask"));
  auto fields = src["fields_supported"];
  EXPECT_EQ(std::count(fields.begin(), fields.end(), "mem_reserved_bytes"), 0);
  EXPECT_EQ(std::count(fields.begin(), fields.end(), "sm_activity_pct"), 0);
}

TEST(telemetry_Nvml, MissingLibraryOrInitFailureIsUnavailable) {
  TelemetrySampler s(nvml_only("/nonexistent/libnvidia-ml.so.1"), std::chrono::steady_clock::now());
  s.probe();
  auto src = record_json::write(s.sources())[0];
  EXPECT_FALSE(src["available"].get<bool>());
  EXPECT_NE(src["reason"].get<std::string>().find("dlopen"), std::string::npos);
  EXPECT_TRUE(s.gpus().empty());
}

// A truncated copy of the library (--nvml-library) used to crash the process with SIGBUS inside
// dlopen: it is an unavailable source whose reason says the file is truncated.
TEST(telemetry_Nvml, ATruncatedLibraryIsUnavailableNotACrash) {
  const std::string copy = ::testing::TempDir() + "truncated_nvml_" + std::to_string(::getpid()) + ".so";
  {
    std::ifstream in(TS_FAKE_NVML, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    ASSERT_GT(bytes.size(), 4096u);
    std::ofstream(copy, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  TelemetrySampler s(nvml_only(copy), std::chrono::steady_clock::now());
  s.probe();
  auto src = record_json::write(s.sources())[0];
  EXPECT_FALSE(src["available"].get<bool>());
  EXPECT_NE(src["reason"].get<std::string>().find("a truncated copy"), std::string::npos) << src.dump();
  std::remove(copy.c_str());
}

// Each way of turning a source off is named as the user spelled it, not as a pair of keys.
TEST(telemetry_Sampler, ADisabledSourceSaysWhichSettingTurnedItOff) {
  TelemetryOptions o = nvml_only("");
  TelemetrySampler s(o, std::chrono::steady_clock::now());
  s.probe();
  auto src = record_json::write(s.sources());
  ASSERT_EQ(src.size(), 4u);
  EXPECT_FALSE(src[0]["available"].get<bool>());
  EXPECT_NE(src[0]["reason"].get<std::string>().find("--nvml-library ''"), std::string::npos) << src[0]["reason"];
  EXPECT_EQ(src[1]["reason"], "disabled: enable_proc = false");
  EXPECT_EQ(src[2]["reason"], "disabled: enable_rapl = false");
  EXPECT_EQ(src[3]["reason"], "disabled: enable_hwmon = false");
  o.enable_nvml = false;
  o.nvml_library = "libnvidia-ml.so.1";
  TelemetrySampler t(o, std::chrono::steady_clock::now());
  t.probe();
  EXPECT_EQ(record_json::write(t.sources())[0]["reason"], "disabled: enable_nvml = false");
}

TEST(telemetry_Sampler, RejectsIntervalsOutsideOneToThousandHertz) {
  auto now = std::chrono::steady_clock::now();
  for (double bad : {0.0, 0.0005, 2.0, -1.0}) {
    TelemetryOptions o;
    o.interval_s = bad;
    try {
      TelemetrySampler s(o, now);
      ADD_FAILURE() << bad << " accepted";
    } catch (const trainscope::Error& e) {
      EXPECT_EQ(e.kind(), trainscope::ErrorKind::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("1000 Hz"), std::string::npos);
    }
  }
  for (double ok : {0.001, 0.1, 1.0}) {
    TelemetryOptions o;
    o.interval_s = ok;
    EXPECT_NO_THROW(TelemetrySampler(o, now));
  }
}

TEST(telemetry_Sampler, ThreadRunsWhileOthersReadAndCsvGzRoundTrips) {
  write_config("thread", kTwoGpus);
  auto root = ts_test::fresh_tree("sampler");
  TelemetryOptions o;
  o.interval_s = 0.001;
  o.nvml_library = TS_FAKE_NVML;
  o.proc_root = (root / "proc").string();
  o.sys_root = (root / "sys").string();
  TelemetrySampler s(o, std::chrono::steady_clock::now());
  s.start();
  s.start();  // idempotent
  // Read concurrently until the thread has produced a few polls (no timing assertion).
  for (int i = 0; i < 2000; ++i) {
    auto sum = to_json(s.summarize(0, s.now_ns()));
    (void)s.series();
    if (sum["devices"].contains("gpu0") && sum["devices"]["gpu0"]["fields"]["util_pct"]["count"].get<int>() >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  s.stop();
  s.stop();
  auto sum = to_json(s.summarize(0, s.now_ns()));
  EXPECT_GE(sum["devices"]["gpu0"]["fields"]["util_pct"]["count"].get<int>(), 3);
  EXPECT_TRUE(sum["devices"].contains("cpu"));
  EXPECT_EQ(sum["devices"]["cpu"]["energy"]["energy_method"], "counter");  // RAPL from the fake tree
  auto path = (root / "samples.csv.gz").string();
  s.write_samples_csv_gz(path);
  gzFile gz = gzopen(path.c_str(), "rb");
  ASSERT_TRUE(gz);
  char line[256];
  ASSERT_TRUE(gzgets(gz, line, sizeof line));
  EXPECT_STREQ(line, "t_ns,device,metric,value\n");
  int rows = 0, quoted = 0;
  while (gzgets(gz, line, sizeof line)) {
    ++rows;
    quoted += std::string(line).find("\"hwmon:coretemp:Package id 0\"") != std::string::npos ||
              std::string(line).find("hwmon:coretemp:Package id 0,") != std::string::npos;
  }
  gzclose(gz);
  size_t stored = 0;
  for (const auto& series : s.series()) stored += series.points.size();
  EXPECT_EQ(static_cast<size_t>(rows), stored);
  EXPECT_GT(quoted, 0);
  EXPECT_THROW(s.write_samples_csv_gz("/nonexistent-dir/x.csv.gz"), trainscope::Error);
}

namespace {

// Scheduling policies of this process's threads, from /proc/self/task/<tid>/stat (field 41).
std::vector<int> thread_policies() {
  std::vector<int> out;
  for (const auto& t : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream f(t.path() / "stat");
    std::string line;
    std::getline(f, line);
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));  // fields 3.. after "(comm) "
    std::string field;
    for (int i = 3; i <= 41 && rest >> field; ++i)
      if (i == 41) out.push_back(std::stoi(field));
  }
  return out;
}

}  // namespace

TEST(telemetry_Sampler, TheSamplingThreadRunsUnderSchedBatchAtNicePlusTen) {
  write_config("sched", kTwoGpus);
  TelemetrySampler s(nvml_only(TS_FAKE_NVML), std::chrono::steady_clock::now());
  EXPECT_EQ(s.thread_scheduling(), "");
  auto batch_threads = [] {
    const auto p = thread_policies();
    return std::count(p.begin(), p.end(), SCHED_BATCH);
  };
  const auto before = batch_threads();
  s.start();
  for (int i = 0; i < 500 && s.thread_scheduling().empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (s.thread_scheduling().rfind("SCHED_BATCH", 0) != 0)
    GTEST_SKIP() << "this kernel or sandbox refuses SCHED_BATCH: " << s.thread_scheduling();
  EXPECT_EQ(s.thread_scheduling(), "SCHED_BATCH, nice +10");
  EXPECT_EQ(batch_threads() - before, 1) << "the kernel's own view: one more SCHED_BATCH thread, the sampler";
  s.stop();
  EXPECT_EQ(s.thread_scheduling(), "SCHED_BATCH, nice +10");  // kept for the run record
}

// The sampling thread refreshes the sources' descriptions once per slow interval, but a lost
// GPU is noted at the poll that finds it: a run's record, written while the thread still runs,
// must carry it (slow interval 3600 s here, so only the transition can refresh it).
TEST(telemetry_Sampler, ALostGpuIsInTheDescriptionsWhileTheThreadRuns) {
  write_config("lostlive", kTwoGpus);  // gpu1 is lost after 30 library calls
  TelemetryOptions o = nvml_only(TS_FAKE_NVML);
  o.interval_s = 0.001;
  TelemetrySampler s(o, std::chrono::steady_clock::now());
  s.start();
  bool lost_in_samples = false;
  for (int i = 0; i < 5000 && !lost_in_samples; ++i) {
    auto sum = to_json(s.summarize(0, s.now_ns()));
    const auto& g1 = sum["devices"]["gpu1"]["fields"];
    for (const auto& [metric, f] : g1.items())
      if (f.contains("drop_reasons") && f["drop_reasons"].contains("gpu_lost")) lost_in_samples = true;
    if (!lost_in_samples) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(lost_in_samples);
  auto details = record_json::write(s.sources())[0]["details"];  // before stop()
  EXPECT_TRUE(details["gpus"][1]["lost"].get<bool>()) << details.dump(2);
  EXPECT_FALSE(details["gpus"][0]["lost"].get<bool>());
  s.stop();
}

// The catalogue's `slow` flag (what `monitor` holds between reads, docs/telemetry.md) matches
// what the NVML source does: with a 3600 s slow interval, three polls read a slow field once
// and every other field three times.
TEST(telemetry_Nvml, TheCataloguesSlowFlagMatchesWhatTheSourceReadsOncePerInterval) {
  write_config("slowflag", kTwoGpus);
  TelemetrySampler s(nvml_only(TS_FAKE_NVML), std::chrono::steady_clock::now());
  for (int i = 0; i < 3; ++i) s.sample_now();
  auto g0 = to_json(s.summarize(0, s.now_ns()))["devices"]["gpu0"]["fields"];
  int slow_seen = 0, fast_seen = 0;
  for (const auto& [metric, f] : g0.items()) {
    // Reads: stored values plus dropped ones (sentinels, out of range); a field found
    // unsupported is tried once and never again, whatever its rate.
    if (f.contains("drop_reasons") && f["drop_reasons"].contains("not_supported")) continue;
    const int reads = f["count"].get<int>() + f["dropped"].get<int>();
    if (reads == 0) continue;  // GPM before its second sample
    const TelemetryField* field = trainscope::telemetry::find_field(metric);
    ASSERT_TRUE(field) << metric;
    if (field->slow) {
      EXPECT_EQ(reads, 1) << metric;
      ++slow_seen;
    } else {
      EXPECT_EQ(reads, 3) << metric;
      ++fast_seen;
    }
  }
  EXPECT_GE(slow_seen, 2);  // energy_j, process_mem_bytes
  EXPECT_GE(fast_seen, 5);
}

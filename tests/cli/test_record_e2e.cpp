// End to end: the built `trainscope` binary trains a tiny synthetic matrix (mlp + cnn, a few
// steps, profile and inference on) with a fake NVML that reports two GPUs (150 W and 23 W).
// Checks that the record the runner wrote round-trips through the typed sections
// (trainscope/record_sections.h), that the fields the analysis and renderers read are the ones
// the runner writes, and that the GPU-balance analysis works on the runner's device names.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "results/record_json.h"
#include "test_helpers.h"
#include "tboard/tfevents_reader.h"
#include "trainscope/fs.h"
#include "trainscope/report.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace trainscope;

namespace {


// GPU 0 draws 150 W and has an energy counter and a process list (slow fields), GPU 1 idles at 23 W.
const char* kTwoGpus = R"({"driver_version": "580.0", "nvml_version": "13.580.0", "devices": [
  {"name": "Fake H200", "uuid": "GPU-aaaa", "pci_bus_id": "00000000:19:00.0", "power_limit_mw": 700000,
   "readings": {"util_gpu": 90, "util_mem": 5, "mem_total": 150000000000, "mem_used": 6000000000, "power_mw": 150000, "temp_c": 60,
                "energy_mj": [1000000, 1500000], "process_mem_bytes": 4096}},
  {"name": "Fake H200", "uuid": "GPU-bbbb", "pci_bus_id": "00000000:2A:00.0", "power_limit_mw": 700000,
   "readings": {"util_gpu": 0, "util_mem": 0, "mem_total": 150000000000, "mem_used": 500000000, "power_mw": 23000, "temp_c": 31}}]})";

int run_binary(const std::vector<std::string>& args, const std::string& log) {
  return trainscope::test::run_trainscope(args, log);
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

// Runs the matrix once per test process (ctest runs each test in its own process, in
// parallel: one folder per process); returns the run folder.
const std::string& run_folder() {
  static const std::string dir = [] {
    const std::string root = ::testing::TempDir() + "record_e2e_" + std::to_string(getpid());
    trainscope::remove_tree(root);
    fs::create_directories(root);
    std::ofstream(root + "/nvml.json") << kTwoGpus;
    std::ofstream(root + "/small.toml") << "[inference]\nsingle_stream_budget_s = 0.05\nmin_queries = 20\n"
                                           "offline_batch_sizes = [4]\noffline_budget_s = 0.05\n"
                                           "[train]\nnan_check_interval = 5\n";  // loss_checks at steps 5, 10
    setenv("TS_FAKE_NVML_CONFIG", (root + "/nvml.json").c_str(), 1);
    const std::string log = root + "/log.txt";
    int rc = run_binary({"run", "--config", root + "/small.toml", "--devices", "cpu", "--models", "mlp,cnn",
                         "--batch-sizes", "16", "--data-format", "synthetic", "--epochs", "1", "--warmup-steps", "2",
                         "--limit-train", "512", "--max-steps", "14", "--threads", "1", "--telemetry-interval",
                         "0.002", "--nvml-library", TS_FAKE_NVML, "--no-progress", "--out", root, "--name", "m"},
                        log);
    EXPECT_EQ(rc, 0) << slurp(log);
    return root + "/m";
  }();
  return dir;
}

json results() { return json::parse(slurp(run_folder() + "/results.json")); }

// Paths of `a` (a section as a fixture wrote it) that `b` (the same section written back from
// its typed form) lacks: fields the typed form does not know, so nothing can read them.
void unknown_paths(const json& a, const json& b, const std::string& at, std::vector<std::string>& out) {
  if (a.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (!b.is_object() || !b.contains(it.key())) out.push_back(at + "." + it.key());
      else unknown_paths(it.value(), b[it.key()], at + "." + it.key(), out);
    }
  } else if (a.is_array() && b.is_array()) {
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) unknown_paths(a[i], b[i], at + "[" + std::to_string(i) + "]", out);
  }
}

}  // namespace

TEST(RecordE2e, EverySectionTheRunnerWroteRoundTripsThroughTheTypedForm) {
  auto j = results();
  ASSERT_EQ(j["runs"].size(), 2u);
  for (const auto& r : j["runs"]) {
    ASSERT_EQ(r["status"], "ok") << r["failure_reason"];
    for (const char* section : {"telemetry", "profile", "inference"}) ASSERT_TRUE(r[section].is_object()) << section;
    // No field is unknown to the typed form or lost by it: writing what was read gives the file back.
    const json back = to_json(run_record_from_json(r));
    for (const char* section : {"telemetry", "profile", "inference"})
      EXPECT_EQ(back[section], r[section]) << section << ": written " << r[section].dump().substr(0, 400);
    EXPECT_EQ(back, r);
  }
}

// The TensorBoard reporter of `trainscope run` (trainscope/tensorboard.h): one event file per run
// in <run folder>/tensorboard/<run_id>/, read back with the tests' independent reader; the loss
// curve is the record's loss_checks, placed on the wall clock by clock_origin_unix_ns.
// CPU runs read the GPUs' fast fields but not their slow ones (docs/telemetry.md "Slow fields only
// for the run's GPU"): the fake gpu0's energy counter and process list are never read.
TEST(RecordE2e, CpuRunsReadTheGpusFastFieldsButNotTheirSlowOnes) {
  const auto bytes = read_file_bytes(run_folder() + "/telemetry.csv.gz");
  const std::string csv(bytes.begin(), bytes.end());
  EXPECT_NE(csv.find(",gpu0,power_w,"), std::string::npos);
  EXPECT_NE(csv.find(",gpu1,power_w,"), std::string::npos);
  EXPECT_NE(csv.find(",cpu,util_pct,"), std::string::npos);
  EXPECT_EQ(csv.find(",gpu0,energy_j,"), std::string::npos);
  EXPECT_EQ(csv.find(",gpu0,process_mem_bytes,"), std::string::npos);
}

TEST(RecordE2e, TensorBoardEventFilesHoldEachRunsLossCurveEpochsAndTelemetry) {
  auto j = results();
  ASSERT_EQ(j["runs"].size(), 2u);
  for (const auto& r : j["runs"]) {
    const std::string dir = run_folder() + "/tensorboard/" + r["run_id"].get<std::string>();
    std::vector<std::string> files;
    if (fs::is_directory(dir))
      for (const auto& f : fs::directory_iterator(dir)) files.push_back(f.path().string());
    ASSERT_EQ(files.size(), 1u) << dir;
    EXPECT_EQ(fs::path(files[0]).filename().string().rfind("events.out.tfevents.", 0), 0u) << files[0];
    auto f = tfevents_reader::read(slurp(files[0]));
    ASSERT_FALSE(f.events.empty());
    EXPECT_EQ(f.events[0].file_version, "brain.Event:2");
    const auto& checks = r["loss_checks"];
    ASSERT_EQ(checks.size(), 2u) << r["run_id"];  // 14 steps, a check every 5
    const auto& loss = f.scalars["train/loss"];
    ASSERT_EQ(loss.size(), 2u);
    const double origin_s = static_cast<double>(r["clock_origin_unix_ns"].get<int64_t>()) * 1e-9;
    EXPECT_GT(origin_s, 1.7e9);  // a real Unix time (after 2023-11)
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(loss[i].step, checks[i]["step"].get<int64_t>());
      EXPECT_FLOAT_EQ(loss[i].value, checks[i]["loss"].get<float>());
      EXPECT_NEAR(loss[i].wall_time, origin_s + static_cast<double>(checks[i]["t_ns"].get<int64_t>()) * 1e-9, 1e-5);
    }
    EXPECT_EQ(f.scalars["epoch/train_loss"].size(), r["epochs"].size());
    EXPECT_EQ(f.scalars["run/steady_samples_per_s"].size(), 1u);
    EXPECT_FALSE(f.scalars["telemetry/cpu/util_pct"].empty()) << "CPU utilisation on the telemetry clock";
  }
}

TEST(RecordE2e, FixturesCarryNoFieldTheTypedFormDoesNotKnow) {
  for (const char* f : {"study", "healthy"}) {
    auto j = json::parse(slurp(std::string(TS_FIXTURES_DIR) + "/report/" + f + "/results.json"));
    for (const auto& r : j["runs"]) {
      const json back = to_json(run_record_from_json(r));
      std::vector<std::string> unknown;
      for (const char* section : {"telemetry", "profile", "inference"})
        unknown_paths(r[section], back[section], std::string(section), unknown);
      EXPECT_TRUE(unknown.empty()) << f << " " << r["run_id"] << ": " << ::testing::PrintToString(unknown);
    }
  }
}

TEST(RecordE2e, FieldsTheAnalysisAndRenderersReadAreWrittenByTheRunner) {
  auto in = load_run_folder(run_folder());
  ASSERT_EQ(in.runs.size(), 2u);
  for (const auto& r : in.runs) {
    ASSERT_TRUE(r.telemetry && r.profile && r.inference) << r.run_id;
    const auto& h = r.telemetry->headline;
    EXPECT_EQ(h.device, "cpu");
    EXPECT_TRUE(h.cpu_util_pct_mean) << r.run_id;       // analysis: cpu_util_pct_mean
    EXPECT_TRUE(h.cpu_steal_pct_mean) << r.run_id;      // /proc/stat steal (0 on bare metal), beside it
    EXPECT_TRUE(h.process_rss_bytes_max) << r.run_id;   // analysis: rss fallback
    EXPECT_EQ(r.world_size, 1);
    // The renderer's operator chart reads the profiler's op table (self CPU time on the CPU).
    ASSERT_FALSE(r.profile->op_table.empty()) << r.run_id;
    EXPECT_TRUE(std::any_of(r.profile->op_table.begin(), r.profile->op_table.end(),
                            [](const OpRow& o) { return o.cpu_self_us > 0; }));
    // The analysis's inference figures.
    ASSERT_TRUE(r.inference->single_stream && r.inference->offline) << r.run_id;
    EXPECT_TRUE(r.inference->single_stream->latency.p50_ms);
    EXPECT_TRUE(r.inference->offline->best_samples_per_s);
    // Both NVML GPUs under the runner's names, with the readings the GPU balance uses.
    for (const char* g : {"gpu0", "gpu1"})
      for (const char* m : {"power_w", "util_pct", "mem_used_bytes"}) {
        const MetricStats* s = r.telemetry->summary.metric(g, m);
        ASSERT_TRUE(s && s->mean) << r.run_id << " " << g << " " << m;
      }
  }
  auto a = analyze(in);
  for (const auto& c : a.cells) {
    EXPECT_TRUE(c.cpu_util_pct_mean.ok()) << c.model;
    EXPECT_TRUE(c.latency_p50_ms.ok()) << c.model;
    EXPECT_TRUE(c.inference_samples_per_s.ok()) << c.model;
  }
  const std::string html = render_html(in, a, {}, "");
  // The operator chart holds the profiled operators (top_operators reads OpRow::cpu_self_us).
  EXPECT_NE(html.find("\"ops\":[{\"device\":\"cpu\""), std::string::npos);
  EXPECT_NE(html.find(in.runs[0].profile->op_table[0].name), std::string::npos);
  // results.csv carries the telemetry headline columns.
  const std::string csv = slurp(run_folder() + "/results.csv");
  EXPECT_NE(csv.find("telemetry_cpu_util_pct_mean"), std::string::npos);
  EXPECT_NE(csv.find("telemetry_power_limit_w"), std::string::npos);
}

TEST(RecordE2e, GpuBalanceRunsOnTheRunnersDeviceNamesAndFiresFromWorldSize) {
  auto in = load_run_folder(run_folder());
  // The runner trains one process per run (world_size 1): no unbalanced-GPU advice.
  auto a = analyze(in);
  EXPECT_TRUE(std::none_of(a.advice.begin(), a.advice.end(), [](const Advice& x) { return x.rule == "unbalanced_gpus"; }));
  // The same record from a two-process run: the rule fires from world_size and names the
  // runner's telemetry devices. The run taken is one whose headline window holds power samples of
  // both GPUs (mlp's 14 steps may hold none on a loaded machine; cnn's are longer).
  auto sampled = [](const RunRecord& r) {
    for (const char* g : {"gpu0", "gpu1"}) {
      const MetricStats* s = r.telemetry ? r.telemetry->summary.metric(g, "power_w") : nullptr;
      if (!s || !s->mean) return false;
    }
    return true;
  };
  auto run = std::find_if(in.runs.begin(), in.runs.end(), sampled);
  ASSERT_NE(run, in.runs.end()) << "no run has power samples of both GPUs";
  run->world_size = 2;
  a = analyze(in);
  ASSERT_EQ(a.balance.size(), 1u);
  EXPECT_TRUE(a.balance[0].multi_gpu_run);
  ASSERT_EQ(a.balance[0].gpus.size(), 2u);
  EXPECT_EQ(a.balance[0].gpus[0].gpu, "gpu0");
  EXPECT_EQ(a.balance[0].gpus[1].gpu, "gpu1");
  std::vector<const Advice*> fired;
  for (const auto& x : a.advice)
    if (x.rule == "unbalanced_gpus") fired.push_back(&x);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_NE(fired[0]->evidence.find("gpu1 drew 23.0 W"), std::string::npos) << fired[0]->evidence;
  EXPECT_NE(fired[0]->evidence.find("gpu0 drew 150 W"), std::string::npos) << fired[0]->evidence;
}

// `trainscope monitor` reads the CPU frequency once per slow interval (1 s here), yet every
// table row shows it: the table carries each field's latest reading (fake /proc and /sys tree
// with cpufreq files, so the machine's own cpufreq does not matter).
TEST(Monitor, EveryTableRowShowsTheCpuFrequencyReadOncePerSecond) {
  const std::string root = ::testing::TempDir() + "monitor_" + std::to_string(getpid());
  fs::create_directories(root);
  const std::string log = root + "/log.txt", fx = std::string(TS_FIXTURES_DIR) + "/telemetry";
  int rc = run_binary({"monitor", "--interval", "0.25", "--count", "6", "--nvml-library", "", "--proc-root",
                       fx + "/proc", "--sys-root", fx + "/sys"},
                      log);
  ASSERT_EQ(rc, 0) << slurp(log);
  std::istringstream in(slurp(log));
  int cpu_rows = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::vector<std::string> col{std::istream_iterator<std::string>(f), {}};
    if (col.size() != 12 || col[1] != "cpu") continue;
    ++cpu_rows;
    EXPECT_EQ(col[9], "2700") << line;  // clk_MHz: the fixture's mean of 2400 and 3000 MHz
  }
  EXPECT_EQ(cpu_rows, 6) << slurp(log);
}

// `--listen 0.0.0.0:P` was accepted without a word: /metrics has no authentication, so serving
// it beyond the host is warned about; a loopback address is not.
TEST(Monitor, ListeningBeyondTheHostIsWarnedAbout) {
  const std::string root = ::testing::TempDir() + "monitor_listen_" + std::to_string(getpid());
  fs::create_directories(root);
  const std::string fx = std::string(TS_FIXTURES_DIR) + "/telemetry";
  for (const std::string host : {"0.0.0.0", "127.0.0.1"}) {
    const std::string log = root + "/" + host + ".txt";
    int rc = run_binary({"monitor", "--interval", "0.25", "--count", "1", "--nvml-library", "", "--proc-root",
                         fx + "/proc", "--sys-root", fx + "/sys", "--listen", host + ":0"},
                        log);
    ASSERT_EQ(rc, 0) << slurp(log);
    EXPECT_EQ(slurp(log).find("is served beyond this host, without authentication") != std::string::npos,
              host == "0.0.0.0")
        << slurp(log);
  }
}

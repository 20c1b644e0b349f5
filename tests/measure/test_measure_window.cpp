// `trainscope measure`'s later parts (include/trainscope/measure.h): items per step reported by
// the program, the profiled window (torch.profiler through the hook, the trace analysed), one run
// per device with {device} substituted, and the program's own GPU memory from NVML's process
// list (the fake NVML library, tests/fake_nvml).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "../test_helpers.h"
#include "measure_helpers.h"
#include "trainscope/measure.h"

using namespace trainscope;
using namespace trainscope::measure;
using namespace measure_test;

TEST(MeasureItems, ItemsTheProgramReportsGiveItemsPerSecond) {
  // fake_steps.py calls trainscope.step(items=32); no --items-per-step
  MeasureConfig c = config("items", {kPython, kFixtures + "/fake_steps.py", "6", "0.02", "0"});
  const MeasureResult r = measure_command(c);
  ASSERT_EQ(r.exit_code, 0) << test::read_text(c.out_dir + "/stderr.log");
  EXPECT_EQ(r.step_items, std::vector<int64_t>(6, 32));
  ASSERT_TRUE(r.items_per_step.has_value());
  EXPECT_DOUBLE_EQ(*r.items_per_step, 32);
  ASSERT_TRUE(r.items_per_s.has_value() && r.steps_per_s.has_value());
  EXPECT_DOUBLE_EQ(*r.items_per_s, 32 * *r.steps_per_s);
  EXPECT_DOUBLE_EQ(*r.record.steady_samples_per_s, *r.items_per_s);
  EXPECT_EQ(r.record.batch_size, 32);
  EXPECT_EQ(r.record.measurement.headline_samples, 32 * r.window.steps);
  const auto j = nlohmann::json::parse(test::read_text(c.out_dir + "/measure.json"));
  EXPECT_EQ(j["items_per_step_source"], "program");
  EXPECT_NE(render_summary(r, c).find("as the program reported"), std::string::npos) << render_summary(r, c);
}

TEST(MeasureItems, WindowItemsAreTheReportedOnesAndAllMustReport) {
  MeasureResult r;
  r.step_end_ns = {0, 10'000'000, 20'000'000, 30'000'000};
  r.step_items = {5, 10, 30, 50};  // the window (steps 3 and 4, after 2 warm-up) holds 30 and 50
  steady_window(r, 2, std::nullopt);
  ASSERT_TRUE(r.items_per_s.has_value());
  EXPECT_DOUBLE_EQ(*r.items_per_step, 40);
  EXPECT_DOUBLE_EQ(*r.items_per_s, 80 / 0.02);
  MeasureResult gap = MeasureResult{};
  gap.step_end_ns = r.step_end_ns;
  gap.step_items = {5, 10, -1, 50};  // a window step without a count: no items/s, not a guess
  steady_window(gap, 2, std::nullopt);
  EXPECT_TRUE(gap.steps_per_s.has_value());
  EXPECT_FALSE(gap.items_per_s.has_value());
  std::vector<int64_t> ends, items;
  int64_t sum = 0;
  EXPECT_EQ(parse_step_lines("step 10 4\nstep 20 -1\n", 0, ends, &sum, &items), 0);
  EXPECT_EQ(items, (std::vector<int64_t>{4, -1}));
}

TEST(MeasureProfile, WindowEndsBeforeTheProfiledSteps) {
  MeasureResult r;
  r.step_end_ns = {0, 10'000'000, 20'000'000, 30'000'000, 90'000'000, 95'000'000};
  steady_window(r, 1, std::nullopt, 4);  // profiled steps from 5 on: the window holds steps 2..4
  EXPECT_EQ(r.window.steps, 3);
  EXPECT_EQ(*r.window_end_ns, 30'000'000);
  EXPECT_DOUBLE_EQ(r.window.max_ms, 10);
  MeasureResult few;
  few.step_end_ns = r.step_end_ns;
  steady_window(few, 3, std::nullopt, 3);
  EXPECT_FALSE(few.steps_per_s.has_value());
  EXPECT_NE(few.notes.at(0).find("before the profiled window"), std::string::npos) << few.notes.at(0);
}

TEST(MeasureProfile, BadWindowsAreRefusedWithTheFix) {
  EXPECT_EQ(parse_profile_steps("20-24"), (std::pair<int64_t, int64_t>{20, 24}));
  EXPECT_EQ(parse_profile_steps("7"), (std::pair<int64_t, int64_t>{7, 7}));
  for (const char* bad : {"", "x", "5-3", "0-2", "3-", "3-4-5", "3:4"})
    EXPECT_NE(test::what_of([&] { parse_profile_steps(bad); }).find("write A-B"), std::string::npos) << bad;
  MeasureConfig c = config("badprof", {"/bin/true"});
  c.warmup_steps = 5;
  c.profile_steps = {{6, 8}};
  EXPECT_NE(test::what_of([&] { measure_command(c); }).find("start the profiled steps at 7 or later"), std::string::npos);
  c.profile_steps = {{7, 8}};
  c.python_hook = false;
  EXPECT_NE(test::what_of([&] { measure_command(c); }).find("needs the Python hook"), std::string::npos);
}

TEST(MeasureProfile, Torch113ProfiledStepsAreAnalysedAndKeptOutOfTheWindow) {
  if (!has_torch()) GTEST_SKIP() << kPython << " has no torch (apt-get install python3-torch)";
  MeasureConfig c = config("prof", {kPython, kFixtures + "/train_mlp.py", "24"});
  c.items_per_step = 32;
  c.warmup_steps = 3;
  c.profile_steps = {{12, 15}};
  const MeasureResult r = measure_command(c);
  ASSERT_EQ(r.exit_code, 0) << test::read_text(c.out_dir + "/stderr.log");
  EXPECT_EQ(r.step_end_ns.size(), 24u) << "the program's steps are all measured";
  EXPECT_EQ(r.window.steps, 11 - 3) << "the steady window: steps 4..11, before the profiled ones";
  EXPECT_EQ(*r.window_end_ns, r.step_end_ns[10]);
  ASSERT_EQ(r.profile.size(), 1u) << (r.notes.empty() ? "" : r.notes.back());
  const trace::TraceAnalysis& a = r.profile[0];
  EXPECT_EQ(a.schema, "legacy") << "Debian's torch 1.13 has no Kineto";
  EXPECT_EQ(a.steps.size(), 4u) << "steps 12..15, one ProfilerStep each";
  for (const trace::Step& s : a.steps)
    EXPECT_EQ(std::accumulate(s.category_ns.begin(), s.category_ns.end(), int64_t{0}), s.duration_ns()) << s.name;
  EXPECT_GT(a.total_ns[static_cast<int>(trace::Category::kCpuExec)], 0);
  EXPECT_TRUE(std::filesystem::exists(c.out_dir + "/profile/analysis.md"));
  const auto j = nlohmann::json::parse(test::read_text(c.out_dir + "/measure.json"));
  EXPECT_EQ(j["profile"]["steps"], 4);
  EXPECT_GT(j["profile"]["categories_ms"]["cpu_exec"].get<double>(), 0);
  // the record: profile section with the operator table and the categories per step
  ASSERT_TRUE(r.record.profile.has_value());
  EXPECT_EQ(r.record.profile->backend, "torch.profiler");
  ASSERT_TRUE(r.record.profile->step_breakdown.trace_categories_ms.has_value());
  EXPECT_GT(r.record.profile->step_breakdown.trace_categories_ms->at("cpu_exec"), 0);
  EXPECT_FALSE(r.record.profile->op_table.empty());
  EXPECT_EQ(r.record.measurement.profiled_first_step, 11);
  EXPECT_EQ(r.record.measurement.profiled_steps, 4);
  const auto results = nlohmann::json::parse(test::read_text(c.out_dir + "/results.json"));
  EXPECT_EQ(results["runs"].at(0)["profile"]["backend"], "torch.profiler");
  EXPECT_NE(render_summary(r, c).find("profiled steps 12-15 (4 steps in 1 trace)"), std::string::npos) << render_summary(r, c);
}

TEST(MeasureProfile, NoTraceIsANote) {
  // the program takes 6 steps; the window 10-12 is never reached
  MeasureConfig c = config("noprof", {kPython, kFixtures + "/fake_steps.py", "6", "0.01", "0"});
  c.profile_steps = {{10, 12}};
  const MeasureResult r = measure_command(c);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.profile.empty());
  EXPECT_NE(r.notes.back().find("no trace was written"), std::string::npos) << r.notes.back();
  EXPECT_FALSE(r.record.profile.has_value());
}

TEST(MeasureDevices, DeviceSubstitutedOneRunEachComparedInOneFile) {
  MeasureConfig c = config("devices", {"/bin/sh", "-c", "echo arg={device} env=$TRAINSCOPE_DEVICE"});
  const std::vector<MeasureResult> rs = measure_devices(c, {"cpu", "cuda:0"});
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(test::read_text(c.out_dir + "/cpu/stdout.log"), "arg=cpu env=cpu\n");
  EXPECT_EQ(test::read_text(c.out_dir + "/cuda0/stdout.log"), "arg=cuda:0 env=cuda:0\n");
  EXPECT_EQ(rs[0].record.device, "cpu");
  EXPECT_EQ(rs[1].record.device, "cuda:0");
  EXPECT_EQ(rs[1].record.telemetry->headline.device, "gpu0") << "the telemetry device of cuda:0";
  const auto results = nlohmann::json::parse(test::read_text(c.out_dir + "/results.json"));
  ASSERT_EQ(results["runs"].size(), 2u);
  EXPECT_EQ(results["runs"][0]["run_id"], "cpu-sh-b0-r0");
  EXPECT_EQ(results["runs"][1]["run_id"], "cuda:0-sh-b0-r0");
}

TEST(MeasureDevices, BadDeviceListsAreRefusedBeforeAnythingRuns) {
  MeasureConfig c = config("baddev", {"/bin/true"});
  EXPECT_NE(test::what_of([&] { measure_devices(c, {"cpu", "gpu0"}); }).find("'gpu0' is not a device; write cpu, cuda or cuda:N"),
            std::string::npos);
  EXPECT_NE(test::what_of([&] { measure_devices(c, {"cpu", "cpu"}); }).find("names 'cpu' twice"), std::string::npos);
  EXPECT_NE(test::what_of([&] { measure_devices(c, {"cuda:x"}); }).find("not a device"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(c.out_dir + "/cpu")) << "nothing ran";
}

#ifdef TS_FAKE_NVML
TEST(MeasureGpuMemory, TheProgramsOwnFromNvmlsProcessList) {
  // the fake lists trainscope (this process) with 4096 bytes, pid 1 with 12345, and each child of
  // this process (the program) with 8192: only the program's process tree may count
  const std::string cfg = temp_path("nvml.json");
  std::ofstream(cfg) << R"({"devices": [{"name": "Fake H200", "uuid": "GPU-a", "pci_bus_id": "00000000:19:00.0",
    "process_children": 8192, "readings": {"mem_total": 150000000000, "mem_used": 7000000, "process_mem_bytes": 4096,
    "util_gpu": 50}}]})";
  ::setenv("TS_FAKE_NVML_CONFIG", cfg.c_str(), 1);
  MeasureConfig c = config("gpumem", {"/bin/sh", "-c", "sleep 1.5"});
  c.telemetry_options.nvml_library = TS_FAKE_NVML;
  c.telemetry_options.slow_interval_s = 0.1;
  c.tree_interval_s = 0.1;
  const MeasureResult r = measure_command(c);
  ::unsetenv("TS_FAKE_NVML_CONFIG");
  ASSERT_TRUE(r.telemetry.has_value());
  const TelemetryHeadline& h = r.telemetry->headline;
  EXPECT_EQ(h.device, "gpu0");
  ASSERT_TRUE(h.process_mem_bytes_max.has_value());
  EXPECT_DOUBLE_EQ(*h.process_mem_bytes_max, 8192) << "the program's entry only: not trainscope's, not pid 1's";
  EXPECT_DOUBLE_EQ(*h.mem_used_bytes_max, 7000000) << "the device's, beside it";
  EXPECT_NE(render_summary(r, c).find("program's GPU memory"), std::string::npos) << render_summary(r, c);
}
#endif

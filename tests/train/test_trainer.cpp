#include <gtest/gtest.h>

#include "trainscope/fs.h"

#include <chrono>
#include <thread>

#include <filesystem>
#include <fstream>

#include "train/device.h"
#include "train/trainer.h"
#include "train_helpers.h"
#include "trainscope/error.h"
#include "trainscope/runner.h"

using namespace trainscope;
namespace fs = std::filesystem;

using test::synthetic_workload;

namespace {

RunSpec spec(const std::string& model, int64_t batch, int64_t epochs) {
  RunSpec s;
  s.run_id = "t";
  s.device = "cpu";
  s.model = model;
  s.batch_size = batch;
  s.train.epochs = epochs;
  s.train.warmup_steps = 2;
  s.origin = std::chrono::steady_clock::now();
  return s;
}

MatrixConfig small_matrix(const std::string& name) {
  MatrixConfig m;
  m.devices = {"cpu"};
  m.models = {"mlp"};
  m.batch_sizes = {32, 64};
  m.data.format = "synthetic";
  m.data.synthetic_train = 512;
  m.data.synthetic_test = 128;
  m.data.synthetic_size = 12;
  m.train.warmup_steps = 2;
  m.out_dir = ::testing::TempDir() + "matrix";
  m.run_name = name;
  trainscope::remove_tree(m.out_dir + "/" + name);  // a folder with results is refused (no overwrite)
  m.progress = false;
  m.train.min_time_s = 0;  // the requested epochs only (MinTime.* test the minimum measured time)
  return m;
}

}  // namespace

TEST(Trainer, LossFallsAndAccuracyRisesOnSynthetic) {
  auto w = synthetic_workload(1024, 256);
  TrainHooks hooks;
  auto r = train_run(spec("mlp", 32, 3), w, hooks);
  ASSERT_EQ(r.status, RunStatus::kOk);
  ASSERT_EQ(r.epochs.size(), 3u);
  EXPECT_LT(r.epochs[2].train_loss, r.epochs[0].train_loss * 0.8);
  EXPECT_GT(*r.test_accuracy_pct, 90.0);  // the synthetic classes are easy to separate
  EXPECT_EQ(r.steps_per_epoch, 32);
  EXPECT_EQ(r.steps_completed, 96);
  EXPECT_EQ(r.epochs_completed, 3);
  EXPECT_FALSE(r.time_for_requested_epochs_is_estimate);
  EXPECT_TRUE(r.steady_samples_per_s.has_value());
  EXPECT_GT(*r.steady_samples_per_s, 0);
  EXPECT_EQ(*r.parameters, 16 * 16 * 128 + 128 + 128 * 10 + 10);
}

TEST(Trainer, PhasesSumToStepWallTime) {
  auto w = synthetic_workload(2048, 64);
  TrainHooks hooks;
  auto r = train_run(spec("cnn", 64, 1), w, hooks);
  ASSERT_TRUE(r.phases.has_value());
  const auto& p = *r.phases;
  EXPECT_EQ(p.method, "steady_clock");
  EXPECT_EQ(p.steps, 32 - 2);
  double sum = p.data_ms + p.h2d_ms + p.forward_ms + p.backward_ms + p.optimizer_ms;
  EXPECT_GT(p.forward_ms, 0);
  EXPECT_GT(p.backward_ms, 0);
  EXPECT_NEAR(sum / p.step_ms, 1.0, 0.05);  // the phases account for the step's wall time
}

TEST(Trainer, MaxStepsStopsEarlyAndEstimates) {
  auto w = synthetic_workload(1024, 256);
  TrainHooks hooks;
  auto s = spec("mlp", 32, 5);
  s.train.max_steps = 10;
  auto r = train_run(s, w, hooks);
  EXPECT_EQ(r.steps_completed, 10);
  EXPECT_TRUE(r.stopped_early);
  EXPECT_EQ(r.stop_reason, "max_steps");
  ASSERT_TRUE(r.time_for_requested_epochs_s.has_value());
  EXPECT_TRUE(r.time_for_requested_epochs_is_estimate);
  // 5 epochs of 1024 samples at the measured rate, plus evaluation
  EXPECT_GE(*r.time_for_requested_epochs_s, 5 * 1024 / *r.steady_samples_per_s);
}

TEST(Trainer, TooShortRunSaysWhyThroughputIsAbsent) {
  auto w = synthetic_workload(64, 32);
  TrainHooks hooks;
  auto s = spec("mlp", 64, 1);
  s.train.warmup_steps = 5;
  auto r = train_run(s, w, hooks);
  EXPECT_FALSE(r.steady_samples_per_s.has_value());
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.back().find("warm-up"), std::string::npos);
}

TEST(Trainer, NanLossFailsWithStep) {
  auto w = synthetic_workload(1024, 256);
  TrainHooks hooks;
  auto s = spec("mlp", 32, 1);
  s.train.inject_nan_at_step = 4;
  try {
    train_run(s, w, hooks);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNumerical);
    EXPECT_NE(std::string(e.what()).find("step 4"), std::string::npos);
  }
}

// A run that fails after its headline window opened keeps what it measured up to the last
// completed step: steady samples/s, phases and training time (never 0 for "not kept").
TEST(Trainer, FailedRunKeepsWhatItMeasured) {
  auto w = synthetic_workload(2048, 256);
  TrainHooks hooks;
  auto s = spec("mlp", 32, 1);
  s.train.warmup_steps = 2;
  s.train.nan_check_interval = 1;
  s.train.inject_nan_at_step = 40;  // the loss check of step 40 fails the run
  RunRecord r;
  EXPECT_THROW(train_run(s, w, hooks, &r), Error);
  EXPECT_EQ(r.steps_completed, 40);
  ASSERT_TRUE(r.steady_samples_per_s.has_value());
  EXPECT_GT(*r.steady_samples_per_s, 0);
  EXPECT_GT(r.train_time_s, 0);
  ASSERT_TRUE(r.phases.has_value());
  EXPECT_EQ(r.phases->steps, r.measurement.headline_steps);
  EXPECT_GE(r.measurement.headline_steps, 30);  // steps 2..39 (the profiler is off in spec())
  EXPECT_GT(r.phases->step_ms, 0);
}

TEST(Matrix, FailedRunIsRecordedAndOthersGoOn) {
  auto m = small_matrix("nan");
  m.models = {"mlp", "cnn"};
  m.batch_sizes = {64};
  m.train.inject_nan_at_step = 3;  // every run hits it...
  m.train.nan_check_interval = 1;
  auto res = run_matrix(m);
  ASSERT_EQ(res.runs.size(), 2u);  // ...and both are recorded, none lost
  EXPECT_TRUE(res.any_failed);
  for (const auto& r : res.runs) {
    EXPECT_EQ(r.status, RunStatus::kFailed);
    EXPECT_EQ(r.error_kind, "numerical");
  }
  auto j = nlohmann::json::parse(std::ifstream(res.run_dir + "/results.json"));
  EXPECT_EQ(j["runs"].size(), 2u);
}

TEST(Matrix, WritesResultsAndCheckpoints) {
  auto res = run_matrix(small_matrix("ok"));
  ASSERT_EQ(res.runs.size(), 2u);
  EXPECT_FALSE(res.any_failed);
  for (const auto& r : res.runs) {
    EXPECT_EQ(r.status, RunStatus::kOk);
    EXPECT_TRUE(fs::exists(res.run_dir + "/" + r.checkpoint_path));
  }
  auto j = nlohmann::json::parse(std::ifstream(res.run_dir + "/results.json"));
  EXPECT_EQ(j["provenance"]["schema_version"], kSchemaVersion);
  EXPECT_FALSE(j["provenance"]["libtorch_version"].get<std::string>().empty());
  EXPECT_EQ(j["runs"][0]["batch_size"], 32);
  std::ifstream csv(res.run_dir + "/results.csv");
  std::string line;
  int rows = 0;
  while (std::getline(csv, line))
    if (!line.empty() && line[0] != '#') ++rows;
  EXPECT_EQ(rows, 3);  // header + 2 runs
}

TEST(Matrix, BadInputStopsBeforeTraining) {
  auto m = small_matrix("bad");
  m.models = {"mlp", "nosuchnet"};
  EXPECT_THROW(run_matrix(m), Error);
  EXPECT_FALSE(fs::exists(m.out_dir + "/bad/results.json"));
  auto d = small_matrix("dev");
  d.devices = {"cuda:7"};
  try {
    run_matrix(d);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kDevice);
    EXPECT_NE(std::string(e.what()).find("cpu"), std::string::npos);  // lists the devices found
  }
}

TEST(Matrix, ExistingResultsAreNotOverwritten) {
  auto m = small_matrix("keep");
  m.batch_sizes = {64};
  run_matrix(m);
  auto before = nlohmann::json::parse(std::ifstream(m.out_dir + "/keep/results.json"));
  try {
    run_matrix(m);
    FAIL() << "a second run into the same folder must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find("--resume"), std::string::npos);
  }
  auto after = nlohmann::json::parse(std::ifstream(m.out_dir + "/keep/results.json"));
  EXPECT_EQ(before, after);
}

TEST(Matrix, DuplicateCellsAndBadTelemetryIntervalAreRejectedBeforeAnythingIsWritten) {
  auto m = small_matrix("dup");
  m.models = {"mlp", "mlp"};
  EXPECT_THROW(run_matrix(m), Error);
  auto t = small_matrix("interval");
  t.telemetry.interval_s = 0;
  EXPECT_THROW(run_matrix(t), Error);
  EXPECT_FALSE(fs::exists(t.out_dir + "/interval"));
}

// Ctrl-C in the second epoch, after the first was evaluated: the run's test accuracy is null
// (docs/results.md#what-is-measured-and-how: not measured for an interrupted run); epoch 1 keeps its own.
TEST(Trainer, InterruptedRunHasNoTestAccuracy) {
  auto w = synthetic_workload(256, 64);
  std::atomic<bool> stop{false};
  TrainHooks hooks;
  hooks.stop_requested = &stop;
  hooks.on_step_end = [&](int64_t step) {
    if (step == 9) stop = true;  // 8 steps per epoch at batch 32: step 9 is in epoch 2
  };
  auto r = train_run(spec("mlp", 32, 3), w, hooks);
  EXPECT_EQ(r.status, RunStatus::kInterrupted);
  ASSERT_EQ(r.epochs.size(), 2u);
  EXPECT_TRUE(r.epochs[0].test_accuracy_pct.has_value());
  EXPECT_FALSE(r.test_accuracy_pct.has_value()) << *r.test_accuracy_pct;
}

namespace {

// Counts the calls a matrix makes; optionally fails the way a full disk or a bug would.
struct Recorder : Reporter {
  int starts = 0, started = 0, finished = 0, finishes = 0;
  size_t final_runs = 0;
  std::string fail;  // "", "io", "internal", "remove_folder"
  std::string run_dir;
  void start(const Provenance&, const std::string& dir, size_t) override {
    ++starts;
    run_dir = dir;
  }
  void run_started(const RunRecord&) override { ++started; }
  void run_finished(const RunRecord&) override {
    ++finished;
    if (fail == "io") throw_error(ErrorKind::kIo, "disk full (injected)");
    if (fail == "internal") throw std::logic_error("bug (injected)");
    if (fail == "remove_folder") trainscope::remove_tree(run_dir);  // the folder vanishes mid-matrix
  }
  void finish(const std::vector<RunRecord>& runs) override {
    ++finishes;
    final_runs = runs.size();
  }
};

}  // namespace

TEST(Matrix, ReportersGetEveryRunInOrderAndTheRunnerWritesNoResultsItself) {
  auto m = small_matrix("reporters");
  m.telemetry.enabled = false;
  Recorder rec;
  auto res = run_matrix(m, {&rec});
  EXPECT_EQ(res.abort, MatrixAbort::kNone);
  EXPECT_EQ(rec.starts, 1);
  EXPECT_EQ(rec.started, 2);
  EXPECT_EQ(rec.finished, 2);
  EXPECT_EQ(rec.finishes, 1);
  EXPECT_EQ(rec.final_runs, 2u);
  EXPECT_FALSE(fs::exists(res.run_dir + "/results.json")) << "results files are a reporter's job";
  // checkpoints are written under a temporary name and renamed: only final names remain
  for (const auto& r : res.runs) EXPECT_TRUE(fs::exists(res.run_dir + "/" + r.checkpoint_path)) << r.checkpoint_path;
  for (const auto& e : fs::directory_iterator(res.run_dir + "/checkpoints"))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

TEST(Matrix, IoErrorInAReporterStopsTheMatrixAndKeepsFinishedRuns) {
  auto m = small_matrix("abort_io");
  ResultsFilesReporter results;
  Recorder fault;
  fault.fail = "io";
  auto res = run_matrix(m, {&results, &fault});
  EXPECT_EQ(res.abort, MatrixAbort::kIo);
  EXPECT_NE(res.abort_reason.find("disk full"), std::string::npos) << res.abort_reason;
  ASSERT_EQ(res.runs.size(), 1u);  // stopped after the first run
  EXPECT_EQ(fault.finishes, 1);    // the reporters still close
  auto j = nlohmann::json::parse(std::ifstream(res.run_dir + "/results.json"));
  ASSERT_EQ(j["runs"].size(), 1u);
  EXPECT_EQ(j["runs"][0]["status"], "ok");
}

TEST(Matrix, InternalErrorInAReporterStopsTheMatrixAndKeepsFinishedRuns) {
  auto m = small_matrix("abort_internal");
  ResultsFilesReporter results;
  Recorder fault;
  fault.fail = "internal";
  auto res = run_matrix(m, {&results, &fault});
  EXPECT_EQ(res.abort, MatrixAbort::kInternal);
  ASSERT_EQ(res.runs.size(), 1u);
  auto j = nlohmann::json::parse(std::ifstream(res.run_dir + "/results.json"));
  EXPECT_EQ(j["runs"].size(), 1u);
}

TEST(Matrix, RunFolderRemovedMidMatrixIsAnIoAbort) {
  auto m = small_matrix("vanish");
  Recorder vanish;
  vanish.fail = "remove_folder";
  ResultsFilesReporter results;
  auto res = run_matrix(m, {&vanish, &results});
  EXPECT_EQ(res.abort, MatrixAbort::kIo) << res.abort_reason;
  EXPECT_NE(res.abort_reason.find(res.run_dir), std::string::npos) << "names the path: " << res.abort_reason;
}

// focus_telemetry (run and infer): no GPU's slow NVML fields for "cpu", and for a GPU only the
// one NVML reports at its PCI bus id (CUDA's cuda:0 may be NVML's gpu1).
TEST(Device, FocusTelemetryReadsTheSlowFieldsOfTheMatchedGpuOnly) {
  const auto cfg = std::filesystem::path(::testing::TempDir()) / ("focus_nvml_" + std::to_string(::getpid()) + ".json");
  std::ofstream(cfg) << R"({"devices": [
    {"name": "Fake H200", "uuid": "GPU-aaaa", "pci_bus_id": "00000000:19:00.0",
     "readings": {"util_gpu": 1, "mem_total": 1000, "mem_used": 1, "power_mw": 100000, "energy_mj": 1000000}},
    {"name": "Fake H200", "uuid": "GPU-bbbb", "pci_bus_id": "00000000:2A:00.0",
     "readings": {"util_gpu": 1, "mem_total": 1000, "mem_used": 1, "power_mw": 100000, "energy_mj": 2000000}}]})";
  ::setenv("TS_FAKE_NVML_CONFIG", cfg.c_str(), 1);
  TelemetryOptions o;
  o.nvml_library = TS_FAKE_NVML;
  o.enable_proc = o.enable_rapl = o.enable_hwmon = false;
  o.slow_interval_s = 3600;
  TelemetrySampler s(o, std::chrono::steady_clock::now());
  s.probe();
  Provenance p;
  p.gpus.push_back(GpuDescription{.name = "Fake H200", .pci_bus_id = "0000:2A:00.0"});  // cuda:0 is NVML's gpu1
  focus_telemetry(s, "cpu", p, s.gpus());
  auto cpu = s.read_energy_now();
  EXPECT_FALSE(cpu.get("gpu0", "energy_j"));
  EXPECT_FALSE(cpu.get("gpu1", "energy_j"));
  EXPECT_TRUE(cpu.get("gpu0", "power_w"));  // fast fields stay
  focus_telemetry(s, "cuda:0", p, s.gpus());
  auto gpu = s.read_energy_now();
  EXPECT_DOUBLE_EQ(gpu.get("gpu1", "energy_j").value(), 2000.0);
  EXPECT_FALSE(gpu.get("gpu0", "energy_j"));
  std::filesystem::remove(cfg);
}

// The energy windows' edges (TrainHooks::on_window_edge): called once as the headline window
// opens, before its clock starts, and once after the last step, after the last epoch's end, so
// telemetry's counter readings there fall outside both timed windows and bracket them.
TEST(Trainer, WindowEdgeHookBracketsTheHeadlineAndTheTrainedEpochs) {
  auto w = synthetic_workload(512, 64);  // 16 steps per epoch at batch 32
  auto s = spec("mlp", 32, 2);
  std::vector<int64_t> edges;
  TrainHooks hooks;
  hooks.on_window_edge = [&] {
    edges.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - s.origin).count());
  };
  auto r = train_run(s, w, hooks);
  ASSERT_EQ(r.status, RunStatus::kOk) << r.failure_reason;
  ASSERT_EQ(edges.size(), 2u);
  ASSERT_EQ(r.epochs.size(), 2u);
  EXPECT_GT(edges[0], r.epochs.front().start_ns);  // after the warm-up steps of epoch 1
  EXPECT_LE(edges[0], r.measurement.headline_start_ns);
  EXPECT_GE(edges[1], r.epochs.back().end_ns);
  EXPECT_GE(edges[1], r.measurement.headline_end_ns);
}

// profile_step_time_ratio compares typical steps (medians): one headline step slowed by 0.3 s
// (an epoch's first step, a page-fault storm) moves the ratio of the means by tens of percent
// and the ratio of the medians not at all, so noisy_headline does not fire for it.
TEST(Trainer, ProfileStepTimeRatioComparesMedianSteps) {
  auto w = synthetic_workload(1024, 64);  // 32 steps per epoch at batch 32
  auto s = spec("mlp", 32, 1);
  ProfileConfig p;
  p.skip_first = 25;  // profiler warm-up 25-26, active 27-31; headline 2-24
  s.profile = p;
  TrainHooks hooks;
  hooks.on_step_begin = [](int64_t step) {
    if (step == 10) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  };
  // one intra-op thread: under ctest -j8 on the H200 host's 16 cores, 16-thread steps of parallel
  // tests contended so much that typical headline steps ran slower than profiled ones
  const int threads_before = at::get_num_threads();
  at::set_num_threads(1);
  auto r = train_run(s, w, hooks);
  at::set_num_threads(threads_before);
  ASSERT_EQ(r.status, RunStatus::kOk) << r.failure_reason;
  const auto& m = r.measurement;
  ASSERT_EQ(m.headline_steps, 23);
  ASSERT_EQ(m.profiled_steps, 7);
  ASSERT_TRUE(m.profile_step_time_ratio && m.profiled_step_ms_mean && m.headline_step_ms_mean);
  const double ratio_of_means = *m.profiled_step_ms_mean / *m.headline_step_ms_mean;
  // The slow step adds >= 300/23 = 13 ms to the headline mean of ~1 ms steps.
  EXPECT_GT(*m.headline_step_ms_mean, 13.0);
  // the median ignores the one slow step, the mean does not: the two ratios lie far apart
  EXPECT_GT(*m.profile_step_time_ratio, 3 * ratio_of_means)
      << "median ratio " << *m.profile_step_time_ratio << ", ratio of means " << ratio_of_means;
}

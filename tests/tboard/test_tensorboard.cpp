// TensorBoard event files (trainscope/tensorboard.h, src/tboard/tfevents.h), read back with the
// independent reader of tests/tboard/tfevents_reader.h: framing, CRCs, tags, steps, values.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>

#include "results/record_json.h"
#include "tboard/tfevents.h"
#include "tboard/tfevents_reader.h"
#include "test_helpers.h"
#include "trainscope/fs.h"
#include "trainscope/tensorboard.h"

namespace fs = std::filesystem;
using namespace trainscope;
namespace rd = tfevents_reader;

namespace {

constexpr int64_t kOrigin = 1700000000LL * 1000000000LL;  // Unix ns of the matrix clock's zero
constexpr int64_t kS = 1000000000LL;

RunRecord synthetic_run() {
  RunRecord r;
  r.run_id = "cuda0-mlp-b64-r0";
  r.device = "cuda:0";
  r.status = RunStatus::kOk;
  r.clock_origin_unix_ns = kOrigin;
  r.start_ns = 1 * kS;
  r.end_ns = 5 * kS;
  r.steps_completed = 250;
  r.train_time_s = 3.5;
  r.loss_checks = {{100, 2 * kS, 1.5}, {200, 3 * kS, 0.75}};
  EpochRecord e1, e2;
  e1.epoch = 1, e1.steps = 150, e1.train_loss = 1.0, e1.train_accuracy_pct = 80, e1.test_accuracy_pct = 85;
  e1.samples_per_s = 1000, e1.epoch_time_s = 1.5, e1.end_ns = 2 * kS + kS / 2, e1.energy_j = 42;
  e2.epoch = 2, e2.steps = 100, e2.train_loss = 0.5, e2.train_accuracy_pct = 90, e2.end_ns = 4 * kS + kS / 2;
  r.epochs = {e1, e2};
  r.steady_samples_per_s = 12345;
  r.test_accuracy_pct = 88;
  PhaseBreakdown ph;
  ph.forward_ms = 1.25, ph.step_ms = 4.5, ph.steps = 240, ph.method = "cuda_events";
  r.phases = ph;
  r.telemetry = TelemetrySection{};
  r.telemetry->headline.device = "gpu0";
  return r;
}

// telemetry.csv.gz of a run folder: samples of the run's GPU, another GPU, the host and the sampler.
void write_telemetry(const std::string& run_dir) {
  std::string csv = "t_ns,device,metric,value\n";
  auto row = [&](int64_t t, const char* dev, const char* metric, double v) {
    csv += std::to_string(t) + "," + dev + "," + metric + "," + std::to_string(v) + "\n";
  };
  row(1 * kS, "gpu0", "util_pct", 50);
  row(kS + kS / 2, "gpu0", "energy_j", 1000);
  row(2 * kS, "gpu0", "util_pct", 70);
  row(2 * kS, "gpu0", "mem_util_pct", 10);  // not a TensorBoard metric
  row(2 * kS, "gpu1", "util_pct", 5);       // not the run's GPU
  row(2 * kS, "cpu", "util_pct", 25);
  row(2 * kS, "process", "cpu_pct", 150);
  row(2 * kS, "sampler", "cpu_pct", 1);     // trainscope's own thread
  row(2 * kS + kS / 2, "gpu0", "energy_j", 1100);
  row(6 * kS, "gpu0", "util_pct", 99);      // after the run
  fs::create_directories(run_dir);
  write_file_atomic(run_dir + "/telemetry.csv.gz", gzip_compress(csv));
}

std::string temp_dir(const std::string& name) {
  std::string d = ::testing::TempDir() + "tboard_" + name + "_" + std::to_string(::getpid());
  trainscope::remove_tree(d);
  fs::create_directories(d);
  return d;
}

std::vector<std::string> event_files(const std::string& dir) {
  std::vector<std::string> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& f : fs::directory_iterator(dir))
    if (f.path().filename().string().find("tfevents") != std::string::npos) out.push_back(f.path().string());
  return out;
}

struct Notices : Reporter {
  std::vector<std::string> seen;
  void notice(const std::string& m) override { seen.push_back(m); }
};

// The reporter's one event file for the synthetic run in a fresh run folder.
rd::File written_file(std::string* path = nullptr) {
  const std::string run_dir = temp_dir("read") + "/2026-12-01T16-00-00Z";
  write_telemetry(run_dir);
  Provenance p;
  p.host = "testhost";
  TensorBoardReporter tb("", nullptr);
  tb.start(p, run_dir, 1);
  tb.run_finished(synthetic_run());
  auto files = event_files(run_dir + "/tensorboard/cuda0-mlp-b64-r0");
  EXPECT_EQ(files.size(), 1u);
  if (files.empty()) return {};
  if (path) *path = files[0];
  return rd::read(test::read_text(files[0]));
}

}  // namespace

TEST(TensorBoard, Crc32cMatchesTheStandardCheckValueAndTheBitwiseReader) {
  EXPECT_EQ(rd::crc32c_bitwise("123456789"), 0xE3069283u);  // CRC-32C check value (RFC 3720 B.4 polynomial)
  EXPECT_EQ(tboard::crc32c("123456789"), 0xE3069283u);
  std::string s;
  for (int i = 0; i < 300; ++i) {
    s.push_back(static_cast<char>(i * 37 + 11));
    ASSERT_EQ(tboard::crc32c(s), rd::crc32c_bitwise(s)) << "length " << s.size();
    ASSERT_EQ(tboard::masked_crc32c(s), rd::masked(s));
  }
}

TEST(TensorBoard, RecordsFrameTheirDataAndACorruptByteFailsItsCrc) {
  std::string file = tboard::tfrecord(tboard::file_version_event(12.5)) +
                     tboard::tfrecord(tboard::summary_event(13.25, -1, {{"a/b", 2.5f}, {"c", -1.0f}}));
  auto f = rd::read(file);
  ASSERT_EQ(f.events.size(), 2u);
  EXPECT_EQ(f.events[0].file_version, "brain.Event:2");
  EXPECT_DOUBLE_EQ(f.events[0].wall_time, 12.5);
  EXPECT_EQ(f.events[1].step, -1);  // a negative int64 is a 10-byte varint
  EXPECT_DOUBLE_EQ(f.events[1].wall_time, 13.25);
  ASSERT_EQ(f.events[1].values.size(), 2u);
  EXPECT_EQ(f.events[1].values[0], (std::pair<std::string, float>{"a/b", 2.5f}));
  EXPECT_EQ(f.events[1].values[1], (std::pair<std::string, float>{"c", -1.0f}));
  std::string bad = file;
  bad[bad.size() - 6] ^= 1;  // a byte of the last record's data
  EXPECT_THROW(rd::records(bad), std::runtime_error);
}

TEST(TensorBoard, ReporterWritesOneFileNamedAsTensorBoardExpectsWithFileVersionFirst) {
  std::string path;
  auto f = written_file(&path);
  EXPECT_TRUE(std::regex_match(fs::path(path).filename().string(),
                               std::regex(R"(events\.out\.tfevents\.\d+\.testhost\.\d+\.\d+)")))
      << path;
  ASSERT_FALSE(f.events.empty());
  EXPECT_EQ(f.events[0].file_version, "brain.Event:2");
  EXPECT_TRUE(f.events[0].values.empty());
  for (size_t i = 1; i < f.events.size(); ++i) EXPECT_TRUE(f.events[i].file_version.empty());
}

TEST(TensorBoard, TrainingEpochRunAndPhaseScalarsCarryTheirStepsWallTimesAndValues) {
  auto f = written_file();
  const auto& loss = f.scalars["train/loss"];
  ASSERT_EQ(loss.size(), 2u);
  EXPECT_EQ(loss[0].step, 100);
  EXPECT_FLOAT_EQ(loss[0].value, 1.5f);
  EXPECT_NEAR(loss[0].wall_time, 1700000002.0, 1e-6);  // origin + t_ns
  EXPECT_EQ(loss[1].step, 200);
  EXPECT_FLOAT_EQ(loss[1].value, 0.75f);
  const auto& acc = f.scalars["epoch/train_accuracy_pct"];
  ASSERT_EQ(acc.size(), 2u);
  EXPECT_EQ(acc[0].step, 150);  // steps done at the epoch's end
  EXPECT_EQ(acc[1].step, 250);
  EXPECT_FLOAT_EQ(acc[1].value, 90.0f);
  EXPECT_NEAR(acc[1].wall_time, 1700000004.5, 1e-6);
  ASSERT_EQ(f.scalars["epoch/test_accuracy_pct"].size(), 1u);  // epoch 2 was not evaluated: no point, not 0
  EXPECT_FLOAT_EQ(f.scalars["epoch/energy_j"].at(0).value, 42.0f);
  EXPECT_EQ(f.scalars.count("epoch/test_loss"), 0u);
  ASSERT_EQ(f.scalars["run/steady_samples_per_s"].size(), 1u);
  EXPECT_FLOAT_EQ(f.scalars["run/steady_samples_per_s"][0].value, 12345.0f);
  EXPECT_EQ(f.scalars["run/steady_samples_per_s"][0].step, 250);
  EXPECT_FLOAT_EQ(f.scalars["run/test_accuracy_pct"].at(0).value, 88.0f);
  EXPECT_FLOAT_EQ(f.scalars["phases/forward_ms"].at(0).value, 1.25f);
  EXPECT_FLOAT_EQ(f.scalars["phases/step_ms"].at(0).value, 4.5f);
  EXPECT_EQ(f.scalars.count("phases/steps"), 0u);  // a count, not a time
}

TEST(TensorBoard, TelemetryOfTheRunsDeviceAndHostOnTheTelemetryClock) {
  auto f = written_file();
  const auto& util = f.scalars["telemetry/gpu0/util_pct"];
  ASSERT_EQ(util.size(), 2u);  // the sample after the run's end is left out
  EXPECT_EQ(util[0].step, 0);  // ms since the run started
  EXPECT_FLOAT_EQ(util[0].value, 50.0f);
  EXPECT_NEAR(util[0].wall_time, 1700000001.0, 1e-6);
  EXPECT_EQ(util[1].step, 1000);
  EXPECT_FLOAT_EQ(util[1].value, 70.0f);
  const auto& energy = f.scalars["telemetry/gpu0/energy_j"];
  ASSERT_EQ(energy.size(), 2u);  // joules since the run's first reading
  EXPECT_FLOAT_EQ(energy[0].value, 0.0f);
  EXPECT_EQ(energy[1].step, 1500);
  EXPECT_FLOAT_EQ(energy[1].value, 100.0f);
  EXPECT_FLOAT_EQ(f.scalars["telemetry/cpu/util_pct"].at(0).value, 25.0f);
  EXPECT_FLOAT_EQ(f.scalars["telemetry/process/cpu_pct"].at(0).value, 150.0f);
  EXPECT_EQ(f.scalars.count("telemetry/gpu1/util_pct"), 0u);
  EXPECT_EQ(f.scalars.count("telemetry/gpu0/mem_util_pct"), 0u);
  EXPECT_EQ(f.scalars.count("telemetry/sampler/cpu_pct"), 0u);
}

TEST(TensorBoard, AGivenFolderHoldsOneSubfolderPerRunFolderAndARunWrittenAgainKeepsOneFile) {
  const std::string root = temp_dir("dir");
  const std::string run_dir = root + "/runs/m1";
  write_telemetry(run_dir);
  TensorBoardReporter tb(root + "/logs", nullptr);
  tb.start(Provenance{}, run_dir, 1);
  EXPECT_EQ(tb.run_folder("x"), root + "/logs/m1/x");
  tb.run_finished(synthetic_run());
  tb.run_finished(synthetic_run());  // --resume measured it again
  EXPECT_EQ(event_files(root + "/logs/m1/cuda0-mlp-b64-r0").size(), 1u);
  EXPECT_FALSE(fs::exists(run_dir + "/tensorboard"));
}

TEST(TensorBoard, AFolderThatCannotBeWrittenIsANoticeNotAnError) {
  const std::string root = temp_dir("fail");
  write_telemetry(root + "/m");
  write_file_atomic(root + "/m/tensorboard", "a file where the folder should be");
  Notices n;
  TensorBoardReporter tb("", &n);
  tb.start(Provenance{}, root + "/m", 1);
  EXPECT_NO_THROW(tb.run_finished(synthetic_run()));
  ASSERT_EQ(n.seen.size(), 1u);
  EXPECT_NE(n.seen[0].find("TensorBoard events of cuda0-mlp-b64-r0 not written"), std::string::npos) << n.seen[0];
}

TEST(TensorBoard, WithoutTelemetryTheRecordsScalarsAreStillWritten) {
  const std::string run_dir = temp_dir("notel") + "/m";
  fs::create_directories(run_dir);
  TensorBoardReporter tb("", nullptr);
  tb.start(Provenance{}, run_dir, 1);
  tb.run_finished(synthetic_run());
  auto files = event_files(run_dir + "/tensorboard/cuda0-mlp-b64-r0");
  ASSERT_EQ(files.size(), 1u);
  auto f = rd::read(test::read_text(files[0]));
  EXPECT_EQ(f.scalars["train/loss"].size(), 2u);
  for (const auto& [tag, _] : f.scalars) EXPECT_NE(tag.rfind("telemetry/", 0), 0u) << tag;
}

TEST(TensorBoard, LossChecksAndTheClockOriginRoundTripThroughResultsJson) {
  RunRecord r = synthetic_run();
  RunRecord back = run_record_from_json(to_json(r));
  EXPECT_EQ(back.clock_origin_unix_ns, kOrigin);
  ASSERT_EQ(back.loss_checks.size(), 2u);
  EXPECT_EQ(back.loss_checks[1].step, 200);
  EXPECT_EQ(back.loss_checks[1].t_ns, 3 * kS);
  EXPECT_DOUBLE_EQ(back.loss_checks[1].loss, 0.75);
}

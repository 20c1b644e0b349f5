// `trainscope infer`'s reporters (trainscope/inference_reporter.h): inference.json written
// atomically with provenance first, through the record's one JSON form; the console table shows
// what the file holds.
#include <gtest/gtest.h>

#include "trainscope/fs.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "results/record_json.h"
#include "trainscope/error.h"
#include "trainscope/inference_reporter.h"

using namespace trainscope;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string fresh_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + name;
  trainscope::remove_tree(dir);
  fs::create_directories(dir);
  return dir;
}

Provenance provenance() {
  Provenance p;
  p.host = "testhost";
  p.command_line = "trainscope infer --model mlp --untrained";
  p.intra_op_threads = 3;
  return p;
}

InferenceRun measured(const std::string& device, double p50) {
  InferenceRun r;
  r.label = "runs/m/checkpoints/cnn-b64.pt";
  r.weights = "checkpoint";
  r.checkpoint = r.label;
  r.model = "cnn";
  r.trained_on = "cpu";
  r.trained_batch_size = 64;
  r.description.text = R"({"model":"cnn","num_classes":10})";
  r.device = device;
  r.device_name = "Test CPU";
  r.dataset = "fashion-mnist test";
  r.test_samples = 512;
  r.normalisation.mean = {0.25};
  r.normalisation.std = {0.5};
  r.test_accuracy_pct = 87.5;
  r.test_loss = 0.375;
  InferenceSection inf;
  inf.device = device;
  inf.single_stream.emplace();
  inf.single_stream->latency.queries = 250;
  inf.single_stream->latency.p50_ms = p50;
  inf.single_stream->latency.p90_ms = p50 * 2;
  inf.single_stream->latency.p99_ms = p50 * 4;
  inf.single_stream->telemetry.absent_reason = "telemetry off";
  inf.offline.emplace();
  inf.offline->best_samples_per_s = 12345;
  inf.offline->best_batch_size = 256;
  r.inference = inf;
  return r;
}

InferenceRun failed(const std::string& device) {
  InferenceRun r;
  r.label = "mlp";
  r.weights = "untrained";
  r.model = "mlp";
  r.device = device;
  r.error_kind = "out_of_memory";
  r.error = "CUDA out of memory at batch 256";
  return r;
}

size_t temporaries_in(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) ++n;
  return n;
}

}  // namespace

// The file exists from the start (no runs), holds every finished measurement right after it
// (a later failure or kill loses nothing), begins with the provenance, and leaves no temporary.
TEST(InferenceReporter, FileIsRewrittenAfterEveryMeasurementWithProvenanceFirst) {
  const std::string dir = fresh_dir("infer_reporter_file");
  const std::string path = dir + "/inference.json";
  InferenceFileReporter file(path);
  file.start(provenance());
  auto j = nlohmann::json::parse(slurp(path));
  EXPECT_TRUE(j["runs"].is_array() && j["runs"].empty()) << j.dump();
  EXPECT_EQ(j["provenance"]["host"], "testhost");

  std::vector<InferenceRun> runs = {measured("cpu", 1.25), failed("cuda:0")};
  for (size_t i = 0; i < runs.size(); ++i) {
    file.measurement_finished(runs[i]);
    const std::string text = slurp(path);
    EXPECT_EQ(nlohmann::json::parse(text)["runs"].size(), i + 1);
    const auto prov_at = text.find("\"provenance\"");
    ASSERT_NE(prov_at, std::string::npos);
    EXPECT_LT(prov_at, text.find("\"runs\""));
    EXPECT_LT(prov_at, text.find("\"schema_version\""));
    EXPECT_EQ(temporaries_in(dir), 0u);
  }
  file.finish(runs);
  j = nlohmann::json::parse(slurp(path));
  EXPECT_EQ(j["schema_version"], kSchemaVersion);
  EXPECT_EQ(j["provenance"]["command_line"], "trainscope infer --model mlp --untrained");
  EXPECT_EQ(temporaries_in(dir), 0u);
}

// runs[].inference is the record's JSON form of InferenceSection (the one results.json uses),
// the rest of a run keeps the keys inference.json always had, and the file reads back as written.
TEST(InferenceReporter, RunsUseTheRecordsJsonFormAndReadBack) {
  const std::string dir = fresh_dir("infer_reporter_form");
  const std::string path = dir + "/inference.json";
  std::vector<InferenceRun> runs = {measured("cpu", 1.25), failed("cuda:0")};
  InferenceFileReporter file(path);
  file.start(provenance());
  file.finish(runs);
  auto j = nlohmann::json::parse(slurp(path));
  const auto& ok = j["runs"][0];
  EXPECT_EQ(ok["inference"], to_json(*runs[0].inference));
  EXPECT_EQ(ok["label"], runs[0].label);
  EXPECT_EQ(ok["weights"], "checkpoint");
  EXPECT_EQ(ok["checkpoint"], runs[0].checkpoint);
  EXPECT_EQ(ok["trained_batch_size"], 64);
  EXPECT_EQ(ok["description"]["num_classes"], 10);
  EXPECT_EQ(ok["normalisation"]["mean"][0], 0.25);
  EXPECT_EQ(ok["test_accuracy_pct"], 87.5);
  EXPECT_TRUE(ok["error"].is_null());
  const auto& bad = j["runs"][1];
  EXPECT_EQ(bad["error_kind"], "out_of_memory");
  EXPECT_EQ(bad["error"], "CUDA out of memory at batch 256");
  EXPECT_FALSE(bad.contains("inference"));

  auto back = inference_runs_from_json(slurp(path));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(record_json::write(back[0]), record_json::write(runs[0]));
  EXPECT_EQ(record_json::write(back[1]), record_json::write(runs[1]));
  EXPECT_TRUE(back[1].failed());
  EXPECT_FALSE(back[0].failed());
}

// The console's table is the file's runs formatted: printing the runs as read back from
// inference.json gives the very table the console printed, and its figures are the file's.
TEST(InferenceReporter, ConsoleTableAgreesWithTheFile) {
  const std::string dir = fresh_dir("infer_reporter_console");
  const std::string path = dir + "/inference.json";
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  InferenceFileReporter file(path);
  InferenceConsoleReporter console(path, out);
  std::vector<InferenceReporter*> reporters = {&file, &console};
  std::vector<InferenceRun> runs;
  for (auto* r : reporters) r->start(provenance());
  for (const auto& run : {measured("cpu", 1.25), failed("cuda:0")}) {
    for (auto* r : reporters) r->measurement_started(run);
    for (auto* r : reporters) r->progress("single-stream: p50 1.250 ms");
    runs.push_back(run);
    for (auto* r : reporters) r->measurement_finished(run);
  }
  for (auto* r : reporters) r->finish(runs);
  std::rewind(out);
  std::string printed;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, out)) > 0;) printed.append(buf, n);
  std::fclose(out);

  const std::string table = format_inference_table(inference_runs_from_json(slurp(path)), 3);
  EXPECT_NE(printed.find(table + "results: " + path + "\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("runs/m/checkpoints/cnn-b64.pt on cpu (512 samples of fashion-mnist test)\n"),
            std::string::npos) << printed;
  EXPECT_NE(printed.find("  single-stream: p50 1.250 ms\n"), std::string::npos) << printed;
  // The row's figures: p50/p90/p99 (ms), queries, offline samples/s and its batch size.
  for (const char* figure : {"1.250", "2.500", "5.000", "250", "12345", "256"})
    EXPECT_NE(table.find(figure), std::string::npos) << figure << "\n" << table;
  EXPECT_NE(table.find("error (out_of_memory): CUDA out of memory at batch 256"), std::string::npos) << table;
  EXPECT_NE(table.find("energy per inference absent on cpu: telemetry off"), std::string::npos) << table;
  EXPECT_NE(table.find("intra-op threads 3"), std::string::npos) << table;
}

// A folder that cannot hold the file: Error(kIo) naming it, as every results file.
TEST(InferenceReporter, UnwritableFileIsAnIoError) {
  const std::string dir = fresh_dir("infer_reporter_io");
  InferenceFileReporter file(dir + "/missing/inference.json");
  try {
    file.start(provenance());
    FAIL() << "expected Error(kIo)";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find(dir + "/missing"), std::string::npos) << e.what();
  }
}

// Single-stream power and energy from fewer than 5 telemetry samples are marked on the console
// (ScenarioTelemetry::stats_too_few_samples); 5 or more are not.
TEST(InferenceReporter, TooFewTelemetrySamplesAreMarkedInTheTable) {
  InferenceRun few = measured("cuda:0", 1.0);
  auto& t = few.inference->single_stream->telemetry;
  t = ScenarioTelemetry{};
  t.device = "gpu0";
  t.energy_j = 3.0;
  t.joules_per_sample = 0.01;
  t.stats_samples_min = 3;
  t.stats_too_few_samples = true;
  const std::string table = format_inference_table({few}, 1);
  EXPECT_NE(table.find("rest on 3 telemetry sample(s), too few for statistics"), std::string::npos) << table;
  t.stats_samples_min = 5;
  t.stats_too_few_samples = false;
  EXPECT_EQ(format_inference_table({few}, 1).find("too few for statistics"), std::string::npos);
}

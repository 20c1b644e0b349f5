#include <gtest/gtest.h>

#include <cctype>

#include <sstream>

#include <algorithm>
#include <set>

#include "results/record_json.h"
#include "common/text.h"
#include "trainscope/console_table.h"
#include "trainscope/error.h"
#include "trainscope/report.h"
#include "trainscope/run_record.h"

using namespace trainscope;

namespace {
RunRecord sample(const std::string& dev, double sps) {
  RunRecord r;
  r.run_id = dev + "-cnn-b64-r0";
  r.device = dev;
  r.model = "cnn";
  r.batch_size = 64;
  r.status = RunStatus::kOk;
  r.steady_samples_per_s = sps;
  r.epochs_requested = 20;
  r.mean_epoch_time_s = 60000 / sps;
  r.time_for_requested_epochs_s = 20 * 60000 / sps;
  r.time_for_requested_epochs_is_estimate = true;
  r.test_accuracy_pct = 88.5;
  PhaseBreakdown p;
  p.data_ms = 1;
  p.forward_ms = 2;
  p.method = "steady_clock";
  r.phases = p;
  InferenceSection inf;
  inf.single_stream.emplace();
  inf.single_stream->latency.p50_ms = 0.5;
  inf.single_stream->latency.p99_ms = 0.9;
  r.inference = inf;
  return r;
}
}  // namespace

TEST(RunRecord, JsonRoundTripKeepsNullsAsAbsent) {
  auto r = sample("cpu", 1000);
  r.peak_rss_bytes = std::nullopt;
  r.notes = {"why something is missing"};
  auto j = to_json(r);
  EXPECT_TRUE(j["peak_rss_bytes"].is_null());
  EXPECT_EQ(j["status"], "ok");
  auto back = run_record_from_json(j);
  EXPECT_EQ(back.run_id, r.run_id);
  EXPECT_FALSE(back.peak_rss_bytes.has_value());
  EXPECT_DOUBLE_EQ(*back.steady_samples_per_s, 1000);
  ASSERT_TRUE(back.phases.has_value());
  EXPECT_DOUBLE_EQ(back.phases->forward_ms, 2);
  EXPECT_EQ(back.notes, r.notes);
  EXPECT_EQ(to_json(back), j);
}

TEST(RunRecord, CsvRowsMatchHeaderAndEscape) {
  auto r = sample("cpu", 1000);
  r.status = RunStatus::kFailed;
  r.failure_reason = "bad, \"quoted\" reason";
  auto h = csv_header();
  auto row = csv_row(r);
  ASSERT_EQ(h.size(), row.size());
  auto idx = std::find(h.begin(), h.end(), "failure_reason") - h.begin();
  EXPECT_EQ(row[static_cast<size_t>(idx)], "\"bad, \"\"quoted\"\" reason\"");
  auto p50 = std::find(h.begin(), h.end(), "infer_single_stream_p50_ms") - h.begin();
  EXPECT_EQ(row[static_cast<size_t>(p50)], "0.5");
  // an absent value is an empty cell, never 0
  auto rss = std::find(h.begin(), h.end(), "peak_rss_bytes") - h.begin();
  EXPECT_EQ(row[static_cast<size_t>(rss)], "");
}

TEST(RunRecord, ResultsFilesStartWithProvenance) {
  Provenance p;
  p.host = "testhost";
  p.command_line = "trainscope run";
  auto csv = results_csv(p, {sample("cpu", 10)});
  EXPECT_EQ(csv.rfind("# ", 0), 0u);
  EXPECT_NE(csv.find("# host: testhost"), std::string::npos);
  auto js = nlohmann::json::parse(results_json(p, {sample("cpu", 10)}));
  EXPECT_EQ(js.begin().key(), "provenance");  // nlohmann keeps keys sorted; provenance sorts first
  EXPECT_EQ(js["runs"].size(), 1u);
  EXPECT_EQ(js["schema_version"], kSchemaVersion);
}

// A status and its reason, said once: a not-applicable reason already begins with the words.
TEST(ConsoleTable, StatusAndReasonAreSaidOnce) {
  EXPECT_EQ(status_with_reason(RunStatus::kFailed, "out of memory"), "failed: out of memory");
  EXPECT_EQ(status_with_reason(RunStatus::kNotApplicable, "not applicable: channels_last needs 4-D parameters"),
            "not applicable: channels_last needs 4-D parameters");
  EXPECT_EQ(status_with_reason(RunStatus::kNotApplicable, "needs a GPU"), "not_applicable: needs a GPU");
  EXPECT_EQ(status_with_reason(RunStatus::kInterrupted, ""), "interrupted");
  RunRecord r = sample("cpu", 1000);
  r.status = RunStatus::kNotApplicable;
  r.variant_note = "not applicable: channels_last";
  auto t = format_matrix_table({r});
  EXPECT_NE(t.find("not applicable: channels_last"), std::string::npos) << t;
  EXPECT_EQ(t.find("not_applicable: not applicable"), std::string::npos) << t;
}

// The variant column fits its longest name, so the columns after it stay aligned.
TEST(ConsoleTable, VariantColumnFitsTheLongestName) {
  RunRecord a = sample("cpu", 1000), b = sample("cpu", 2000);
  a.variant = "eager";
  b.variant = "bf16+channels_last+threads16";
  const auto t = format_matrix_table({a, b});
  std::istringstream lines(t);
  std::string header;
  std::getline(lines, header);
  const size_t rep_end = header.find(" rep ") + 4;  // the repeat numbers are right-aligned under "rep"
  int rows = 0;
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(a.model, 0) == 0) {
      ++rows;
      ASSERT_GT(line.size(), rep_end) << t;
      EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(line[rep_end - 1]))) << t;
      EXPECT_EQ(line[rep_end], ' ') << t;
    }
  EXPECT_EQ(rows, 2) << t;
}

TEST(ConsoleTable, SpeedupAgainstCpu) {
  auto t = format_matrix_table({sample("cpu", 1000), sample("cuda:0", 25000)});
  EXPECT_NE(t.find("25.00×"), std::string::npos);
  EXPECT_NE(t.find("1.00×"), std::string::npos);
  EXPECT_NE(t.find("(est.)"), std::string::npos);
  EXPECT_NE(t.find("88.5 %"), std::string::npos);
}

// An epoch that did not finish (a run stopped early) has its epoch time estimated from the
// steady rate: the same "(est.)" mark as the time for the requested epochs, one legend line.
TEST(ConsoleTable, EveryEstimateCarriesTheSameMark) {
  RunRecord r = sample("cpu", 1000);
  r.time_for_requested_epochs_is_estimate = false;  // the epoch's estimate alone calls the legend
  r.mean_epoch_time_s.reset();
  r.stopped_early = true;
  r.stop_reason = "time budget";
  r.steps_per_epoch = 100;  // 100 steps x 64 samples / 1000 samples/s = 6.4 s
  const auto t = format_matrix_table({r});
  EXPECT_NE(t.find("6.40 s (est.)"), std::string::npos) << t;
  EXPECT_EQ(t.find('*'), std::string::npos) << t;
  EXPECT_EQ(t.find("(est.): estimated"), t.rfind("(est.): estimated")) << t;  // one legend line
  EXPECT_NE(t.find("the epoch did not finish"), std::string::npos) << t;
}

// The CPU row is the baseline only when a GPU ran the same workload, as in report.md.
TEST(ConsoleTable, CpuOnlyRunHasNoBaseline) {
  auto t = format_matrix_table({sample("cpu", 1000)});
  EXPECT_EQ(t.find("1.00×"), std::string::npos) << t;
  EXPECT_EQ(t.find("×"), std::string::npos) << t;
}

TEST(ConsoleTable, FailedRunShowsReasonAndNoSpeedup) {
  auto bad = sample("cuda:0", 1);
  bad.status = RunStatus::kFailed;
  bad.steady_samples_per_s = std::nullopt;
  bad.failure_reason = "out of memory";
  auto t = format_matrix_table({sample("cpu", 1000), bad});
  EXPECT_NE(t.find("failed: out of memory"), std::string::npos);
}

TEST(Format, Durations) {
  EXPECT_EQ(format_duration(0.5), "500 ms");
  EXPECT_EQ(format_duration(30), "30.0 s");
  EXPECT_EQ(format_duration(600), "10.0 min");
  EXPECT_EQ(format_duration(13 * 3600), "13.0 h");
}

TEST(RunRecord, CsvHasEveryTelemetryHeadlineColumn) {
  auto r = sample("cuda:0", 1000);
  TelemetrySection t;
  t.headline.device = "gpu0";
  t.headline.util_pct_mean = 42.5;
  t.headline.power_limit_w = 700;
  r.telemetry = t;
  auto h = csv_header();
  auto row = csv_row(r);
  ASSERT_EQ(h.size(), row.size());
  size_t n = 0;
  TelemetryHeadline::fields(t.headline, [&](const char* name, const auto&, Better) {
    ++n;
    EXPECT_NE(std::find(h.begin(), h.end(), std::string("telemetry_") + name), h.end()) << name;
  });
  EXPECT_GT(n, 30u);
  auto at = [&](const char* col) { return row[static_cast<size_t>(std::find(h.begin(), h.end(), col) - h.begin())]; };
  EXPECT_EQ(at("telemetry_util_pct_mean"), "42.5");
  EXPECT_EQ(at("telemetry_power_limit_w"), "700");
  EXPECT_EQ(at("telemetry_device"), "gpu0");
  EXPECT_EQ(at("telemetry_sm_activity_pct_mean"), "");  // not measured: empty, never 0
  EXPECT_EQ(at("world_size"), "1");
}

// results.csv's columns are the fields RunRecord::fields() marks kCsv, in its order: the names and
// the order of the hand-written header they replaced, which readers of older files rely on.
TEST(RunRecord, CsvColumnsKeepTheirNamesAndOrder) {
  std::vector<std::string> expected = {
      "run_id", "device", "device_name", "model", "batch_size", "repeat", "status", "error_kind", "failure_reason",
      "dataset", "train_samples", "test_samples", "parameters", "forward_flops_per_sample", "optimizer",
      "learning_rate", "seed", "intra_op_threads", "epochs_requested", "epochs_completed", "steps_completed",
      "steps_per_epoch", "train_time_s", "steady_samples_per_s", "mean_epoch_time_s", "time_for_requested_epochs_s",
      "time_for_requested_epochs_is_estimate", "stopped_early", "stop_reason", "final_train_loss",
      "final_train_accuracy_pct", "test_accuracy_pct", "phase_data_ms", "phase_h2d_ms", "phase_forward_ms",
      "phase_backward_ms", "phase_optimizer_ms", "phase_step_ms", "phase_method", "peak_rss_bytes",
      "device_peak_allocated_bytes", "device_peak_reserved_bytes", "infer_single_stream_p50_ms",
      "infer_single_stream_p99_ms", "infer_offline_samples_per_s", "world_size"};
  TelemetryHeadline h;
  TelemetryHeadline::fields(h, [&](const char* name, const auto&, Better) { expected.push_back(std::string("telemetry_") + name); });
  for (const char* c : {"variant", "variant_note", "train_flops_per_s", "mfu_pct", "mfu_precision", "target_accuracy_pct",
                        "target_reached", "time_to_target_s", "samples_to_target", "energy_to_target_j", "task",
                        "throughput_unit"})
    expected.push_back(c);
  // schema 2: the language-model section, every field as lm_<field> (empty cells for an image run)
  LanguageModelSection lm;
  LanguageModelSection::fields(lm, [&](const char* name, const auto&, Better, auto&&...) {
    expected.push_back(std::string("lm_") + name);
  });
  EXPECT_EQ(csv_header(), expected);
  // a section's columns: the phases' cells when measured, empty cells when not
  auto r = sample("cpu", 1000);
  auto row = csv_row(r);
  auto at = [&](const std::vector<std::string>& cells, const char* col) {
    return cells[static_cast<size_t>(std::find(expected.begin(), expected.end(), col) - expected.begin())];
  };
  EXPECT_EQ(at(row, "phase_forward_ms"), "2");
  r.phases.reset();
  row = csv_row(r);
  EXPECT_EQ(at(row, "phase_forward_ms"), "");
  EXPECT_EQ(at(row, "phase_method"), "");
  EXPECT_EQ(at(row, "target_reached"), "");
  EXPECT_EQ(at(row, "task"), "classification");
  EXPECT_EQ(at(row, "lm_val_loss"), "");
  r.language_model = LanguageModelSection{};
  r.language_model->seq_len = 256;
  r.language_model->val_loss = 3.25;
  row = csv_row(r);
  EXPECT_EQ(at(row, "lm_seq_len"), "256");
  EXPECT_EQ(at(row, "lm_val_loss"), "3.25");
}

// Byte counts are whole numbers and come out in full (6 significant digits lost 2 MB of a 793 MB
// peak: 7.93833e+08); fractional figures keep 6 significant digits.
TEST(RunRecord, CsvWritesWholeNumbersInFull) {
  auto r = sample("cpu", 1000);
  TelemetrySection t;
  t.headline.host_mem_used_bytes_max = 793833472.0;
  t.headline.cpu_util_pct_mean = 12.345678;
  r.telemetry = t;
  r.train_flops_per_s = 2722551234.5;
  auto h = csv_header();
  auto row = csv_row(r);
  auto at = [&](const char* col) { return row[static_cast<size_t>(std::find(h.begin(), h.end(), col) - h.begin())]; };
  EXPECT_EQ(at("telemetry_host_mem_used_bytes_max"), "793833472");
  EXPECT_EQ(at("telemetry_cpu_util_pct_mean"), "12.3457");
  EXPECT_EQ(at("train_flops_per_s"), "2.72255e+09");
}

TEST(RunRecord, TypedSectionsRoundTripThroughJson) {
  auto r = sample("cuda:0", 1000);
  TelemetrySection t;
  t.headline.energy_j = 12.5;
  t.summary.devices["gpu1"].metrics["power_w"].mean = 23;
  t.summary.devices["gpu1"].metrics["power_w"].drop_reasons["sentinel"] = 2;
  t.summary.sources.push_back({"nvml", "", true, {"power_w"}, {R"({"driver_version":"580.0"})"}});
  r.telemetry = t;
  ProfileSection p;
  p.op_table.push_back({});
  p.op_table[0].name = "aten::addmm";
  p.op_table[0].device_self_us = 9000;
  p.step_breakdown.gpu = std::map<std::string, GpuActivity>{{"cuda:0", GpuActivity{}}};
  r.profile = p;
  r.world_size = 2;
  auto j = to_json(r);
  EXPECT_EQ(j["telemetry"]["summary"]["devices"]["gpu1"]["fields"]["power_w"]["mean"], 23);
  EXPECT_EQ(j["telemetry"]["summary"]["sources"][0]["details"]["driver_version"], "580.0");
  EXPECT_EQ(j["profile"]["op_table"][0]["device_self_us"], 9000);
  EXPECT_FALSE(j["inference"].contains("server"));  // a scenario not run has no key
  auto back = run_record_from_json(j);
  EXPECT_EQ(back.world_size, 2);
  ASSERT_TRUE(back.telemetry);
  EXPECT_EQ(*back.telemetry->summary.metric("gpu1", "power_w")->mean, 23);
  EXPECT_EQ(to_json(back), j);
  // A record written before world_size existed: one process.
  j.erase("world_size");
  EXPECT_EQ(run_record_from_json(j).world_size, 1);
}

TEST(RunMetrics, EveryMetricHasAUniqueNameAUnitAndReadsTypedFields) {
  std::set<std::string> names;
  for (const auto& m : run_metrics()) {
    EXPECT_TRUE(names.insert(m.name).second) << m.name;
    EXPECT_FALSE(m.unit.empty()) << m.name;
  }
  for (const char* n : {"steady_samples_per_s", "energy_j", "joules_per_sample", "power_w_mean", "util_pct_mean",
                        "sm_activity_pct_mean", "inference_p50_ms", "inference_p99_ms", "inference_samples_per_s"})
    EXPECT_NE(find_run_metric(n), nullptr) << n;
  auto r = sample("cuda:0", 1000);
  TelemetrySection t;
  t.headline.util_pct_mean = 77;
  r.telemetry = t;
  EXPECT_EQ(find_run_metric("util_pct_mean")->value(r), 77);
  EXPECT_TRUE(find_run_metric("util_pct_mean")->higher_is_better);
  EXPECT_FALSE(find_run_metric("power_w_mean")->higher_is_better);
  EXPECT_EQ(find_run_metric("inference_p50_ms")->value(r), 0.5);
  EXPECT_EQ(find_run_metric("inference_p50_ms")->unit, "ms");
  EXPECT_FALSE(find_run_metric("energy_j")->value(r));  // not measured
  EXPECT_EQ(find_run_metric("no_such_metric"), nullptr);
}

// The run record and provenance are written from their fields() lists (one list per struct);
// the JSON keeps the form it had when it was built by hand: identity strings stay "" when empty,
// reasons and the checkpoint path are null when empty, absent phases and sections are null.
TEST(RunRecord, JsonFormFromTheFieldsListKeepsItsEmptyAndNullConventions) {
  RunRecord r;
  r.run_id = "cpu-mlp-b64-r0";
  r.status = RunStatus::kInterrupted;
  r.epochs.push_back(EpochRecord{});
  auto j = to_json(r);
  EXPECT_EQ(j["device_name"], "");
  EXPECT_EQ(j["optimizer_impl"], "");
  EXPECT_TRUE(j["error_kind"].is_null());
  EXPECT_TRUE(j["failure_reason"].is_null());
  EXPECT_TRUE(j["checkpoint_path"].is_null());
  for (const char* k : {"phases", "telemetry", "profile", "inference"}) {
    ASSERT_TRUE(j.contains(k)) << k;
    EXPECT_TRUE(j[k].is_null()) << k;
  }
  EXPECT_EQ(j["status"], "interrupted");
  EXPECT_EQ(j["world_size"], 1);
  EXPECT_TRUE(j["epochs"][0]["test_accuracy_pct"].is_null());
  EXPECT_EQ(j["epochs"][0]["complete"], true);
  EXPECT_EQ(run_record_from_json(j).status, RunStatus::kInterrupted);

  auto no_status = j;
  no_status.erase("status");
  EXPECT_EQ(run_record_from_json(no_status).status, RunStatus::kFailed);
  auto bad_status = j;
  bad_status["status"] = "exploded";
  EXPECT_THROW(run_record_from_json(bad_status), Error);

  Provenance p;
  p.host = "h";
  p.gpus.push_back(GpuDescription{"NVIDIA H200", 1, "", ""});
  auto pj = to_json(p);
  EXPECT_EQ(pj["cpu_model"], "");
  EXPECT_TRUE(pj["gpu_driver"].is_null());
  EXPECT_TRUE(pj["cuda_runtime"].is_null());
  EXPECT_EQ(pj["gpus"][0]["pci_bus_id"], "");
  EXPECT_EQ(pj["schema_version"], kSchemaVersion);
  EXPECT_EQ(to_json(provenance_from_json(pj)), pj);
  pj.erase("schema_version");
  EXPECT_EQ(provenance_from_json(pj).schema_version, 0);
}

// One rate, one spelling: the console table prints samples/s with the digits report.md and the
// console summary print (it once printed "12.1 k" beside the report's "12061").
TEST(ConsoleTable, SamplesPerSecondMatchTheReport) {
  const std::vector<RunRecord> runs = {sample("cpu", 12061.4), sample("cuda:0", 1234567.8)};
  const std::string table = format_matrix_table(runs);
  ReportInput in;
  in.runs = runs;
  const std::string md = render_markdown(in, analyze(in));
  for (const char* v : {"12061", "1234568"}) {
    EXPECT_NE(table.find(v), std::string::npos) << v << "\n" << table;
    EXPECT_NE(md.find(v), std::string::npos) << v << "\n" << md;
  }
  EXPECT_EQ(table.find(" k "), std::string::npos) << table;
  EXPECT_EQ(format_rate(45.67), "45.7");
}

// The report's analysis and research-question answers on hand-made run folders
// (tests/fixtures/report/make_fixtures.py): speed-ups, missing readings and their reasons.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/batch_sweep.h"
#include "trainscope/compare.h"
#include "trainscope/history.h"
#include "trainscope/report.h"
#include "trainscope/variants.h"

#include "report_helpers.h"

using namespace trainscope;
using namespace report_test;

TEST(ReportStats, MedianSpreadAndNoise) {
  Stat a = make_stat({10, 12, 11});
  EXPECT_EQ(a.n, 3);
  EXPECT_DOUBLE_EQ(a.median, 11);
  EXPECT_DOUBLE_EQ(a.spread(), 2);
  EXPECT_TRUE(within_noise(a, make_stat({11.5, 13, 14})));   // 10..12 and 11.5..14 overlap
  // Disjoint ranges are a difference, even when the medians are closer than the summed spreads.
  EXPECT_FALSE(within_noise(a, make_stat({12.5, 13, 14})));
  EXPECT_FALSE(within_noise(make_stat({877, 2055}), make_stat({352, 364})));  // -75 %, was called noise
  EXPECT_FALSE(within_noise(a, make_stat({20, 21, 22})));
  EXPECT_FALSE(within_noise(make_stat({10}), make_stat({10.1})));  // no spread: never noise
  EXPECT_FALSE(make_stat({}).ok());
}

TEST(ReportAnalysis, SpeedupsOnStudyFixture) {
  auto in = load_run_folder(kStudy);
  auto a = analyze(in);
  EXPECT_TRUE(a.has_gpu);
  EXPECT_TRUE(a.has_cpu);
  EXPECT_TRUE(a.has_repeats);
  auto* cnn128 = cmp(a, "cnn", 128);
  ASSERT_NE(cnn128, nullptr);
  ASSERT_TRUE(cnn128->speedup);
  EXPECT_NEAR(*cnn128->speedup, 53000.0 / 8500.0, 1e-6);  // 6.24x
  EXPECT_FALSE(cnn128->noise);
  ASSERT_TRUE(cnn128->accuracy_diff_pct);
  EXPECT_NEAR(*cnn128->accuracy_diff_pct, -0.1, 1e-9);
  auto* cnn64 = cmp(a, "cnn", 64);
  ASSERT_NE(cnn64, nullptr);
  EXPECT_NEAR(*cnn64->speedup, 28000.0 / 7800.0, 1e-6);
  // the CPU wins mlp at batch 64 ...
  auto* mlp64 = cmp(a, "mlp", 64);
  ASSERT_NE(mlp64, nullptr);
  EXPECT_NEAR(*mlp64->speedup, 0.51, 1e-6);
  EXPECT_FALSE(mlp64->noise);
  // ... and at batch 128 the difference is inside the spread of the repeats
  auto* mlp128 = cmp(a, "mlp", 128);
  ASSERT_NE(mlp128, nullptr);
  EXPECT_LT(*mlp128->speedup, 1.0);
  EXPECT_TRUE(mlp128->noise);
  // time for the requested epochs, per side
  ASSERT_TRUE(cnn128->cpu_time_for_epochs_s && cnn128->gpu_time_for_epochs_s);
  EXPECT_GT(*cnn128->cpu_time_for_epochs_s, 3 * *cnn128->gpu_time_for_epochs_s);  // evaluation time included
}

TEST(ReportAnalysis, AnswersSayTheNumbers) {
  auto a = analyze(load_run_folder(kStudy));
  ASSERT_EQ(a.answers.size(), 6u);
  std::string rq4 = all_sentences(a, "RQ4");
  EXPECT_NE(rq4.find("trains `cnn` 6.24× faster than the CPU at batch 128"), std::string::npos) << rq4;
  EXPECT_NE(rq4.find("the CPU trains `mlp` 1.96× faster than the GPU"), std::string::npos) << rq4;
  EXPECT_NE(rq4.find("inside the run-to-run spread (noise)"), std::string::npos) << rq4;
  std::string sn = all_sentences(a, "simple_network");
  EXPECT_NE(sn.find("`mlp` gains nothing from the GPU"), std::string::npos) << sn;
  EXPECT_EQ(sn.find("`cnn` gains"), std::string::npos) << sn;
  std::string rq3 = all_sentences(a, "RQ3");
  EXPECT_NE(rq3.find("CPU power unavailable (/sys/class/powercap does not exist"), std::string::npos) << rq3;
  // the reason is said once, with the first CPU cell; the others refer back to it
  const std::string reason = "/sys/class/powercap does not exist";
  EXPECT_EQ(rq3.find(reason, rq3.find(reason) + 1), std::string::npos) << rq3;
  EXPECT_LT(rq3.find(reason), rq3.find("CPU power unavailable (as above)")) << rq3;
  EXPECT_NE(rq3.find("gpu1 23.0 W"), std::string::npos) << rq3;
  EXPECT_NE(rq3.find("gpu0 152 W"), std::string::npos) << rq3;
  std::string rq2 = all_sentences(a, "RQ2");
  EXPECT_NE(rq2.find("3.40 GiB at batch 64 → 5.00 GiB at batch 128"), std::string::npos) << rq2;
  std::string rq5 = all_sentences(a, "RQ5");
  EXPECT_NE(rq5.find("one image takes 0.35 ms"), std::string::npos) << rq5;
  std::string rq1 = all_sentences(a, "RQ1");
  EXPECT_NE(rq1.find("GPU utilisation 35.0 % on average"), std::string::npos) << rq1;
  EXPECT_NE(rq1.find("SM activity 20.0 %"), std::string::npos) << rq1;
}

// A GPU cell without SM activity while another cell on the same GPU has it: the run was too short
// for two GPM samples, not a GPU without GPM.
TEST(ReportAnalysis, MissingSmActivityOnAGpuWithGpmSaysTheRunWasTooShort) {
  auto in = load_run_folder(kStudy);
  std::string dropped_for;
  for (auto& r : in.runs)
    if (r.device != "cpu" && r.telemetry && r.telemetry->headline.sm_activity_pct_mean && dropped_for.empty()) {
      dropped_for = r.model + " at batch " + std::to_string(r.batch_size) + " on " + r.device;
      for (auto& o : in.runs)  // every repeat of that cell
        if (o.device == r.device && o.model == r.model && o.batch_size == r.batch_size && o.telemetry)
          o.telemetry->headline.sm_activity_pct_mean.reset();
    }
  ASSERT_FALSE(dropped_for.empty());
  std::string rq1 = all_sentences(analyze(in), "RQ1");
  EXPECT_NE(rq1.find("too few NVML GPM samples"), std::string::npos) << rq1;
  EXPECT_NE(rq1.find("SM activity 20.0 %"), std::string::npos) << rq1;  // the other cells keep theirs
  EXPECT_EQ(rq1.find("needs NVML GPM"), std::string::npos) << rq1;
}

TEST(ReportAnalysis, CpuOnlyDataSaysWhyThereIsNoGpuNumber) {
  auto in = load_run_folder(kStudy);
  std::erase_if(in.runs, [](const RunRecord& r) { return r.device != "cpu"; });
  in.provenance.gpus.clear();
  auto a = analyze(in);
  EXPECT_FALSE(a.has_gpu);
  EXPECT_TRUE(a.device_comparisons.empty());
  EXPECT_NE(all_sentences(a, "RQ4").find("No GPU run in these results"), std::string::npos);
  EXPECT_TRUE(fired(a, "cpu_faster").empty());
  // The reason is given in full once (RQ1); RQ2-RQ4 refer back to it in one short sentence.
  const std::string full = "the machine reported no CUDA device";
  EXPECT_NE(all_sentences(a, "RQ1").find(full), std::string::npos);
  for (const char* q : {"RQ2", "RQ3", "RQ4"}) {
    EXPECT_EQ(all_sentences(a, q).find(full), std::string::npos) << q;
    EXPECT_NE(all_sentences(a, q).find("No GPU run in these results (as in RQ1)."), std::string::npos) << q;
  }
  // A GPU host where only the CPU was asked for: not a failure, and RQ1 says so.
  auto cpu_asked = load_run_folder(kStudy);
  std::erase_if(cpu_asked.runs, [](const RunRecord& r) { return r.device != "cpu"; });
  ASSERT_FALSE(cpu_asked.provenance.gpus.empty());
  const std::string rq1 = all_sentences(analyze(cpu_asked), "RQ1");
  EXPECT_NE(rq1.find("none was asked for (--devices)"), std::string::npos) << rq1;
  EXPECT_EQ(rq1.find("finished successfully"), std::string::npos) << rq1;
}

// A reason sits in one pair of parentheses: no answer nests them ("(telemetry was not recorded
// (--no-telemetry?))" read badly), with telemetry, without GPUs, and without telemetry at all.
TEST(ReportAnalysis, AnswersNeverNestParentheses) {
  auto depth = [](const std::string& s) {
    int d = 0, most = 0;
    for (char ch : s) {
      if (ch == '(') most = std::max(most, ++d);
      if (ch == ')') --d;
    }
    return most;
  };
  auto full = load_run_folder(kStudy);
  auto cpu_only = full;
  std::erase_if(cpu_only.runs, [](const RunRecord& r) { return r.device != "cpu"; });
  cpu_only.provenance.gpus.clear();
  auto no_telemetry = cpu_only;
  for (auto& r : no_telemetry.runs) r.telemetry.reset();
  for (const auto* in : {&full, &cpu_only, &no_telemetry}) {
    const auto a = analyze(*in);
    for (const auto& q : a.answers)
      for (const auto& s : q.sentences) EXPECT_LE(depth(s), 1) << q.id << ": " << s;
  }
  const std::string rq3 = all_sentences(analyze(no_telemetry), "RQ3");
  EXPECT_NE(rq3.find("no telemetry was recorded: the runs had telemetry off, by --no-telemetry"), std::string::npos) << rq3;
}

// A report over folders run with different settings gives each cell the reason of its own runs:
// a --no-telemetry cell beside measured ones is "telemetry off", not "too few samples".
TEST(ReportAnalysis, MissingCpuUtilisationHasTheReasonOfTheCellsOwnRuns) {
  auto in = load_run_folder(kStudy);
  std::erase_if(in.runs, [](const RunRecord& r) { return r.device != "cpu"; });
  in.provenance.gpus.clear();
  ASSERT_GE(in.runs.size(), 2u);
  const std::string off_model = in.runs[0].model;
  const int64_t off_batch = in.runs[0].batch_size;
  size_t kept = 0;
  for (auto& r : in.runs) {
    if (r.model == off_model && r.batch_size == off_batch) r.telemetry.reset();
    else kept += r.telemetry.has_value();
  }
  ASSERT_GT(kept, 0u) << "other cells keep their telemetry";
  const std::string rq1 = all_sentences(analyze(in), "RQ1");
  const std::string cell = "`" + off_model + "` at batch " + std::to_string(off_batch) + " on the CPU: CPU utilisation not measured";
  const auto at = rq1.find(cell);
  ASSERT_NE(at, std::string::npos) << rq1;
  EXPECT_EQ(rq1.substr(at + cell.size()).rfind(" (no telemetry was recorded: the runs had", 0), 0u) << rq1.substr(at);
  // a second folder with the same run ids (another seed, telemetry on): still this cell's reason
  auto other = load_run_folder(kStudy);
  std::erase_if(other.runs, [](const RunRecord& r) { return r.device != "cpu"; });
  for (auto& r : other.runs) r.seed += 1;
  const std::string merged = all_sentences(analyze(merge_inputs({in, other})), "RQ1");
  const auto at2 = merged.find(cell);
  ASSERT_NE(at2, std::string::npos) << merged;
  EXPECT_EQ(merged.substr(at2 + cell.size()).rfind(" (no telemetry was recorded: the runs had", 0), 0u) << merged.substr(at2);
  // telemetry that ran without CPU utilisation leaves cpu_contention unchecked too, and says so
  auto unread = load_run_folder(kStudy);
  std::erase_if(unread.runs, [](const RunRecord& r) { return r.device != "cpu" || !r.telemetry; });
  ASSERT_FALSE(unread.runs.empty());
  for (auto& r : unread.runs) r.telemetry->headline.process_cpu_pct_mean = 50;  // the fixture predates it
  unread.runs[0].telemetry->headline.cpu_util_pct_mean.reset();
  const auto a = analyze(unread);
  ASSERT_EQ(a.advice_not_checked.size(), 1u) << ::testing::PrintToString(a.advice_not_checked);
  EXPECT_NE(a.advice_not_checked[0].find("cpu_contention, for 1 CPU run whose telemetry has no CPU utilisation"),
            std::string::npos)
      << a.advice_not_checked[0];
}

// A report over folders run with different settings pools the runs of one workload as repeats;
// the cell says which settings its runs differ in, so the medians are not read as like for like.
TEST(ReportAnalysis, CellWhoseRunsDifferInSettingsSaysSo) {
  auto in = load_run_folder(kStudy);
  for (const auto& n : analyze(in).notes) EXPECT_EQ(n.find("settings differ"), std::string::npos) << n;
  RunRecord other = in.runs[0];
  other.run_id += "-b";
  other.test_samples = 1000;
  other.stop_reason = "max_steps";
  other.steps_completed = 300;
  ASSERT_TRUE(in.run_source.empty()) << "one folder: every run has its provenance";
  ASSERT_TRUE(in.runs[0].stop_reason.empty());
  in.runs.push_back(other);
  const auto a = analyze(in);
  std::string notes;
  for (const auto& n : a.notes) notes += n + "\n";
  EXPECT_NE(notes.find("pools runs whose settings differ (test samples: 1000, " + std::to_string(in.runs[0].test_samples) +
                       "; end: complete, max steps 300)"),
            std::string::npos)
      << notes;
  EXPECT_NE(render_markdown(in, a).find("pools runs whose settings differ"), std::string::npos);
}

// A missing reading's reason is the same for every cell of a host: each answer gives it once,
// with the first cell that lacks the reading, and the cells after it say "as above".
TEST(ReportAnalysis, AnswersGiveEachMissingReadingsReasonOnce) {
  auto a = analyze(load_run_folder(kStudy));
  int referred_back = 0;
  for (const auto& q : a.answers) {
    std::map<std::string, int> seen;
    for (const auto& sentence : q.sentences)
      for (const std::string key : {"not measured (", "unavailable ("}) {
        for (size_t at = sentence.find(key); at != std::string::npos; at = sentence.find(key, at + 1)) {
          const size_t open = at + key.size();
          const std::string reason = sentence.substr(open, sentence.find(')', open) - open);
          if (reason == "as above") ++referred_back;
          else EXPECT_EQ(++seen[reason], 1) << q.id << ": '" << reason << "' given again in: " << sentence;
        }
      }
  }
  EXPECT_GT(referred_back, 0);  // the fixture has several cells without CPU power or SM activity
}

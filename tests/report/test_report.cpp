// Report analysis, advice rules, history database and compare, on hand-made run folders
// (tests/fixtures/report/make_fixtures.py).
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

using namespace trainscope;

namespace {

const std::string kStudy = std::string(TS_FIXTURES_DIR) + "/report/study";
const std::string kHealthy = std::string(TS_FIXTURES_DIR) + "/report/healthy";

const DeviceComparison* cmp(const Analysis& a, const std::string& model, int64_t b, const std::string& gpu = "cuda:0") {
  for (const auto& d : a.device_comparisons)
    if (d.model == model && d.batch_size == b && d.gpu_device == gpu) return &d;
  return nullptr;
}

std::vector<const Advice*> fired(const Analysis& a, const std::string& rule) {
  std::vector<const Advice*> out;
  for (const auto& x : a.advice)
    if (x.rule == rule) out.push_back(&x);
  return out;
}

bool fired_on(const Analysis& a, const std::string& rule, const std::string& device, const std::string& model, int64_t b) {
  auto v = fired(a, rule);
  return std::any_of(v.begin(), v.end(), [&](const Advice* x) {
    return x->device == device && x->model == model && x->batch_size == b;
  });
}

std::string all_sentences(const Analysis& a, const std::string& id) {
  std::string s;
  for (const auto& q : a.answers)
    if (q.id == id)
      for (const auto& x : q.sentences) s += x + "\n";
  return s;
}

std::string tmpdir(const std::string& name) {
  auto d = std::filesystem::path(TS_BINARY_DIR) / "test-report" / name;
  trainscope::remove_tree(d);
  std::filesystem::create_directories(d);
  return d.string();
}

}  // namespace

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

// Without telemetry the reason names what happened, not a guess between two causes, and the
// advice says which rules could not look at the runs (the report cannot tell "no problem" from
// "not checked" otherwise).
TEST(ReportAdvice, RulesThatNeedTelemetrySayTheyWereNotCheckedAndWhy) {
  auto in = load_run_folder(kStudy);
  std::erase_if(in.runs, [](const RunRecord& r) { return r.device != "cpu"; });
  in.provenance.gpus.clear();
  for (auto& r : in.runs) r.telemetry.reset();
  const auto off = analyze(in);
  ASSERT_EQ(off.advice_not_checked.size(), 1u) << ::testing::PrintToString(off.advice_not_checked);
  EXPECT_EQ(off.advice_not_checked[0].rfind("cpu_contention, for ", 0), 0u) << off.advice_not_checked[0];
  EXPECT_NE(off.advice_not_checked[0].find("the runs had telemetry off, by --no-telemetry"), std::string::npos);
  EXPECT_EQ(off.advice_not_checked[0].find("sampler"), std::string::npos) << "no hedge between two causes";
  const std::string md = render_markdown(in, off);
  EXPECT_NE(md.find("Not checked: cpu_contention, for "), std::string::npos) << md;
  if (off.advice.empty()) EXPECT_NE(md.find("No rule fired on what was measured."), std::string::npos) << md;
  EXPECT_EQ(md.find("no measurement points to a problem"), std::string::npos) << "not while a rule was left unchecked";
  EXPECT_NE(render_console(in, off).find("not checked: cpu_contention, for "), std::string::npos);
  EXPECT_NE(render_html(in, off, {}).find("Not checked: cpu_contention, for "), std::string::npos);
  // A run whose sampler failed to start carries the runner's note: the reason is that error.
  in.runs[0].notes.push_back(std::string(RunRecord::kSamplerFailedNote) + "cannot create thread");
  const auto failed = analyze(in);
  ASSERT_EQ(failed.advice_not_checked.size(), 1u);
  EXPECT_NE(failed.advice_not_checked[0].find("the sampler could not start: cannot create thread"), std::string::npos)
      << failed.advice_not_checked[0];
  EXPECT_NE(all_sentences(failed, "RQ3").find("the sampler could not start: cannot create thread"), std::string::npos);
  // With telemetry every rule could look: nothing is listed. (The fixture predates the process's
  // CPU share, which cpu_contention reads; without it the rule says it could not look.)
  auto full = load_run_folder(kStudy);
  EXPECT_FALSE(analyze(full).advice_not_checked.empty());
  for (auto& r : full.runs)
    if (r.telemetry && r.telemetry->headline.cpu_util_pct_mean) r.telemetry->headline.process_cpu_pct_mean = 50;
  EXPECT_TRUE(analyze(full).advice_not_checked.empty()) << ::testing::PrintToString(analyze(full).advice_not_checked);
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

// The summary's "—" for energy and utilisation comes with its reason under the table (the
// same reason as the answers), in report.md and on the console; a measured reading has none.
TEST(ReportSummary, AbsentEnergyAndUtilisationSayWhy) {
  auto in = load_run_folder(kStudy);
  std::erase_if(in.runs, [](const RunRecord& r) { return r.device != "cpu"; });
  in.provenance.gpus.clear();
  for (auto& r : in.runs) r.telemetry.reset();
  auto a = analyze(in);
  const std::string md = render_markdown(in, a), con = render_console(in, a);
  for (const char* line : {"— CPU energy: no telemetry was recorded", "— CPU utilisation: no telemetry was recorded"}) {
    EXPECT_NE(md.find(std::string("- ") + line), std::string::npos) << md;
    EXPECT_NE(con.find(line), std::string::npos) << con;
  }
  EXPECT_EQ(md.find("GPU energy:"), std::string::npos) << "no GPU cell, no GPU line";
  // The study fixture measured CPU utilisation but recorded no RAPL: one line, CPU energy.
  auto b = analyze(load_run_folder(kStudy));
  ASSERT_EQ(b.summary_absences.size(), 1u) << ::testing::PrintToString(b.summary_absences);
  EXPECT_EQ(b.summary_absences[0].rfind("CPU energy: ", 0), 0u) << b.summary_absences[0];
}

TEST(ReportAdvice, EachRuleFiresOnItsFixture) {
  auto a = analyze(load_run_folder(kStudy));
  EXPECT_TRUE(fired_on(a, "low_utilisation", "cuda:0", "cnn", 64));
  EXPECT_NE(fired(a, "low_utilisation").front()->advice.find("data loading is the bottleneck"), std::string::npos);
  EXPECT_TRUE(fired_on(a, "h2d_copies", "cuda:0", "mlp", 64));
  // batch_size (replaces memory_headroom): from measured throughput at b64 and b128, not from memory
  EXPECT_TRUE(fired_on(a, "batch_size", "cuda:0", "cnn", 128));
  EXPECT_TRUE(fired_on(a, "cpu_faster", "cpu", "mlp", 64));
  EXPECT_FALSE(fired_on(a, "cpu_faster", "cpu", "mlp", 128));  // inside the noise: no advice
  EXPECT_TRUE(fired_on(a, "throttling", "cuda:0", "cnn", 128));
  EXPECT_FALSE(fired_on(a, "throttling", "cuda:0", "cnn", 64));
  ASSERT_EQ(fired(a, "unbalanced_gpus").size(), 1u);
  EXPECT_NE(fired(a, "unbalanced_gpus")[0]->evidence.find("gpu1 drew 23.0 W"), std::string::npos);
  // every advice cites a measurement
  for (const auto& x : a.advice) {
    EXPECT_FALSE(x.evidence.empty()) << x.rule;
    EXPECT_TRUE(std::any_of(x.evidence.begin(), x.evidence.end(), ::isdigit)) << x.rule << ": " << x.evidence;
  }
  // the batch recommendation: cnn on cuda:0 b128 53000 vs b64 28000 samples/s (+89.3 %), measured
  // accuracy both sides, and the cost (learning-rate re-tuning) named; no memory extrapolation
  auto bs = fired(a, "batch_size");
  auto it = std::find_if(bs.begin(), bs.end(), [](const Advice* x) { return x->device == "cuda:0" && x->model == "cnn"; });
  ASSERT_NE(it, bs.end());
  EXPECT_NE((*it)->evidence.find("b128 trains 89.3 % faster than b64"), std::string::npos) << (*it)->evidence;
  EXPECT_NE((*it)->evidence.find("test accuracy 91.3 % at b128 vs 91.2 % at b64 (measured)"), std::string::npos)
      << (*it)->evidence;
  EXPECT_NE((*it)->advice.find("learning rate"), std::string::npos) << (*it)->advice;
  for (const auto& x : a.advice) EXPECT_EQ(x.advice.find("should fit"), std::string::npos) << x.advice;
}

TEST(ReportAdvice, NoRuleFiresOnHealthyRun) {
  auto a = analyze(load_run_folder(kHealthy));
  for (const auto& x : a.advice) ADD_FAILURE() << x.rule << ": " << x.evidence;
  EXPECT_NE(all_sentences(a, "RQ4").find("6.24× faster"), std::string::npos);
  EXPECT_NE(a.notes.front().find("one repeat per cell"), std::string::npos);
}

TEST(ReportAdvice, ThresholdsAreHonoured) {
  AdviceThresholds t;
  t.low_gpu_util_pct = 30;  // cnn b64 at 35 % no longer counts as low ...
  t.low_sm_activity_pct = 10;
  auto a = analyze(load_run_folder(kStudy), t);
  EXPECT_FALSE(fired_on(a, "low_utilisation", "cuda:0", "cnn", 64));
  EXPECT_TRUE(fired_on(a, "data_loading", "cuda:0", "cnn", 64));  // ... but its 30 % data share still fires
}

// The healthy fixture's CPU run made contended the way a shared 2-core machine was measured:
// 2 intra-op threads, the process on one core (99 %), the machine 100 % busy.
ReportInput contended_fixture() {
  auto in = load_run_folder(kHealthy);
  in.provenance.cpu_logical_cores = 2;
  for (auto& r : in.runs) {
    if (r.device != "cpu") continue;
    r.intra_op_threads = 2;
    if (!r.telemetry) r.telemetry.emplace();
    r.telemetry->headline.process_cpu_pct_mean = 99;
    r.telemetry->headline.cpu_util_pct_mean = 100;
  }
  return in;
}

// `taskset -c 0 trainscope run --threads 2`: the same telemetry as a contended run, but the
// process could use one CPU: the cause is the thread count, not other processes.
TEST(ReportAdvice, ThreadsBeyondTheUsableCpusAreOversubscriptionNotContention) {
  auto in = contended_fixture();
  in.provenance.cpu_usable_cores = 1;
  in.provenance.cpu_limit = "affinity mask: 1 of 2 CPUs, set by taskset, Slurm or a cpuset";
  auto a = analyze(in);
  EXPECT_TRUE(fired(a, "cpu_contention").empty());
  ASSERT_EQ(fired(a, "cpu_oversubscribed").size(), 1u);
  EXPECT_NE(fired(a, "cpu_oversubscribed")[0]->evidence.find(
                "2 intra-op threads on 1 usable CPU (affinity mask: 1 of 2 CPUs, set by taskset, Slurm or a cpuset; 2 "
                "logical)"),
            std::string::npos)
      << fired(a, "cpu_oversubscribed")[0]->evidence;
  in.provenance.cpu_usable_cores = 2;  // every CPU usable: back to contention
  a = analyze(in);
  EXPECT_TRUE(fired(a, "cpu_oversubscribed").empty());
  EXPECT_EQ(fired(a, "cpu_contention").size(), 1u);
}

TEST(ReportAdvice, CpuContentionFiresOnAContendedCpuRun) {
  auto a = analyze(contended_fixture());
  ASSERT_EQ(fired(a, "cpu_contention").size(), 1u);
  const Advice& x = *fired(a, "cpu_contention")[0];
  EXPECT_EQ(x.device, "cpu");
  EXPECT_NE(x.evidence.find("process_cpu_pct_mean 99"), std::string::npos) << x.evidence;
  EXPECT_NE(x.evidence.find("2 intra-op threads"), std::string::npos) << x.evidence;
  EXPECT_NE(x.advice.find("--threads"), std::string::npos) << x.advice;
  // the same run with both cores to itself is not contended
  auto quiet = contended_fixture();
  for (auto& r : quiet.runs)
    if (r.device == "cpu") r.telemetry->headline.process_cpu_pct_mean = 195;
  EXPECT_TRUE(fired(analyze(quiet), "cpu_contention").empty());
  // nor is one on an idle machine
  auto idle = contended_fixture();
  for (auto& r : idle.runs)
    if (r.device == "cpu") r.telemetry->headline.cpu_util_pct_mean = 50;
  EXPECT_TRUE(fired(analyze(idle), "cpu_contention").empty());
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

// The machine's CPU utilisation counts every process; beside it the report shows the cores the
// run's own process kept busy (process_cpu_pct_mean / 100), so a busy machine is not read as a
// busy run: in the summary, the details (report.md, report.html) and RQ1's answer.
TEST(ReportRender, CpuCellShowsTheProcesssOwnCoresBesideTheMachinesUtilisation) {
  auto in = contended_fixture();  // machine 100 % busy, the process 0.99 cores of 2
  const auto a = analyze(in);
  const Cell* cpu = nullptr;
  for (const auto& c : a.cells)
    if (c.device == "cpu" && c.runs_ok > 0) cpu = &c;
  ASSERT_NE(cpu, nullptr);
  ASSERT_TRUE(cpu->process_cpu_cores.ok());
  EXPECT_DOUBLE_EQ(cpu->process_cpu_cores.median, 0.99);
  const std::string md = render_markdown(in, a), html = render_html(in, a, {});
  EXPECT_NE(md.find("CPU 100 % (machine), this process 0.99 cores"), std::string::npos) << md;
  EXPECT_NE(md.find("| CPU util (machine) | process CPU |"), std::string::npos);
  EXPECT_NE(md.find("| 0.99 cores |"), std::string::npos) << md;
  EXPECT_NE(html.find("<th>process CPU</th>"), std::string::npos);
  EXPECT_NE(html.find("<td>0.99 cores</td>"), std::string::npos);
  EXPECT_NE(all_sentences(a, "RQ1").find("busy on average, this process kept 0.99 cores busy"), std::string::npos)
      << all_sentences(a, "RQ1");
  // without the process's reading the machine's figure stands alone, labelled as the machine's
  for (auto& r : in.runs)
    if (r.telemetry) r.telemetry->headline.process_cpu_pct_mean.reset();
  const auto b = analyze(in);
  const std::string md2 = render_markdown(in, b);
  EXPECT_EQ(md2.find("(machine), this process"), std::string::npos);
  EXPECT_EQ(all_sentences(b, "RQ1").find("this process kept"), std::string::npos);
  EXPECT_NE(md2.find("CPU 100 % (machine)"), std::string::npos);
}

// A cell whose only run does not apply (a variant the model cannot take) says so in the details
// table rather than "0/0" runs ok/failed.
TEST(ReportRender, NotApplicableCellSaysSoInTheDetailsTable) {
  auto in = contended_fixture();
  for (auto& r : in.runs) {
    r.status = RunStatus::kNotApplicable;
    r.variant_note = "not applicable: channels_last needs a model with 4-D parameters (convolutions)";
  }
  const auto a = analyze(in);
  const std::string md = render_markdown(in, a);
  EXPECT_NE(md.find(" | 0/0, 1 not applicable | "), std::string::npos) << md;
  EXPECT_EQ(md.find(" | 0/0 | "), std::string::npos) << md;
}

// Profiled steps faster than the headline steps: the headline window was slowed by something
// else; the report says so and never prints the negative "cost" as a cost.
TEST(ReportAdvice, NoisyHeadlineWhenProfiledStepsRanFaster) {
  auto in = load_run_folder(kHealthy);
  ASSERT_FALSE(in.runs.empty());
  auto& m = in.runs[0].measurement;
  m.headline_step_ms_mean = 2.0;
  m.profiled_step_ms_mean = 1.6;
  m.profile_step_time_ratio = 0.8;
  m.profile_cost_pct = -4.0;
  m.instrumentation_over_3pct = true;  // as a sampler over 3 % would set it
  auto a = analyze(in);
  ASSERT_EQ(fired(a, "noisy_headline").size(), 1u);
  EXPECT_NE(fired(a, "noisy_headline")[0]->evidence.find("profile_step_time_ratio 0.800"), std::string::npos)
      << fired(a, "noisy_headline")[0]->evidence;
  // the means' negative "cost" is named as noise, not printed as time the window "added"
  EXPECT_EQ(fired(a, "noisy_headline")[0]->evidence.find("added -"), std::string::npos) << fired(a, "noisy_headline")[0]->evidence;
  EXPECT_NE(fired(a, "noisy_headline")[0]->evidence.find("faster, by 4.00 % of the training time: noise, not a cost"),
            std::string::npos)
      << fired(a, "noisy_headline")[0]->evidence;
  std::string md = render_markdown(in, a);
  EXPECT_EQ(md.find("profiling window -4"), std::string::npos);
  EXPECT_NE(md.find("profiling window cost not measurable"), std::string::npos);
  // the sampler's CPU share: its measured value, or "not measured", never a 0 it did not read
  m.sampler_cpu_pct_mean = 3.4;
  EXPECT_NE(render_markdown(in, analyze(in)).find("telemetry sampler 3.4 % of one core"), std::string::npos);
  m.sampler_cpu_pct_mean.reset();
  md = render_markdown(in, analyze(in));
  EXPECT_NE(md.find("telemetry sampler's CPU time not measured"), std::string::npos) << md;
  EXPECT_EQ(md.find("telemetry sampler 0.0 %"), std::string::npos) << md;
  std::string con = render_console(in, a);
  EXPECT_NE(con.find("[noisy_headline]"), std::string::npos);
  EXPECT_EQ(con.find("profiling window -4"), std::string::npos);
  // a profiler that cost time (ratio > 1) is no noise
  m.profile_step_time_ratio = 1.2;
  m.profile_cost_pct = 2.0;
  EXPECT_TRUE(fired(analyze(in), "noisy_headline").empty());
  // nor is a gap inside timer noise (0.99: 19.0 vs 19.1 ms, seen on the default job)
  m.profile_step_time_ratio = 0.99;
  m.profile_cost_pct = -0.001;
  EXPECT_TRUE(fired(analyze(in), "noisy_headline").empty());
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

TEST(ReportRender, MarkdownHtmlAndConsole) {
  auto in = load_run_folder(kStudy);
  auto a = analyze(in);
  std::string md = render_markdown(in, a);
  EXPECT_NE(md.find("# trainscope report"), std::string::npos);
  EXPECT_NE(md.find("| `cnn` | 128 | cuda:0 | 3/0 | 53000 (±1325, n=3) | 6.24× |"), std::string::npos) << md.substr(0, 3000);
  EXPECT_EQ(md, render_markdown(in, analyze(in)));  // deterministic, diffable
  std::string why;
  auto series = load_telemetry_series(kStudy, 200, &why);
  ASSERT_FALSE(series.empty()) << why;
  for (const auto& s : series) EXPECT_LE(s.points.size(), 200u) << s.device << " " << s.metric;
  std::string html = render_html(in, a, series);
  EXPECT_NE(html.find("Chart.js v4"), std::string::npos);
  EXPECT_GT(html.size(), chartjs_source().size());
  EXPECT_EQ(html.find("<script src="), std::string::npos);  // nothing loaded from outside
  EXPECT_EQ(html.find("</script", html.find("var DATA")), html.rfind("</script"));
  std::string con = render_console(in, a);
  EXPECT_NE(con.find("RQ4"), std::string::npos);
  EXPECT_NE(con.find(" samples/s, n=3)"), std::string::npos) << con;  // the spread carries its unit
  EXPECT_NE(con.find("[cpu_faster]"), std::string::npos);
  // the summary's columns are two spaces apart, so multi-word headers stay readable as one column
  EXPECT_NE(con.find("  device  batch  samples/s"), std::string::npos) << con;
  EXPECT_NE(con.find("  speed-up vs CPU  "), std::string::npos) << con;
  auto dir = tmpdir("render");
  auto f = write_report(in, dir);
  EXPECT_TRUE(file_exists(f.html_path));
  EXPECT_TRUE(file_exists(f.markdown_path));
}

// The header names the CPUs the run could use when a job scheduler or container gave it fewer
// than the machine has (taskset, Slurm, docker --cpus), and counts threads in good grammar.
TEST(ReportRender, HeaderNamesTheUsableCpusWhenFewerThanTheMachines) {
  auto in = load_run_folder(kStudy);
  in.provenance.cpu_logical_cores = 16;
  in.provenance.cpu_usable_cores = 16;
  in.provenance.intra_op_threads = 1;
  const auto a = analyze(in);
  std::string md = render_markdown(in, a);
  EXPECT_NE(md.find("(16 logical CPUs, 1 intra-op thread)"), std::string::npos) << md.substr(0, 800);
  in.provenance.cpu_usable_cores = 4;
  in.provenance.intra_op_threads = 4;
  md = render_markdown(in, a);
  EXPECT_NE(md.find("(16 logical CPUs, 4 usable, 4 intra-op threads)"), std::string::npos) << md.substr(0, 800);
}

// A run stopped before its first full epoch (--max-steps): the epoch time is derived from
// samples/s, and both report tables must say it is an estimate.
TEST(ReportRender, EstimatedEpochTimeIsMarked) {
  auto in = load_run_folder(kStudy);
  for (auto& r : in.runs) r.mean_epoch_time_s.reset();
  auto a = analyze(in);
  ASSERT_FALSE(a.cells.empty());
  EXPECT_TRUE(a.cells[0].epoch_time_is_estimate);
  std::string md = render_markdown(in, a);
  EXPECT_NE(md.find(" (est.) |"), std::string::npos);
  std::string html = render_html(in, a, {});
  EXPECT_NE(html.find(" (est.)</td>"), std::string::npos);
  auto full = load_run_folder(kStudy);
  EXPECT_EQ(render_markdown(full, analyze(full)).find(" (est.) |"), std::string::npos);  // measured: no mark
}

// Device telemetry means/maxima from fewer than 5 readings are shown marked, not plainly.
TEST(ReportRender, TelemetryFromTooFewSamplesIsMarked) {
  auto in = load_run_folder(kStudy);
  auto plain = analyze(in);
  EXPECT_EQ(render_markdown(in, plain).find("too few"), std::string::npos);
  bool any = false;
  for (auto& r : in.runs)
    if (r.telemetry && r.telemetry->headline.power_w_max) {
      r.telemetry->headline.stats_samples_min = 3;
      any = true;
    }
  ASSERT_TRUE(any);
  auto a = analyze(in);
  std::string md = render_markdown(in, a), html = render_html(in, a, {});
  EXPECT_NE(md.find("| n=3, too few ("), std::string::npos);
  EXPECT_NE(html.find("<td>n=3, too few ("), std::string::npos);
  for (auto& r : in.runs)
    if (r.telemetry) r.telemetry->headline.stats_samples_min = 5;
  EXPECT_EQ(render_markdown(in, analyze(in)).find("too few"), std::string::npos);
}

// The CPU row is the speed-up baseline only when a GPU ran the same workload.
TEST(ReportRender, CpuSpeedupBaselineOnlyWithAGpuToCompare) {
  auto in = load_run_folder(kStudy);
  EXPECT_NE(render_markdown(in, analyze(in)).find("| 1× (baseline) |"), std::string::npos);
  std::vector<RunRecord> cpu_only;
  for (const auto& r : in.runs)
    if (r.device == "cpu") cpu_only.push_back(r);
  ASSERT_FALSE(cpu_only.empty());
  in.runs = cpu_only;
  EXPECT_EQ(render_markdown(in, analyze(in)).find("1×"), std::string::npos);
}

TEST(ReportRender, MissingFolderIsAnIoError) {
  try {
    load_run_folder("/nonexistent/run");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find("results.json"), std::string::npos);
  }
}

// ---------------------------------------------------------------- history

TEST(ReportHistory, SchemaVersionAndWal) {
  auto dir = tmpdir("schema");
  HistoryDb db(dir + "/h.sqlite");
  EXPECT_TRUE(db.list().empty());
  // reopen works, a foreign database is refused
  HistoryDb again(dir + "/h.sqlite");
  write_file_atomic(dir + "/other.sqlite", "");
  EXPECT_NO_THROW(HistoryDb(dir + "/other.sqlite"));
  EXPECT_TRUE(file_exists(dir + "/h.sqlite-wal") || file_exists(dir + "/h.sqlite"));
}

TEST(ReportHistory, SurvivesAProcessKilledMidRun) {
  auto dir = tmpdir("killed");
  const std::string path = dir + "/history.sqlite";
  auto in = load_run_folder(kStudy);
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipefd[0]);
    try {
      HistoryDb db(path);
      auto m = db.begin_matrix(dir + "/run1", in.provenance);
      for (int i = 0; i < 2; ++i) {
        db.run_started(m, in.runs[i]);
        db.run_finished(m, in.runs[i]);
      }
      db.run_started(m, in.runs[2]);  // the open run
      char c = 'x';
      if (write(pipefd[1], &c, 1) != 1) _exit(3);
      pause();  // killed here, mid-run
    } catch (...) {
      _exit(2);
    }
    _exit(0);
  }
  close(pipefd[1]);
  char c = 0;
  ASSERT_EQ(read(pipefd[0], &c, 1), 1);
  close(pipefd[0]);
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));

  HistoryDb db(path);
  auto rows = db.list();
  ASSERT_EQ(rows.size(), 3u);
  int ok = 0, incomplete = 0;
  for (const auto& r : rows) {
    if (r.status == "ok") ++ok;
    if (r.status == "incomplete") {
      ++incomplete;
      EXPECT_EQ(r.run_id, in.runs[2].run_id);
    }
  }
  EXPECT_EQ(ok, 2);
  EXPECT_EQ(incomplete, 1);
  auto loaded = db.load_matrix(rows.front().matrix_id);
  ASSERT_EQ(loaded.runs.size(), 3u);
  EXPECT_EQ(loaded.runs[0].steady_samples_per_s, in.runs[0].steady_samples_per_s);
  EXPECT_EQ(loaded.runs[2].status, RunStatus::kInterrupted);
  // the report rebuilds from the database (by matrix id and by folder)
  auto again = resolve_runs("m" + std::to_string(rows.front().matrix_id), path);
  EXPECT_EQ(again.runs.size(), 3u);
  EXPECT_EQ(resolve_runs(dir + "/run1", path).runs.size(), 3u);
  EXPECT_EQ(resolve_runs(std::to_string(rows.back().id), path).runs.size(), 1u);
  EXPECT_THROW(resolve_runs("m999", path), Error);
}

TEST(ReportHistory, ReporterRecordsRunsAndReportsAFailureOnce) {
  auto dir = tmpdir("observer");
  struct Notices : Reporter {
    std::vector<std::string> seen;
    void notice(const std::string& m) override { seen.push_back(m); }
  } notices;
  auto in = load_run_folder(kHealthy);
  {
    HistoryReporter h(dir + "/h.sqlite", &notices);
    EXPECT_FALSE(std::filesystem::exists(dir + "/h.sqlite")) << "opened only when a matrix starts";
    h.start(in.provenance, dir + "/runA", in.runs.size());
    for (const auto& r : in.runs) {
      h.run_started(r);
      h.run_finished(r);
    }
  }
  EXPECT_TRUE(notices.seen.empty());
  HistoryDb db(dir + "/h.sqlite");
  EXPECT_EQ(db.list().size(), 2u);
  for (const auto& row : db.list()) EXPECT_EQ(row.status, "ok");
  // an unusable path disables history with one notice; the matrix is not stopped
  HistoryReporter bad("/proc/forbidden/h.sqlite", &notices);
  bad.start(in.provenance, dir + "/runB", in.runs.size());
  ASSERT_EQ(notices.seen.size(), 1u);
  EXPECT_NE(notices.seen[0].find("run history disabled"), std::string::npos) << notices.seen[0];
  EXPECT_NO_THROW(bad.run_finished(in.runs[0]));
  EXPECT_EQ(notices.seen.size(), 1u);
}

TEST(ReportHistory, UnknownIdsSayMatrixOrRunAndHowToListThem) {
  auto dir = tmpdir("unknown_ids");
  HistoryDb db(dir + "/h.sqlite");
  try {
    db.load_matrix(99);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no matrix with id m99"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("trainscope history"), std::string::npos) << e.what();
  }
  try {
    db.load_run(7);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no run with id 7"), std::string::npos) << e.what();
  }
}

TEST(ReportHistory, ResumedMatrixGetsANewId) {
  auto dir = tmpdir("resume_id");
  auto in = load_run_folder(kHealthy);
  HistoryDb db(dir + "/h.sqlite");
  auto first = db.begin_matrix(dir + "/run1", in.provenance);
  db.run_finished(first, in.runs[0]);
  auto resumed = db.begin_matrix(dir + "/run1", in.provenance);  // `run --resume` of the same folder
  db.run_finished(resumed, in.runs[1]);
  EXPECT_NE(first, resumed);
  EXPECT_EQ(db.load_matrix(first).runs.size(), 1u);
  EXPECT_EQ(db.load_matrix(resumed).runs.size(), 1u);
  EXPECT_EQ(db.matrix_id_for_dir(dir + "/run1"), resumed);  // the folder names its newest session
}

TEST(ReportHistory, Version1DatabaseIsMigrated) {
  auto dir = tmpdir("migrate");
  const std::string path = dir + "/h.sqlite";
  auto in = load_run_folder(kHealthy);
  {  // a version-1 database: run_dir UNIQUE
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    const char* v1 =
        "CREATE TABLE matrices(id INTEGER PRIMARY KEY, run_dir TEXT UNIQUE NOT NULL, started_utc TEXT, host TEXT, "
        "git_commit TEXT, command_line TEXT, provenance_json TEXT);"
        "CREATE TABLE runs(id INTEGER PRIMARY KEY, matrix_id INTEGER NOT NULL REFERENCES matrices(id), run_id TEXT NOT "
        "NULL, device TEXT, model TEXT, batch_size INTEGER, repeat INTEGER, status TEXT NOT NULL, host TEXT, pid "
        "INTEGER, started_utc TEXT, finished_utc TEXT, steady_samples_per_s REAL, test_accuracy_pct REAL, record_json "
        "TEXT, UNIQUE(matrix_id, run_id));"
        "CREATE INDEX runs_by_cell ON runs(model, device, batch_size);"
        "INSERT INTO matrices(id, run_dir, provenance_json) VALUES(7, '/old/run', '{}');"
        "INSERT INTO runs(matrix_id, run_id, status, record_json) VALUES(7, 'cpu-mlp-b8-r0', 'ok', '{}');"
        "PRAGMA user_version=1;";
    ASSERT_EQ(sqlite3_exec(raw, v1, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(raw);
  }
  HistoryDb db(path);
  auto rows = db.list();
  ASSERT_EQ(rows.size(), 1u);  // the old rows are kept, under their ids
  EXPECT_EQ(rows[0].matrix_id, 7);
  EXPECT_EQ(rows[0].run_dir, "/old/run");
  auto again = db.begin_matrix("/old/run", in.provenance);  // was refused by UNIQUE before
  EXPECT_NE(again, 7);
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, "PRAGMA user_version", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), kHistorySchemaVersion);
  sqlite3_finalize(st);
  sqlite3_close(raw);
}

TEST(ReportReporters, ResultsAndReportFilesFromTheReporterCalls) {
  auto dir = tmpdir("reporters");
  auto in = load_run_folder(kHealthy);
  struct Notices : Reporter {
    std::vector<std::string> seen;
    void notice(const std::string& m) override { seen.push_back(m); }
  } notices;
  ResultsFilesReporter results;
  ReportFilesReporter report(&notices);
  for (Reporter* r : std::initializer_list<Reporter*>{&results, &report}) r->start(in.provenance, dir, 2);
  EXPECT_EQ(load_run_folder(dir).runs.size(), 0u) << "a fresh folder gets results at once";
  results.run_finished(in.runs[0]);
  EXPECT_EQ(load_run_folder(dir).runs.size(), 1u) << "rewritten after every run";
  results.run_skipped(in.runs[1]);
  for (Reporter* r : std::initializer_list<Reporter*>{&results, &report}) r->finish(in.runs);
  EXPECT_EQ(load_run_folder(dir).runs.size(), 2u);
  EXPECT_TRUE(report.written());
  EXPECT_TRUE(file_exists(dir + "/report.md"));
  EXPECT_TRUE(file_exists(dir + "/report.html"));
  EXPECT_TRUE(notices.seen.empty());
  // a report that cannot be written is a notice, not an error
  ReportFilesReporter bad(&notices);
  bad.start(in.provenance, "/proc/forbidden", 2);
  EXPECT_NO_THROW(bad.finish(in.runs));
  EXPECT_FALSE(bad.written());
  ASSERT_EQ(notices.seen.size(), 1u);
  EXPECT_NE(notices.seen[0].find("report not written"), std::string::npos);
  // the results files are the record: their write failure is an Error(kIo)
  ResultsFilesReporter lost;
  EXPECT_THROW(lost.start(in.provenance, "/proc/forbidden", 2), Error);
}

// After an I/O stop the CLI says how many runs are kept: those the results files hold, not the
// run whose write failed.
TEST(ReportReporters, ResultsFilesCountOnlyTheRunsWritten) {
  auto dir = tmpdir("reporters_written");
  auto in = load_run_folder(kHealthy);
  ResultsFilesReporter results;
  results.start(in.provenance, dir, 2);
  EXPECT_EQ(results.runs_written(), 0u);
  results.run_finished(in.runs[0]);
  EXPECT_EQ(results.runs_written(), 1u);
  remove_tree(dir);  // the folder is gone: the next write fails
  EXPECT_THROW(results.run_finished(in.runs[1]), Error);
  EXPECT_EQ(results.runs_written(), 1u) << "the run whose write failed is not kept";
}

// ---------------------------------------------------------------- compare

TEST(ReportCompare, WarnsWhenTheSidesUsedDifferentDataOrStoppedDifferently) {
  auto a = load_run_folder(kStudy).runs;
  auto same = compare_runs(a, a);
  EXPECT_TRUE(same.warnings.empty());
  auto b = a;
  for (auto& r : b) r.dataset = "synthetic";
  auto c = compare_runs(a, b);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("different data sets"), std::string::npos) << c.warnings[0];
  EXPECT_NE(render_compare(c, "A", "B").find("warning: the sides trained on different data sets"), std::string::npos);
  for (auto& r : b) r.dataset = a[0].dataset, r.stop_reason = "max_steps";
  auto d = compare_runs(a, b);
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].find("differ in settings (the differs: lines): a change in the figures may come"), std::string::npos) << d.warnings[0];
  ASSERT_EQ(d.setting_differences.size(), 1u);
  EXPECT_EQ(d.setting_differences[0].rfind("end: A complete; B max steps ", 0), 0u) << d.setting_differences[0];
  // every setting that changes the figures is named, each side's values apart
  for (auto& r : b) r.stop_reason.clear(), r.test_samples = 1000, r.telemetry.reset();
  const auto e = compare_runs(a, b);
  const std::string out = render_compare(e, "A", "B");
  EXPECT_NE(out.find("differs: test samples: A " + std::to_string(a[0].test_samples) + "; B 1000\n"), std::string::npos) << out;
  EXPECT_NE(out.find("differs: telemetry: A on; B off\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("differs: end:"), std::string::npos) << out;
  // both sides mixing the same two endings alike: nothing differs between them
  auto mixed = a;
  mixed[0].stop_reason = "max_steps";
  const auto f = compare_runs(mixed, mixed);
  EXPECT_TRUE(f.setting_differences.empty()) << f.setting_differences.front();
  EXPECT_TRUE(f.warnings.empty());
}

// The same usable CPU count from different limits (taskset on one side, a cgroup quota on the
// other) is a difference compare names: the two runs' CPUs were not the same.
TEST(ReportCompare, NamesTheCpuLimitOfEachSide) {
  auto a = load_run_folder(kStudy);
  auto b = a;
  a.provenance.cpu_usable_cores = b.provenance.cpu_usable_cores = 1;
  a.provenance.cpu_limit = "affinity mask: 1 of 16 CPUs, set by taskset, Slurm or a cpuset";
  b.provenance.cpu_limit = "cgroup CPU quota: 0.5 CPUs, set by a container or job limit";
  const std::string out = render_compare(compare_inputs(a, b), "A", "B");
  EXPECT_NE(out.find("differs: CPU limit: affinity mask: 1 of 16 CPUs, set by taskset, Slurm or a cpuset vs cgroup CPU "
                     "quota: 0.5 CPUs, set by a container or job limit\n"),
            std::string::npos)
      << out;
  b.provenance.cpu_limit.clear();
  b.provenance.cpu_usable_cores = 16;
  const std::string out2 = render_compare(compare_inputs(a, b), "A", "B");
  EXPECT_NE(out2.find("differs: CPU: Intel(R) Xeon(R) Platinum 8480C (16 logical CPUs, 1 usable) vs Intel(R) Xeon(R) "
                      "Platinum 8480C (16 logical CPUs)\n"),
            std::string::npos)
      << out2;
  EXPECT_NE(out2.find("vs none\n"), std::string::npos) << out2;
}

// One side's host tensors from tcmalloc, the other's from glibc: host-side step time may differ by
// that alone (bench/RESULTS.md, sixteenth session), so compare names it; a record from before the
// field says so rather than showing an empty allocator.
TEST(ReportCompare, NamesADifferingHostAllocator) {
  auto a = load_run_folder(kStudy);
  auto b = a;
  a.provenance.host_allocator = "glibc 2.36 malloc, fixed thresholds: mmap 1024 MiB, trimming off";
  b.provenance.host_allocator = "tcmalloc (replaces glibc malloc; malloc tuning does not apply)";
  std::string out = render_compare(compare_inputs(a, b), "A", "B");
  EXPECT_NE(out.find("differs: host allocator: glibc 2.36 malloc, fixed thresholds: mmap 1024 MiB, trimming off vs "
                     "tcmalloc (replaces glibc malloc; malloc tuning does not apply)\n"),
            std::string::npos)
      << out;
  b.provenance.host_allocator.clear();
  out = render_compare(compare_inputs(a, b), "A", "B");
  EXPECT_NE(out.find("trimming off vs not recorded\n"), std::string::npos) << out;
  b.provenance.host_allocator = a.provenance.host_allocator;
  out = render_compare(compare_inputs(a, b), "A", "B");
  EXPECT_EQ(out.find("host allocator"), std::string::npos) << out;
}

// Threads differ in the provenances and in the runs: compare_inputs says it once, as the
// provenance's "intra-op threads: 2 vs 1" line.
TEST(ReportCompare, ASettingThatTheProvenancesAlreadyDifferInIsSaidOnce) {
  auto a = load_run_folder(kStudy);
  auto b = a;
  b.provenance.intra_op_threads = a.provenance.intra_op_threads + 1;
  for (auto& r : b.runs) r.intra_op_threads = b.provenance.intra_op_threads, r.learning_rate *= 2;
  const auto c = compare_inputs(a, b);
  const std::string out = render_compare(c, "A", "B");
  size_t threads_lines = 0;
  for (size_t at = out.find("differs: intra-op threads"); at != std::string::npos;
       at = out.find("differs: intra-op threads", at + 1))
    ++threads_lines;
  EXPECT_EQ(threads_lines, 1u) << out;
  EXPECT_NE(out.find("differs: learning rate: A "), std::string::npos) << out;  // the others stay
}

TEST(ReportCompare, NoCommonCellSaysNothingWasCompared) {
  auto a = load_run_folder(kStudy).runs;
  auto b = a;
  for (auto& r : b) r.batch_size += 1;  // no cell in common
  std::string out = render_compare(compare_runs(a, b), "A", "B");
  EXPECT_NE(out.find("nothing was compared"), std::string::npos) << out;
  EXPECT_EQ(out.find("no regression"), std::string::npos) << out;  // no verdict without a comparison
}

TEST(ReportCompare, RegressionBeyondThresholdAndNoise) {
  auto a = load_run_folder(kStudy).runs;
  auto b = a;
  for (auto& r : b)
    if (r.model == "cnn" && r.batch_size == 128 && r.device == "cuda:0") {  // 20 % slower
      *r.steady_samples_per_s *= 0.8;
      *r.mean_epoch_time_s /= 0.8;
    }
  auto c = compare_runs(a, b, "steady_samples_per_s", 5);
  EXPECT_TRUE(c.regressed);
  int regressions = 0;
  for (const auto& row : c.rows) {
    if (row.regression) {
      ++regressions;
      EXPECT_EQ(row.model, "cnn");
      EXPECT_NEAR(*row.delta_pct, -20, 1e-9);
    }
  }
  EXPECT_EQ(regressions, 1);
  EXPECT_NE(render_compare(c, "A", "B").find("REGRESSION"), std::string::npos);
  // same data: no regression
  EXPECT_FALSE(compare_runs(a, a).regressed);
  // a larger threshold tolerates it
  EXPECT_FALSE(compare_runs(a, b, "steady_samples_per_s", 25).regressed);
  // lower-is-better metric: a longer epoch time is the regression
  auto t = compare_runs(a, b, "mean_epoch_time_s", 5);
  EXPECT_TRUE(t.regressed);
  EXPECT_FALSE(t.higher_is_better);
}

TEST(ReportCompare, ChangeInsideTheSpreadIsNoise) {
  auto a = load_run_folder(kStudy).runs;
  auto b = a;
  // mlp b128 repeats spread by about 15 %; a 6 % drop is inside it
  for (auto& r : b)
    if (r.model == "mlp" && r.batch_size == 128) *r.steady_samples_per_s *= 0.94;
  auto c = compare_runs(a, b, "steady_samples_per_s", 5);
  EXPECT_FALSE(c.regressed);
  bool saw = false;
  for (const auto& row : c.rows)
    if (row.model == "mlp" && row.batch_size == 128) {
      saw = true;
      EXPECT_TRUE(row.noise);
    }
  EXPECT_TRUE(saw);
}

TEST(ReportCompare, OneRepeatVerdictSaysItMayBeNoise) {
  auto a = load_run_folder(kHealthy).runs;
  a.resize(1);  // one repeat per side
  auto b = a;
  *b[0].steady_samples_per_s *= 0.88;  // -12 %
  auto c = compare_runs(a, b, "steady_samples_per_s", 5);
  EXPECT_TRUE(c.regressed);  // still gates (exit 4), but says why it may be wrong
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_TRUE(c.rows[0].single_repeat);
  auto out = render_compare(c, "A", "B");
  EXPECT_NE(out.find("REGRESSION (1 repeat: may be noise)"), std::string::npos) << out;
  EXPECT_NE(out.find("note: 1 verdict(s) rest on one repeat per side"), std::string::npos) << out;
  // cells with repeats (most of the study fixture) carry no such caveat
  auto s = load_run_folder(kStudy).runs;
  auto t = s;
  for (auto& r : t) *r.steady_samples_per_s *= 0.5;
  auto sc = compare_runs(s, t);
  for (const auto& row : sc.rows) EXPECT_EQ(row.single_repeat, row.a.n < 2 && row.b.n < 2) << row.model;
  auto st = render_compare(sc, "A", "B");
  EXPECT_NE(st.find("REGRESSION\n"), std::string::npos) << st;
}

TEST(ReportCompare, PrintsEnoughDigitsToTellMediansApart) {
  auto a = load_run_folder(kHealthy).runs;
  a.resize(1);
  auto b = a;
  a[0].steady_samples_per_s = 0.0712;
  b[0].steady_samples_per_s = 0.0748;
  auto out = render_compare(compare_runs(a, b), "A", "B");
  EXPECT_NE(out.find("0.07120"), std::string::npos) << out;  // 4 significant digits, not "0.07"
  EXPECT_NE(out.find("0.07480"), std::string::npos) << out;
  a[0].steady_samples_per_s = 1.000012;
  b[0].steady_samples_per_s = 1.000034;
  out = render_compare(compare_runs(a, b), "A", "B");
  EXPECT_NE(out.find("1.00001 "), std::string::npos) << out;  // more digits until they differ
  EXPECT_NE(out.find("1.00003 "), std::string::npos) << out;
}

TEST(ReportCompare, UnknownMetricIsAnError) {
  auto a = load_run_folder(kHealthy).runs;
  EXPECT_THROW(compare_runs(a, a, "speed"), Error);
  EXPECT_THROW(compare_runs(a, a, "steady_samples_per_s", -1), Error);
}

// ---------------------------------------------------------------- the dashboard

TEST(ReportSummary, OpensWithOneTablePerModelThenChartsThenAnswers) {
  auto in = load_run_folder(kStudy);
  auto a = analyze(in);
  std::string md = render_markdown(in, a);
  const size_t summary = md.find("## Summary"), cnn = md.find("### `cnn`"), mlp = md.find("### `mlp`"),
               answers = md.find("## Answers to the study's research questions"), advice = md.find("## Advice"),
               details = md.find("## Details per device");
  ASSERT_NE(summary, std::string::npos) << md.substr(0, 2000);
  EXPECT_LT(summary, cnn);
  EXPECT_LT(cnn, mlp);
  EXPECT_LT(mlp, answers);
  EXPECT_LT(answers, advice);
  EXPECT_LT(advice, details);
  // every device and batch of the model, with speed-up and a verdict
  EXPECT_NE(md.find("| cuda:0 | 128 | 53000 (±1325, n=3) | 6.24× |"), std::string::npos) << md.substr(summary, 3000);
  EXPECT_NE(md.find("fastest for `cnn`"), std::string::npos);
  EXPECT_NE(md.find("| 1.89× slower than cuda:0 b128; least energy/sample; GPU mostly idle (SM 20.0 %) |"),
            std::string::npos);                                        // cnn b64 on the GPU
  EXPECT_NE(md.find("slower than the CPU"), std::string::npos);  // mlp b64 on the GPU
  for (const auto& c : a.cells) EXPECT_FALSE(c.verdict.empty()) << c.device << " " << c.model;
  // HTML: the summary (tables, then its chart) comes before every other chart and the answers
  std::string html = render_html(in, a, {});
  const size_t hs = html.find("<section id=\"summary\">");
  ASSERT_NE(hs, std::string::npos);
  EXPECT_LT(hs, html.find("<section id=\"batches\">"));
  EXPECT_LT(html.find("<section id=\"batches\">"), html.find("<h2>Research questions</h2>"));
  EXPECT_NE(html.find("chart('summary'"), std::string::npos);
  // console: the table, then the advice, then the answers' headlines; short
  std::string con = render_console(in, a);
  EXPECT_EQ(con.rfind("Summary", 0), 0u) << con.substr(0, 300);
  EXPECT_LT(con.find("Advice (one item per rule)"), con.find("Research questions"));
  EXPECT_LT(std::count(con.begin(), con.end(), '\n'), 80) << con;
}

TEST(ReportAdvice, OneItemPerRuleListingEveryCell) {
  auto in = load_run_folder(kStudy);
  auto a = analyze(in);
  auto items = group_advice(a.advice);
  std::set<std::string> rules;
  size_t cells = 0;
  for (const auto& i : items) {
    EXPECT_TRUE(rules.insert(i.rule).second) << "rule listed twice: " << i.rule;
    cells += i.fired_on.size();
  }
  EXPECT_EQ(cells, a.advice.size());  // every firing is listed under its rule
  EXPECT_GE(fired(a, "batch_size").size(), 2u);  // several cells, one item
  std::string md = render_markdown(in, a);
  for (const auto& r : rules) {
    const std::string head = "- **" + r + "** (";
    size_t n = 0;
    for (size_t p = md.find(head); p != std::string::npos; p = md.find(head, p + 1)) ++n;
    EXPECT_EQ(n, 1u) << r;
  }
  std::string html = render_html(in, a, {});
  size_t li = 0;
  for (size_t p = html.find("<li class=\"advice\""); p != std::string::npos; p = html.find("<li class=\"advice\"", p + 1)) ++li;
  EXPECT_EQ(li, rules.size());
}

// One batch size on a GPU with free memory: suggest a measured sweep, never an extrapolated batch.
TEST(ReportAdvice, SingleBatchSizeSuggestsASweep) {
  auto in = load_run_folder(kHealthy);
  for (auto& r : in.runs)
    if (r.device == "cuda:0") r.device_peak_reserved_bytes = int64_t{10} << 30;  // 10 GiB of 141
  auto a = analyze(in);
  ASSERT_EQ(fired(a, "batch_sweep").size(), 1u);
  EXPECT_NE(fired(a, "batch_sweep")[0]->advice.find("--batch-sizes auto"), std::string::npos);
  EXPECT_TRUE(fired(a, "batch_size").empty());
  EXPECT_TRUE(a.batch_scaling.empty());
}

TEST(ReportBatchScaling, ReplaysTheSweepRuleOnMeasuredBatches) {
  auto a = analyze(load_run_folder(kStudy));
  const BatchScaling* s = nullptr;
  for (const auto& b : a.batch_scaling)
    if (b.device == "cpu" && b.model == "cnn") s = &b;
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->batch_sizes, (std::vector<int64_t>{64, 128}));
  ASSERT_TRUE(s->saturation_batch);
  EXPECT_EQ(*s->saturation_batch, 128);  // 7800 -> 8500 (+9 %): still rising
  EXPECT_TRUE(s->stop_reason.empty());
  AdviceThresholds t;
  t.batch_gain_pct = 10;  // +9 % no longer pays: saturated at 64
  auto b = analyze(load_run_folder(kStudy), t);
  for (const auto& x : b.batch_scaling)
    if (x.device == "cpu" && x.model == "cnn") {
      EXPECT_EQ(x.saturation_batch, std::optional<int64_t>(64));
      EXPECT_NE(x.stop_reason.find("throughput stopped rising"), std::string::npos) << x.stop_reason;
    }
}

// A second host's folder: the study's results with another provenance, one workload missing.
ReportInput second_host() {
  auto b = load_run_folder(kStudy);
  b.provenance.host = "gpu-box";
  b.provenance.libtorch_version = "2.1.0";
  b.provenance.intra_op_threads = 32;
  b.run_dir = "/elsewhere/run";
  std::erase_if(b.runs, [](const RunRecord& r) { return r.model == "cnn" && r.batch_size == 64; });
  for (auto& r : b.runs)
    if (r.steady_samples_per_s) *r.steady_samples_per_s *= 2;
  return b;
}

TEST(ReportHosts, TwoHostsGiveOneComparisonNamingBoth) {
  auto in = merge_inputs({load_run_folder(kStudy), second_host()});
  ASSERT_EQ(in.sources.size(), 2u);
  auto a = analyze(in);
  EXPECT_TRUE(a.multi_host);
  ASSERT_EQ(a.host_comparisons.size(), 1u);
  const HostComparison& h = a.host_comparisons[0];
  EXPECT_NE(h.host_a.find("fixture-host"), std::string::npos);
  EXPECT_NE(h.host_b.find("gpu-box"), std::string::npos);
  auto has = [](const std::vector<std::string>& v, const std::string& s) {
    return std::any_of(v.begin(), v.end(), [&](const std::string& x) { return x.find(s) != std::string::npos; });
  };
  EXPECT_TRUE(has(h.differences, "LibTorch: 2.11.0 vs 2.1.0")) << ::testing::PrintToString(h.differences);
  EXPECT_TRUE(has(h.differences, "intra-op threads"));
  EXPECT_TRUE(has(h.not_comparable, "`cnn` b64 (fashion-mnist, seed 42): measured only on fixture-host"))
      << ::testing::PrintToString(h.not_comparable);
  for (const auto& r : h.rows) {
    EXPECT_EQ(r.workload.find("`cnn` b64"), std::string::npos);  // never compared
    ASSERT_TRUE(r.ratio);
    EXPECT_NEAR(*r.ratio, 2.0, 1e-9) << r.workload;
  }
  // mlp b64, mlp b128, cnn b128, and the 2-rank cnn b128 run: its own workload (world size), never
  // the fastest device of the one-process cnn b128
  EXPECT_EQ(h.rows.size(), 4u);
  EXPECT_EQ(std::count_if(h.rows.begin(), h.rows.end(),
                          [](const auto& r) { return r.workload.find("`cnn ×2 ranks` b128") != std::string::npos; }),
            1);
  std::string md = render_markdown(in, a);
  EXPECT_NE(md.find("## Across machines"), std::string::npos);
  EXPECT_NE(md.find("cuda:0 on gpu-box"), std::string::npos);  // the cells name their host
  EXPECT_NE(md.find("folder /elsewhere/run"), std::string::npos);  // each side keeps its provenance
  // a GPU host without a CPU run: its speed-up is over the other host's CPU of the same workload
  // (cnn b128: 2 x 53000 / 8500 = 12.5x), each host's GPU row with its own figure
  auto gpu_only = second_host();
  std::erase_if(gpu_only.runs, [](const RunRecord& r) { return r.device == "cpu"; });
  auto a3 = analyze(merge_inputs({load_run_folder(kStudy), gpu_only}));
  std::string md3 = render_markdown(in, a3);
  EXPECT_NE(md3.find("| cuda:0 on gpu-box | 128 | 106000 (±2650, n=3) | 12.5× |"), std::string::npos) << md3.substr(0, 3000);
  EXPECT_NE(md3.find("| cuda:0 on fixture-host | 128 | 53000 (±1325, n=3) | 6.24× |"), std::string::npos);
  // a different seed is another workload: not comparable either
  auto c = second_host();
  for (auto& r : c.runs) r.seed = 7;
  auto a2 = analyze(merge_inputs({load_run_folder(kStudy), c}));
  ASSERT_EQ(a2.host_comparisons.size(), 1u);
  EXPECT_TRUE(a2.host_comparisons[0].rows.empty());
}

TEST(ReportHosts, CompareNamesBothHostsAndTheirDifferences) {
  auto res = compare_inputs(load_run_folder(kStudy), second_host());
  EXPECT_NE(res.host_a.find("fixture-host"), std::string::npos);
  EXPECT_NE(res.host_b.find("gpu-box"), std::string::npos);
  std::string out = render_compare(res, "A", "B");
  EXPECT_NE(out.find("on gpu-box"), std::string::npos) << out;
  EXPECT_NE(out.find("differs: LibTorch"), std::string::npos) << out;
  EXPECT_NE(out.find("not comparable"), std::string::npos) << out;
  EXPECT_FALSE(res.only_in_a.empty());
}

TEST(ReportHistory, ImportIsIdempotent) {
  auto dir = tmpdir("import");
  HistoryDb db(dir + "/h.sqlite");
  auto in = second_host();
  auto first = db.import_runs(in);
  EXPECT_TRUE(first.added);
  EXPECT_EQ(first.runs, in.runs.size());
  auto again = db.import_runs(in);
  EXPECT_FALSE(again.added);
  EXPECT_EQ(again.matrix_id, first.matrix_id);
  EXPECT_EQ(db.list().size(), in.runs.size());
  auto back = db.load_matrix(first.matrix_id);
  EXPECT_EQ(back.provenance.host, "gpu-box");
  EXPECT_EQ(back.runs.size(), in.runs.size());
}

// A cell whose runs were stopped by Ctrl-C was summarised as "its run failed".
TEST(ReportSummary, AnInterruptedCellIsNotCalledFailed) {
  auto in = load_run_folder(kHealthy);
  ASSERT_FALSE(in.runs.empty());
  const RunRecord first = in.runs[0];
  for (auto& r : in.runs)
    if (r.device == first.device && r.model == first.model && r.batch_size == first.batch_size &&
        r.variant == first.variant)
      r.status = RunStatus::kInterrupted;
  auto a = analyze(in);
  bool seen = false;
  for (const auto& c : a.cells)
    if (c.runs_ok == 0 && c.runs_interrupted > 0) {
      seen = true;
      EXPECT_NE(c.verdict.find("interrupted before"), std::string::npos) << c.verdict;
      EXPECT_EQ(c.verdict.find("failed"), std::string::npos) << c.verdict;
    }
  EXPECT_TRUE(seen);
}

// results.json of a newer schema (schema_version 999) was read as if it were this one's:
// `report` and `history import` refuse it, naming the file and both versions.
TEST(ReportReporters, AResultsFileOfANewerSchemaIsRefused) {
  auto dir = tmpdir("schema999");
  auto bytes = read_file_bytes(kHealthy + "/results.json");
  std::string text(bytes.begin(), bytes.end());
  const auto at = text.find("\"schema_version\": ");
  ASSERT_NE(at, std::string::npos);
  const auto end = text.find_first_of(",\n}", at + 18);
  text.replace(at, end - at, "\"schema_version\": 999");
  write_file_atomic(dir + "/results.json", text);
  try {
    load_run_folder(dir);
    FAIL() << "schema version 999 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kDataFormat);
    EXPECT_NE(std::string(e.what()).find("schema version 999 is newer than this trainscope's (" +
                                         std::to_string(kSchemaVersion) + ")"),
              std::string::npos)
        << e.what();
  }
}

// A database of a newer schema used to say "use another --db" also to `run`, which has no --db:
// the message names both ways of choosing the database.
TEST(ReportHistory, ANewerDatabaseNamesTheFlagAndTheSettingThatChooseAnother) {
  auto dir = tmpdir("newer_db");
  const std::string path = dir + "/h.sqlite";
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "PRAGMA user_version = 999", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  for (auto access : {HistoryDb::Access::kWrite, HistoryDb::Access::kRead}) {
    try {
      HistoryDb db(path, access);
      ADD_FAILURE() << "schema version 999 opened";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("schema version 999 is newer"), std::string::npos) << m;
      EXPECT_NE(m.find("--db; for `run`, the history_db key"), std::string::npos) << m;
    }
  }
}

// `history`, `compare` and `report` only read the database: on a read-only file system they used
// to refuse with "output folder not writable ... --out". Read-only here: the folder is immutable
// (chattr +i), which stops root too.
TEST(ReportHistory, ReadersOpenADatabaseInAFolderThatCannotBeWritten) {
  auto dir = tmpdir("readonly_db");
  const std::string path = dir + "/h.sqlite";
  int64_t matrix_id = 0;
  {
    HistoryDb db(path);
    matrix_id = db.import_runs(second_host()).matrix_id;
  }
  if (std::system(("chattr +i '" + dir + "' 2>/dev/null").c_str()) != 0) GTEST_SKIP() << "chattr +i is not available";
  struct Unlock {
    std::string d;
    ~Unlock() { (void)std::system(("chattr -i '" + d + "'").c_str()); }
  } unlock{dir};
  EXPECT_THROW(HistoryDb(path, HistoryDb::Access::kWrite), Error);
  try {
    HistoryDb db(path, HistoryDb::Access::kRead);
    EXPECT_EQ(db.list().size(), second_host().runs.size());
    EXPECT_EQ(db.load_matrix(matrix_id).provenance.host, "gpu-box");
  } catch (const Error& e) {
    ADD_FAILURE() << e.what();
  }
  EXPECT_EQ(resolve_runs("m" + std::to_string(matrix_id), path).runs.size(), second_host().runs.size());
}

// --batch-sizes auto on an injected throughput curve (no timing): the sweep stops at the
// saturation point and says why.
TEST(BatchSweep, StopsWhereThroughputStopsRising) {
  std::map<int64_t, double> curve{{16, 1000}, {32, 1900}, {64, 3500}, {128, 3600}, {256, 3700}};
  std::vector<int64_t> asked;
  auto res = run_batch_sweep(16, BatchSweepRule{}, [&](int64_t b) {
    asked.push_back(b);
    return BatchSweepPoint{b, curve.at(b), false, ""};
  });
  EXPECT_EQ(asked, (std::vector<int64_t>{16, 32, 64, 128}));  // 64 -> 128 gained 2.86 % < 5 %
  EXPECT_FALSE(res.last.next);
  EXPECT_EQ(res.last.stop_kind, "saturated");
  EXPECT_EQ(res.last.saturation_batch, std::optional<int64_t>(64));  // 3500 is within 5 % of 3600
  EXPECT_NE(res.last.stop_reason.find("batch 128 gave 3600 samples/s, +2.86 % over batch 64"), std::string::npos)
      << res.last.stop_reason;
}

TEST(BatchSweep, StopsWhenMemoryOrTheDataSetRunsOut) {
  auto oom = run_batch_sweep(32, BatchSweepRule{}, [](int64_t b) {
    if (b >= 128) return BatchSweepPoint{b, std::nullopt, true, "CUDA out of memory at batch 128"};
    return BatchSweepPoint{b, b * 100.0, false, ""};
  });
  EXPECT_EQ(oom.last.stop_kind, "memory");
  EXPECT_EQ(oom.points.back().batch_size, 128);
  EXPECT_EQ(oom.last.saturation_batch, std::optional<int64_t>(64));
  EXPECT_NE(oom.last.stop_reason.find("memory ran out at batch 128"), std::string::npos);
  BatchSweepRule small;
  small.train_samples = 100;
  auto data = run_batch_sweep(16, small, [](int64_t b) { return BatchSweepPoint{b, b * 100.0, false, ""}; });
  EXPECT_EQ(data.last.stop_kind, "data_set");
  EXPECT_EQ(data.points.back().batch_size, 64);
  EXPECT_NE(data.last.stop_reason.find("batch 128 would exceed the 100 training samples"), std::string::npos);
  auto failed = run_batch_sweep(16, BatchSweepRule{}, [](int64_t b) {
    return b == 32 ? BatchSweepPoint{b, std::nullopt, false, "NaN loss at step 3"} : BatchSweepPoint{b, 10.0, false, ""};
  });
  EXPECT_EQ(failed.last.stop_kind, "failed");
  EXPECT_NE(failed.last.stop_reason.find("NaN loss at step 3"), std::string::npos);
}

// Found by a walkthrough: a batch whose run finished ok with every step inside the warm-up was
// reported as a failed run; it is the data set running out of steady steps.
TEST(BatchSweep, AnOkRunWithoutSteadyStepsStopsForTheDataSetNotAsAFailure) {
  auto res = run_batch_sweep(64, BatchSweepRule{}, [](int64_t b) {
    if (b >= 256) return BatchSweepPoint{b, std::nullopt, false, "only 8 step(s), all inside the warm-up", true};
    return BatchSweepPoint{b, b * 100.0, false, "", false};
  });
  EXPECT_EQ(res.last.stop_kind, "data_set");
  EXPECT_EQ(res.last.stop_reason.find("failed"), std::string::npos) << res.last.stop_reason;
  EXPECT_NE(res.last.stop_reason.find("only 8 step(s), all inside the warm-up"), std::string::npos)
      << res.last.stop_reason;
  EXPECT_EQ(res.last.saturation_batch, std::optional<int64_t>(128));
}

// ---------------------------------------------------------------- cell identity: variant, world size, target

namespace {

// `runs` with every record turned into a data-parallel one of `world` ranks.
std::vector<RunRecord> as_world(std::vector<RunRecord> runs, int64_t world) {
  for (auto& r : runs) r.world_size = world;
  return runs;
}

std::vector<RunRecord> cpu_runs(const std::string& folder) {
  auto runs = load_run_folder(folder).runs;
  std::erase_if(runs, [](const RunRecord& r) { return r.device != "cpu"; });
  return runs;
}

}  // namespace

TEST(ReportIdentity, ModelLabelNamesVariantAndWorldSize) {
  EXPECT_EQ(model_label("mlp", "eager", 1), "mlp");
  EXPECT_EQ(model_label("cnn", "bf16", 1), "cnn [bf16]");
  EXPECT_EQ(model_label("mlp", "eager", 2), "mlp ×2 ranks");
  EXPECT_EQ(model_label("cnn", "graphs+bf16", 4), "cnn ×4 ranks [graphs+bf16]");
  // the variant stays last, so a variant's eager cell is found at the same world size
  EXPECT_EQ(split_model_variant(model_label("cnn", "bf16", 2)), (std::pair<std::string, std::string>{"cnn ×2 ranks", "bf16"}));
  RunRecord one, dp;
  one.model = dp.model = "mlp";
  one.batch_size = dp.batch_size = 64;
  dp.world_size = 2;
  EXPECT_FALSE(workload_of(one) == workload_of(dp));
  EXPECT_NE(workload_key(workload_of(one)), workload_key(workload_of(dp)));
  EXPECT_NE(workload_label(workload_of(dp)).find("`mlp ×2 ranks` b64"), std::string::npos) << workload_label(workload_of(dp));
}

// Tester: `compare one/ dp2/` (both -b 64) printed "cpu mlp 64 8008 5560 -30.6% REGRESSION".
TEST(ReportIdentity, CompareNeverPairsADataParallelRunWithAOneProcessRun) {
  auto one = cpu_runs(kStudy);  // mlp and cnn, b64 and b128, 3 repeats each
  auto dp = as_world(one, 2);
  for (auto& r : dp) *r.steady_samples_per_s *= 0.5;
  auto c = compare_runs(one, dp);
  EXPECT_TRUE(c.rows.empty());
  EXPECT_FALSE(c.regressed);
  ASSERT_EQ(c.only_in_a.size(), 4u);
  ASSERT_EQ(c.only_in_b.size(), 4u);
  EXPECT_NE(c.only_in_b[0].find("×2 ranks"), std::string::npos) << c.only_in_b[0];
  EXPECT_EQ(c.only_in_a[0].find("ranks"), std::string::npos) << c.only_in_a[0];
  // both sides with both kinds: one row each, the data-parallel one labelled
  auto both = one;
  both.insert(both.end(), dp.begin(), dp.end());
  auto d = compare_runs(both, both);
  ASSERT_EQ(d.rows.size(), 8u);
  std::set<std::string> models;
  for (const auto& row : d.rows) models.insert(row.model);
  EXPECT_TRUE(models.count("cnn ×2 ranks") && models.count("mlp ×2 ranks") && models.count("mlp"));
  EXPECT_NE(render_compare(d, "A", "B").find("mlp ×2 ranks"), std::string::npos);
}

// Tester: `report mix/ dp2/` fed the 2-rank b64 run into the b32 -> b64 batch scaling.
TEST(ReportIdentity, ReportKeepsDataParallelRunsOutOfOneProcessCellsAndBatchScaling) {
  auto base = load_run_folder(kStudy);
  const auto before = analyze(base);
  auto in = base;
  for (const auto& r : base.runs)
    if (r.device == "cpu" && r.model == "mlp" && r.batch_size == 64 && r.world_size == 1) {
      RunRecord dp = r;
      dp.world_size = 2;
      dp.run_id += "-dp2";
      *dp.steady_samples_per_s *= 12;
      in.runs.push_back(dp);
    }
  auto a = analyze(in);
  const Cell* one = nullptr;
  const Cell* dp = nullptr;
  const Cell* one_before = nullptr;
  for (const auto& c : a.cells)
    if (c.device == "cpu" && c.batch_size == 64) {
      if (c.model == "mlp") one = &c;
      if (c.model == "mlp ×2 ranks") dp = &c;
    }
  for (const auto& c : before.cells)
    if (c.device == "cpu" && c.batch_size == 64 && c.model == "mlp") one_before = &c;
  ASSERT_TRUE(one && dp && one_before);
  EXPECT_EQ(one->runs_ok, one_before->runs_ok);  // not a repeat of the one-process cell
  EXPECT_DOUBLE_EQ(one->samples_per_s.median, one_before->samples_per_s.median);
  EXPECT_EQ(dp->runs_ok, one->runs_ok);
  // the one-process batch series is unchanged; the data-parallel cell has no series (one batch)
  for (const auto& b : a.batch_comparisons) EXPECT_EQ(b.model.find("ranks"), std::string::npos) << b.model;
  for (const auto& s : a.batch_scaling) EXPECT_EQ(s.model.find("ranks"), std::string::npos) << s.model;
  EXPECT_EQ(a.batch_comparisons.size(), before.batch_comparisons.size());
  const std::string md = render_markdown(in, a);
  EXPECT_NE(md.find("mlp ×2 ranks"), std::string::npos);
}

// Tester: `compare resv resv` (--variants eager,bf16,channels_last) printed three "cpu cnn 32" rows.
TEST(ReportIdentity, CompareNamesTheVariantOfEachRow) {
  auto eager = cpu_runs(kHealthy);
  auto runs = eager;
  for (const char* v : {"bf16", "channels_last"})
    for (auto r : eager) {
      r.variant = v;
      runs.push_back(r);
    }
  auto c = compare_runs(runs, runs);
  ASSERT_EQ(c.rows.size(), 3 * eager.size());
  std::set<std::string> labels;
  for (const auto& row : c.rows) labels.insert(row.device + " " + row.model + " " + std::to_string(row.batch_size));
  EXPECT_EQ(labels.size(), c.rows.size());  // no two rows read the same
  const std::string out = render_compare(c, "A", "B");
  EXPECT_NE(out.find("cnn [bf16]"), std::string::npos) << out;
  EXPECT_NE(out.find("cnn [channels_last]"), std::string::npos) << out;
}

TEST(ReportIdentity, HistoryListsTheVariantAndWorldSize) {
  auto dir = tmpdir("history_identity");
  auto in = load_run_folder(kHealthy);
  HistoryDb db(dir + "/h.sqlite");
  auto m = db.begin_matrix(dir + "/run", in.provenance);
  RunRecord bf16 = in.runs[0], dp = in.runs[0], eager = in.runs[0];
  bf16.variant = "bf16";
  bf16.run_id += "-bf16";
  dp.world_size = 2;
  dp.run_id += "-dp";
  db.run_finished(m, eager);
  db.run_finished(m, bf16);
  db.run_finished(m, dp);
  auto rows = db.list();
  ASSERT_EQ(rows.size(), 3u);  // newest first
  EXPECT_EQ(rows[0].world_size, 2);
  EXPECT_EQ(rows[0].variant, "eager");
  EXPECT_EQ(rows[1].variant, "bf16");
  EXPECT_EQ(rows[1].world_size, 1);
  EXPECT_EQ(rows[2].variant, "eager");
  EXPECT_EQ(model_label(rows[1].model, rows[1].variant, rows[1].world_size), "cnn [bf16]");
}

namespace {

std::vector<RunRecord> with_target(std::vector<RunRecord> runs, double target, std::optional<double> time_s,
                                   double best) {
  for (auto& r : runs) {
    TimeToAccuracy t;
    t.target_pct = target;
    t.reached = time_s.has_value();
    t.time_s = time_s;
    t.best_accuracy_pct = best;
    r.time_to_accuracy = t;
  }
  return runs;
}

}  // namespace

// Tester: --target-accuracy 40 vs 75 compared as "+232% REGRESSION"; a missed target printed
// "no regression" and "nothing was compared" without the reason.
TEST(ReportIdentity, TimeToAccuracyComparesOnlyAtOneTargetAndSaysWhyNot) {
  auto runs = cpu_runs(kHealthy);
  runs.resize(1);
  auto a = with_target(runs, 40, 10.0, 41);
  auto b = with_target(runs, 75, 33.2, 76);
  auto c = compare_runs(a, b, "time_to_accuracy_s");
  EXPECT_FALSE(c.regressed);
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_FALSE(c.rows[0].delta_pct);
  EXPECT_NE(c.rows[0].why_not.find("the targets differ (A: 40.0 %; B: 75.0 %)"), std::string::npos) << c.rows[0].why_not;
  std::string out = render_compare(c, "A", "B");
  EXPECT_NE(out.find("not compared: the targets differ (A: 40.0 %; B: 75.0 %)"), std::string::npos) << out;
  EXPECT_EQ(out.find("no regression"), std::string::npos) << out;
  EXPECT_NE(out.find("nothing was compared"), std::string::npos) << out;
  // the same target compares
  auto same = compare_runs(a, with_target(runs, 40, 12.0, 42), "time_to_accuracy_s");
  ASSERT_EQ(same.rows.size(), 1u);
  ASSERT_TRUE(same.rows[0].delta_pct);
  EXPECT_NEAR(*same.rows[0].delta_pct, 20, 1e-9);
  // B never reached its target: the reason, not a bare "not measured"
  auto missed = compare_runs(with_target(runs, 75, 30.0, 76), with_target(runs, 75, std::nullopt, 62.3),
                             "time_to_accuracy_s");
  ASSERT_EQ(missed.rows.size(), 1u);
  out = render_compare(missed, "A", "B");
  EXPECT_NE(out.find("B: target 75.0 % not reached (best 62.3 %)"), std::string::npos) << out;
  EXPECT_EQ(out.find("no regression"), std::string::npos) << out;
  EXPECT_NE(out.find("nothing was compared"), std::string::npos) << out;
  // a side without --target-accuracy says so
  auto none = compare_runs(runs, with_target(runs, 75, 30.0, 76), "time_to_accuracy_s");
  ASSERT_EQ(none.rows.size(), 1u);
  EXPECT_NE(none.rows[0].why_not.find("A: trained without --target-accuracy"), std::string::npos) << none.rows[0].why_not;
}

// Tester: `report` on a folder whose rank 0 died (0 runs) exited 0 with an empty summary.
TEST(ReportIdentity, FolderWithoutRunsIsRefusedNamingTheRankRecords) {
  auto dir = tmpdir("no_runs");
  write_file_atomic(dir + "/results.json", R"({"provenance": {}, "runs": []})");
  auto in = resolve_runs(dir, dir + "/none.sqlite");
  EXPECT_TRUE(in.runs.empty());
  try {
    require_runs(in, dir);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kDataFormat);
    EXPECT_NE(std::string(e.what()).find("holds no runs"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("ranks/"), std::string::npos) << e.what();
  }
  std::filesystem::create_directories(dir + "/ranks/rank1");
  write_file_atomic(dir + "/ranks/rank1/results.json", R"({"runs": []})");
  try {
    require_runs(in, dir);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(dir + "/ranks/rank1/results.json"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(require_runs(load_run_folder(kHealthy), kHealthy));
}

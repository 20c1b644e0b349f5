// The advice rules (src/report/advice.cpp) on their fixtures: each fires where it should, none on a
// healthy run, thresholds honoured, rules that could not be checked say why.
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

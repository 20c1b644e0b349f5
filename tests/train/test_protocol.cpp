// The measurement protocol (docs/profiling.md#measurement-protocol): headline figures only from
// steps no profiler touched, the profiling window after them, and trainscope's own cost
// measured in every run. CPU only; no timing assertions.
#include <gtest/gtest.h>

#include "trainscope/fs.h"

#include "../test_helpers.h"
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "results/record_json.h"
#include "train/step_times.h"
#include "train/trainer.h"
#include "train_helpers.h"
#include "trainscope/profile.h"
#include "trainscope/report.h"
#include "trainscope/runner.h"
#include "trainscope/telemetry.h"

using namespace trainscope;
namespace fs = std::filesystem;

namespace {

using test::read_text;

// mlp on 512 synthetic samples, batch 32: 16 steps per epoch.
MatrixConfig protocol_matrix(const std::string& name) {
  MatrixConfig m;
  m.devices = {"cpu"};
  m.models = {"mlp"};
  m.batch_sizes = {32};
  m.data.format = "synthetic";
  m.data.synthetic_train = 512;
  m.data.synthetic_test = 64;
  m.data.synthetic_size = 12;
  m.train.warmup_steps = 2;
  m.train.threads = 1;
  m.telemetry.interval_s = 0.005;
  m.inference.enabled = false;
  m.out_dir = (fs::temp_directory_path() / ("ts_protocol_" + std::to_string(::getpid()))).string();
  m.run_name = name;
  trainscope::remove_tree(m.out_dir + "/" + name);
  m.progress = false;
  m.train.min_time_s = 0;  // the requested epochs only
  return m;
}

bool has_note(const RunRecord& r, const std::string& part) {
  for (const auto& n : r.notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

// The steps N of the trace's ProfilerStep#N markers.
std::vector<int64_t> trace_profiler_steps(const std::string& path) {
  auto j = nlohmann::json::parse(read_text(path));
  std::vector<int64_t> steps;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X" && e["name"].get<std::string>().rfind("ProfilerStep#", 0) == 0)
      steps.push_back(std::stoll(e["name"].get<std::string>().substr(13)));
  return steps;
}

}  // namespace

TEST(Protocol, AutoWindowSitsAfterTheHeadlineAndNeverOverlapsIt) {
  auto m = protocol_matrix("auto");
  m.train.epochs = 2;  // 32 planned steps; schedule warmup 2 + active 5 = the last 7
  m.telemetry.interval_s = 0.001;  // enough samples inside the short headline window
  auto res = run_matrix(m, {}, nullptr);
  ASSERT_EQ(res.runs.size(), 1u);
  const auto& r = res.runs[0];
  ASSERT_EQ(r.status, RunStatus::kOk) << r.failure_reason;
  const auto& w = r.measurement;
  EXPECT_TRUE(w.profile_skip_first_auto);
  EXPECT_EQ(w.profile_skip_first, 25);
  EXPECT_EQ(w.headline_first_step, 2);
  EXPECT_EQ(w.headline_last_step, 24);
  EXPECT_EQ(w.headline_steps, 23);
  EXPECT_EQ(w.headline_samples, 23 * 32);
  EXPECT_EQ(w.profiled_first_step, 25);
  EXPECT_EQ(w.profiled_last_step, 31);
  EXPECT_EQ(w.profiled_steps, 7);
  EXPECT_LT(w.headline_last_step, w.profiled_first_step);
  EXPECT_LT(w.headline_start_ns, w.headline_end_ns);
  EXPECT_GT(w.headline_time_s, 0);
  // The phase breakdown and samples/s come from the headline steps only.
  ASSERT_TRUE(r.phases.has_value());
  EXPECT_EQ(r.phases->steps, w.headline_steps);
  ASSERT_TRUE(r.steady_samples_per_s.has_value());
  EXPECT_DOUBLE_EQ(*r.steady_samples_per_s, static_cast<double>(w.headline_samples) / w.headline_time_s);
  // Self-perturbation is recorded.
  EXPECT_TRUE(w.profile_step_time_ratio.has_value());
  EXPECT_TRUE(w.profile_cost_pct.has_value());
  // The sampler's CPU time, or why it is absent: at 1 ms the sampler, which yields to training
  // (SCHED_BATCH, nice +10), can miss this short run entirely on a machine busy with a build.
  if (w.sampler_cpu_pct_mean) EXPECT_TRUE(w.sampler_cpu_share_pct.has_value());
  else EXPECT_TRUE(has_note(r, "sampler's own CPU time was not measured")) << "absent without its reason";
  // The second epoch held the profiled steps: its time is flagged, the total is an estimate.
  ASSERT_EQ(r.epochs.size(), 2u);
  EXPECT_EQ(r.epochs[0].profiled_steps, 0);
  EXPECT_EQ(r.epochs[1].profiled_steps, 7);
  EXPECT_TRUE(r.time_for_requested_epochs_is_estimate);
  EXPECT_TRUE(has_note(r, "1 epoch time includes the 7 profiled steps"));
  // Telemetry headline over the headline window; the whole run stays in the summary.
  // (A headline window too short for 5 samples keeps the whole run's figures and says so; on a
  // starved machine the sampler may fall that far behind even at 1 ms.)
  ASSERT_TRUE(r.telemetry);
  if (r.telemetry->headline.window == "run")
    EXPECT_TRUE(has_note(r, "telemetry headline covers the whole run")) << "window 'run' without its reason";
  else
    EXPECT_EQ(r.telemetry->headline.window, "headline");
  // The profiler's own record agrees, and so does the trace.
  ASSERT_TRUE(r.profile);
  EXPECT_TRUE(r.profile->warnings.empty()) << to_json(*r.profile)["warnings"].dump();  // the window closes at the run's end
  ASSERT_EQ(r.profile->window.windows.size(), 1u);
  EXPECT_GT(r.profile->window.windows[0].first_step, w.headline_last_step);
  auto steps = trace_profiler_steps(res.run_dir + "/traces/" + r.run_id + ".trace.json.gz");
  ASSERT_FALSE(steps.empty());
  for (int64_t s : steps) {
    EXPECT_GT(s, w.headline_last_step);
    EXPECT_GE(s, w.profiled_first_step);
    EXPECT_LE(s, w.profiled_last_step);
  }
  // The record names its windows in results.json.
  auto back = run_record_from_json(to_json(r));
  EXPECT_EQ(back.measurement.headline_first_step, 2);
  EXPECT_EQ(back.measurement.headline_last_step, 24);
  EXPECT_EQ(back.measurement.profiled_first_step, 25);
  EXPECT_EQ(back.measurement.profile_step_time_ratio, w.profile_step_time_ratio);
  EXPECT_EQ(back.epochs[1].profiled_steps, 7);
}

TEST(Protocol, ExplicitSkipFirstIsHonouredAndEndsTheHeadline) {
  auto m = protocol_matrix("explicit");
  m.train.max_steps = 16;
  m.profile.skip_first = 5;  // profiler warm-up at 5, 6; active 7..11; steps 12..15 follow the window
  auto res = run_matrix(m, {}, nullptr);
  const auto& r = res.runs[0];
  ASSERT_EQ(r.status, RunStatus::kOk) << r.failure_reason;
  const auto& w = r.measurement;
  EXPECT_FALSE(w.profile_skip_first_auto);
  EXPECT_EQ(w.profile_skip_first, 5);
  EXPECT_EQ(w.headline_first_step, 2);
  EXPECT_EQ(w.headline_last_step, 4);
  EXPECT_EQ(w.headline_steps, 3);
  EXPECT_EQ(w.profiled_first_step, 5);
  EXPECT_EQ(w.profiled_last_step, 11);
  ASSERT_TRUE(r.profile);
  ASSERT_FALSE(r.profile->window.windows.empty());
  EXPECT_EQ(r.profile->window.windows[0].first_step, 7);
  // Steps after the window are timed but never feed the headline.
  EXPECT_TRUE(w.after_profile_step_ms_mean.has_value());
  ASSERT_TRUE(r.phases.has_value());
  EXPECT_EQ(r.phases->steps, 3);
}

TEST(Protocol, ScheduleThatDoesNotFitWarnsAndHeadlineStaysUnprofiled) {
  auto m = protocol_matrix("short");
  m.train.max_steps = 6;  // warm-up 2 + schedule 7 > 6
  auto res = run_matrix(m, {}, nullptr);
  const auto& r = res.runs[0];
  ASSERT_EQ(r.status, RunStatus::kOk) << r.failure_reason;
  const auto& w = r.measurement;
  EXPECT_TRUE(has_note(r, "does not fit")) << nlohmann::json(r.notes).dump();
  EXPECT_EQ(w.headline_first_step, 2);
  EXPECT_EQ(w.headline_last_step, 2);
  EXPECT_EQ(w.profiled_first_step, 3);
  EXPECT_EQ(w.profiled_last_step, 5);
  EXPECT_TRUE(r.steady_samples_per_s.has_value());
  ASSERT_TRUE(r.profile);
  EXPECT_NE(to_json(*r.profile)["warnings"].dump().find("ended inside the profiling window"), std::string::npos);
}

TEST(Protocol, TrainerEndsTheHeadlineBeforeTheFirstProfiledStep) {
  auto w = test::synthetic_workload(256, 32, 8);
  RunSpec s;
  s.run_id = "t";
  s.device = "cpu";
  s.model = "mlp";
  s.batch_size = 16;  // 16 steps
  s.train.warmup_steps = 3;
  s.origin = std::chrono::steady_clock::now();
  ProfileConfig p;  // auto: planned 16, need 7 -> skip_first 9
  s.profile = resolve_profile_schedule(p, s.train.warmup_steps, planned_train_steps(s.train, 256, 16));
  EXPECT_EQ(s.profile->skip_first, 9);
  TrainHooks hooks;
  auto r = train_run(s, w, hooks);
  EXPECT_EQ(r.measurement.headline_first_step, 3);
  EXPECT_EQ(r.measurement.headline_last_step, 8);
  EXPECT_EQ(r.measurement.profiled_first_step, 9);
  ASSERT_TRUE(r.phases.has_value());
  EXPECT_EQ(r.phases->steps, 6);
}

TEST(Protocol, SamplerRecordsItsOwnCpuTime) {
  TelemetryOptions o;
  o.interval_s = 0.005;
  o.enable_nvml = false;
  TelemetrySampler s(o, std::chrono::steady_clock::now());
  s.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  s.stop();
  auto sum = s.summarize(0, s.now_ns(), 0);
  const MetricStats* f = sum.metric("sampler", "cpu_pct");
  ASSERT_NE(f, nullptr) << to_json(sum)["devices"].dump();
  EXPECT_GT(f->count, 3);
  ASSERT_TRUE(f->mean);
  EXPECT_GE(*f->mean, 0.0);
  bool in_series = false;
  for (const auto& c : s.series()) in_series |= c.device == "sampler" && c.metric == "cpu_pct";
  EXPECT_TRUE(in_series);
}

TEST(Protocol, InstrumentationAboveThreePercentIsFlagged) {
  RunRecord r;
  r.intra_op_threads = 2;
  r.measurement.sampler_cpu_pct_mean = 8.0;  // 4 % of two cores
  rate_instrumentation_cost(r);
  EXPECT_DOUBLE_EQ(*r.measurement.sampler_cpu_share_pct, 4.0);
  EXPECT_TRUE(r.measurement.instrumentation_over_3pct);
  EXPECT_TRUE(has_note(r, "telemetry sampler"));
  RunRecord q;
  q.intra_op_threads = 16;
  q.measurement.sampler_cpu_pct_mean = 2.0;  // 2 % of one core: below the bound
  q.measurement.profile_cost_pct = 1.0;
  rate_instrumentation_cost(q);
  EXPECT_FALSE(q.measurement.instrumentation_over_3pct);
  // 8 % of one core is 0.5 % of 16 cores, but a poll holding one intra-op thread's core holds up
  // the other 15 at the step's barrier: the flag takes the worst case, one core's share
  q.measurement.sampler_cpu_pct_mean = 8.0;
  rate_instrumentation_cost(q);
  EXPECT_DOUBLE_EQ(*q.measurement.sampler_cpu_share_pct, 0.5);
  EXPECT_TRUE(q.measurement.instrumentation_over_3pct);
  EXPECT_TRUE(has_note(q, "of one core"));
}

// The profiled steps in an epoch that never finished: no epoch time includes them, and the
// note says so instead of claiming a measured epoch time includes them.
TEST(Protocol, ProfiledEpochNoteSaysWhatIsTrue) {
  EpochRecord done, partial;
  done.complete = true;
  partial.complete = false;
  partial.profiled_steps = 7;
  auto note = profiled_epochs_note({partial}, 7);
  EXPECT_EQ(note.find("the 7 profiled steps (profiler cost included)"), std::string::npos) << note;
  EXPECT_NE(note.find("did not finish"), std::string::npos) << note;
  EXPECT_NE(note.find("no epoch finished: the epoch time and the time for the requested epochs are estimated"),
            std::string::npos)
      << note;
  note = profiled_epochs_note({done, partial}, 7);
  EXPECT_NE(note.find("the time for the requested epochs is estimated"), std::string::npos) << note;
  EXPECT_EQ(note.find("no epoch finished"), std::string::npos) << note;
  done.profiled_steps = 7;
  EXPECT_NE(profiled_epochs_note({done}, 7).find("1 epoch time includes the 7 profiled steps"), std::string::npos);
  EXPECT_NE(profiled_epochs_note({done, done}, 14).find("2 epoch times include the 14 profiled steps"), std::string::npos);
  EXPECT_EQ(profiled_epochs_note({EpochRecord{}}, 0), "");
}

TEST(Protocol, ReportFlagsARunWhoseInstrumentsCostMoreThanThreePercent) {
  RunRecord r;
  r.run_id = "cpu-mlp-b32-r0";
  r.device = "cpu";
  r.model = "mlp";
  r.batch_size = 32;
  r.status = RunStatus::kOk;
  r.intra_op_threads = 1;
  r.measurement.sampler_cpu_pct_mean = 5.0;
  rate_instrumentation_cost(r);
  ReportInput in;
  in.runs = {r};
  auto a = analyze(in);
  EXPECT_NE(render_markdown(in, a).find("instrumentation cost**: cpu-mlp-b32-r0"), std::string::npos);
  EXPECT_NE(render_console(in, a).find("flag: cpu-mlp-b32-r0"), std::string::npos);
  in.runs[0].measurement = MeasurementWindow{};
  EXPECT_EQ(render_markdown(in, analyze(in)).find("instrumentation cost**"), std::string::npos);
}

TEST(Protocol, TimeBudgetThatEndsTheRunBeforeTheAutoWindowLeavesTheHeadlineAndSaysSo) {
  auto m = protocol_matrix("budget");
  m.train.epochs = 20;            // 320 planned steps: the auto window is steps 313..319
  m.train.time_budget_s = 0.001;  // ends the run long before that
  auto res = run_matrix(m, {}, nullptr);
  const auto& r = res.runs[0];
  ASSERT_EQ(r.status, RunStatus::kOk) << r.failure_reason;
  EXPECT_EQ(r.stop_reason, "time_budget");
  EXPECT_EQ(r.measurement.profile_skip_first, 313);
  EXPECT_EQ(r.measurement.profiled_steps, 0);
  EXPECT_TRUE(has_note(r, "before the profiling window")) << nlohmann::json(r.notes).dump();
}

// Replayed CUDA-graph steps: the host returns from most replays at once and waits a whole queue's
// worth on a few, so the headline's median host step is near 0 or a queue's wait and says nothing
// of the work (a ViT's graphs run read 0.146 against means of 6.44 and 5.66 ms). Replayed runs
// compare the windows' means; eager runs keep the medians.
TEST(StepTimes, ReplayedStepsCompareWindowMeansAndEagerStepsMedians) {
  StepMs headline, profiled;
  for (int i = 0; i < 90; ++i) headline.add(i % 10 == 9 ? 56.0 : 0.05);  // 10 launches per queue wait
  for (int i = 0; i < 10; ++i) profiled.add(6.0);  // the profiler synchronises every step
  const double means = *profiled.mean() / *headline.mean();
  ASSERT_TRUE(profile_step_time_ratio(headline, profiled, true));
  EXPECT_DOUBLE_EQ(*profile_step_time_ratio(headline, profiled, true), means);
  EXPECT_GT(means, 0.97);  // not "noisy": the profiled steps cost slightly more
  EXPECT_DOUBLE_EQ(*profile_step_time_ratio(headline, profiled, false), 6.0 / 0.05);
  // eager: a few slow headline steps move the mean, not the median
  StepMs eager_headline, eager_profiled;
  for (int i = 0; i < 23; ++i) eager_headline.add(i == 8 ? 300.0 : 1.0);
  for (int i = 0; i < 7; ++i) eager_profiled.add(1.2);
  EXPECT_DOUBLE_EQ(*profile_step_time_ratio(eager_headline, eager_profiled, false), 1.2);
  EXPECT_FALSE(profile_step_time_ratio(StepMs{}, eager_profiled, false));
  EXPECT_FALSE(profile_step_time_ratio(eager_headline, StepMs{}, true));
}

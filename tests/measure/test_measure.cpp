// `trainscope measure`'s library (include/trainscope/measure.h): real child processes (Debian's
// /usr/bin/python3, with python3-torch 1.13 for the training script), the hook, the steady
// window, exit statuses, signals, stalls, bad commands.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "../test_helpers.h"
#include "measure_helpers.h"
#include "measure/process_tree.h"
#include "trainscope/measure.h"

using namespace trainscope;
using namespace trainscope::measure;
using namespace measure_test;

TEST(MeasureSteps, ParseLinesAndSteadyWindow) {
  std::vector<int64_t> ends;
  int64_t items = 0;
  EXPECT_EQ(parse_step_lines("step 1000 32\nstep 2000 -1\nbogus\nstep 5 1\n\nstep 4000 8\n", 500, ends, &items), 2);
  EXPECT_EQ(ends, (std::vector<int64_t>{500, 1500, 3500}));
  EXPECT_EQ(items, 40);
  MeasureResult r;
  r.step_end_ns = {0, 10'000'000, 20'000'000, 40'000'000, 50'000'000};  // steps of 10, 10, 20, 10 ms
  steady_window(r, 2, 16.0);
  ASSERT_TRUE(r.steps_per_s.has_value());
  EXPECT_EQ(*r.window_start_ns, 10'000'000);  // the end of the 2nd step opens it
  EXPECT_EQ(r.window.steps, 3);
  EXPECT_DOUBLE_EQ(*r.steps_per_s, 3 / 0.04);
  EXPECT_DOUBLE_EQ(*r.items_per_s, 16 * 3 / 0.04);
  EXPECT_NEAR(r.window.mean_ms, 40.0 / 3, 1e-9);
  EXPECT_DOUBLE_EQ(r.window.max_ms, 20);
  MeasureResult few;
  few.step_end_ns = {0, 1};
  steady_window(few, 2, std::nullopt);
  EXPECT_FALSE(few.steps_per_s.has_value());
  EXPECT_NE(few.notes.at(0).find("fewer than the 2 warm-up"), std::string::npos);
}

TEST(MeasureChild, OutputExitStatusAndStepsThroughTheHook) {
  MeasureConfig c = config("fake", {kPython, kFixtures + "/fake_steps.py", "6", "0.02", "3"});
  c.items_per_step = 32;
  const MeasureResult r = measure_command(c);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.outcome, "exited 3");
  const auto results = nlohmann::json::parse(test::read_text(c.out_dir + "/results.json"));
  EXPECT_EQ(results["runs"].at(0)["status"], "failed");
  EXPECT_EQ(results["runs"].at(0)["failure_reason"], "the program exited 3");
  EXPECT_EQ(r.step_end_ns.size(), 6u);
  EXPECT_EQ(r.items_reported, 6 * 32);
  ASSERT_TRUE(r.steps_per_s.has_value());
  EXPECT_EQ(r.window.steps, 4);
  EXPECT_TRUE(std::is_sorted(r.step_end_ns.begin(), r.step_end_ns.end()));
  EXPECT_GE(r.step_end_ns.front(), r.start_ns);
  EXPECT_LE(r.step_end_ns.back(), r.end_ns);
  EXPECT_EQ(test::read_text(c.out_dir + "/stdout.log"), "fake_steps: done\n");
  EXPECT_EQ(test::read_text(c.out_dir + "/stderr.log"), "to stderr\n");
  const auto j = nlohmann::json::parse(test::read_text(c.out_dir + "/measure.json"));
  EXPECT_EQ(j["exit_code"], 3);
  EXPECT_EQ(j["steps"], 6);
  EXPECT_TRUE(j.contains("telemetry"));
  EXPECT_TRUE(std::filesystem::exists(c.out_dir + "/telemetry.csv.gz"));
  EXPECT_NE(test::read_text(c.out_dir + "/steps.csv").find("6,"), std::string::npos);
  EXPECT_NE(render_summary(r, c).find("6 steps reported"), std::string::npos) << render_summary(r, c);
}

TEST(MeasureChild, RealTorchTrainingScript) {
  if (!has_torch()) GTEST_SKIP() << kPython << " has no torch (apt-get install python3-torch)";
  MeasureConfig c = config("torch", {kPython, kFixtures + "/train_mlp.py", "40"});
  c.items_per_step = 32;
  c.warmup_steps = 5;
  const MeasureResult r = measure_command(c);
  EXPECT_EQ(r.exit_code, 0) << test::read_text(c.out_dir + "/stderr.log");
  EXPECT_EQ(r.step_end_ns.size(), 40u) << "every SGD.step() of the unchanged script";
  EXPECT_EQ(r.window.steps, 35);
  ASSERT_TRUE(r.items_per_s.has_value());
  EXPECT_GT(*r.items_per_s, 0);
  EXPECT_NE(test::read_text(c.out_dir + "/stdout.log").find("train_mlp: 40 steps"), std::string::npos);
  ASSERT_TRUE(r.telemetry.has_value());
  EXPECT_EQ(r.telemetry->headline.device, "cpu");
  EXPECT_EQ(r.telemetry->headline.window, "headline");
  ASSERT_GE(r.tree.size(), 2u) << "the program's process tree, read about every 0.5 s";
  const TreeSummary all = summarize_tree(r.tree, r.start_ns, r.end_ns);
  for (const TreeSample& t : r.tree) EXPECT_GT(t.rss_bytes, 0) << "no reading of the exited program (a zombie)";
  EXPECT_GT(*all.rss_bytes_max, 50'000'000) << "a Python process with torch loaded";
  EXPECT_GE(*all.threads_max, 1);
  ASSERT_TRUE(all.cpu_pct_mean.has_value());
  EXPECT_GT(*all.cpu_pct_mean, 0);
  const auto j = nlohmann::json::parse(test::read_text(c.out_dir + "/measure.json"));
  EXPECT_TRUE(j["process_tree"].contains("rss_bytes_max"));
  EXPECT_EQ(r.telemetry->headline.process_rss_bytes_max, static_cast<double>(*r.tree_window.rss_bytes_max))
      << "the headline's process is the program, not trainscope";
  // the run record, as `run` writes it: report and compare read the measured program
  const auto results = nlohmann::json::parse(test::read_text(c.out_dir + "/results.json"));
  const auto& run = results["runs"].at(0);
  EXPECT_EQ(run["run_id"], "cpu-train_mlp-b32-r0");
  EXPECT_EQ(run["status"], "ok");
  EXPECT_DOUBLE_EQ(run["steady_samples_per_s"].get<double>(), *r.items_per_s);
  EXPECT_EQ(run["measurement"]["headline_steps"], 35);
  EXPECT_TRUE(std::filesystem::exists(c.out_dir + "/results.csv"));
}

TEST(MeasureChild, NoStepsIsANoteNotAnError) {
  const MeasureResult r = measure_command(config("nosteps", {"/bin/sh", "-c", "echo hello"}));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.step_end_ns.empty());
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.back().find("reported no step"), std::string::npos);
}

TEST(MeasureChild, KilledBySignalGives128PlusSignal) {
  const MeasureResult r = measure_command(config("killed", {"/bin/sh", "-c", "kill -KILL $$"}));
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_NE(r.outcome.find("killed by signal 9"), std::string::npos) << r.outcome;
}

TEST(MeasureChild, SignalToTrainscopeIsForwarded) {
  const std::string ready = temp_path("forward_ready");
  MeasureConfig c = config("forward", {"/bin/sh", "-c", "trap 'exit 42' TERM; touch " + ready + "; while true; do sleep 0.05; done"});
  std::thread killer([ready] {
    // the program runs, so trainscope's forwarding handler is in place (it is installed first)
    while (!std::filesystem::exists(ready)) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    kill(getpid(), SIGTERM);  // from a process (si_code SI_USER): forwarded to the program
  });
  const MeasureResult r = measure_command(c);
  killer.join();
  EXPECT_EQ(r.exit_code, 42) << r.outcome;
}

TEST(MeasureChild, StallStopsTheProgramAndKeepsTheSteps) {
  MeasureConfig c = config("stall", {kPython, kFixtures + "/fake_steps.py", "4", "0.01", "hang"});
  c.stall_timeout_s = 1.0;
  const MeasureResult r = measure_command(c);
  EXPECT_TRUE(r.stalled);
  EXPECT_EQ(r.step_end_ns.size(), 4u);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM);
  EXPECT_NE(r.outcome.find("stalled"), std::string::npos);
  EXPECT_NE(r.notes.at(0).find("no step for"), std::string::npos) << r.notes.at(0);
}

TEST(MeasureErrors, CommandNotFoundBeforeAnythingRuns) {
  EXPECT_NE(test::what_of([] { measure_command(config("nf", {"no-such-program-ts38"})); })
                .find("command 'no-such-program-ts38' not found on PATH"),
            std::string::npos);
  EXPECT_NE(test::what_of([] { measure_command(config("nf2", {"/nonexistent/prog"})); }).find("not an executable file"),
            std::string::npos);
  EXPECT_NE(test::what_of([] { measure_command(config("nf3", {})); }).find("no command given"), std::string::npos);
  MeasureConfig bad = config("nf4", {"/bin/true"});
  bad.items_per_step = 0;
  EXPECT_NE(test::what_of([&] { measure_command(bad); }).find("--items-per-step must be > 0"), std::string::npos);
}

// A fake /proc: the program 100 with a child 101 and a grandchild 102; 200 is another process.
TEST(MeasureProcessTree, SumsTheProgramAndItsDescendantsOnly) {
  const std::string root = temp_path("proc");
  auto stat = [&](int pid, int ppid, long ticks, int threads, long rss_pages) {
    std::filesystem::create_directories(root + "/" + std::to_string(pid));
    // fields: pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
    //         utime stime cutime cstime priority nice num_threads itrealvalue starttime vsize rss
    std::ofstream(root + "/" + std::to_string(pid) + "/stat")
        << pid << " (py thon) S " << ppid << " 1 1 0 -1 0 0 0 0 0 " << ticks << " 0 0 0 20 0 " << threads
        << " 0 100 1000 " << rss_pages << " 0\n";
  };
  stat(100, 1, 100, 4, 1000);
  stat(101, 100, 50, 2, 500);
  stat(102, 101, 10, 1, 100);
  stat(200, 1, 9999, 9, 9999);
  std::filesystem::create_directories(root + "/103");  // a zombie child: left out
  std::ofstream(root + "/103/stat") << "103 (sh) Z 100 1 1 0 -1 0 0 0 0 0 5 0 0 0 20 0 1 0 100 0 0 0\n";
  ProcessTree tree(100, root);
  tree.sample(0);
  stat(100, 1, 100 + sysconf(_SC_CLK_TCK), 4, 1000);  // one second of CPU in one second
  tree.sample(1'000'000'000);
  ASSERT_EQ(tree.samples().size(), 2u);
  const TreeSample& s = tree.samples()[1];
  EXPECT_EQ(s.processes, 3);
  EXPECT_EQ(s.threads, 7);
  EXPECT_EQ(s.rss_bytes, 1600 * sysconf(_SC_PAGESIZE));
  EXPECT_NEAR(s.cpu_pct, 100.0, 1e-9);
  EXPECT_LT(tree.samples()[0].cpu_pct, 0) << "no CPU figure from one reading";
  const TreeSummary sum = summarize_tree(tree.samples(), 0, 2'000'000'000);
  EXPECT_EQ(sum.samples, 2);
  EXPECT_DOUBLE_EQ(*sum.cpu_pct_mean, 100.0);
  EXPECT_EQ(*sum.processes_max, 3);
}

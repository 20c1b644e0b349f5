// The report's renderings: the summary tables, Markdown, HTML and console, and what each marks
// (estimates, too few samples, absent readings).
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

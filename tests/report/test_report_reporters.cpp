// The reporters of the record's and the report's files (trainscope/reporter.h): what each writes from
// the matrix's calls, and a results file of a newer schema refused.
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

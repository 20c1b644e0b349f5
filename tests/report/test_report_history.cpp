// The SQLite run history (trainscope/history.h): schema, WAL, a killed process, migration, import,
// and the messages of its readers.
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

// The history's generation rows since schema 4 (trainscope/history.h): a server rate's batching,
// max batch, request lengths and threads, a version 3 database migrated (its old rows keep NULL),
// and `history import DIR`: the folder stored absolute and canonical, each file imported or
// skipped with its reason.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>

#include "gen_fixtures.h"
#include "report_helpers.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/history.h"

using namespace trainscope;
using namespace gen_fixture;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A version 3 database as trainscope wrote it before version 4: its tables, one session and one
// server row (fcfs at 2 requests/s).
void make_v3_database(const std::string& path) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const char* sql = R"SQL(
CREATE TABLE matrices(id INTEGER PRIMARY KEY, run_dir TEXT NOT NULL, started_utc TEXT, host TEXT, git_commit TEXT,
  command_line TEXT, provenance_json TEXT);
CREATE TABLE runs(id INTEGER PRIMARY KEY, matrix_id INTEGER NOT NULL REFERENCES matrices(id), run_id TEXT NOT NULL,
  device TEXT, model TEXT, batch_size INTEGER, repeat INTEGER, status TEXT NOT NULL, host TEXT, pid INTEGER,
  started_utc TEXT, finished_utc TEXT, steady_samples_per_s REAL, test_accuracy_pct REAL, record_json TEXT,
  UNIQUE(matrix_id, run_id));
CREATE INDEX runs_by_cell ON runs(model, device, batch_size);
CREATE INDEX matrices_by_dir ON matrices(run_dir);
CREATE TABLE generation_sessions(id INTEGER PRIMARY KEY, run_dir TEXT, started_utc TEXT, host TEXT, git_commit TEXT,
  command_line TEXT, provenance_json TEXT, UNIQUE(host, started_utc));
CREATE TABLE generation_tests(id INTEGER PRIMARY KEY, session_id INTEGER NOT NULL REFERENCES generation_sessions(id),
  device TEXT, model TEXT, dtype TEXT, execution TEXT, test TEXT, batch INTEGER, n_prompt INTEGER, n_gen INTEGER,
  n_depth INTEGER, repetitions INTEGER, tokens_per_s_mean REAL, tokens_per_s_stddev REAL, joules_per_token REAL,
  error TEXT);
CREATE TABLE generation_server(id INTEGER PRIMARY KEY, session_id INTEGER NOT NULL REFERENCES generation_sessions(id),
  device TEXT, model TEXT, dtype TEXT, execution TEXT, rate_per_s REAL, requests_issued INTEGER,
  requests_served INTEGER, ttft_p50_ms REAL, ttft_p99_ms REAL, tpot_p50_ms REAL, tpot_p99_ms REAL,
  goodput_per_s REAL, slo_attainment_pct REAL);
INSERT INTO generation_sessions VALUES(1, 'runs/old', '2026-11-01T00:00:00Z', 'old-host', '', '', '{}');
INSERT INTO generation_server VALUES(1, 1, 'cpu', 'gpt2', 'float32', 'eager', 2, 20, 20, 1, 2, 3, 4, 2, 100);
PRAGMA user_version=3;
)SQL";
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

int user_version(const std::string& path) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr);
  sqlite3_step(st);
  const int v = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

}  // namespace

TEST(CompareGenHistory, ServerRowsKeepHowTheyWereServed) {
  const std::string dir = report_test::tmpdir("gen_hist_v4");
  HistoryDb db(dir + "/h.sqlite");
  EXPECT_EQ(db.record_generation(doc({gen_run("cuda:0", 300, 2.0, Serving{"continuous", 32, "text"}, 8)}), "runs/lm"), 1u);
  const auto server = db.list_generation_server();
  ASSERT_EQ(server.size(), 1u);
  EXPECT_EQ(server[0].batching, "continuous");
  EXPECT_EQ(server[0].max_batch, 32);
  EXPECT_EQ(server[0].lengths, "text");
  EXPECT_EQ(server[0].intra_op_threads, 8);
  const auto tests = db.list_generation_tests();
  ASSERT_EQ(tests.size(), 1u);
  EXPECT_EQ(tests[0].intra_op_threads, 8);
}

TEST(CompareGenHistory, AVersion3DatabaseIsMigratedToVersion4) {
  const std::string dir = report_test::tmpdir("gen_hist_v3");
  const std::string path = dir + "/h.sqlite";
  make_v3_database(path);
  HistoryDb db(path);
  EXPECT_EQ(user_version(path), 4);
  auto server = db.list_generation_server();
  ASSERT_EQ(server.size(), 1u);  // the old row is kept, without what it did not record
  EXPECT_EQ(server[0].host, "old-host");
  EXPECT_EQ(*server[0].tpot_p99_ms, 4);
  EXPECT_EQ(server[0].batching, "");
  EXPECT_FALSE(server[0].max_batch.has_value());
  EXPECT_FALSE(server[0].intra_op_threads.has_value());
  db.record_generation(doc({gen_run("cpu", 100, 5.0, Serving{"fcfs", 1, "fixed"}, 4)}), "runs/lm");
  server = db.list_generation_server();
  ASSERT_EQ(server.size(), 2u);
  EXPECT_EQ(server[0].batching, "fcfs");  // newest first
  EXPECT_EQ(server[0].intra_op_threads, 4);
}

TEST(CompareGenHistory, ImportStoresTheCanonicalFolderAndSaysWhatItSkipped) {
  const std::string dir = report_test::tmpdir("gen_hist_import");
  std::filesystem::copy(report_test::kHealthy, dir + "/run", std::filesystem::copy_options::recursive);
  const auto gen = doc({gen_run("cpu", 100, 5.0)});
  write_file_atomic(dir + "/run/inference.json", inference_json(gen.provenance, gen.runs));
  auto image = doc({image_run("cpu", 2, 1000)});
  image.provenance.date_utc = "2026-12-04T11:00:00Z";
  write_file_atomic(dir + "/run/inference-mlp.json", inference_json(image.provenance, image.runs));
  // Given relatively, with a detour: stored absolute and canonical.
  const std::string relative =
      std::filesystem::relative(dir, std::filesystem::current_path()).string() + "/run/../run";
  const std::string canonical = std::filesystem::canonical(dir + "/run").string();
  HistoryDb db(dir + "/h.sqlite");
  const HistoryImport imp = import_folder(db, relative);
  EXPECT_EQ(imp.dir, canonical);
  ASSERT_TRUE(imp.matrix.has_value());
  EXPECT_TRUE(imp.matrix->added);
  EXPECT_EQ(imp.generation_measurements, 1u);
  ASSERT_EQ(imp.imported.size(), 2u);  // results.json and inference.json
  EXPECT_TRUE(has(imp.imported[0], "run(s) from host")) << imp.imported[0];
  EXPECT_TRUE(has(imp.imported[1], "inference.json: 1 generation measurement")) << imp.imported[1];
  ASSERT_EQ(imp.skipped.size(), 1u);
  EXPECT_TRUE(has(imp.skipped[0], "inference-mlp.json: holds 1 image-inference run only")) << imp.skipped[0];
  EXPECT_EQ(db.list().front().run_dir, canonical);
  EXPECT_EQ(db.list_generation_tests().front().run_dir, canonical);
  const std::string text = render_history_import(imp, "h.sqlite");
  EXPECT_TRUE(has(text, "2 files imported, 1 file skipped")) << text;
  // Imported again: every file is skipped, and says it is there already.
  const HistoryImport again = import_folder(db, canonical);
  EXPECT_TRUE(again.imported.empty());
  ASSERT_EQ(again.skipped.size(), 3u);
  EXPECT_TRUE(has(again.skipped[0], "results.json: already in the database as matrix m")) << again.skipped[0];
  EXPECT_TRUE(has(again.skipped[1], "inference-mlp.json")) << again.skipped[1];  // by name: inference-mlp < inference.json
  EXPECT_TRUE(has(again.skipped[2], "inference.json: already in the database")) << again.skipped[2];
  EXPECT_EQ(db.list_generation_tests().size(), 1u);
  // The folder gone, the history still finds its matrix by a relative path to it.
  trainscope::remove_tree(dir + "/run");
  const std::string gone = std::filesystem::relative(dir, std::filesystem::current_path()).string() + "/run";
  EXPECT_EQ(resolve_runs(gone, dir + "/h.sqlite").run_dir, canonical);
}

TEST(CompareGenHistory, ImportRefusesAFolderWithNothingToImport) {
  const std::string dir = report_test::tmpdir("gen_hist_empty");
  HistoryDb db(dir + "/h.sqlite");
  for (const std::string& bad : {dir, dir + "/missing"}) {
    try {
      import_folder(db, bad);
      ADD_FAILURE() << bad << " was imported";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      EXPECT_TRUE(has(e.what(), bad)) << e.what();
      EXPECT_TRUE(has(e.what(), "no results.json")) << e.what();
    }
  }
}

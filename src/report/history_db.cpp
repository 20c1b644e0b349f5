// Run history storage in SQLite (schema in trainscope/history.h).
#include "trainscope/history.h"

#include <fmt/format.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>

#include "common/text.h"
#include "results/record_json.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"

namespace trainscope {

using nlohmann::json;

namespace {

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql, const std::string& path) : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK)
      throw_error(ErrorKind::kIo, fmt::format("{}: SQL error: {}", path, sqlite3_errmsg(db)));
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Stmt& bind(int i, std::optional<double> v) {
    if (v && std::isfinite(*v))
      sqlite3_bind_double(s_, i, *v);
    else
      sqlite3_bind_null(s_, i);
    return *this;
  }
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw_error(ErrorKind::kIo, fmt::format("{}: database error: {}", path_, sqlite3_errmsg(db_)));
  }
  std::string text(int c) const {
    auto* p = sqlite3_column_text(s_, c);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  int64_t i64(int c) const { return sqlite3_column_int64(s_, c); }
  std::optional<int64_t> opt_i64(int c) const {
    if (sqlite3_column_type(s_, c) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_int64(s_, c);
  }
  std::optional<double> dbl(int c) const {
    if (sqlite3_column_type(s_, c) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_double(s_, c);
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
  std::string path_;
};

void exec(sqlite3* db, const char* sql, const std::string& path) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : "unknown error";
    sqlite3_free(err);
    throw_error(ErrorKind::kIo, fmt::format("{}: database error: {} (in: {:.60})", path, m, sql));
  }
}

bool process_alive(int64_t pid) {
  if (pid <= 0) return false;
  if (::kill(static_cast<pid_t>(pid), 0) == 0) return true;
  return errno == EPERM;
}

// A "running" row is only running while its process lives on this host.
std::string effective_status(const std::string& status, const std::string& host, int64_t pid) {
  if (status != "running") return status;
  return host == host_name() && process_alive(pid) ? "running" : "incomplete";
}

const char* kSchema = R"SQL(
CREATE TABLE IF NOT EXISTS matrices(
  id INTEGER PRIMARY KEY,
  run_dir TEXT NOT NULL,
  started_utc TEXT, host TEXT, git_commit TEXT, command_line TEXT,
  provenance_json TEXT);
CREATE TABLE IF NOT EXISTS runs(
  id INTEGER PRIMARY KEY,
  matrix_id INTEGER NOT NULL REFERENCES matrices(id),
  run_id TEXT NOT NULL, device TEXT, model TEXT, batch_size INTEGER, repeat INTEGER,
  status TEXT NOT NULL, host TEXT, pid INTEGER,
  started_utc TEXT, finished_utc TEXT,
  steady_samples_per_s REAL, test_accuracy_pct REAL,
  record_json TEXT,
  UNIQUE(matrix_id, run_id));
CREATE INDEX IF NOT EXISTS runs_by_cell ON runs(model, device, batch_size);
CREATE INDEX IF NOT EXISTS matrices_by_dir ON matrices(run_dir);
)SQL";

// Version 3: a language model's generation results (`trainscope infer`, trainscope/history.h),
// with version 4's columns (how each row was measured); part of a new database's schema and the
// migration of a version 1 or 2 one (new tables only: the runs and matrices stay as they are).
const char* kGenerationSchema = R"SQL(
CREATE TABLE IF NOT EXISTS generation_sessions(
  id INTEGER PRIMARY KEY,
  run_dir TEXT, started_utc TEXT, host TEXT, git_commit TEXT, command_line TEXT,
  provenance_json TEXT,
  UNIQUE(host, started_utc));
CREATE TABLE IF NOT EXISTS generation_tests(
  id INTEGER PRIMARY KEY,
  session_id INTEGER NOT NULL REFERENCES generation_sessions(id),
  device TEXT, model TEXT, dtype TEXT, execution TEXT, test TEXT, batch INTEGER,
  n_prompt INTEGER, n_gen INTEGER, n_depth INTEGER, repetitions INTEGER,
  tokens_per_s_mean REAL, tokens_per_s_stddev REAL, joules_per_token REAL, error TEXT,
  intra_op_threads INTEGER);
CREATE TABLE IF NOT EXISTS generation_server(
  id INTEGER PRIMARY KEY,
  session_id INTEGER NOT NULL REFERENCES generation_sessions(id),
  device TEXT, model TEXT, dtype TEXT, execution TEXT, rate_per_s REAL,
  requests_issued INTEGER, requests_served INTEGER,
  ttft_p50_ms REAL, ttft_p99_ms REAL, tpot_p50_ms REAL, tpot_p99_ms REAL,
  goodput_per_s REAL, slo_attainment_pct REAL,
  batching TEXT, max_batch INTEGER, lengths TEXT, intra_op_threads INTEGER);
)SQL";

// Version 3 -> 4: how each generation row was measured (trainscope/history.h); the rows of
// version 3 keep NULL there. ADD COLUMN keeps the rows and their ids.
const char* kMigrateV3ToV4 = R"SQL(
ALTER TABLE generation_tests ADD COLUMN intra_op_threads INTEGER;
ALTER TABLE generation_server ADD COLUMN batching TEXT;
ALTER TABLE generation_server ADD COLUMN max_batch INTEGER;
ALTER TABLE generation_server ADD COLUMN lengths TEXT;
ALTER TABLE generation_server ADD COLUMN intra_op_threads INTEGER;
)SQL";

// Version 1 -> 2: matrices.run_dir loses UNIQUE (one row per session of a matrix). SQLite cannot
// drop a constraint, so the table is rebuilt (https://www.sqlite.org/lang_altertable.html,
// "making other kinds of table schema changes"); ids are kept, so runs.matrix_id stays valid.
const char* kMigrateV1ToV2 = R"SQL(
CREATE TABLE matrices_v2(
  id INTEGER PRIMARY KEY,
  run_dir TEXT NOT NULL,
  started_utc TEXT, host TEXT, git_commit TEXT, command_line TEXT,
  provenance_json TEXT);
INSERT INTO matrices_v2(id, run_dir, started_utc, host, git_commit, command_line, provenance_json)
  SELECT id, run_dir, started_utc, host, git_commit, command_line, provenance_json FROM matrices;
DROP TABLE matrices;
ALTER TABLE matrices_v2 RENAME TO matrices;
CREATE INDEX IF NOT EXISTS matrices_by_dir ON matrices(run_dir);
)SQL";

// Runs `sql` and sets user_version in one transaction (rolled back on error).
void exec_versioned(sqlite3* db, const char* sql, const std::string& path) {
  exec(db, "BEGIN IMMEDIATE", path);
  try {
    exec(db, sql, path);
    exec(db, fmt::format("PRAGMA user_version={}", kHistorySchemaVersion).c_str(), path);
    exec(db, "COMMIT", path);
  } catch (...) {
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

}  // namespace

struct HistoryDb::Impl {
  sqlite3* db = nullptr;
  ~Impl() {
    if (db) sqlite3_close(db);
  }
};

namespace {

// How each command names its database: `history`, `compare` and `report` take --db, `run` the
// history_db setting (TOML key, no flag).
constexpr const char* kOtherDatabase = "--db; for `run`, the history_db key of its --config file";

int user_version(sqlite3* db, const std::string& path) {
  Stmt s(db, "PRAGMA user_version", path);
  return s.step() ? static_cast<int>(s.i64(0)) : 0;
}

// Creates the schema in an empty database, migrates an older one; refuses newer or foreign files.
void create_or_migrate(sqlite3* db, const std::string& path) {
  int version = user_version(db, path);
  if (version > kHistorySchemaVersion)
    throw_error(ErrorKind::kIo, fmt::format("{}: history schema version {} is newer than this trainscope's ({}); "
                                            "use a newer trainscope or another database ({})",
                                            path, version, kHistorySchemaVersion, kOtherDatabase));
  if (version == 1) {
    // The table rebuild needs foreign keys off; the pragma is a no-op inside a transaction.
    exec(db, "PRAGMA foreign_keys=OFF", path);
    exec_versioned(db, (std::string(kMigrateV1ToV2) + kGenerationSchema).c_str(), path);
  }
  if (version == 2) exec_versioned(db, kGenerationSchema, path);
  if (version == 3) exec_versioned(db, kMigrateV3ToV4, path);
  exec(db, "PRAGMA foreign_keys=ON", path);
  if (version != 0) return;
  // A non-empty database without our version is someone else's file.
  Stmt t(db, "SELECT count(*) FROM sqlite_master WHERE name NOT IN ('matrices','runs','runs_by_cell','matrices_by_dir')",
         path);
  if (t.step() && t.i64(0) > 0)
    throw_error(ErrorKind::kIo, fmt::format("{}: not a trainscope history database (it has other tables); "
                                            "pass another database ({})",
                                            path, kOtherDatabase));
  exec_versioned(db, (std::string(kSchema) + kGenerationSchema).c_str(), path);
}

}  // namespace

HistoryDb::HistoryDb(const std::string& path, Access access) : path_(path), impl_(std::make_unique<Impl>()) {
  try {
    open_for_writing();
  } catch (const Error&) {
    if (access == Access::kWrite) throw;
    if (impl_->db) sqlite3_close(impl_->db);
    impl_->db = nullptr;
    open_read_only();
  }
}

void HistoryDb::open_for_writing() {
  auto slash = path_.find_last_of('/');
  if (slash != std::string::npos && slash > 0) ensure_writable_dir(path_.substr(0, slash));
  if (sqlite3_open_v2(path_.c_str(), &impl_->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string m = impl_->db ? sqlite3_errmsg(impl_->db) : "out of memory";
    throw_error(ErrorKind::kIo, fmt::format("{}: cannot open the history database: {}", path_, m));
  }
  sqlite3_busy_timeout(impl_->db, 5000);  // another trainscope may be writing
  // WAL: readers (history, compare) never block the writer; each run is its own transaction,
  // so a killed process loses at most the statement in flight.
  exec(impl_->db, "PRAGMA journal_mode=WAL", path_);
  exec(impl_->db, "PRAGMA synchronous=NORMAL", path_);
  create_or_migrate(impl_->db, path_);
}

namespace {

// A path as an SQLite URI's path ('%', '?' and '#' escaped).
std::string uri_path(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    else out += c;
  }
  return out;
}

}  // namespace

// Read-only: a WAL database whose folder cannot be written has no -shm file to share with a
// writer, so SQLite opens it only as immutable (nothing can be writing on a read-only file system).
void HistoryDb::open_read_only() {
  std::string why;
  for (const char* mode : {"mode=ro", "immutable=1"}) {
    const std::string uri = fmt::format("file:{}?{}", uri_path(path_), mode);
    if (sqlite3_open_v2(uri.c_str(), &impl_->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_FULLMUTEX,
                        nullptr) == SQLITE_OK) {
      sqlite3_busy_timeout(impl_->db, 5000);
      try {
        const int version = user_version(impl_->db, path_);
        // Version 2 lacks only the generation tables, version 3 only their version-4 columns: each
        // is read as it is (list_generation_*: no rows / those columns absent).
        if (version == kHistorySchemaVersion || version == 2 || version == 3) return;
        why = version == 0 ? fmt::format("not a trainscope history database (no schema version); pass another database ({})", kOtherDatabase)
              : version > kHistorySchemaVersion
                  ? fmt::format("history schema version {} is newer than this trainscope's ({}); use a newer "
                                "trainscope or another database ({})", version, kHistorySchemaVersion, kOtherDatabase)
                  : fmt::format("history schema version {} needs upgrading to {}, which needs write access: open "
                                "it once where it can be written, or pass another database ({})", version, kHistorySchemaVersion, kOtherDatabase);
        sqlite3_close(impl_->db);
        impl_->db = nullptr;
        break;
      } catch (const Error& e) {
        why = e.what();
      }
    } else {
      why = impl_->db ? sqlite3_errmsg(impl_->db) : "out of memory";
    }
    if (impl_->db) sqlite3_close(impl_->db);
    impl_->db = nullptr;
  }
  throw_error(ErrorKind::kIo, fmt::format("{}: cannot open the history database (read-only): {}", path_, why));
}

HistoryDb::~HistoryDb() = default;

int64_t HistoryDb::begin_matrix(const std::string& run_dir, const Provenance& p) {
  Stmt ins(impl_->db,
           "INSERT INTO matrices(run_dir, started_utc, host, git_commit, command_line, provenance_json) "
           "VALUES(?,?,?,?,?,?)",
           path_);
  ins.bind(1, run_dir)
      .bind(2, p.date_utc.empty() ? utc_timestamp() : p.date_utc)
      .bind(3, p.host)
      .bind(4, p.git_commit)
      .bind(5, p.command_line)
      .bind(6, to_json(p).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  ins.step();
  return sqlite3_last_insert_rowid(impl_->db);
}

HistoryDb::Imported HistoryDb::import_runs(const ReportInput& in) {
  Imported out;
  {
    Stmt q(impl_->db, "SELECT id FROM matrices WHERE host=? AND started_utc=? ORDER BY id LIMIT 1", path_);
    q.bind(1, in.provenance.host).bind(2, in.provenance.date_utc);
    if (q.step()) {
      out.matrix_id = q.i64(0);
      return out;  // already there: imported before, or recorded by the run itself
    }
  }
  exec(impl_->db, "BEGIN IMMEDIATE", path_);
  try {
    out.matrix_id = begin_matrix(in.run_dir, in.provenance);
    for (const auto& r : in.runs) {
      // The run's own host and no pid: an imported run is never taken for one still running here.
      Stmt s(impl_->db,
             "INSERT INTO runs(matrix_id, run_id, device, model, batch_size, repeat, status, host, pid, started_utc, "
             "finished_utc, steady_samples_per_s, test_accuracy_pct, record_json) VALUES(?,?,?,?,?,?,?,?,0,?,?,?,?,?)",
             path_);
      s.bind(1, out.matrix_id).bind(2, r.run_id).bind(3, r.device).bind(4, r.model).bind(5, r.batch_size);
      s.bind(6, r.repeat).bind(7, to_string(r.status)).bind(8, in.provenance.host).bind(9, in.provenance.date_utc);
      s.bind(10, in.provenance.date_utc).bind(11, r.steady_samples_per_s).bind(12, r.test_accuracy_pct);
      s.bind(13, to_json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      s.step();
      ++out.runs;
    }
    exec(impl_->db, "COMMIT", path_);
  } catch (...) {
    exec(impl_->db, "ROLLBACK", path_);
    throw;
  }
  out.added = true;
  return out;
}

std::optional<int64_t> HistoryDb::matrix_id_for_dir(const std::string& run_dir) const {
  Stmt s(impl_->db, "SELECT id FROM matrices WHERE run_dir=? ORDER BY id DESC LIMIT 1", path_);
  s.bind(1, run_dir);
  if (s.step()) return s.i64(0);
  return std::nullopt;
}

int64_t HistoryDb::run_started(int64_t matrix_id, const RunRecord& r) {
  RunRecord open = r;
  open.status = RunStatus::kRunning;
  Stmt s(impl_->db,
         "INSERT INTO runs(matrix_id, run_id, device, model, batch_size, repeat, status, host, pid, started_utc, "
         "record_json) VALUES(?,?,?,?,?,?,'running',?,?,?,?) ON CONFLICT(matrix_id, run_id) DO UPDATE SET "
         "status='running', host=excluded.host, pid=excluded.pid, started_utc=excluded.started_utc, "
         "finished_utc=NULL, record_json=excluded.record_json",
         path_);
  s.bind(1, matrix_id)
      .bind(2, r.run_id)
      .bind(3, r.device)
      .bind(4, r.model)
      .bind(5, r.batch_size)
      .bind(6, r.repeat)
      .bind(7, host_name())
      .bind(8, static_cast<int64_t>(::getpid()))
      .bind(9, utc_timestamp())
      .bind(10, to_json(open).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  s.step();
  Stmt q(impl_->db, "SELECT id FROM runs WHERE matrix_id=? AND run_id=?", path_);
  q.bind(1, matrix_id).bind(2, r.run_id);
  TS_CHECK(q.step(), "run row missing right after insert");
  return q.i64(0);
}

void HistoryDb::run_finished(int64_t matrix_id, const RunRecord& r) {
  {
    // Make sure the row exists (a run whose start was not seen) without moving its start time.
    Stmt q(impl_->db, "SELECT id FROM runs WHERE matrix_id=? AND run_id=?", path_);
    q.bind(1, matrix_id).bind(2, r.run_id);
    if (!q.step()) run_started(matrix_id, r);
  }
  Stmt s(impl_->db,
         "UPDATE runs SET status=?, finished_utc=?, steady_samples_per_s=?, test_accuracy_pct=?, record_json=? "
         "WHERE matrix_id=? AND run_id=?",
         path_);
  s.bind(1, to_string(r.status))
      .bind(2, utc_timestamp())
      .bind(3, r.steady_samples_per_s)
      .bind(4, r.test_accuracy_pct)
      .bind(5, to_json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
      .bind(6, matrix_id)
      .bind(7, r.run_id);
  s.step();
}

std::vector<HistoryRow> HistoryDb::list(size_t limit) const {
  std::string sql =
      "SELECT r.id, r.matrix_id, m.run_dir, r.run_id, r.device, r.model, r.batch_size, r.repeat, r.status, r.host, "
      "r.pid, r.started_utc, r.finished_utc, m.git_commit, r.steady_samples_per_s, r.test_accuracy_pct, "
      // The variant and world size are part of the workload (trainscope/report.h workload_of); the
      // table has no columns for them, the stored record has (absent in old records: eager, 1).
      "CASE WHEN json_valid(r.record_json) THEN json_extract(r.record_json, '$.variant') END, "
      "CASE WHEN json_valid(r.record_json) THEN json_extract(r.record_json, '$.world_size') END "
      "FROM runs r JOIN matrices m ON m.id = r.matrix_id ORDER BY r.id DESC";
  if (limit > 0) sql += fmt::format(" LIMIT {}", limit);
  Stmt s(impl_->db, sql.c_str(), path_);
  std::vector<HistoryRow> out;
  while (s.step()) {
    HistoryRow h;
    h.id = s.i64(0);
    h.matrix_id = s.i64(1);
    h.run_dir = s.text(2);
    h.run_id = s.text(3);
    h.device = s.text(4);
    h.model = s.text(5);
    h.batch_size = s.i64(6);
    h.repeat = s.i64(7);
    h.status = effective_status(s.text(8), s.text(9), s.i64(10));
    h.started_utc = s.text(11);
    h.finished_utc = s.text(12);
    h.git_commit = s.text(13);
    h.steady_samples_per_s = s.dbl(14);
    h.test_accuracy_pct = s.dbl(15);
    if (const std::string v = s.text(16); !v.empty()) h.variant = v;
    if (s.i64(17) > 0) h.world_size = s.i64(17);
    out.push_back(h);
  }
  return out;
}

namespace {

// `what` names the id in the error: "matrix with id m7" or "run with id 7".
ReportInput load_where(sqlite3* db, const std::string& path, const char* where, int64_t id, const std::string& what) {
  std::string sql = std::string("SELECT r.record_json, r.status, r.host, r.pid, m.provenance_json, m.run_dir "
                                "FROM runs r JOIN matrices m ON m.id = r.matrix_id WHERE ") +
                    where + " ORDER BY r.id";
  Stmt s(db, sql.c_str(), path);
  s.bind(1, id);
  ReportInput in;
  bool any = false;
  while (s.step()) {
    any = true;
    try {
      RunRecord r = run_record_from_json(json::parse(s.text(0)));
      if (effective_status(s.text(1), s.text(2), s.i64(3)) == "incomplete") {
        r.status = RunStatus::kInterrupted;
        r.notes.push_back("incomplete: the process recording this run ended before the run did");
      }
      in.runs.push_back(std::move(r));
      in.provenance = provenance_from_json(json::parse(s.text(4)));
      in.run_dir = s.text(5);
    } catch (const json::exception& e) {
      throw_error(ErrorKind::kDataFormat, fmt::format("{}: a stored record is malformed ({})", path, e.what()));
    }
  }
  if (!any)
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("{}: no {}; `trainscope history --db {}` lists the matrix ids (m<N>) and run ids (<N>)",
                            path, what, path));
  return in;
}

}  // namespace

ReportInput HistoryDb::load_matrix(int64_t matrix_id) const {
  return load_where(impl_->db, path_, "r.matrix_id = ?", matrix_id, fmt::format("matrix with id m{}", matrix_id));
}
ReportInput HistoryDb::load_run(int64_t run_row_id) const {
  return load_where(impl_->db, path_, "r.id = ?", run_row_id, fmt::format("run with id {}", run_row_id));
}

}  // namespace trainscope

// ---- generation (`trainscope infer` on a language model)

namespace trainscope {

namespace {

bool has_table(sqlite3* db, const std::string& path, const char* table) {
  Stmt s(db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?", path);
  s.bind(1, std::string(table));
  return s.step() && s.i64(0) > 0;
}

void insert_tests(sqlite3* db, const std::string& path, int64_t session, const InferenceRun& r, const std::string& dtype) {
  const auto& g = *r.inference->generation;
  for (const auto& t : g.tests) {
    Stmt s(db,
           "INSERT INTO generation_tests(session_id, device, model, dtype, execution, test, batch, n_prompt, n_gen, "
           "n_depth, repetitions, tokens_per_s_mean, tokens_per_s_stddev, joules_per_token, error, intra_op_threads) "
           "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
           path);
    s.bind(1, session).bind(2, r.device).bind(3, r.model).bind(4, dtype).bind(5, g.execution).bind(6, t.test);
    s.bind(7, t.batch).bind(8, t.n_prompt).bind(9, t.n_gen).bind(10, t.n_depth).bind(11, t.repetitions);
    s.bind(12, t.tokens_per_s_mean).bind(13, t.tokens_per_s_stddev).bind(14, t.joules_per_token);
    s.bind(15, t.error_kind.empty() ? t.error : t.error_kind).bind(16, r.inference->intra_op_threads);
    s.step();
  }
}

void insert_server(sqlite3* db, const std::string& path, int64_t session, const InferenceRun& r, const std::string& dtype) {
  const auto& g = *r.inference->generation;
  if (!g.server) return;
  for (const auto& x : g.server->runs) {
    Stmt s(db,
           "INSERT INTO generation_server(session_id, device, model, dtype, execution, rate_per_s, requests_issued, "
           "requests_served, ttft_p50_ms, ttft_p99_ms, tpot_p50_ms, tpot_p99_ms, goodput_per_s, slo_attainment_pct, "
           "batching, max_batch, lengths, intra_op_threads) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
           path);
    s.bind(1, session).bind(2, r.device).bind(3, r.model).bind(4, dtype).bind(5, g.execution);
    s.bind(6, std::optional<double>(x.rate_per_s)).bind(7, x.requests_issued).bind(8, x.requests_served);
    s.bind(9, x.ttft.p50_ms).bind(10, x.ttft.p99_ms).bind(11, x.tpot.p50_ms).bind(12, x.tpot.p99_ms);
    s.bind(13, x.goodput_per_s).bind(14, x.slo_attainment_pct);
    // Records written before these fields served fcfs, batch 1, fixed lengths (GenerationServerRun).
    s.bind(15, x.batching.empty() ? std::string("fcfs") : x.batching).bind(16, x.max_batch);
    s.bind(17, x.lengths.empty() ? std::string("fixed") : x.lengths).bind(18, r.inference->intra_op_threads);
    s.step();
  }
}

}  // namespace

std::optional<int64_t> HistoryDb::find_generation_session(const Provenance& p) const {
  if (p.date_utc.empty() || !has_table(impl_->db, path_, "generation_sessions")) return std::nullopt;
  Stmt q(impl_->db, "SELECT id FROM generation_sessions WHERE host=? AND started_utc=?", path_);
  q.bind(1, p.host).bind(2, p.date_utc);
  if (q.step()) return q.i64(0);
  return std::nullopt;
}

int64_t HistoryDb::begin_generation(const std::string& run_dir, const Provenance& p) {
  if (auto id = find_generation_session(p)) return *id;
  const std::string started = p.date_utc.empty() ? utc_timestamp() : p.date_utc;
  Stmt ins(impl_->db,
           "INSERT INTO generation_sessions(run_dir, started_utc, host, git_commit, command_line, provenance_json) "
           "VALUES(?,?,?,?,?,?)",
           path_);
  ins.bind(1, run_dir).bind(2, started).bind(3, p.host).bind(4, p.git_commit).bind(5, p.command_line);
  ins.bind(6, to_json(p).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  ins.step();
  return sqlite3_last_insert_rowid(impl_->db);
}

bool HistoryDb::record_generation_run(int64_t session_id, const InferenceRun& r, const std::string& dtype) {
  if (r.failed() || !r.inference || !r.inference->generation) return false;
  exec(impl_->db, "BEGIN IMMEDIATE", path_);
  try {
    // The same measurement recorded again (an import of a folder already recorded) replaces its rows.
    for (const char* table : {"generation_tests", "generation_server"}) {
      const std::string sql =
          fmt::format("DELETE FROM {} WHERE session_id=? AND device=? AND model=? AND dtype=? AND execution=?", table);
      Stmt d(impl_->db, sql.c_str(), path_);
      d.bind(1, session_id).bind(2, r.device).bind(3, r.model).bind(4, dtype).bind(5, r.inference->generation->execution);
      d.step();
    }
    insert_tests(impl_->db, path_, session_id, r, dtype);
    insert_server(impl_->db, path_, session_id, r, dtype);
    exec(impl_->db, "COMMIT", path_);
  } catch (...) {
    sqlite3_exec(impl_->db, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return true;
}

size_t HistoryDb::record_generation(const InferenceDocument& d, const std::string& run_dir) {
  const int64_t session = begin_generation(run_dir, d.provenance);
  size_t n = 0;
  for (const auto& r : d.runs) n += record_generation_run(session, r, generation_dtype(r, d.provenance));
  return n;
}

namespace {

// A column of a generation table, or NULL in a version 3 database opened read-only (no version-4 columns).
std::string column(sqlite3* db, const std::string& path, const char* table, const char* name) {
  Stmt s(db, "SELECT count(*) FROM pragma_table_info(?) WHERE name=?", path);
  s.bind(1, std::string(table)).bind(2, std::string(name));
  return s.step() && s.i64(0) > 0 ? fmt::format("t.{}", name) : "NULL";
}

// The rows of a generation table with their session, newest first (limit 0 = all): the fields
// both row types share (columns 0-8), then `read` fills the table's own from column 9 on, in the
// order of `columns`. A version-2 database opened read-only has no such table: no rows.
template <class Row, class Read>
std::vector<Row> list_generation(sqlite3* db, const std::string& path, const char* table, const std::string& columns,
                                 size_t limit, Read read) {
  std::vector<Row> out;
  if (!has_table(db, path, table)) return out;
  std::string sql = fmt::format(
      "SELECT t.id, t.session_id, g.started_utc, g.host, g.run_dir, t.device, t.model, t.dtype, t.execution, {} "
      "FROM {} t JOIN generation_sessions g ON g.id = t.session_id ORDER BY t.id DESC",
      columns, table);
  if (limit > 0) sql += fmt::format(" LIMIT {}", limit);
  Stmt s(db, sql.c_str(), path);
  while (s.step()) {
    Row r;
    r.id = s.i64(0), r.session_id = s.i64(1);
    r.started_utc = s.text(2), r.host = s.text(3), r.run_dir = s.text(4);
    r.device = s.text(5), r.model = s.text(6), r.dtype = s.text(7), r.execution = s.text(8);
    read(s, r);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

std::vector<GenerationTestRow> HistoryDb::list_generation_tests(size_t limit) const {
  const std::string columns =
      "t.test, t.batch, t.repetitions, t.tokens_per_s_mean, t.tokens_per_s_stddev, t.joules_per_token, t.error, " +
      column(impl_->db, path_, "generation_tests", "intra_op_threads");
  return list_generation<GenerationTestRow>(impl_->db, path_, "generation_tests", columns, limit,
                                            [](const Stmt& s, GenerationTestRow& r) {
                                              r.test = s.text(9), r.batch = s.i64(10), r.repetitions = s.i64(11);
                                              r.tokens_per_s_mean = s.dbl(12), r.tokens_per_s_stddev = s.dbl(13);
                                              r.joules_per_token = s.dbl(14), r.error = s.text(15);
                                              r.intra_op_threads = s.opt_i64(16);
                                            });
}

std::vector<GenerationServerRow> HistoryDb::list_generation_server(size_t limit) const {
  std::string columns =
      "t.rate_per_s, t.requests_issued, t.requests_served, t.ttft_p50_ms, t.ttft_p99_ms, t.tpot_p50_ms, "
      "t.tpot_p99_ms, t.goodput_per_s, t.slo_attainment_pct";
  for (const char* c : {"batching", "max_batch", "lengths", "intra_op_threads"})
    columns += ", " + column(impl_->db, path_, "generation_server", c);
  return list_generation<GenerationServerRow>(
      impl_->db, path_, "generation_server", columns, limit, [](const Stmt& s, GenerationServerRow& r) {
        r.rate_per_s = s.dbl(9).value_or(0), r.requests_issued = s.i64(10), r.requests_served = s.i64(11);
        r.ttft_p50_ms = s.dbl(12), r.ttft_p99_ms = s.dbl(13), r.tpot_p50_ms = s.dbl(14), r.tpot_p99_ms = s.dbl(15);
        r.goodput_per_s = s.dbl(16), r.slo_attainment_pct = s.dbl(17);
        r.batching = s.text(18), r.max_batch = s.opt_i64(19), r.lengths = s.text(20), r.intra_op_threads = s.opt_i64(21);
      });
}

}  // namespace trainscope

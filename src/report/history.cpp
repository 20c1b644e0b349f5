// Run history in SQLite (schema in trainscope/history.h) and the comparison of two run sets.
#include "trainscope/history.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <set>

#include "report/report_util.h"
#include "results/record_json.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"

namespace trainscope {

using nlohmann::json;
using namespace report_detail;

namespace {

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

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
  run_dir TEXT UNIQUE NOT NULL,
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
)SQL";

}  // namespace

HistoryDb::HistoryDb(const std::string& path) : path_(path) {
  auto slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0) ensure_writable_dir(path.substr(0, slash));
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) !=
      SQLITE_OK) {
    std::string m = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw_error(ErrorKind::kIo, fmt::format("{}: cannot open the history database: {}", path, m));
  }
  try {
    sqlite3_busy_timeout(db_, 5000);  // another trainscope may be writing
    int version = 0;
    {
      Stmt s(db_, "PRAGMA user_version", path_);
      if (s.step()) version = static_cast<int>(s.i64(0));
    }
    if (version > kHistorySchemaVersion)
      throw_error(ErrorKind::kIo, fmt::format("{}: history schema version {} is newer than this trainscope's ({}); "
                                              "use a newer trainscope or another --db",
                                              path, version, kHistorySchemaVersion));
    // WAL: readers (history, compare) never block the writer; each run is its own transaction,
    // so a killed process loses at most the statement in flight.
    exec(db_, "PRAGMA journal_mode=WAL", path_);
    exec(db_, "PRAGMA synchronous=NORMAL", path_);
    exec(db_, "PRAGMA foreign_keys=ON", path_);
    if (version == 0) {
      exec(db_, "BEGIN IMMEDIATE", path_);
      try {
        // A non-empty database without our version is someone else's file.
        Stmt t(db_, "SELECT count(*) FROM sqlite_master WHERE name NOT IN ('matrices','runs','runs_by_cell')", path_);
        if (t.step() && t.i64(0) > 0)
          throw_error(ErrorKind::kIo, fmt::format("{}: not a trainscope history database (it has other tables); "
                                                  "pass another --db",
                                                  path));
        exec(db_, kSchema, path_);
        exec(db_, fmt::format("PRAGMA user_version={}", kHistorySchemaVersion).c_str(), path_);
        exec(db_, "COMMIT", path_);
      } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
      }
    }
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

HistoryDb::~HistoryDb() {
  if (db_) sqlite3_close(db_);
}

int64_t HistoryDb::begin_matrix(const std::string& run_dir, const Provenance& p) {
  Stmt ins(db_,
           "INSERT INTO matrices(run_dir, started_utc, host, git_commit, command_line, provenance_json) "
           "VALUES(?,?,?,?,?,?) ON CONFLICT(run_dir) DO UPDATE SET provenance_json=excluded.provenance_json",
           path_);
  ins.bind(1, run_dir)
      .bind(2, p.date_utc.empty() ? now_utc() : p.date_utc)
      .bind(3, p.host)
      .bind(4, p.git_commit)
      .bind(5, p.command_line)
      .bind(6, to_json(p).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  ins.step();
  auto id = matrix_id_for_dir(run_dir);
  TS_CHECK(id.has_value(), "matrix row missing right after insert");
  return *id;
}

std::optional<int64_t> HistoryDb::matrix_id_for_dir(const std::string& run_dir) const {
  Stmt s(db_, "SELECT id FROM matrices WHERE run_dir=?", path_);
  s.bind(1, run_dir);
  if (s.step()) return s.i64(0);
  return std::nullopt;
}

int64_t HistoryDb::run_started(int64_t matrix_id, const RunRecord& r) {
  RunRecord open = r;
  open.status = RunStatus::kRunning;
  Stmt s(db_,
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
      .bind(9, now_utc())
      .bind(10, to_json(open).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  s.step();
  Stmt q(db_, "SELECT id FROM runs WHERE matrix_id=? AND run_id=?", path_);
  q.bind(1, matrix_id).bind(2, r.run_id);
  TS_CHECK(q.step(), "run row missing right after insert");
  return q.i64(0);
}

void HistoryDb::run_finished(int64_t matrix_id, const RunRecord& r) {
  {
    // Make sure the row exists (a run whose start was not seen) without moving its start time.
    Stmt q(db_, "SELECT id FROM runs WHERE matrix_id=? AND run_id=?", path_);
    q.bind(1, matrix_id).bind(2, r.run_id);
    if (!q.step()) run_started(matrix_id, r);
  }
  Stmt s(db_,
         "UPDATE runs SET status=?, finished_utc=?, steady_samples_per_s=?, test_accuracy_pct=?, record_json=? "
         "WHERE matrix_id=? AND run_id=?",
         path_);
  s.bind(1, to_string(r.status))
      .bind(2, now_utc())
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
      "r.pid, r.started_utc, r.finished_utc, m.git_commit, r.steady_samples_per_s, r.test_accuracy_pct "
      "FROM runs r JOIN matrices m ON m.id = r.matrix_id ORDER BY r.id DESC";
  if (limit > 0) sql += fmt::format(" LIMIT {}", limit);
  Stmt s(db_, sql.c_str(), path_);
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
    out.push_back(h);
  }
  return out;
}

namespace {

ReportInput load_where(sqlite3* db, const std::string& path, const char* where, int64_t id) {
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
  if (!any) throw_error(ErrorKind::kInvalidArgument, fmt::format("{}: no runs with id {} (see `trainscope history`)", path, id));
  return in;
}

}  // namespace

ReportInput HistoryDb::load_matrix(int64_t matrix_id) const { return load_where(db_, path_, "r.matrix_id = ?", matrix_id); }
ReportInput HistoryDb::load_run(int64_t run_row_id) const { return load_where(db_, path_, "r.id = ?", run_row_id); }

// ---------------------------------------------------------------- observer

// The database is opened when the matrix starts, not here: a command refused for bad input
// (exit 2, nothing trained) must not leave a history.sqlite behind.
HistoryObserver::HistoryObserver(std::string db_path, MatrixObserver* next) : path_(std::move(db_path)), next_(next) {}
HistoryObserver::~HistoryObserver() = default;

void HistoryObserver::fail(const std::string& what) {
  db_.reset();
  if (next_) next_->on_notice(fmt::format("run history disabled: {}", what));
}

void HistoryObserver::on_matrix_start(const std::string& run_dir, const Provenance& p, size_t planned) {
  try {
    if (!db_) db_ = std::make_unique<HistoryDb>(path_);
    matrix_id_ = db_->begin_matrix(run_dir, p);
  } catch (const Error& e) {
    fail(e.what());
  }
  if (next_) next_->on_matrix_start(run_dir, p, planned);
}
void HistoryObserver::on_run_start(const RunRecord& r) {
  if (db_ && matrix_id_) try {
      db_->run_started(matrix_id_, r);
    } catch (const Error& e) {
      fail(e.what());
    }
  if (next_) next_->on_run_start(r);
}
void HistoryObserver::on_run_end(const RunRecord& r) {
  if (db_ && matrix_id_) try {
      db_->run_finished(matrix_id_, r);
    } catch (const Error& e) {
      fail(e.what());
    }
  if (next_) next_->on_run_end(r);
}
namespace {
template <class O>
void forward_skipped(O* o, const RunRecord& r) {
  if constexpr (requires { o->on_run_skipped(r); }) {
    if (o) o->on_run_skipped(r);
  }
}
}  // namespace
void HistoryObserver::on_run_skipped(const RunRecord& r) { forward_skipped(next_, r); }
void HistoryObserver::on_notice(const std::string& m) {
  if (next_) next_->on_notice(m);
}

ReportInput resolve_runs(const std::string& ref, const std::string& db_path) {
  if (file_exists(ref + "/results.json")) return load_run_folder(ref);
  auto digits = [](const std::string& s) { return !s.empty() && std::all_of(s.begin(), s.end(), ::isdigit); };
  bool matrix = ref.size() > 1 && (ref[0] == 'm' || ref[0] == 'M') && digits(ref.substr(1));
  if (!matrix && !digits(ref)) {
    if (file_exists(db_path)) {
      HistoryDb db(db_path);
      std::string dir = ref;
      while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
      if (auto id = db.matrix_id_for_dir(dir)) return db.load_matrix(*id);
    }
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("'{}' is neither a run folder with results.json, nor m<N> (a matrix id) or <N> (a run id) "
                            "from `trainscope history --db {}`",
                            ref, db_path));
  }
  if (!file_exists(db_path))
    throw_error(ErrorKind::kIo, fmt::format("{}: no history database; pass --db PATH or a run folder", db_path));
  HistoryDb db(db_path);
  int64_t id = 0;
  try {
    id = std::stoll(matrix ? ref.substr(1) : ref);
  } catch (const std::exception&) {
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("'{}' is not a valid id: ids are m<N> (a matrix) or <N> (a run) as listed by "
                            "`trainscope history --db {}`",
                            ref, db_path));
  }
  return matrix ? db.load_matrix(id) : db.load_run(id);
}

// ---------------------------------------------------------------- compare

const std::vector<MetricInfo>& compare_metrics() {
  static const std::vector<MetricInfo> m = {
      {"steady_samples_per_s", true},   {"mean_epoch_time_s", false},        {"time_for_requested_epochs_s", false},
      {"test_accuracy_pct", true},      {"train_time_s", false},             {"peak_rss_bytes", false},
      {"device_peak_allocated_bytes", false}, {"device_peak_reserved_bytes", false}, {"energy_j", false},
      {"joules_per_sample", false},     {"power_w_mean", false},             {"util_pct_mean", true},
      {"sm_activity_pct_mean", true},   {"inference_p50_ms", false},         {"inference_p99_ms", false},
      {"inference_samples_per_s", true},
  };
  return m;
}

std::optional<double> metric_value(const RunRecord& r, const std::string& m) {
  if (const RunMetric* x = find_run_metric(m)) return x->value(r);  // trainscope/record_sections.h
  std::string names;
  for (const auto& x : compare_metrics()) names += (names.empty() ? "" : ", ") + x.name;
  throw_error(ErrorKind::kInvalidArgument, fmt::format("unknown metric '{}'; one of: {}", m, names));
}

CompareResult compare_runs(const std::vector<RunRecord>& a, const std::vector<RunRecord>& b, const std::string& metric,
                           double threshold_pct) {
  CompareResult res;
  res.metric = metric;
  res.threshold_pct = threshold_pct;
  if (!(threshold_pct >= 0))
    throw_error(ErrorKind::kInvalidArgument, fmt::format("--threshold-pct {} must be >= 0", threshold_pct));
  bool known = false;
  for (const auto& m : compare_metrics())
    if (m.name == metric) {
      known = true;
      res.higher_is_better = m.higher_is_better;
    }
  if (!known) metric_value(RunRecord{}, metric);  // throws with the list of names
  using Key = std::tuple<std::string, std::string, int64_t>;
  std::map<Key, std::vector<double>> va, vb;
  std::vector<Key> order;
  auto collect = [&](const std::vector<RunRecord>& runs, std::map<Key, std::vector<double>>& out) {
    for (const auto& r : runs) {
      if (r.status != RunStatus::kOk) continue;
      Key k{r.model, r.device, r.batch_size};
      if (!out.count(k) && std::find(order.begin(), order.end(), k) == order.end()) order.push_back(k);
      auto& v = out[k];
      if (auto x = metric_value(r, metric)) v.push_back(*x);
    }
  };
  collect(a, va);
  collect(b, vb);
  auto distinct = [](const std::vector<RunRecord>& runs, auto field) {
    std::set<std::string> s;
    for (const auto& r : runs)
      if (r.status == RunStatus::kOk) s.insert(field(r));
    return s;
  };
  auto ds = [](const RunRecord& r) { return r.dataset.empty() ? std::string("?") : r.dataset; };
  auto da = distinct(a, ds), db = distinct(b, ds);
  if (!da.empty() && !db.empty() && da != db)
    res.warnings.push_back(fmt::format("the sides trained on different data sets (A: {}; B: {}): the figures are not "
                                       "comparable", fmt::join(da, ", "), fmt::join(db, ", ")));
  auto stop = [](const RunRecord& r) { return r.stop_reason.empty() ? std::string("complete") : r.stop_reason; };
  // Only cells on both sides matter here: a cell listed as "only in A/B" is not compared.
  auto both = [&](const std::vector<RunRecord>& runs) {
    std::vector<RunRecord> out;
    for (const auto& r : runs)
      if (va.count(Key{r.model, r.device, r.batch_size}) && vb.count(Key{r.model, r.device, r.batch_size})) out.push_back(r);
    return out;
  };
  auto sa = distinct(both(a), stop), sb = distinct(both(b), stop);
  if (!sa.empty() && !sb.empty() && sa != sb)
    res.warnings.push_back(fmt::format("the sides' runs ended differently (A: {}; B: {}): steady samples/s compare, "
                                       "but times and accuracy do not", fmt::join(sa, ", "), fmt::join(sb, ", ")));
  std::sort(order.begin(), order.end());
  for (const auto& k : order) {
    auto [model, device, batch] = k;
    std::string name = fmt::format("{} {} b{}", device, model, batch);
    if (!vb.count(k)) {
      res.only_in_a.push_back(name);
      continue;
    }
    if (!va.count(k)) {
      res.only_in_b.push_back(name);
      continue;
    }
    CompareRow row;
    row.device = device;
    row.model = model;
    row.batch_size = batch;
    row.a = make_stat(va[k]);
    row.b = make_stat(vb[k]);
    if (row.a.ok() && row.b.ok() && row.a.median != 0) {
      row.delta_pct = (row.b.median - row.a.median) / std::fabs(row.a.median) * 100;
      row.noise = within_noise(row.a, row.b);
      double better = res.higher_is_better ? *row.delta_pct : -*row.delta_pct;
      row.regression = !row.noise && better < -threshold_pct;
      row.improvement = !row.noise && better > threshold_pct;
      if (row.regression) res.regressed = true;
    }
    res.rows.push_back(row);
  }
  return res;
}

std::string render_compare(const CompareResult& c, const std::string& la, const std::string& lb) {
  std::string s = fmt::format("metric {} ({} is better), threshold {} %\nA = {}\nB = {}\n\n", c.metric,
                              c.higher_is_better ? "higher" : "lower", fmt_num(c.threshold_pct), la, lb);
  s += fmt::format("{:<10} {:<12} {:>6}  {:>26}  {:>26}  {:>9}  {}\n", "device", "model", "batch", "A median (±, n)",
                   "B median (±, n)", "delta", "verdict");
  for (const auto& r : c.rows) {
    std::string verdict = !r.delta_pct        ? "not measured"
                          : r.regression      ? "REGRESSION"
                          : r.noise           ? "noise"
                          : r.improvement     ? "improvement"
                                              : "within threshold";
    s += fmt::format("{:<10} {:<12} {:>6}  {:>26}  {:>26}  {:>9}  {}\n", r.device, r.model, r.batch_size,
                     fmt_stat(r.a, ""), fmt_stat(r.b, ""),
                     r.delta_pct ? fmt::format("{}{}%", *r.delta_pct >= 0 ? "+" : "", fmt_num(*r.delta_pct)) : "—",
                     verdict);
  }
  for (const auto& x : c.only_in_a) s += "only in A (no ok run of this cell in B): " + x + "\n";
  for (const auto& x : c.only_in_b) s += "only in B (no ok run of this cell in A): " + x + "\n";
  for (const auto& w : c.warnings) s += "warning: " + w + "\n";
  if (c.rows.empty()) return s + "no cell (device, model, batch size) is in both A and B: nothing was compared\n";
  s += c.regressed ? fmt::format("\nregression: {} got worse by more than {} % beyond the noise\n", c.metric,
                                 fmt_num(c.threshold_pct))
                   : "\nno regression\n";
  return s;
}

}  // namespace trainscope

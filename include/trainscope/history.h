// Run history: every run of every `trainscope run` in one SQLite database, and the comparison of
// two sets of runs that gates a CI job on a regression.
//
// Database (schema version kHistorySchemaVersion in PRAGMA user_version; WAL journal):
//   matrices(id, run_dir UNIQUE, started_utc, host, git_commit, command_line, provenance_json)
//   runs(id, matrix_id, run_id, device, model, batch_size, repeat, status, host, pid,
//        started_utc, finished_utc, steady_samples_per_s, test_accuracy_pct, record_json)
// A run is inserted with status "running" when it starts and updated when it ends, each in its own
// transaction, so a process killed mid-run leaves its finished runs intact and the open one with
// status "running"; readers show such a row as "incomplete" when its process is gone.
//
// Errors: a database that cannot be opened/created, has a newer schema, or is not a trainscope
// database throws Error(kIo) naming the path. Lookups of unknown ids throw Error(kInvalidArgument).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/provenance.h"
#include "trainscope/report.h"
#include "trainscope/run_record.h"
#include "trainscope/runner.h"

struct sqlite3;

namespace trainscope {

inline constexpr int kHistorySchemaVersion = 1;

struct HistoryRow {
  int64_t id = 0, matrix_id = 0;
  std::string run_dir, run_id, device, model;
  int64_t batch_size = 0, repeat = 0;
  std::string status;        // "ok", "failed", "interrupted", "running", "incomplete"
  std::string started_utc, finished_utc, git_commit;
  std::optional<double> steady_samples_per_s, test_accuracy_pct;
};

class HistoryDb {
 public:
  explicit HistoryDb(const std::string& path);  // creates the file and schema when absent
  ~HistoryDb();
  HistoryDb(const HistoryDb&) = delete;
  HistoryDb& operator=(const HistoryDb&) = delete;

  const std::string& path() const { return path_; }
  /// Registers a matrix (idempotent per run_dir); returns its id.
  int64_t begin_matrix(const std::string& run_dir, const Provenance& p);
  /// Inserts the run as "running" (or replaces an earlier row of the same matrix and run_id).
  int64_t run_started(int64_t matrix_id, const RunRecord& r);
  /// Stores the final record and status.
  void run_finished(int64_t matrix_id, const RunRecord& r);

  /// Newest first; limit 0 = all.
  std::vector<HistoryRow> list(size_t limit = 0) const;
  /// Runs of one matrix (by id) / one run row; with their records and the matrix provenance.
  ReportInput load_matrix(int64_t matrix_id) const;
  ReportInput load_run(int64_t run_row_id) const;
  std::optional<int64_t> matrix_id_for_dir(const std::string& run_dir) const;

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

/// MatrixObserver that records every run in the database and forwards to `next` (may be null).
/// A database error is reported once through next->on_notice and history stops; the matrix goes on.
class HistoryObserver final : public MatrixObserver {
 public:
  HistoryObserver(std::string db_path, MatrixObserver* next);
  ~HistoryObserver() override;
  void on_matrix_start(const std::string& run_dir, const Provenance& p, size_t planned_runs) override;
  void on_run_start(const RunRecord& r) override;
  void on_run_end(const RunRecord& r) override;
  void on_notice(const std::string& message) override;
  // Forwarded only (a resumed run keeps its earlier row).
  void on_run_skipped(const RunRecord& r) override;
  bool ok() const { return db_ != nullptr; }

 private:
  void fail(const std::string& what);
  std::string path_;
  MatrixObserver* next_;
  std::unique_ptr<HistoryDb> db_;
  int64_t matrix_id_ = 0;
};

/// Resolves a command-line reference to runs: a run folder (results.json, else the database row
/// for that folder), "m<N>" (a matrix id from `history`) or "<N>" (one run row).
ReportInput resolve_runs(const std::string& ref, const std::string& db_path);

// ---- compare ----

struct MetricInfo {
  std::string name;            // "steady_samples_per_s", "mean_epoch_time_s", ...
  bool higher_is_better = true;
};
/// Known metrics; unknown names throw Error(kInvalidArgument) listing these.
const std::vector<MetricInfo>& compare_metrics();
/// Value of a metric in a record (nullopt: not measured).
std::optional<double> metric_value(const RunRecord& r, const std::string& metric);

struct CompareRow {
  std::string device, model;
  int64_t batch_size = 0;
  Stat a, b;
  std::optional<double> delta_pct;   // (b - a) / a * 100
  bool noise = false;                // inside the combined spread of a and b
  bool regression = false;           // worse beyond threshold and not noise
  bool improvement = false;
};
struct CompareResult {
  std::string metric;
  bool higher_is_better = true;
  double threshold_pct = 5;
  std::vector<CompareRow> rows;      // cells present on both sides
  std::vector<std::string> only_in_a, only_in_b;
  bool regressed = false;            // any row is a regression
  /// Differences between the two sides that make the comparison questionable (data set,
  /// complete vs stopped runs); printed as warnings, they do not change the verdict.
  std::vector<std::string> warnings;
};
/// Pairs cells by (device, model, batch size) and compares the median of `metric` over repeats.
/// A row regressed when B is worse than A by more than threshold_pct and the difference is not noise.
CompareResult compare_runs(const std::vector<RunRecord>& a, const std::vector<RunRecord>& b,
                           const std::string& metric = "steady_samples_per_s", double threshold_pct = 5);
std::string render_compare(const CompareResult& c, const std::string& label_a, const std::string& label_b);

}  // namespace trainscope

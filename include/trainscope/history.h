// Run history: every run of every `trainscope run` in one SQLite database (the comparison of two
// sets of runs is in trainscope/compare.h).
//
// Database (schema version kHistorySchemaVersion in PRAGMA user_version; WAL journal):
//   matrices(id, run_dir, started_utc, host, git_commit, command_line, provenance_json)
//     one row per session of a matrix: `run --resume` of a folder gets a new id, so the runs
//     measured by each session stay apart (a version-1 database, where run_dir was UNIQUE, is
//     migrated when opened).
//   runs(id, matrix_id, run_id, device, model, batch_size, repeat, status, host, pid,
//        started_utc, finished_utc, steady_samples_per_s, test_accuracy_pct, record_json)
//   generation_sessions(id, run_dir, started_utc, host, git_commit, command_line, provenance_json)
//     one row per `trainscope infer` invocation that measured a language model's generation
//     (UNIQUE host and date: recording it again, or importing its folder, adds nothing);
//   generation_tests(id, session_id, device, model, dtype, execution, test, batch, n_prompt,
//        n_gen, n_depth, repetitions, tokens_per_s_mean, tokens_per_s_stddev, joules_per_token,
//        error, intra_op_threads)                      one row per pp/tg test;
//   generation_server(id, session_id, device, model, dtype, execution, rate_per_s,
//        requests_issued, requests_served, ttft_p50_ms, ttft_p99_ms, tpot_p50_ms, tpot_p99_ms,
//        goodput_per_s, slo_attainment_pct, batching, max_batch, lengths, intra_op_threads)
//                                                      one row per server rate
//     (version 3; a version 1 or 2 database gets these tables when opened for writing, and a
//     version 2 one opened read-only lists no generation rows). Version 4 adds how each row was
//     measured: intra_op_threads (both tables), and the server's batching ("fcfs" |
//     "continuous"), max_batch (slots; 1 for fcfs) and lengths (request lengths: "fixed" |
//     "text"), trainscope/generation_section.h GenerationServerRun. A version 3 database gets the
//     columns (ALTER TABLE ADD COLUMN, NULL in its old rows, listed as "—") when opened for
//     writing; opened read-only it is listed as it is.
// Paths: `history import DIR` stores DIR absolute and canonical (std::filesystem::canonical),
// so the same folder imported from two working directories is one folder.
// A run is inserted with status "running" when it starts and updated when it ends, each in its own
// transaction, so a process killed mid-run leaves its finished runs intact and the open one with
// status "running"; readers show such a row as "incomplete" when its process is gone.
//
// Errors: a database that cannot be opened/created, has a newer schema, or is not a trainscope
// database throws Error(kIo) naming the path. Lookups of unknown ids throw Error(kInvalidArgument).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/provenance.h"
#include "trainscope/report.h"
#include "trainscope/run_record.h"
#include "trainscope/reporter.h"

namespace trainscope {

inline constexpr int kHistorySchemaVersion = 4;

struct HistoryRow {
  int64_t id = 0, matrix_id = 0;
  std::string run_dir, run_id, device, model;
  /// Part of the workload (trainscope/report.h model_label), read from record_json.
  std::string variant = "eager";
  int64_t world_size = 1;
  int64_t batch_size = 0, repeat = 0;
  std::string status;        // "ok", "failed", "interrupted", "running", "incomplete"
  std::string started_utc, finished_utc, git_commit;
  std::optional<double> steady_samples_per_s, test_accuracy_pct;
};

/// One pp/tg test of `trainscope infer` on a language model (docs/generation.md); dtype as
/// trainscope/inference_run.h generation_dtype, execution as Decoder::execution().
struct GenerationTestRow {
  int64_t id = 0, session_id = 0;
  std::string started_utc, host, run_dir, device, model, dtype, execution, test;
  std::string error;  // the test failed: its error kind or message
  int64_t batch = 1, repetitions = 0;
  std::optional<int64_t> intra_op_threads;  // absent in rows of a version 3 database
  std::optional<double> tokens_per_s_mean, tokens_per_s_stddev, joules_per_token;
};
/// One server rate of `trainscope infer` on a language model (ms; requests/s).
struct GenerationServerRow {
  int64_t id = 0, session_id = 0;
  std::string started_utc, host, run_dir, device, model, dtype, execution;
  double rate_per_s = 0;
  int64_t requests_issued = 0, requests_served = 0;
  /// How it was served (GenerationServerRun); "" / absent in rows of a version 3 database.
  std::string batching, lengths;
  std::optional<int64_t> max_batch, intra_op_threads;
  std::optional<double> ttft_p50_ms, ttft_p99_ms, tpot_p50_ms, tpot_p99_ms, goodput_per_s, slo_attainment_pct;
};

class HistoryDb {
 public:
  /// What the opener does with the database: kWrite creates the file and schema when absent
  /// and migrates an older schema (its folder must be writable); kRead (history, compare,
  /// report) opens it that way where it can, else read-only, so a database on a read-only or
  /// full file system can still be listed and reported on. Error(kIo) naming the path.
  enum class Access { kWrite, kRead };
  explicit HistoryDb(const std::string& path, Access access = Access::kWrite);
  ~HistoryDb();
  HistoryDb(const HistoryDb&) = delete;
  HistoryDb& operator=(const HistoryDb&) = delete;

  const std::string& path() const { return path_; }
  /// Registers one session of the matrix in `run_dir` (a new id every call); returns its id.
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
  /// `trainscope history import DIR`: the runs of a run folder, possibly made on another host,
  /// as one matrix with the folder's provenance (its host and date). Idempotent: a matrix with
  /// the same provenance host and date is already there (imported, or recorded by the run
  /// itself) and nothing is added. Returns the matrix id and whether it was added.
  struct Imported {
    int64_t matrix_id = 0;
    bool added = false;
    size_t runs = 0;
  };
  Imported import_runs(const ReportInput& in);
  /// Generation (`trainscope infer`): the session of one invocation (the existing one for the same
  /// provenance host and date), then each finished measurement's tests and server rates in one
  /// transaction (a measurement recorded again replaces its rows). A run that failed or holds no
  /// generation section records nothing (false). record_generation: a whole inference.json
  /// (`history import`); returns the measurements recorded.
  int64_t begin_generation(const std::string& run_dir, const Provenance& p);
  /// The session recorded for the invocation of `p` (its host and date), if any.
  std::optional<int64_t> find_generation_session(const Provenance& p) const;
  bool record_generation_run(int64_t session_id, const InferenceRun& r, const std::string& dtype);
  size_t record_generation(const InferenceDocument& d, const std::string& run_dir);
  /// Newest first; limit 0 = all.
  std::vector<GenerationTestRow> list_generation_tests(size_t limit = 0) const;
  std::vector<GenerationServerRow> list_generation_server(size_t limit = 0) const;
  /// The newest matrix id recorded for `run_dir`.
  std::optional<int64_t> matrix_id_for_dir(const std::string& run_dir) const;

 private:
  struct Impl;  // the sqlite3 connection (src/report/history_db.cpp)
  void open_for_writing();
  void open_read_only();
  std::string path_;
  std::unique_ptr<Impl> impl_;
};

/// Reporter (trainscope/reporter.h) that records every run in the database as it starts and
/// ends. The database is opened at start, not at construction: a command refused for bad input
/// leaves no database behind. A database error is reported once through notices->notice (may be
/// null) and history stops; the matrix goes on. Kept runs of --resume are not recorded again.
class HistoryReporter final : public Reporter {
 public:
  HistoryReporter(std::string db_path, Reporter* notices);
  ~HistoryReporter() override;
  void start(const Provenance& p, const std::string& run_dir, size_t planned_runs) override;
  void run_started(const RunRecord& r) override;
  void run_finished(const RunRecord& r) override;

 private:
  /// Runs `op` on the database (opened and with a matrix begun, unless `starting`); an Error
  /// turns the history off for the rest of the matrix, with a notice.
  void guarded(const std::function<void()>& op, bool starting = false);
  std::string path_;
  Reporter* notices_;
  std::unique_ptr<HistoryDb> db_;
  int64_t matrix_id_ = 0;
};

/// `trainscope history import DIR` (src/report/history_import.cpp): the folder's records into the
/// database, each file said once. dir is stored absolute and canonical. results.json: its runs as
/// one matrix (skipped when that matrix is there already); each inference*.json: its generation
/// measurements (skipped with the reason when it holds none: image-inference runs, which the
/// history does not keep, or only failed measurements). Throws Error(kInvalidArgument) naming DIR
/// when it is not a folder or holds neither results.json nor an inference*.json, and the readers'
/// Error(kDataFormat) for a malformed file.
struct HistoryImport {
  std::string dir;                    // canonical
  std::optional<HistoryDb::Imported> matrix;  // results.json's runs, when the folder has one
  size_t generation_measurements = 0;
  std::vector<std::string> imported;  // "results.json: 12 runs as matrix m3", "inference.json: 2 generation measurements"
  std::vector<std::string> skipped;   // "inference-mlp.json: holds image-inference runs only; the history keeps ..."
};
HistoryImport import_folder(HistoryDb& db, const std::string& dir);
/// The lines `history import` prints: what was imported, what was skipped and why, and the totals.
std::string render_history_import(const HistoryImport& imp, const std::string& db_path);

/// Resolves a command-line reference to runs: a run folder (results.json and its inference.json,
/// else the database row for that folder), an inference.json file or a folder holding only one
/// (generation results, no runs), "m<N>" (a matrix id from `history`, with its folder's
/// inference*.json when the folder is still there) or "<N>" (one run row).
ReportInput resolve_runs(const std::string& ref, const std::string& db_path);
/// Throws Error(kDataFormat) when `in` (resolved from `ref`) holds no run, no generation
/// result and no image-inference run: its results.json has an empty "runs" array, or its
/// inference*.json holds only failed measurements (the message says which). The message names the folder and, for a data-parallel folder whose
/// rank 0 wrote no run, the other ranks' own records (ref/ranks/rankN/results.json).
void require_runs(const ReportInput& in, const std::string& ref);

}  // namespace trainscope

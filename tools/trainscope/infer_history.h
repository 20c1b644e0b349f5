// `trainscope infer` on a language model records its generation results in the history database
// (trainscope/history.h: generation_sessions, generation_tests, generation_server), as `run`
// records its runs, so `trainscope history` lists them.
#pragma once

#include <memory>
#include <string>

#include "trainscope/history.h"
#include "trainscope/inference_reporter.h"

namespace trainscope::cli {

/// The database `infer` records in: `db` when given; else, with --run DIR, the one `run` records
/// in by default (DIR/../history.sqlite) when it exists; else "" (no history).
std::string infer_history_db(const std::string& db, const std::string& run_dir);

/// Records each finished generation measurement (its pp/tg tests and server rates) as it
/// finishes. The database is opened at the first one; a database error is one warning on stderr
/// and history stops: inference.json holds every result.
class GenerationHistoryReporter final : public InferenceReporter {
 public:
  GenerationHistoryReporter(std::string db_path, std::string run_dir)
      : path_(std::move(db_path)), run_dir_(std::move(run_dir)) {}
  void start(const Provenance& p) override { provenance_ = p; }
  void measurement_finished(const InferenceRun& r) override;

 private:
  std::string path_, run_dir_;
  Provenance provenance_;
  std::unique_ptr<HistoryDb> db_;
  int64_t session_ = 0;
  bool off_ = false;
};

}  // namespace trainscope::cli

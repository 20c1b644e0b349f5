// `trainscope infer`'s history (tools/trainscope/infer_history.h).
#include "infer_history.h"

#include <fmt/format.h>

#include <filesystem>

#include "trainscope/error.h"
#include "trainscope/fs.h"

namespace trainscope::cli {

std::string infer_history_db(const std::string& db, const std::string& run_dir) {
  if (!db.empty()) return db;
  if (run_dir.empty()) return "";
  std::filesystem::path dir(run_dir);
  while (dir.has_relative_path() && dir.filename().empty()) dir = dir.parent_path();  // "runs/lm/"
  const std::string beside = (dir.parent_path() / "history.sqlite").string();
  return file_exists(beside) ? beside : "";
}

void GenerationHistoryReporter::measurement_finished(const InferenceRun& r) {
  if (off_ || r.failed() || !r.inference || !r.inference->generation) return;
  try {
    if (!db_) {
      db_ = std::make_unique<HistoryDb>(path_);
      session_ = db_->begin_generation(run_dir_, provenance_);
    }
    db_->record_generation_run(session_, r, generation_dtype(r, provenance_));
  } catch (const Error& e) {
    fmt::print(stderr, "trainscope: warning: history not recorded ({}); the results are in inference.json\n", e.what());
    off_ = true;
  }
}

}  // namespace trainscope::cli

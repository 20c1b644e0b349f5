// HistoryReporter: every run of a matrix into the history database (trainscope/history.h).
#include <fmt/format.h>

#include "trainscope/error.h"
#include "trainscope/history.h"

namespace trainscope {

HistoryReporter::HistoryReporter(std::string db_path, Reporter* notices) : path_(std::move(db_path)), notices_(notices) {}
HistoryReporter::~HistoryReporter() = default;

void HistoryReporter::fail(const std::string& what) {
  db_.reset();
  if (notices_) notices_->notice(fmt::format("run history disabled: {}", what));
}

void HistoryReporter::start(const Provenance& p, const std::string& run_dir, size_t /*planned_runs*/) {
  try {
    if (!db_) db_ = std::make_unique<HistoryDb>(path_);
    matrix_id_ = db_->begin_matrix(run_dir, p);
  } catch (const Error& e) {
    fail(e.what());
  }
}

void HistoryReporter::run_started(const RunRecord& r) {
  if (!db_ || !matrix_id_) return;
  try {
    db_->run_started(matrix_id_, r);
  } catch (const Error& e) {
    fail(e.what());
  }
}

void HistoryReporter::run_finished(const RunRecord& r) {
  if (!db_ || !matrix_id_) return;
  try {
    db_->run_finished(matrix_id_, r);
  } catch (const Error& e) {
    fail(e.what());
  }
}

}  // namespace trainscope

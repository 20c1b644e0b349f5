// HistoryReporter: every run of a matrix into the history database (trainscope/history.h).
#include <fmt/format.h>

#include "trainscope/error.h"
#include "trainscope/history.h"

namespace trainscope {

HistoryReporter::HistoryReporter(std::string db_path, Reporter* notices) : path_(std::move(db_path)), notices_(notices) {}
HistoryReporter::~HistoryReporter() = default;

void HistoryReporter::guarded(const std::function<void()>& op, bool starting) {
  if (!starting && (!db_ || !matrix_id_)) return;
  try {
    op();
  } catch (const Error& e) {
    db_.reset();
    if (notices_) notices_->notice(fmt::format("run history disabled: {}", e.what()));
  }
}

void HistoryReporter::start(const Provenance& p, const std::string& run_dir, size_t /*planned_runs*/) {
  guarded(
      [&] {
        if (!db_) db_ = std::make_unique<HistoryDb>(path_);
        matrix_id_ = db_->begin_matrix(run_dir, p);
      },
      /*starting=*/true);
}

void HistoryReporter::run_started(const RunRecord& r) {
  guarded([&] { db_->run_started(matrix_id_, r); });
}

void HistoryReporter::run_finished(const RunRecord& r) {
  guarded([&] { db_->run_finished(matrix_id_, r); });
}

}  // namespace trainscope

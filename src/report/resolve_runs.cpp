// resolve_runs: a command-line reference (run folder, m<N>, <N>) to run records (trainscope/history.h).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/history.h"

namespace trainscope {

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
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("--db '{}': no history database there, so '{}' cannot be looked up; check the path, pass "
                            "the --db that `trainscope run` used, or give a run folder",
                            db_path, ref));
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

}  // namespace trainscope

// resolve_runs: a command-line reference (run folder, m<N>, <N>) to run records (trainscope/history.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "report/report_util.h"
#include "trainscope/compare.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/history.h"

namespace trainscope {

namespace {

// An inference.json (the file, or a folder holding inference*.json without results.json: `infer
// -o`; each file one invocation), as an input of inference results only; its provenance is the
// first `infer` invocation's.
std::optional<ReportInput> inference_only(const std::string& ref) {
  std::error_code ec;
  std::vector<std::string> paths;
  if (std::filesystem::is_regular_file(ref, ec)) paths = {ref};
  else if (std::filesystem::is_directory(ref, ec)) paths = report_detail::inference_files(ref);
  if (paths.empty()) return std::nullopt;
  ReportInput in;
  for (const auto& path : paths) in.inference.push_back(load_inference_document(path));
  in.provenance = in.inference.front().provenance;
  in.run_dir = std::filesystem::path(paths.front()).parent_path().string();
  return in;
}

// The history's matrix of a run folder: by the path as given, else as `history import` stores it
// (absolute and canonical).
std::optional<int64_t> matrix_of_folder(const HistoryDb& db, std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (auto id = db.matrix_id_for_dir(dir)) return id;
  std::error_code ec;
  const auto canon = std::filesystem::weakly_canonical(std::filesystem::absolute(dir, ec), ec);
  if (ec) return std::nullopt;
  return db.matrix_id_for_dir(canon.string());
}

// A matrix from the history: its folder's inference*.json when the folder is still there (the
// database keeps the runs, not the generation results' whole documents).
ReportInput with_folder_inference(ReportInput in) {
  if (!in.run_dir.empty())
    for (const auto& path : report_detail::inference_files(in.run_dir)) in.inference.push_back(load_inference_document(path));
  return in;
}

}  // namespace

ReportInput resolve_runs(const std::string& ref, const std::string& db_path) {
  if (file_exists(ref + "/results.json")) return load_run_folder(ref);
  if (auto in = inference_only(ref)) return *in;
  auto digits = [](const std::string& s) { return !s.empty() && std::all_of(s.begin(), s.end(), ::isdigit); };
  bool matrix = ref.size() > 1 && (ref[0] == 'm' || ref[0] == 'M') && digits(ref.substr(1));
  if (!matrix && !digits(ref)) {
    if (file_exists(db_path)) {
      HistoryDb db(db_path, HistoryDb::Access::kRead);
      if (auto id = matrix_of_folder(db, ref)) return with_folder_inference(db.load_matrix(*id));
    }
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("'{}' is neither a run folder with results.json (or inference.json), an inference.json "
                            "file, nor m<N> (a matrix id) or <N> (a run id) from `trainscope history --db {}`",
                            ref, db_path));
  }
  if (!file_exists(db_path))
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("--db '{}': no history database there, so '{}' cannot be looked up; check the path, pass "
                            "the --db that `trainscope run` used, or give a run folder",
                            db_path, ref));
  HistoryDb db(db_path, HistoryDb::Access::kRead);
  int64_t id = 0;
  try {
    id = std::stoll(matrix ? ref.substr(1) : ref);
  } catch (const std::exception&) {
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("'{}' is not a valid id: ids are m<N> (a matrix) or <N> (a run) as listed by "
                            "`trainscope history --db {}`",
                            ref, db_path));
  }
  return matrix ? with_folder_inference(db.load_matrix(id)) : db.load_run(id);
}

namespace {

// The reason an input of inference documents only holds nothing to report: each document's
// measurements failed ("inference.json: 2 measurements, all failed (cpu: out_of_memory: ...)").
std::string failed_inference(const ReportInput& in) {
  std::vector<std::string> files;
  for (const auto& d : in.inference) {
    std::string first;
    for (const auto& r : d.runs)
      if (first.empty() && r.failed()) first = fmt::format(" ({}: {}: {})", r.device, r.error_kind, r.error);
    files.push_back(fmt::format("{}: {}, none measured{}", d.path.empty() ? "inference.json" : d.path,
                                count_of(static_cast<long long>(d.runs.size()), "measurement"), first));
  }
  return fmt::format("{}", fmt::join(files, "; "));
}

}  // namespace

void require_runs(const ReportInput& in, const std::string& ref) {
  if (!in.runs.empty()) return;
  for (const auto& d : in.inference)
    if (!d.generation_runs().empty()) return;  // a language model's generation results
  if (!inference_records(in.inference).empty()) return;  // an image model's inference runs
  if (!in.inference.empty())
    throw_error(ErrorKind::kDataFormat,
                fmt::format("'{}' holds no measured runs: {}; rerun `trainscope infer` (the error says what failed)",
                            ref, failed_inference(in)));
  // A data-parallel folder whose rank 0 died holds rank N's own records under ranks/rankN/
  // (docs/distributed.md#output); they are not the job's results but say what was measured.
  std::vector<std::string> ranks;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(ref) / "ranks", ec))
    if (file_exists((e.path() / "results.json").string())) ranks.push_back((e.path() / "results.json").string());
  std::sort(ranks.begin(), ranks.end());
  std::string where = in.run_dir.empty() ? ref : in.run_dir;
  throw_error(ErrorKind::kDataFormat,
              ranks.empty()
                  ? fmt::format("'{}' holds no runs (its results.json has an empty \"runs\" array: the matrix ended "
                                "before its first run finished); nothing to report; pass a run folder with measured "
                                "runs, or rerun it",
                                where)
                  : fmt::format("'{}' holds no runs: rank 0 of this data-parallel run wrote none (it ended before its "
                                "first run finished); the other ranks' own records are in {}; rerun the job (its log "
                                "says why rank 0 stopped)",
                                where, fmt::join(ranks, ", ")));
}

}  // namespace trainscope

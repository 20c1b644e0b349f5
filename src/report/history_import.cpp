// `trainscope history import DIR` (trainscope/history.h import_folder): a folder's records into
// the history database, each file imported or skipped with its reason.
#include <fmt/format.h>

#include <filesystem>

#include "common/text.h"
#include "report/report_util.h"
#include "trainscope/compare.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/history.h"

namespace trainscope {

namespace {

std::string file_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }

// results.json's runs as one matrix, or why not.
void import_results(HistoryDb& db, const ReportInput& in, HistoryImport& imp) {
  const std::string where = fmt::format("host {}, started {}", in.provenance.host, in.provenance.date_utc);
  if (in.runs.empty()) {
    imp.skipped.push_back("results.json: holds no runs (its \"runs\" array is empty: the matrix ended before its "
                          "first run finished)");
    return;
  }
  const HistoryDb::Imported res = db.import_runs(in);
  imp.matrix = res;
  if (res.added)
    imp.imported.push_back(fmt::format("{} run(s) from host {} ({}) as matrix m{}, from results.json", res.runs,
                                       in.provenance.host, in.provenance.date_utc, res.matrix_id));
  else
    imp.skipped.push_back(fmt::format("results.json: already in the database as matrix m{} ({}): imported before, or "
                                      "recorded by the run itself; nothing added",
                                      res.matrix_id, where));
}

// Why an inference document adds nothing to the history (it holds no generation result).
std::string nothing_to_record(const InferenceDocument& d) {
  const size_t image = inference_records({d}).size();
  if (image > 0)
    return fmt::format("holds {} only; the history keeps training runs and language-model generation results "
                       "(compare or report the folder itself to see them)",
                       count_of(static_cast<long long>(image), "image-inference run"));
  size_t failed = 0;
  for (const auto& r : d.runs) failed += r.failed();
  if (failed > 0) return fmt::format("its {} failed (their errors are in the file)", count_of(static_cast<long long>(failed), "measurement"));
  return "holds no measurement";
}

// One inference*.json: its generation measurements as one session, or why not.
void import_inference(HistoryDb& db, const InferenceDocument& d, HistoryImport& imp) {
  const std::string name = file_name(d.path);
  if (d.generation_runs().empty()) {
    imp.skipped.push_back(fmt::format("{}: {}", name, nothing_to_record(d)));
    return;
  }
  if (auto session = db.find_generation_session(d.provenance)) {
    imp.skipped.push_back(fmt::format("{}: already in the database as generation session {} (host {}, started {}): "
                                      "imported before, or recorded by `infer` itself",
                                      name, *session, d.provenance.host, d.provenance.date_utc));
    return;
  }
  const size_t n = db.record_generation(d, imp.dir);
  imp.generation_measurements += n;
  imp.imported.push_back(fmt::format("{}: {}", name, count_of(static_cast<long long>(n), "generation measurement")));
}

}  // namespace

HistoryImport import_folder(HistoryDb& db, const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("'{}' is not a run folder: no folder is there, so it has no results.json or "
                            "inference*.json; pass a folder written by `trainscope run` or `trainscope infer` (copy the "
                            "whole folder from the other host)",
                            dir));
  HistoryImport imp;
  imp.dir = std::filesystem::canonical(dir, ec).string();
  if (ec) imp.dir = std::filesystem::absolute(dir).lexically_normal().string();
  const bool results = file_exists(imp.dir + "/results.json");
  const auto files = report_detail::inference_files(imp.dir);
  if (!results && files.empty())
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("'{}' is not a run folder: it has no results.json (written by `trainscope run`) and no "
                            "inference*.json (written by `trainscope infer`); pass the folder they wrote (copy the "
                            "whole folder from the other host)",
                            dir));
  std::vector<InferenceDocument> docs;
  if (results) {
    ReportInput in = load_run_folder(imp.dir);
    import_results(db, in, imp);
    docs = std::move(in.inference);
  } else {
    for (const auto& path : files) docs.push_back(load_inference_document(path));
  }
  for (const auto& d : docs) import_inference(db, d, imp);
  return imp;
}

std::string render_history_import(const HistoryImport& imp, const std::string& db_path) {
  std::string s = fmt::format("{} into {}:\n", imp.dir, db_path);
  for (const auto& x : imp.imported) s += "  imported " + x + "\n";
  for (const auto& x : imp.skipped) s += "  skipped " + x + "\n";
  return s + fmt::format("{} imported, {} skipped\n", count_of(static_cast<long long>(imp.imported.size()), "file"),
                         count_of(static_cast<long long>(imp.skipped.size()), "file"));
}

}  // namespace trainscope

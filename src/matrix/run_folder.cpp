// The run folder: created, locked against a second writer, cleaned of interrupted writes, read
// back on --resume (with its inputs compared), and each ok run's checkpoint with its description.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "common/text.h"
#include "matrix/matrix.h"
#include "results/record_json.h"
#include "workload/model_names.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"

namespace trainscope {

namespace fs = std::filesystem;

namespace matrix_detail {

namespace {

// Renames a finished temporary file to its final name; Error(kIo) naming both when that fails.
void publish_file(const std::string& tmp, const std::string& path) {
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec)
    throw_error(ErrorKind::kIo, fmt::format("cannot rename '{}' to '{}': {}; check the run folder (disk full, removed?)",
                                            tmp, path, ec.message()));
}

// A model file's fingerprint for --resume, "N bytes, CRC-32 xxxxxxxx" (zlib's crc32): not a
// security hash, it tells a replaced or re-saved file from the one the matrix started with.
std::string file_fingerprint(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw_error(ErrorKind::kIo, fmt::format("cannot read model file '{}'; check that it is there", path));
  std::vector<char> buf(1 << 20);
  uLong crc = crc32(0L, Z_NULL, 0);
  uint64_t bytes = 0;
  while (f) {
    f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto got = static_cast<uInt>(f.gcount());
    crc = crc32(crc, reinterpret_cast<const Bytef*>(buf.data()), got);
    bytes += got;
  }
  return fmt::format("{} bytes, CRC-32 {:08x}", bytes, crc);
}

// matrix.json's "model_files": each TorchScript model file of the matrix and its fingerprint.
nlohmann::json model_fingerprints(const std::vector<std::string>& models) {
  auto j = nlohmann::json::object();
  for (const auto& m : models)
    if (is_torchscript_path(m)) j[m] = file_fingerprint(m);
  return j;
}

// --resume: each model file must be the one matrix.json recorded when the matrix started (a file
// replaced by another model of the same parameter count passes the count check). A matrix.json
// of an older trainscope has no "model_files": nothing to compare.
void check_model_fingerprints(const std::string& run_dir, const std::vector<std::string>& models) {
  const auto bytes = read_file_bytes(run_dir + "/matrix.json", uint64_t{1} << 26);
  const auto j = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.contains("model_files") || !j["model_files"].is_object()) return;
  for (const auto& m : models) {
    const auto it = j["model_files"].find(m);
    if (it == j["model_files"].end() || !it->is_string()) continue;
    if (const std::string now = file_fingerprint(m); now != it->get<std::string>())
      throw_error(ErrorKind::kInvalidArgument,
                  fmt::format("cannot resume '{}': model file '{}' changed since the matrix started ({} then, {} now; "
                              "matrix.json records it). The inputs changed since the matrix started; put the original "
                              "file back, or start a new run folder without --resume",
                              run_dir, m, it->get<std::string>(), now));
  }
}

}  // namespace

// The run folder: created, locked, cleaned of interrupted writes, checked against --resume.
void Matrix::prepare_run_folder() {
  res_.run_dir = (fs::path(cfg_.out_dir) / (cfg_.run_name.empty() ? utc_timestamp(UtcFormat::kFolder) : cfg_.run_name)).string();
  ensure_writable_dir(res_.run_dir);
  lock_run_folder();
  if (!cfg_.resume && file_exists(res_.run_dir + "/results.json")) {
    if (fs::exists(res_.run_dir + "/ranks"))  // a data-parallel run's folder (docs/distributed.md)
      throw_error(ErrorKind::kIo, fmt::format("run folder '{}' already holds the results of a data-parallel run, which "
                                              "cannot be resumed; choose another --name (nothing was changed)",
                                              res_.run_dir));
    throw_error(ErrorKind::kIo, fmt::format("run folder '{}' already holds results; continue it with --resume {} or "
                                            "choose another --name (nothing was changed)",
                                            res_.run_dir, res_.run_dir));
  }
  // A process killed inside write_file_atomic (e.g. a second Ctrl-C) leaves NAME.tmp.<pid>;
  // with the folder lock held nobody else is writing, so such leftovers are removed.
  for (const auto* sub : {"", "/checkpoints", "/profiles", "/traces"}) remove_stale_temporaries(res_.run_dir + sub);
  ensure_writable_dir(res_.run_dir + "/checkpoints");
  res_.provenance = collect_provenance(cfg_.command_line, cfg_.train.seed);
  if (cfg_.resume) load_resumed_runs();
  // The settings (the settings table) and the model files' fingerprints, for --resume.
  auto matrix = nlohmann::json::parse(matrix_config_to_json(cfg_));
  matrix["model_files"] = model_fingerprints(cfg_.models);
  write_file_atomic(res_.run_dir + "/matrix.json",
                    matrix.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

// One writer per run folder: a second trainscope on the same --name fails instead of mixing
// results.
void Matrix::lock_run_folder() {
  folder_lock_fd_ = ::open((res_.run_dir + "/.trainscope.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (folder_lock_fd_ < 0 || ::flock(folder_lock_fd_, LOCK_EX | LOCK_NB) != 0)
    throw_error(ErrorKind::kIo, fmt::format("run folder '{}' is in use by another trainscope process; {}",
                                            res_.run_dir,
                                            cfg_.resume ? "wait for it to finish (or stop it), then resume"
                                                        : "choose another --name"));
}

// --resume: runs already measured as ok are kept as they are and not repeated; the telemetry
// rows written so far are kept too.
void Matrix::load_resumed_runs() {
  const std::string prev = res_.run_dir + "/results.json";
  if (!file_exists(prev))
    throw_error(ErrorKind::kIo, fmt::format("cannot resume '{}': it has no results.json; give the run folder that "
                                            "`trainscope run` printed",
                                            res_.run_dir));
  try {
    auto bytes = read_file_bytes(prev, uint64_t{1} << 30);
    auto j = nlohmann::json::parse(bytes.begin(), bytes.end());
    int64_t last_ns = 0;
    for (const auto& rj : j.at("runs")) {
      auto r = run_record_from_json(rj);
      if (r.status == RunStatus::kOk) done_[r.run_id] = r;
      last_ns = std::max(last_ns, r.end_ns);
    }
    // One matrix clock across sessions: this session starts 1 s after the last run recorded,
    // so its runs and telemetry samples follow the kept ones instead of overlapping them.
    origin_ -= std::chrono::nanoseconds(last_ns) + std::chrono::seconds(1);
  } catch (const nlohmann::json::exception& e) {
    throw_error(ErrorKind::kDataFormat, fmt::format("cannot resume: '{}' is not a trainscope results file ({})", prev,
                                                    e.what()));
  }
  const std::string tel = res_.run_dir + "/telemetry.csv.gz";
  if (file_exists(tel)) {
    auto rows = read_file_bytes(tel);
    kept_telemetry_.assign(rows.begin(), rows.end());
    if (!kept_telemetry_.empty() && kept_telemetry_.back() != '\n') kept_telemetry_ += '\n';
  }
  check_resumed_inputs();
  notice(fmt::format("resuming {}: {} of {} runs already measured are kept", res_.run_dir, done_.size(), planned_));
}

// --resume reuses the matrix's settings from matrix.json, but its model files and data are read
// again: a kept run that trained another model or data than these would sit beside the new runs
// under the same name. Compared: each model's parameter count, the data set and its shape, then
// each model file's fingerprint against matrix.json's.
void Matrix::check_resumed_inputs() const {
  const auto& tr = workload_->data.train;
  const std::vector<int64_t> shape{tr.channels, tr.height, tr.width};
  for (const auto& [id, r] : done_) {
    // another length of --seq-lens: its windows (and a context grown to it) differ from these
    if (r.language_model && r.language_model->seq_len != tr.width) continue;
    std::string what;
    if (auto it = model_parameters_.find(r.model); it != model_parameters_.end() && r.parameters &&
                                                     *r.parameters != it->second)
      what = fmt::format("model '{}' now has {} parameters; the kept run {} trained one of {}", r.model, it->second, id,
                         *r.parameters);
    else if (r.dataset != workload_->dataset_name || r.train_samples != tr.count ||
             r.test_samples != workload_->data.test.count || r.input_shape != shape)
      what = fmt::format("the data now is {} ({} training and {} test samples of {}); the kept run {} trained on {} "
                         "({} and {} of {})",
                         workload_->dataset_name, tr.count, workload_->data.test.count, fmt::join(shape, "x"), id,
                         r.dataset, r.train_samples, r.test_samples, fmt::join(r.input_shape, "x"));
    if (!what.empty())
      throw_error(ErrorKind::kInvalidArgument,
                  fmt::format("cannot resume '{}': {}. The inputs changed since the matrix started; put the original "
                              "files back, or start a new run folder without --resume",
                              res_.run_dir, what));
  }
  check_model_fingerprints(res_.run_dir, cfg_.models);
}

// The checkpoint of an ok run under its final name, with its description (.json) beside it; when
// the description cannot be written, the checkpoint goes too (no checkpoint without one).
void Matrix::publish_checkpoint(const RunSpec& spec, RunRecord& rec) {
  const std::string pt = "checkpoints/" + spec.run_id + ".pt";
  publish_file(spec.checkpoint_path, res_.run_dir + "/" + pt);
  try {
    write_file_atomic(res_.run_dir + "/checkpoints/" + spec.run_id + ".json",
                      checkpoint_description(spec, cfg_.data, *workload_)
                              .dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
                          "\n");
  } catch (...) {
    ::unlink((res_.run_dir + "/" + pt).c_str());
    throw;
  }
  rec.checkpoint_path = pt;
}

}  // namespace matrix_detail

}  // namespace trainscope

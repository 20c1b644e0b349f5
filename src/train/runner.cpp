#include "trainscope/host_malloc.h"
#include "trainscope/runner.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>

#include <torch/csrc/jit/runtime/jit_exception.h>

#include "common/text.h"
#include "dist/rank.h"
#include "dist/stall.h"
#include "infer/bench.h"
#include "results/record_json.h"
#include "train/compat.h"
#include "train/device.h"
#include "train/error_text.h"
#include "train/min_time.h"
#include "train/lm_task.h"
#include "train/trainer.h"
#include "workload/model_names.h"
#include "trainscope/batch_sweep.h"
#include "trainscope/stats.h"
#include "trainscope/dataset.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/profile.h"
#include "trainscope/settings.h"
#include "trainscope/progress.h"
#include "trainscope/telemetry.h"
#include "trainscope/variants.h"
#include "train/variant_exec.h"

namespace trainscope {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::vector<std::pair<std::string, std::string>> list_devices() {
  auto host = collect_host_provenance();
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& d : visible_devices()) out.emplace_back(d, device_display_name(d, host.cpu_model));
  return out;
}

Provenance collect_provenance(const std::string& command_line, uint64_t seed) {
  Provenance p = collect_host_provenance();
  add_torch_provenance(p);
  p.command_line = command_line;
  p.seed = seed;
  p.intra_op_threads = at::get_num_threads();
  p.host_allocator = host_allocator();
  return p;
}

nlohmann::json checkpoint_description(const RunSpec& spec, const DataConfig& data, const Workload& w) {
  const auto& tr = w.data.train;
  return {{"schema_version", kSchemaVersion},
          {"model", spec.model},
          {"input_shape", {tr.channels, tr.height, tr.width}},
          {"num_classes", tr.num_classes},
          {"normalisation", {{"mean", w.data.mean}, {"std", w.data.std}}},
          {"data", {{"format", data.format}, {"path", data.path}, {"image_size", data.image_size},
                    {"image_channels", data.image_channels}}},
          {"weights_format", is_torchscript_path(spec.model) ? "torchscript" : "libtorch_archive"},
          {"trained_on", spec.device},
          {"batch_size", spec.batch_size},
          {"seed", spec.train.seed},
          {"task", w.data.task},
          {"language_model", lm_checkpoint_shape(spec.model, tr, spec.train)}};
}

namespace {

// Renames a finished temporary file to its final name; Error(kIo) naming both when that fails.
void publish_file(const std::string& tmp, const std::string& path) {
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec)
    throw_error(ErrorKind::kIo, fmt::format("cannot rename '{}' to '{}': {}; check the run folder (disk full, removed?)",
                                            tmp, path, ec.message()));
}

// --target-accuracy: the device's energy over the training that reached the target (the epochs'
// training intervals up to the evaluation that reached it; an evaluation every N steps inside
// that span is included). Absent when a part has no energy reading.
void energy_to_target(const TelemetrySampler& sampler, const std::string& tdev, RunRecord& rec) {
  auto& t = rec.time_to_accuracy;
  if (!t || !t->reached || tdev.empty()) return;
  double joules = 0;
  for (const auto& e : rec.epochs) {
    if (e.start_ns >= t->end_ns) break;
    const auto es = sampler.summarize(e.start_ns, std::min(e.end_ns, t->end_ns));
    const auto* d = es.device(tdev);
    if (!d || !d->energy || !d->energy->energy_j) return;
    joules += *d->energy->energy_j;
  }
  t->energy_j = joules;
}

// A run's id: "cpu-mlp-b64-r0", "cuda0-cnn-b128-r1-graphs" (docs/results.md).
std::string run_id_of(const std::string& dev, const std::string& id_name, int64_t batch, int64_t rep,
                      const std::string& variant) {
  return fmt::format("{}-{}-b{}-r{}{}", dev == "cpu" ? "cpu" : dev.substr(0, 4) + dev.substr(5), id_name, batch, rep,
                     variant_run_id_suffix(variant));
}

// The longest name a run writes beside its id: traces/<run id>.trace.json.gz under the temporary
// name of an atomic write (trainscope/fs.h: ".tmp." and a process id of up to 10 digits).
constexpr size_t kLongestRunFileSuffix = std::string_view(".trace.json.gz.tmp.").size() + 10;
constexpr size_t kMaxFileName = 255;  // NAME_MAX of Linux file systems

// The first non-empty line of an error message, without its trailing '.', ':' and spaces.
std::string first_line(std::string why) {
  why.erase(0, std::min(why.size(), why.find_first_not_of("\n ")));
  why = why.substr(0, why.find('\n'));
  while (!why.empty() && (why.back() == '.' || why.back() == ' ' || why.back() == ':')) why.pop_back();
  return why;
}

// The last non-empty line of an error message.
std::string last_line(const std::string& why) {
  size_t end = why.find_last_not_of("\n ");
  if (end == std::string::npos) return "";
  const size_t start = why.rfind('\n', end);
  return why.substr(start == std::string::npos ? 0 : start + 1, end + 1 - (start == std::string::npos ? 0 : start + 1));
}

// make_model, where a model file LibTorch cannot read (an operator this LibTorch lacks: the
// TorchScript compiler's ErrorReport, no c10::Error) is bad input naming the file, not a bug.
std::unique_ptr<Model> model_or_bad_input(const std::string& name, const Dataset& train, const TrainConfig& cfg) {
  std::error_code ec;
  if (is_torchscript_path(name) && std::filesystem::is_directory(name, ec))
    throw_error(ErrorKind::kModel, fmt::format("model '{}' (--models / models) is a folder, not a TorchScript file; "
                                               "give the .pt file saved by torch.jit.save",
                                               name));
  try {
    return make_run_model(name, train, cfg);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    const std::string why = first_line(error_without_backtrace(e));
    throw_error(ErrorKind::kModel, fmt::format("cannot load model '{}' (--models / models): {}; save it with the "
                                               "LibTorch version trainscope uses (its provenance names it), from "
                                               "operators that version has",
                                               name, why));
  }
}

// The matrix in four stages (run() below): inputs and run folder, telemetry, one cell at a time,
// and the merge of each finished run into the reporters' records and the telemetry file.
class Matrix {
 public:
  Matrix(const MatrixConfig& cfg, const std::vector<Reporter*>& reporters, const std::atomic<bool>* stop)
      : cfg_(cfg), stop_(stop) {
    if (reporters.empty()) {
      own_results_ = std::make_unique<ResultsFilesReporter>();
      reporters_.push_back(own_results_.get());
    } else {
      reporters_ = reporters;
    }
  }
  ~Matrix() {
    // One writer per run folder (lock_run_folder): released here, or by the kernel when the
    // process ends, however it ends.
    if (folder_lock_fd_ >= 0) ::close(folder_lock_fd_);
  }
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
  MatrixResult run();

 private:
  void check_inputs();
  void prepare_run_folder();
  void lock_run_folder();
  void load_resumed_runs();
  void check_resumed_inputs() const;
  void start_telemetry();
  void run_cells();
  void check_variants();
  void check_file_names() const;
  void publish_checkpoint(const RunSpec& spec, RunRecord& rec);
  void run_sweeps(const std::vector<std::string>& model_names, ProgressBar& progress);
  void run_cell(const std::string& dev, const std::string& model, const std::string& id_name, int64_t batch, int64_t rep,
                const std::string& variant, ProgressBar& progress);
  void train_cell(RunSpec& spec, RunRecord& rec, ProgressBar& progress);
  double fit_min_time(RunSpec& spec);
  std::vector<std::string> device_variants(const std::string& dev) const;
  double calibrate_step_s(const RunSpec& spec);
  void fill_run_telemetry(const std::string& dev, RunRecord& rec);
  void focus_telemetry(const std::string& dev);
  void telemetry_failed(const std::string& why);
  std::unique_ptr<dist::StallWatch> watch_stalls(const RunSpec& spec, TrainHooks& hooks);
  std::string recent_telemetry(const std::string& dev);
  void finish_run_profile(std::unique_ptr<RunProfiler>& profiler, RunRecord& rec);
  void merge_run(RunRecord rec);
  bool stop_before_cell();
  void write_telemetry();
  void stop_with(MatrixAbort kind, const std::string& reason);
  void warning(const std::string& m) {
    for (auto* r : reporters_) r->warning(m);
  }
  void notice(const std::string& m) {
    for (auto* r : reporters_) r->notice(m);
  }
  template <class F>
  void report(F&& f) {
    for (auto* r : reporters_) f(*r);
  }

  MatrixConfig cfg_;
  const std::atomic<bool>* stop_;
  std::unique_ptr<ResultsFilesReporter> own_results_;
  std::vector<Reporter*> reporters_;
  Clock::time_point origin_ = Clock::now();  // the matrix clock's zero (moved back on --resume)
  std::vector<std::string> devices_;
  std::optional<Workload> workload_;
  MatrixResult res_;
  size_t planned_ = 0;
  int folder_lock_fd_ = -1;
  std::map<std::string, RunRecord> done_;  // --resume: runs already measured as ok
  std::string kept_telemetry_;             // --resume: the earlier sessions' telemetry rows
  std::unique_ptr<TelemetrySampler> sampler_;
  std::string io_stop_;          // why a run's files could not be written: the matrix stops after its record
  std::string sampler_failure_;  // why telemetry was on but its sampler could not start
  std::vector<GpuInfo> telemetry_gpus_;
  std::vector<std::string> variants_;           // canonical names (trainscope/variants.h)
  bool default_variants_ = false;               // train.variants was [] (default_variants)
  std::map<std::string, bool> model_has_4d_;    // per model: has convolution kernels (channels_last applies)
  std::map<std::string, int64_t> model_parameters_;  // per model: its parameters now (--resume compares)
};

MatrixResult Matrix::run() {
  check_inputs();
  prepare_run_folder();
  start_telemetry();  // a bad telemetry setting is bad input (exit 2); an absent source is a notice
  // From here on the inputs are valid: an error stops the matrix with the finished runs kept.
  try {
    report([&](Reporter& r) { r.start(res_.provenance, res_.run_dir, planned_); });
    run_cells();
    if (sampler_) sampler_->stop();
    write_telemetry();
    report([&](Reporter& r) { r.finish(res_.runs); });
  } catch (const Error& e) {
    stop_with(e.kind() == ErrorKind::kIo ? MatrixAbort::kIo : MatrixAbort::kInternal, e.what());
  } catch (const std::exception& e) {
    stop_with(MatrixAbort::kInternal, e.what());
  }
  return std::move(res_);
}

// An I/O or internal error: the reporters still get finish() with the runs measured so far (a
// second failure there is only a notice), and the caller sees why the matrix stopped.
void Matrix::stop_with(MatrixAbort kind, const std::string& reason) {
  res_.abort = kind;
  res_.abort_reason = reason;
  if (sampler_) sampler_->stop();
  for (auto* r : reporters_) {
    try {
      r->finish(res_.runs);
    } catch (const std::exception& e) {
      notice(fmt::format("after the matrix stopped: {}", e.what()));
    }
  }
}

// Everything that can be checked before a step runs (exit 2 when wrong; nothing is written).
void Matrix::check_inputs() {
  validate(cfg_);
  std::string malloc_warning;
  set_host_malloc(cfg_.train.malloc_tuning, &malloc_warning);  // before the data and the models allocate
  if (!malloc_warning.empty()) warning(malloc_warning);
  std::string threads_warning;
  set_intra_op_threads(cfg_.train.threads, setting("train.threads").long_flag(), &threads_warning);
  if (!threads_warning.empty()) warning(threads_warning);
  std::string device_note;
  devices_ = resolve_devices(cfg_.devices, &device_note);
  // Data first: a bad path or corrupt file stops us before any training.
  workload_.emplace(make_workload(load_datasets(cfg_.data, cfg_.train.seed)));
  const auto& tr = workload_->data.train;
  if (tr.count < 1) throw_error(ErrorKind::kDataFormat, "the training set is empty");
  // Models: build each once on the CPU to reject unknown names, shape mismatches and models
  // with nothing to train before anything runs.
  for (const auto& m : cfg_.models) {
    auto model = model_or_bad_input(m, tr, cfg_.train);
    // A forward pass that never returns is named after --dist-timeout, as a stalled step is.
    dist::StallWatch watch("models", cfg_.dist.timeout_s, nullptr, [this](const std::string& msg) { warning(msg); });
    watch.set_what(fmt::format("the pre-flight forward pass of model '{}'", m));
    watch.step_begin(0);
    check_model_fits(*model, workload_->train_x, tr.num_classes, /*need_trainable=*/true, fmt::format("model '{}'", m));
    watch.step_end(0);
    model_has_4d_[m] = has_4d_parameters(*model);
    model_parameters_[m] = model->parameter_count();
  }
  check_variants();
  size_t device_cells = 0;
  for (const auto& d : devices_) device_cells += device_variants(d).size();
  planned_ = device_cells * cfg_.models.size() * cfg_.batch_sizes.size() * static_cast<size_t>(cfg_.repeats);
  check_file_names();
  if (!device_note.empty()) notice(device_note);  // after the input checks: a bad input's error comes alone
}

// Every file a run writes is named by its run id, which holds the model's name (a model file's
// stem): an id too long for a file name is bad input now, not a failed checkpoint after training.
void Matrix::check_file_names() const {
  const auto names = run_id_model_names(cfg_.models);
  int64_t batch = *std::max_element(cfg_.batch_sizes.begin(), cfg_.batch_sizes.end());
  if (cfg_.batch_sweep.enabled)  // the sweep doubles up to the training set at most
    batch = std::max(batch, static_cast<int64_t>(workload_->data.train.count));
  for (size_t mi = 0; mi < names.size(); ++mi)
    for (const auto& dev : devices_)
      for (const auto& variant : device_variants(dev)) {
        const std::string id = run_id_of(dev, names[mi], batch, cfg_.repeats - 1, variant);
        if (id.size() + kLongestRunFileSuffix <= kMaxFileName) continue;
        const size_t over = id.size() + kLongestRunFileSuffix - kMaxFileName;
        throw_error(ErrorKind::kInvalidArgument,
                    fmt::format("model '{}' gives run ids of {} characters ('{}'), too long for the files named after "
                                "them (traces/<run id>.trace.json.gz, checkpoints/<run id>.pt: at most {} bytes a "
                                "name); give the model file a name at least {} characters shorter",
                                cfg_.models[mi], id.size(), id, kMaxFileName, over));
      }
}

// Variants (docs/variants.md#applicability): a GPU-only variant asked for explicitly on CPU-only
// devices is bad input; with the default devices (or a GPU among them) its CPU cells are
// recorded as not applicable.
void Matrix::check_variants() {
  variants_.clear();
  default_variants_ = cfg_.train.variants.empty();
  for (const auto& v : default_variants_ ? default_variants(devices_) : cfg_.train.variants)
    variants_.push_back(parse_variant(v, "--variants").name());
  check_gpu_only_variants(variants_, devices_, !cfg_.devices.empty());
}

// The variants a device's cells run: all asked for (a GPU-only one asked for on the CPU is
// recorded as not applicable), or with the default set, those that apply to the device.
std::vector<std::string> Matrix::device_variants(const std::string& dev) const {
  if (!default_variants_ || dev != "cpu") return variants_;
  std::vector<std::string> v;
  for (const auto& x : variants_)
    if (!parse_variant(x, "--variants").gpu_only()) v.push_back(x);
  return v;
}

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
  write_file_atomic(res_.run_dir + "/matrix.json", matrix_config_to_json(cfg_));
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
// under the same name. Compared: each model's parameter count, the data set and its shape.
void Matrix::check_resumed_inputs() const {
  const auto& tr = workload_->data.train;
  const std::vector<int64_t> shape{tr.channels, tr.height, tr.width};
  for (const auto& [id, r] : done_) {
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
}

// Telemetry: one sampler for the whole matrix, on the matrix clock; a source that fails to probe
// is listed as unavailable, and a sampler that cannot start at all never stops training.
void Matrix::start_telemetry() {
  if (!cfg_.telemetry.enabled) return;
  try {
    TelemetryOptions to;
    to.interval_s = cfg_.telemetry.interval_s;
    to.slow_interval_s = cfg_.telemetry.slow_interval_s;
    to.pcie_interval_s = cfg_.telemetry.pcie_interval_s;
    to.nvml_library = cfg_.telemetry.nvml_library;
    to.proc_root = cfg_.telemetry.proc_root;
    to.sys_root = cfg_.telemetry.sys_root;
    sampler_ = std::make_unique<TelemetrySampler>(to, origin_);
    sampler_->set_run_devices(std::vector<std::string>{});  // no run yet: no GPU's slow fields
    sampler_->start();
    telemetry_gpus_ = sampler_->gpus();
    for (const auto& src : sampler_->sources())
      if (!src.available) notice(fmt::format("telemetry source '{}' unavailable: {}", src.name, src.reason));
    for (const auto& src : sampler_->sources())
      if (auto d = nlohmann::json::parse(src.details.text, nullptr, false); src.name == "nvml" && d.is_object()) {
        if (d.contains("driver_version") && d["driver_version"].is_string())
          res_.provenance.gpu_driver = d["driver_version"].get<std::string>();
        if (d.contains("nvml_version") && d["nvml_version"].is_string())
          res_.provenance.nvml_version = d["nvml_version"].get<std::string>();
      }
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInvalidArgument) throw;
    telemetry_failed(e.what());
  } catch (const std::exception& e) {  // std::thread's std::system_error, a source's bad_alloc
    telemetry_failed(e.what());
  }
}

// The sampler could not start: training goes on without telemetry, and each run says why.
void Matrix::telemetry_failed(const std::string& why) {
  notice(fmt::format("telemetry disabled: {}", why));
  sampler_failure_ = why;
  sampler_.reset();
}

void Matrix::run_cells() {
  ProgressBar progress(cfg_.progress);
  const auto model_names = run_id_model_names(cfg_.models);  // one per list entry, unique
  if (cfg_.batch_sweep.enabled) return run_sweeps(model_names, progress);
  for (int64_t rep = 0; rep < cfg_.repeats; ++rep)
    for (size_t mi = 0; mi < cfg_.models.size(); ++mi)
      for (int64_t b : cfg_.batch_sizes)
        for (const auto& dev : devices_)
          for (const auto& variant : device_variants(dev)) {
            if (stop_before_cell()) return;
            run_cell(dev, cfg_.models[mi], model_names[mi], b, rep, variant, progress);
          }
}

namespace {

// One batch size of a sweep: the median steady samples/s of its ok runs (res.runs from `first`).
BatchSweepPoint sweep_point(int64_t batch, const std::vector<RunRecord>& runs, size_t first) {
  BatchSweepPoint p;
  p.batch_size = batch;
  std::vector<double> sps;
  for (size_t i = first; i < runs.size(); ++i) {
    const RunRecord& r = runs[i];
    if (r.status == RunStatus::kOk && r.steady_samples_per_s) sps.push_back(*r.steady_samples_per_s);
    if (r.status == RunStatus::kOk && !r.steady_samples_per_s && p.failure.empty()) {
      p.too_few_steps = true;
      p.failure = fmt::format("only {} step(s), all inside the warm-up", r.steps_completed);
    }
    if (r.status != RunStatus::kFailed) continue;
    p.out_of_memory = p.out_of_memory || r.error_kind == to_string(ErrorKind::kOutOfMemory);
    if (p.failure.empty()) p.failure = r.failure_reason;
  }
  if (!sps.empty()) p.samples_per_s = median(sps);
  return p;
}

// The sweep point every rank of a data-parallel run acts on: rank 0's (each rank measured its
// own samples/s; ranks that chose different next batch sizes would run different cells).
BatchSweepPoint rank0_point(const BatchSweepPoint& mine) {
  const nlohmann::json j = {{"b", mine.batch_size}, {"sps", mine.samples_per_s ? nlohmann::json(*mine.samples_per_s) : nullptr},
                            {"oom", mine.out_of_memory}, {"failure", mine.failure}, {"few", mine.too_few_steps}};
  const auto r = nlohmann::json::parse(dist::rank0_decides(j.dump()));
  BatchSweepPoint p;
  p.batch_size = r.at("b").get<int64_t>();
  if (!r.at("sps").is_null()) p.samples_per_s = r.at("sps").get<double>();
  p.out_of_memory = r.at("oom").get<bool>();
  p.failure = r.at("failure").get<std::string>();
  p.too_few_steps = r.at("few").get<bool>();
  return p;
}

}  // namespace

// --batch-sizes auto (trainscope/batch_sweep.h): per model and device, the batch doubles from the
// smallest batch size until the sweep rule stops it; every batch runs all repeats.
void Matrix::run_sweeps(const std::vector<std::string>& model_names, ProgressBar& progress) {
  const BatchSweepRule rule{cfg_.batch_sweep.min_gain_pct, cfg_.batch_sweep.max_batch, workload_->data.train.count};
  const int64_t start = *std::min_element(cfg_.batch_sizes.begin(), cfg_.batch_sizes.end());
  for (size_t mi = 0; mi < cfg_.models.size(); ++mi)
    for (const auto& dev : devices_) {
      auto sweep = run_batch_sweep(start, rule, [&](int64_t b) {
        const size_t first = res_.runs.size();
        for (int64_t rep = 0; rep < cfg_.repeats && !stop_before_cell(); ++rep)
          for (const auto& variant : device_variants(dev)) run_cell(dev, cfg_.models[mi], model_names[mi], b, rep, variant, progress);
        return stop_before_cell() ? BatchSweepPoint{} : rank0_point(sweep_point(b, res_.runs, first));
      });
      if (res_.interrupted) return;
      notice(fmt::format("batch sweep of {} on {}: saturation point batch {}; stopped because {}", cfg_.models[mi], dev,
                         sweep.last.saturation_batch ? std::to_string(*sweep.last.saturation_batch) : "none",
                         sweep.last.stop_reason));
    }
}

// Whether the matrix stops before its next cell. A rank of a data-parallel job asks every rank
// (dist::Context::any_rank): a signal that reached one rank after the last step the ranks voted
// on (during evaluation, inference or the gather) must stop all of them before the next cell,
// or the others would wait for it in the next run's broadcast (docs/distributed.md#stopping-together).
bool Matrix::stop_before_cell() {
  if (dist::any_rank_stops(res_.interrupted)) res_.interrupted = true;
  return res_.interrupted;
}

void Matrix::run_cell(const std::string& dev, const std::string& model, const std::string& id_name, int64_t batch,
                      int64_t rep, const std::string& variant, ProgressBar& progress) {
  RunSpec spec;
  spec.run_id = run_id_of(dev, id_name, batch, rep, variant);
  if (auto it = done_.find(spec.run_id); it != done_.end()) {
    res_.runs.push_back(it->second);
    report([&](Reporter& r) { r.run_skipped(res_.runs.back()); });
    return;
  }
  spec.device = dev;
  spec.model = model;
  spec.batch_size = batch;
  spec.repeat = rep;
  spec.train = cfg_.train;
  spec.origin = origin_;
  // Saved under a temporary name and renamed when the run is ok (the atomic-write convention of
  // trainscope/fs.h): a killed process never leaves a truncated checkpoint under the final name.
  spec.checkpoint_path = res_.run_dir + "/checkpoints/" + spec.run_id + ".pt.tmp." + std::to_string(::getpid());
  RunRecord rec;
  rec.run_id = spec.run_id;
  rec.device = dev;
  rec.model = model;
  rec.batch_size = batch;
  rec.repeat = rep;
  rec.device_name = device_display_name(dev, res_.provenance.cpu_model);
  spec.variant = rec.variant = variant;
  const Variant v = parse_variant(variant, "--variants");
  rec.variant_note = variant_not_applicable(v, dev, model_has_4d_[model], dist::current_rank() >= 0);
  if (!rec.variant_note.empty()) {  // recorded, not run: not an error (docs/variants.md#applicability)
    rec.status = RunStatus::kNotApplicable;
    fill_run_settings(rec, cfg_.train, *workload_);
    notice(fmt::format("{}: {}", spec.run_id, rec.variant_note));
    merge_run(std::move(rec));
    return;
  }
  report([&](Reporter& r) { r.run_started(rec); });
  focus_telemetry(dev);
  VariantThreads threads(v.threads);  // threadsN: this run's intra-op threads (train and inference)
  if (!threads.warning.empty()) {
    rec.notes.push_back(threads.warning);
    warning(fmt::format("{}: {}", spec.run_id, threads.warning));
  }
  const int64_t requested = spec.train.epochs;
  const double epoch_headline_s = fit_min_time(spec);
  train_cell(spec, rec, progress);
  progress.end();
  if (spec.train.epochs > requested)
    restate_requested_epochs(rec, requested, workload_->data.train.count,
                             effective_min_time_s(cfg_.train, cfg_.telemetry), epoch_headline_s);
  merge_run(std::move(rec));
  if (!io_stop_.empty()) throw_error(ErrorKind::kIo, io_stop_);
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

// The minimum measured time (train/min_time.h): a calibration pass of a few steps times the
// cell, and a cell whose requested epochs would give a shorter headline window trains more
// epochs. Returns the calibrated headline seconds per epoch (0 when not calibrated).
double Matrix::fit_min_time(RunSpec& spec) {
  const double min_s = effective_min_time_s(cfg_.train, cfg_.telemetry);
  if (!min_time_applies(spec.train, min_s, dist::current_rank() < 0)) return 0;
  const double step_s = calibrate_step_s(spec);
  const int64_t per_epoch = (workload_->data.train.count + spec.batch_size - 1) / spec.batch_size;
  const int64_t planned = planned_train_steps(spec.train, workload_->data.train.count, spec.batch_size);
  int64_t tail = 0;  // steps the profiler takes at the end of the plan
  if (cfg_.profile.enabled) {
    std::string unused;
    const auto p = resolve_profile_schedule(cfg_.profile, spec.train.warmup_steps, planned, &unused);
    if (const int64_t first = profile_first_touched_step(p); first >= 0) tail = std::max<int64_t>(planned - first, 0);
  }
  const int64_t epochs = epochs_for_min_time(spec.train.epochs, per_epoch, step_s, spec.train.warmup_steps, tail, min_s);
  if (epochs > spec.train.epochs) {
    notice(fmt::format("{}: {:.2f} s of headline training per epoch, shorter than the minimum measured time {} s: training "
                       "{} (--min-time 0 keeps the requested {})",
                       spec.run_id, step_s * static_cast<double>(per_epoch), format_number(min_s),
                       count_of(epochs, "epoch"), count_of(spec.train.epochs, "epoch")));
    spec.train.epochs = epochs;
  }
  return step_s * static_cast<double>(per_epoch);
}

// Seconds per headline step of a calibration pass: the cell's own model and data, the warm-up
// and kCalibrationSteps more steps, no profiler, inference or checkpoint; 0 when it failed (the
// cell's own run then reports why).
double Matrix::calibrate_step_s(const RunSpec& spec) {
  constexpr int64_t kCalibrationSteps = 20;
  RunSpec c = spec;
  c.run_id += "-calibration";
  c.checkpoint_path.clear();
  c.profile.reset();
  c.train.max_steps = c.train.warmup_steps + kCalibrationSteps;
  TrainHooks hooks;
  hooks.stop_requested = stop_;
  RunRecord r;
  try {
    train_run(c, *workload_, hooks, &r);
  } catch (const std::exception&) {
    return 0;
  }
  const auto& m = r.measurement;
  if (r.status != RunStatus::kOk || m.headline_steps <= 0 || m.headline_time_s <= 0) return 0;
  return m.headline_time_s / static_cast<double>(m.headline_steps);
}

namespace {

// The failure of a run as its record keeps it: an Error's own kind, the device running out of
// memory, a model's own exception (TorchScript `raise`), LibTorch's error; "internal" only for
// what is none of these. Returns true for an Error(kIo): the run folder is gone or full, and the
// matrix stops after this run's record.
bool record_failure(const std::exception_ptr& failure, const RunSpec& spec, RunRecord& rec) {
  rec.status = RunStatus::kFailed;
  try {
    std::rethrow_exception(failure);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kIo) {
      rec.error_kind = std::string(to_string(e.kind()));
      rec.failure_reason = fmt::format("{}; the run's measurements are kept, its checkpoint is not", e.what());
      return true;
    }
    rec.status = e.kind() == ErrorKind::kInterrupted ? RunStatus::kInterrupted : RunStatus::kFailed;
    rec.error_kind = std::string(to_string(e.kind()));
    rec.failure_reason = e.what();
  } catch (const c10::Error& e) {
    if (compat::is_out_of_memory(e) && spec.device != "cpu") {
      auto ms = device_memory_stats(torch::Device(spec.device));
      rec.error_kind = "out_of_memory";
      rec.failure_reason = fmt::format(
          "{} ran out of memory at batch size {} (peak allocated {:.2f} GiB of {:.2f} GiB); use a smaller batch",
          spec.device, spec.batch_size, ms.peak_allocated_bytes.value_or(0) / 1073741824.0,
          ms.total_bytes.value_or(0) / 1073741824.0);
      release_device_cache(torch::Device(spec.device));
    } else if (compat::is_out_of_memory(e)) {
      rec.error_kind = "out_of_memory";
      rec.failure_reason = fmt::format("host memory exhausted at batch size {}: {}; use a smaller batch",
                                       spec.batch_size, first_line(e.what_without_backtrace()));
    } else {
      rec.error_kind = "libtorch";
      rec.failure_reason = e.what_without_backtrace();
    }
  } catch (const std::bad_alloc&) {
    rec.error_kind = "out_of_memory";
    rec.failure_reason = fmt::format("host memory exhausted at batch size {}", spec.batch_size);
  } catch (const torch::jit::JITException& e) {  // its message comes last, after the interpreter's trace
    rec.error_kind = std::string(to_string(ErrorKind::kModel));
    rec.failure_reason = fmt::format("model '{}' raised an exception: {}", spec.model, last_line(e.what()));
  } catch (const std::exception& e) {
    rec.error_kind = "internal";
    rec.failure_reason = e.what();
  }
  return false;
}

}  // namespace

// Trains one cell with the other components' hooks; a failure becomes the record's status.
// An I/O error writing the run folder is not the run's fault: the run is recorded with what it
// measured, then the matrix stops (exit 5).
void Matrix::train_cell(RunSpec& spec, RunRecord& rec, ProgressBar& progress) {
  const std::string& dev = spec.device;
  TrainHooks hooks;
  hooks.progress = &progress;
  hooks.stop_requested = stop_;
  // ---- hooks of other components attach here (profiler: on_step_*/on_phase_span;
  //      inference: on_trained). Keep each component's code to a few lines + a call
  //      into its own src/<component>/ files.
  // profile: the scheduled operator-profiling window (src/profile/).
  std::unique_ptr<RunProfiler> profiler;
  if (cfg_.profile.enabled) {  // placed after the headline window (docs/profiling.md#measurement-protocol)
    std::string fit_note;
    spec.profile = resolve_profile_schedule(cfg_.profile, spec.train.warmup_steps,
                                            planned_train_steps(spec.train, workload_->data.train.count, spec.batch_size),
                                            &fit_note);
    spec.profile_skip_first_auto = cfg_.profile.skip_first < 0;
    if (!fit_note.empty()) rec.notes.push_back(fit_note);
    profiler = std::make_unique<RunProfiler>(*spec.profile, spec.run_id, dev, origin_);
    hooks.on_step_begin = [p = profiler.get()](int64_t s) { p->on_step_begin(s); };
    hooks.on_step_end = [p = profiler.get()](int64_t s) { p->on_step_end(s); };
    hooks.on_phase_span = [p = profiler.get()](int64_t s, const char* ph, int64_t t0, int64_t t1) {
      p->on_phase_span(s, ph, t0, t1);
    };
  }
  if (cfg_.inference.enabled && workload_->data.train.is_tokens())
    rec.notes.push_back("inference not measured: a language model's inference is generation (prefill and decode "
                        "tokens/s, TTFT, TPOT), which trainscope does not measure yet (docs/language-models.md)");
  else if (cfg_.inference.enabled)  // single-stream + offline (+ server) on the trained model
    hooks.on_trained = [&](Model& m, const torch::Device& d) {
      // A run that ends inside the profiling window: close it first, so inference
      // operators never land in the training operator table or trace.
      if (profiler) profiler->stop();
      notice(fmt::format("{}: training done; measuring inference (Ctrl-C ends it early)", spec.run_id));
      const auto& w = *workload_;
      rec.inference = inference_after_training(
          m, d, w.test_x.numel() > 0 ? w.test_x : w.train_x, cfg_.inference, cfg_.train.seed, sampler_.get(),
          sampler_ ? telemetry_device(dev, res_.provenance, telemetry_gpus_) : "", stop_,
          /*cuda_graphs=*/parse_variant(spec.variant, "--variants").graphs);
    };
  // telemetry: the run GPU's energy counter at the windows' edges (docs/telemetry.md#energy)
  if (sampler_ && dev != "cpu")
    hooks.on_window_edge = [s = sampler_.get()] { s->read_energy_now(); };
  // dist: a single-process step without progress for dist.timeout_s is reported as stalled
  std::unique_ptr<dist::StallWatch> stall;
  if (dist::current_rank() < 0) stall = watch_stalls(spec, hooks);
  // ---- end of component hooks
  try {
    train_run(spec, *workload_, hooks, &rec);
    if (rec.status == RunStatus::kOk) publish_checkpoint(spec, rec);
  } catch (...) {
    // An Error(kIo) (the checkpoint could not be written: a full disk) keeps the run's
    // measurements in its record and stops the matrix after it is merged (run_cell).
    if (record_failure(std::current_exception(), spec, rec)) io_stop_ = rec.failure_reason;
  }
  if (stall)
    for (auto& n : stall->notes()) rec.notes.push_back(n);
  stall.reset();
  fill_run_telemetry(dev, rec);
  if (!sampler_failure_.empty()) rec.notes.push_back(RunRecord::kSamplerFailedNote + sampler_failure_);
  focus_telemetry("");
  finish_run_profile(profiler, rec);
  rate_instrumentation_cost(rec);
  dist::finish_run_record(rec);  // data-parallel runs: rank 0's record gets every rank's figures
}


// dist: the stall watch (src/dist/stall.h) around the step hooks of the other components.
std::unique_ptr<dist::StallWatch> Matrix::watch_stalls(const RunSpec& spec, TrainHooks& hooks) {
  auto w = std::make_unique<dist::StallWatch>(
      spec.run_id, cfg_.dist.timeout_s, [this, dev = spec.device] { return recent_telemetry(dev); },
      [this](const std::string& m) { notice(m); });
  if (cfg_.dist.inject_fault == "hang" && cfg_.dist.inject_fault_rank == 0) w->inject_slow_step(cfg_.dist.inject_fault_step);
  hooks.on_step_begin = [s = w.get(), f = hooks.on_step_begin](int64_t k) {
    s->step_begin(k);
    if (f) f(k);
  };
  hooks.on_step_end = [s = w.get(), f = hooks.on_step_end](int64_t k) {
    if (f) f(k);
    s->step_end(k);
  };
  return w;
}

// "cuda:0 (gpu0): util 0 %, power 85 W; cpu util 12 %" over the last 5 s; "" without telemetry.
std::string Matrix::recent_telemetry(const std::string& dev) {
  if (!sampler_) return "";
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - origin_).count();
  const auto s = sampler_->summarize(now - int64_t{5000000000}, now);  // the last 5 s
  auto mean = [&](const std::string& d, const char* m) {
    const MetricStats* x = s.metric(d, m);
    return x && x->mean ? fmt::format("{:.0f}", *x->mean) : std::string("—");
  };
  std::string out;
  const std::string tdev = telemetry_device(dev, res_.provenance, telemetry_gpus_);
  if (!tdev.empty() && tdev != "cpu")
    out = fmt::format("{} ({}): util {} %, power {} W; ", dev, tdev, mean(tdev, "util_pct"), mean(tdev, "power_w"));
  return out + fmt::format("cpu util {} %", mean("cpu", "util_pct"));
}

// NVML's slow fields for the run's GPU only (TelemetrySampler::set_run_devices, docs/telemetry.md
// "Slow fields only for the run's GPU"); dev "" (between runs) or "cpu": for no GPU.
void Matrix::focus_telemetry(const std::string& dev) {
  if (sampler_) trainscope::focus_telemetry(*sampler_, dev, res_.provenance, telemetry_gpus_);
}

void Matrix::fill_run_telemetry(const std::string& dev, RunRecord& rec) {
  auto& sampler = sampler_;
  auto& res = res_;
  auto& telemetry_gpus = telemetry_gpus_;
  if (sampler && !rec.epochs.empty()) {
    std::string tdev = telemetry_device(dev, res.provenance, telemetry_gpus);
    int64_t samples = 0;
    for (const auto& e : rec.epochs) samples += e.samples;
    for (auto& e : rec.epochs) {
      if (tdev.empty()) break;
      const auto es = sampler->summarize(e.start_ns, e.end_ns, e.samples);
      if (const auto* d = es.device(tdev); d && d->energy) e.energy_j = d->energy->energy_j;
    }
    rec.telemetry = sampler->run_section(rec.epochs.front().start_ns, rec.epochs.back().end_ns, samples, tdev);
    energy_to_target(*sampler, tdev, rec);
    // The headline figures come from the headline window only (docs/profiling.md#measurement-protocol);
    // the whole run stays in the summary.
    // A headline window too short for kMinStatsSamples telemetry samples keeps the whole run's
    // figures, and says so (window "run" plus a note), rather than means of one or two readings.
    const auto& mw = rec.measurement;
    bool from_headline = false;
    if (mw.headline_end_ns > mw.headline_start_ns) {
      auto h = sampler->run_section(mw.headline_start_ns, mw.headline_end_ns, mw.headline_samples, tdev).headline;
      from_headline = h.stats_samples_min.value_or(0) >= kMinStatsSamples;
      if (from_headline)
        rec.telemetry->headline = std::move(h);
      else
        rec.notes.push_back(fmt::format(
            "telemetry headline covers the whole run: the headline window ({:.2f} s) held {}, fewer than {}; train "
            "longer (--max-steps, --epochs) or sample faster (--telemetry-interval)",
            static_cast<double>(mw.headline_end_ns - mw.headline_start_ns) * 1e-9,
            count_of(h.stats_samples_min.value_or(0), "telemetry sample"), kMinStatsSamples));
    }
    rec.telemetry->headline.window = from_headline ? "headline" : "run";
    if (const MetricStats* cpu = rec.telemetry->summary.metric("sampler", "cpu_pct"); cpu && cpu->mean)
      rec.measurement.sampler_cpu_pct_mean = cpu->mean;
    else  // sampler/cpu_pct needs two polls inside the run (the first sets the baseline)
      rec.notes.push_back(
          "the telemetry sampler's own CPU time was not measured: fewer than two of its polls fell inside the run "
          "(a run shorter than --telemetry-interval, or a machine so busy that the sampler, which yields to "
          "training, was not scheduled)");
    rec.measurement.sampler_scheduling = sampler->thread_scheduling();
    if (auto note = steal_note(rec.telemetry->headline); !note.empty()) rec.notes.push_back(note);
    if (tdev.empty() && dev != "cpu")
      rec.notes.push_back("GPU telemetry absent: NVML did not report a GPU with this device's PCI bus id");
  }
}

// ---- per-run post-processing of other components (profile summary and trace, ...)
void Matrix::finish_run_profile(std::unique_ptr<RunProfiler>& profiler, RunRecord& rec) {
  if (!profiler) return;
  try {  // profile: op table, step breakdown, trace (never fails the run)
    rec.profile = profiler->finish(res_.run_dir, rec, sampler_ ? sampler_->series() : std::vector<CounterSeries>{},
                                   &res_.provenance);
  } catch (const std::exception& e) {
    rec.notes.push_back(fmt::format("profile absent: {}", e.what()));
  }
  profiler.reset();
}

// A finished run joins the matrix's records; the telemetry sampled so far is made durable first,
// so a run listed in results.json always has its samples in telemetry.csv.gz.
void Matrix::merge_run(RunRecord rec) {
  if (rec.device_name.empty()) rec.device_name = device_display_name(rec.device, res_.provenance.cpu_model);
  if (rec.end_ns == 0) rec.end_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - origin_).count();
  rec.clock_origin_unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::system_clock::now().time_since_epoch() - (Clock::now() - origin_)).count();  // wall time of the clock's zero
  if (rec.status == RunStatus::kFailed) res_.any_failed = true;
  if (rec.status == RunStatus::kInterrupted) res_.interrupted = true;
  // Ctrl-C after the last step (during inference): this run is complete and kept, the
  // matrix stops here.
  if (stop_ && stop_->load()) res_.interrupted = true;
  res_.runs.push_back(std::move(rec));
  write_telemetry();
  report([&](Reporter& r) { r.run_finished(res_.runs.back()); });
}

// telemetry.csv.gz: the earlier sessions' rows (--resume) plus every sample of this session,
// rewritten atomically after each run, so a SIGKILL keeps what was sampled for finished runs.
void Matrix::write_telemetry() {
  if (sampler_) sampler_->write_samples_csv_gz(res_.run_dir + "/telemetry.csv.gz", kept_telemetry_);
}

}  // namespace

MatrixResult run_matrix(const MatrixConfig& cfg, const std::vector<Reporter*>& reporters,
                        const std::atomic<bool>* stop_requested) {
  return Matrix(cfg, reporters, stop_requested).run();
}

}  // namespace trainscope

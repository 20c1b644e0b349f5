// The experiment matrix behind run_matrix (trainscope/runner.h): one class whose members are
// defined by idea across the files of src/matrix/:
//   matrix.cpp         the four stages, the loop over cells, one cell, a finished run's merge
//   inputs.cpp         what is checked before a step runs (data, models, variants, file names)
//   run_folder.cpp     the run folder: lock, --resume, checkpoints and their descriptions
//   run_telemetry.cpp  the sampler of the matrix and each run's telemetry section
//   sweep.cpp          --batch-sizes auto: the batch sweep over cells
//   train_cell.cpp     training one cell with the components' hooks, the minimum measured time
//   failure.cpp        a failed run's status, kind and reason (the failure classifier)
//   host.cpp           the devices and provenance of this process
// Internal to src/matrix/.
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include "dist/stall.h"
#include "train/trainer.h"
#include "trainscope/profile.h"
#include "trainscope/progress.h"
#include "trainscope/reporter.h"
#include "trainscope/runner.h"
#include "trainscope/telemetry.h"

namespace trainscope::matrix_detail {

using Clock = std::chrono::steady_clock;

/// A run's id: "cpu-mlp-b64-r0", "cuda0-cnn-b128-r1-graphs" (docs/results.md).
std::string run_id_of(const std::string& dev, const std::string& id_name, int64_t batch, int64_t rep,
                      const std::string& variant);
/// The first non-empty line of an error message, without its trailing '.', ':' and spaces.
std::string first_line(std::string why);
/// The last non-empty line of an error message.
std::string last_line(const std::string& why);
/// The failure of a run as its record keeps it (failure.cpp); true for an Error(kIo), after which
/// the matrix stops once the run's record is merged.
bool record_failure(const std::exception_ptr& failure, const RunSpec& spec, RunRecord& rec);

// The matrix in four stages (run() below): inputs and run folder, telemetry, one cell at a time,
// and the merge of each finished run into the reporters' records and the telemetry file.
class Matrix {
 public:
  Matrix(const MatrixConfig& cfg, const std::vector<Reporter*>& reporters, const std::atomic<bool>* stop,
         MatrixRescue* rescue = nullptr)
      : cfg_(cfg), stop_(stop), rescue_(rescue) {
    if (reporters.empty()) {
      own_results_ = std::make_unique<ResultsFilesReporter>();
      reporters_.push_back(own_results_.get());
    } else {
      reporters_ = reporters;
    }
  }
  ~Matrix() {
    if (rescue_) {
      std::lock_guard<std::mutex> lock(rescue_->mu);
      rescue_->salvage = nullptr;
    }
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
  void run_cells_at(const std::vector<std::string>& model_names, ProgressBar& progress);  // one sequence length
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
  bool salvage_live_run(const std::string& why);
  struct LiveRun;
  void set_live_run(const LiveRun& live);
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
  MatrixRescue* rescue_ = nullptr;
  // The run in progress for MatrixRescue (train_cell sets it while train_run runs).
  struct LiveRun {
    RunRecord* rec = nullptr;
    RunRescue* rescue = nullptr;
    const dist::StallWatch* stall = nullptr;
  };
  std::mutex live_mu_;
  LiveRun live_;
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

}  // namespace trainscope::matrix_detail

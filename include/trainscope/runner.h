// The experiment matrix: devices x models x batch sizes x repeats, one training run per cell,
// results written after every run (nothing measured is lost when a later run fails).
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "trainscope/config.h"
#include "trainscope/provenance.h"
#include "trainscope/run_record.h"

namespace trainscope {

/// Receives the matrix's progress; all callbacks run on the calling thread.
class MatrixObserver {
 public:
  virtual ~MatrixObserver() = default;
  virtual void on_matrix_start(const std::string& /*run_dir*/, const Provenance& /*p*/, size_t /*planned_runs*/) {}
  virtual void on_run_start(const RunRecord& /*r*/) {}
  virtual void on_run_end(const RunRecord& /*r*/) {}
  /// --resume: a run already measured as ok in the run folder, kept and not repeated.
  virtual void on_run_skipped(const RunRecord& /*r*/) {}
  virtual void on_notice(const std::string& /*message*/) {}
};

struct MatrixResult {
  Provenance provenance;
  std::vector<RunRecord> runs;
  std::string run_dir;       // folder holding results.json, results.csv, checkpoints/
  bool any_failed = false;
  bool interrupted = false;
};

/// Validates everything (config, devices, models, data, output folder) before the first step,
/// throwing trainscope::Error on bad input; then runs each cell. A run that fails (NaN loss, out
/// of memory, LibTorch error) is recorded as failed with its reason and the matrix goes on.
/// `stop_requested` (may be null) ends the matrix after the current step (SIGINT).
MatrixResult run_matrix(const MatrixConfig& cfg, MatrixObserver* observer = nullptr,
                        const std::atomic<bool>* stop_requested = nullptr);

/// "cpu" plus "cuda:N" for each visible CUDA device, with names (for `trainscope devices`).
std::vector<std::pair<std::string, std::string>> list_devices();

/// Provenance of this process: host, CPU, GPUs, LibTorch/CUDA versions, build.
Provenance collect_provenance(const std::string& command_line, uint64_t seed);

}  // namespace trainscope

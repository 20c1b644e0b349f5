// The experiment matrix: devices x models x batch sizes x repeats, one training run per cell.
// Every record goes to the reporters (trainscope/reporter.h) as the run ends, so nothing measured
// is lost when a later run fails; the runner itself writes only matrix.json, checkpoints,
// telemetry.csv.gz, profiles and traces.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "trainscope/config.h"
#include "trainscope/provenance.h"
#include "trainscope/reporter.h"
#include "trainscope/run_record.h"

namespace trainscope {

/// Why a matrix stopped before its last cell although its inputs were valid.
enum class MatrixAbort {
  kNone,
  kIo,        // a file of the run folder could not be written (disk full, folder removed): exit 5
  kInternal,  // a bug or an unexpected exception outside a run: exit 6
};

struct MatrixResult {
  Provenance provenance;
  std::vector<RunRecord> runs;   // finished and kept runs, in matrix order
  std::string run_dir;           // folder holding results.json, results.csv, checkpoints/
  bool any_failed = false;
  bool interrupted = false;
  MatrixAbort abort = MatrixAbort::kNone;
  std::string abort_reason;      // the error message when abort != kNone
};

/// For a caller that must end the process while a run hangs in its model (an interrupt's
/// deadline, tools/trainscope/interrupt.h): run_matrix sets `salvage` for its duration.
/// salvage_now(why) writes the run in progress, as measured up to the model call it waits in (a
/// training step's compute, an evaluation, inference after training: its steps, step times,
/// headline window, phases and telemetry so far), with status "interrupted" and `why` as its
/// failure_reason, to every reporter (results.json and .csv, the history, telemetry.csv.gz),
/// then finishes the reporters. It returns false, writing nothing, when no run is in progress or
/// the run is not waiting in its model within 5 s (it would finish by itself). Call it from
/// another thread, once, right before the process ends: the matrix's thread is left blocked.
struct MatrixRescue {
  std::mutex mu;
  std::function<bool(const std::string& why)> salvage;
  bool salvage_now(const std::string& why) {
    std::lock_guard<std::mutex> lock(mu);
    return salvage ? salvage(why) : false;
  }
};

/// Validates everything (config, devices, models, data, output folder) before the first step,
/// throwing trainscope::Error on bad input (nothing is written then); then runs each cell and
/// hands every record to `reporters` (trainscope/reporter.h; an empty list means one
/// ResultsFilesReporter, so a library caller always gets results.json). A run that fails (NaN
/// loss, out of memory, LibTorch error) is recorded as failed with its reason and the matrix goes
/// on; an I/O error writing the run folder or an unexpected exception stops it with
/// MatrixResult::abort set and the finished runs kept. `stop_requested` (may be null) ends the
/// matrix after the current step (SIGINT). `rescue` (may be null): see MatrixRescue.
MatrixResult run_matrix(const MatrixConfig& cfg, const std::vector<Reporter*>& reporters = {},
                        const std::atomic<bool>* stop_requested = nullptr, MatrixRescue* rescue = nullptr);

/// "cpu" plus "cuda:N" for each visible CUDA device, with names (for `trainscope devices`).
std::vector<std::pair<std::string, std::string>> list_devices();

/// Provenance of this process: host, CPU, GPUs, LibTorch/CUDA versions, build.
Provenance collect_provenance(const std::string& command_line, uint64_t seed);

}  // namespace trainscope

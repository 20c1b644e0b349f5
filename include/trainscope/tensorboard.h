// TensorBoard scalars of every run (docs/tensorboard.md): a Reporter (trainscope/reporter.h) that
// writes one TensorBoard event file per finished run, so `tensorboard --logdir DIR` shows
// training curves, throughput, phase times and the telemetry of each run.
//
// Where: <dir>/<run_id>/events.out.tfevents.<unix s>.<host>.<pid>.<n>, where dir is
// <run folder>/tensorboard by default, or <--tensorboard DIR>/<run folder name> when a folder is
// given (so several matrices can share one --logdir without mixing runs of the same run_id).
//
// Shapes and units (tags; units are in the names as in the run record, trainscope/run_record.h):
// * train/loss: the batch's training loss at every NaN check (RunRecord::loss_checks; the
//   trainer's only per-step host synchronisation), step = optimizer steps done.
// * epoch/train_loss, epoch/train_accuracy_pct, epoch/test_accuracy_pct, epoch/test_loss,
//   epoch/samples_per_s, epoch/time_s, epoch/energy_j: one point per epoch (EpochRecord), step =
//   optimizer steps done at the epoch's end, wall time = the epoch's end.
// * run/steady_samples_per_s, run/test_accuracy_pct, run/train_time_s and phases/<phase>_ms
//   (PhaseBreakdown: data, h2d, forward, backward, optimizer, step): one point at the run's last step.
// * telemetry/<device>/<metric> (trainscope/telemetry.h names): every sample inside the run's
//   window [start_ns, end_ns] of the run's telemetry device (gpu<N> or cpu) and of the host
//   ("cpu", "process"): util_pct, sm_activity_pct, power_w, temp_c, package_power_w, cpu_pct and
//   the energy counters (energy_j, package_energy_j, dram_energy_j) as joules since the run's
//   first reading. step = milliseconds since the run started; wall time = the sample's time.
// * Wall times are Unix seconds: matrix-clock ns + RunRecord::clock_origin_unix_ns.
// Values are float32 (TensorBoard's simple_value); absent measurements are left out, never 0.
//
// Errors: the event files are optional output, so a failure to write them (Error(kIo) from the
// file system, a telemetry file that cannot be read) is a notice through `notices` and the matrix
// carries on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainscope/reporter.h"
#include "trainscope/telemetry.h"

namespace trainscope {

/// One scalar point of a run.
struct TensorBoardScalar {
  std::string tag;
  int64_t step = 0;
  double wall_time_s = 0;  // Unix seconds
  double value = 0;
};

/// The scalars of one run (tags above), from its record and the telemetry series of its run
/// folder (trainscope/telemetry.h read_telemetry_series; points outside the run's window are left
/// out). Ordered by tag group: train, epoch, run, phases, telemetry.
std::vector<TensorBoardScalar> tensorboard_scalars(const RunRecord& r, const std::vector<CounterSeries>& telemetry);

/// Writes `scalars` as one event file in `dir` (created if needed): the file_version event
/// "brain.Event:2" first, then one event per (step, wall time) holding all its scalars. Returns
/// the file's path. Throws Error(kIo) naming the path.
std::string write_tensorboard_events(const std::string& dir, const std::vector<TensorBoardScalar>& scalars,
                                     const std::string& host);

/// The Reporter: writes each finished run's event file at run_finished (kept runs of --resume
/// already have theirs). `dir` "" = <run folder>/tensorboard.
class TensorBoardReporter final : public Reporter {
 public:
  TensorBoardReporter(std::string dir, Reporter* notices) : dir_(std::move(dir)), notices_(notices) {}
  void start(const Provenance& p, const std::string& run_dir, size_t planned_runs) override;
  void run_finished(const RunRecord& r) override;
  /// The folder that holds run `run_id`'s event files (after start).
  std::string run_folder(const std::string& run_id) const { return root_ + "/" + run_id; }

 private:
  std::string dir_, root_, run_dir_, host_;
  Reporter* notices_;
};

}  // namespace trainscope

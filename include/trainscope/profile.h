// Operator profiling of a training run: a scheduled window of steps, an operator table, a step
// breakdown, and one Chrome-trace-format timeline (Perfetto, chrome://tracing) per run.
//
// Schedule (the torch.profiler convention): steps are counted from the run's first step
// (0-based). The first `skip_first` steps are ignored (-1 = auto: resolve_profile_schedule puts
// the window at the end of the run, after the headline steps); then `repeat` cycles of `wait` idle steps,
// `warmup` steps (the recorder is on, its events are discarded, so start-up cost stays outside
// the window) and `active` recorded steps. repeat = 0 repeats the cycle until the run ends.
//
// Backends: with a CUDA LibTorch the window is recorded by Kineto (CPU operators, CUDA runtime
// calls, kernels, memcpy, memset); otherwise (Debian's 1.13, CPU builds) by at::RecordFunction
// callbacks plus a c10 memory reporter (CPU operators, thread, shapes, FLOPs, host memory).
//
// Times: matrix-clock nanoseconds (steady_clock since the matrix started,
// docs/design.md#one-clock);
// trace timestamps are microseconds with a nanosecond fraction. Memory: bytes. FLOPs: see
// workload/model.h op_flops (2 per multiply-accumulate of convolution, addmm, mm, bmm).
//
// Errors: finish() never throws for I/O; a file that cannot be written, a run shorter than the
// schedule or a trace cut at trace_max_bytes becomes a line in section["warnings"].
// Thread safety: one RunProfiler records at a time per process (RecordFunction callbacks and the
// Kineto profiler are process-wide); the hooks are called from the training thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainscope/config.h"
#include "trainscope/provenance.h"
#include "trainscope/run_record.h"
#include "trainscope/telemetry.h"

namespace trainscope {

enum class ProfileStepState { kSkip, kWait, kWarmup, kActive, kDone };
const char* to_string(ProfileStepState s);

/// State of global step `step` under the schedule of `c`.
ProfileStepState profile_step_state(const ProfileConfig& c, int64_t step);
/// Number of steps a run needs for the whole schedule (skip_first + repeat cycles); -1 when
/// repeat = 0 (open-ended).
int64_t profile_schedule_steps(const ProfileConfig& c);

/// The run's schedule with skip_first = -1 ("auto") resolved (docs/profiling.md#measurement-protocol):
/// the window's last step is the run's planned last step (`planned_steps`: epochs x steps per
/// epoch, or max_steps when smaller; a time budget is not foreseen), so every step before it
/// is free of the profiler. It never starts before warmup_steps + 1 (one headline step);
/// when the schedule does not fit, *note (optional) says what happens. An explicit
/// skip_first >= 0 is returned unchanged.
ProfileConfig resolve_profile_schedule(const ProfileConfig& c, int64_t warmup_steps, int64_t planned_steps,
                                       std::string* note = nullptr);
/// First step the schedule's recorder is on for (its warm-up or active), or -1 when none.
int64_t profile_first_touched_step(const ProfileConfig& c);

/// "kineto" when this build records CUDA devices through Kineto, else "record_function".
const char* profile_backend();

class RunProfiler {
 public:
  /// device: "cpu" or "cuda:N"; origin: the matrix clock's zero.
  RunProfiler(const ProfileConfig& cfg, std::string run_id, std::string device,
              std::chrono::steady_clock::time_point origin);
  ~RunProfiler();  // stops recording if still on
  RunProfiler(const RunProfiler&) = delete;
  RunProfiler& operator=(const RunProfiler&) = delete;

  // TrainHooks (train/trainer.h) forward here.
  void on_step_begin(int64_t step);
  void on_step_end(int64_t step);
  void on_phase_span(int64_t step, const char* phase, int64_t t0_ns, int64_t t1_ns);

  /// Stops recording (idempotent); called after the run, also when it failed.
  void stop();

  /// Builds the summaries and writes <run_dir>/profiles/<run_id>.ops.csv and
  /// <run_dir>/traces/<run_id>.trace.json.gz (plus <run_id>.pt.trace.json from Kineto when
  /// available). `counters` are telemetry series; only points inside the run's
  /// [rec.start_ns, rec.end_ns] go into the trace. Returns the record's profile section
  /// (trainscope/record_sections.h ProfileSection: backend, schedule, window, op_table,
  /// op_table_totals, step_breakdown, overhead, trace, files, warnings).
  /// `prov` (optional) heads the CSV and the trace (docs/design.md#provenance-first).
  ProfileSection finish(const std::string& run_dir, const RunRecord& rec, const std::vector<CounterSeries>& counters,
                        const Provenance* prov = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The top `top_n` operators of a profile section (by self CPU time, or self device time when
/// the run had device events) as a console table, then the section's warnings; "" when the
/// section has neither operators nor warnings.
std::string format_op_table(const ProfileSection& profile_section, int64_t top_n);

}  // namespace trainscope

// The profile section of a run record (trainscope/record_sections.h): the operator table and its
// totals, the step breakdown, GPU activity, the profiler's overhead and its files, filled by
// RunProfiler::finish (trainscope/profile.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/fields.h"  // Better, kLiteral, JsonText, OptD, OptI

namespace trainscope {

struct ProfileSchedule {
  int64_t skip_first = 0, wait = 0, warmup = 0, active = 0, repeat = 0;
  bool record_shapes = false, profile_memory = false, with_flops = false;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("skip_first", s.skip_first, Better::kNone);
    v("wait", s.wait, Better::kNone);
    v("warmup", s.warmup, Better::kNone);
    v("active", s.active, Better::kNone);
    v("repeat", s.repeat, Better::kNone);
    v("record_shapes", s.record_shapes, Better::kNone);
    v("profile_memory", s.profile_memory, Better::kNone);
    v("with_flops", s.with_flops, Better::kNone);
  }
};

struct ProfileWindowSpan {
  int64_t first_step = 0, last_step = 0;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("first_step", s.first_step, Better::kNone);
    v("last_step", s.last_step, Better::kNone);
  }
};

struct ProfileWindow {
  std::vector<ProfileWindowSpan> windows;
  int64_t active_steps = 0, run_steps = 0;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("windows", s.windows, Better::kNone);
    v("active_steps", s.active_steps, Better::kNone);
    v("run_steps", s.run_steps, Better::kNone);
  }
};

/// One operator (by name) over the profiled window; device_* absent without device events.
struct OpRow {
  std::string name;
  int64_t calls = 0;
  double cpu_total_us = 0, cpu_self_us = 0, cpu_self_pct = 0;
  OptD device_total_us, device_self_us, device_self_pct;
  int64_t mem_alloc_bytes = 0, mem_freed_bytes = 0, mem_net_bytes = 0;
  OptD flops, tflops_per_s;   // FLOPs as counted by workload/model.h op_flops
  std::string input_shapes;   // the most frequent shapes ("" when not recorded)
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("name", s.name, Better::kNone);
    v("calls", s.calls, Better::kNone);
    v("cpu_total_us", s.cpu_total_us, Better::kNone);
    v("cpu_self_us", s.cpu_self_us, Better::kNone);
    v("cpu_self_pct", s.cpu_self_pct, Better::kNone);
    v("device_total_us", s.device_total_us, Better::kNone);
    v("device_self_us", s.device_self_us, Better::kNone);
    v("device_self_pct", s.device_self_pct, Better::kNone);
    v("mem_alloc_bytes", s.mem_alloc_bytes, Better::kNone);
    v("mem_freed_bytes", s.mem_freed_bytes, Better::kNone);
    v("mem_net_bytes", s.mem_net_bytes, Better::kNone);
    v("flops", s.flops, Better::kNone);
    v("tflops_per_s", s.tflops_per_s, Better::kNone);
    v("input_shapes", s.input_shapes, Better::kNone);
  }
};

struct OpTableTotals {
  int64_t operators = 0, events = 0, threads = 0;
  double cpu_self_us = 0, cpu_busy_us = 0;
  OptD device_busy_sum_us;
  int64_t mem_alloc_outside_ops_bytes = 0, mem_freed_outside_ops_bytes = 0;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("operators", s.operators, Better::kNone);
    v("events", s.events, Better::kNone);
    v("cpu_self_us", s.cpu_self_us, Better::kNone);
    v("cpu_busy_us", s.cpu_busy_us, Better::kNone);
    v("device_busy_sum_us", s.device_busy_sum_us, Better::kNone);
    v("mem_alloc_outside_ops_bytes", s.mem_alloc_outside_ops_bytes, Better::kNone);
    v("mem_freed_outside_ops_bytes", s.mem_freed_outside_ops_bytes, Better::kNone);
    v("threads", s.threads, Better::kNone);
  }
};

/// Mean ms per phase over the profiled steps (host spans) and their shares of the phase sum.
struct PhaseMs {
  OptD data_ms, h2d_ms, forward_ms, backward_ms, optimizer_ms, step_ms;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("data_ms", s.data_ms, Better::kNone);
    v("h2d_ms", s.h2d_ms, Better::kNone);
    v("forward_ms", s.forward_ms, Better::kNone);
    v("backward_ms", s.backward_ms, Better::kNone);
    v("optimizer_ms", s.optimizer_ms, Better::kNone);
    v("step_ms", s.step_ms, Better::kNone);
  }
};
struct PhasePct {
  OptD data_pct, h2d_pct, forward_pct, backward_pct, optimizer_pct;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("data_pct", s.data_pct, Better::kNone);
    v("h2d_pct", s.h2d_pct, Better::kNone);
    v("forward_pct", s.forward_pct, Better::kNone);
    v("backward_pct", s.backward_pct, Better::kNone);
    v("optimizer_pct", s.optimizer_pct, Better::kNone);
  }
};

/// The trainer's phase means (trainscope/run_record.h PhaseBreakdown) copied into the profile.
struct DevicePhases {
  double data_ms = 0, h2d_ms = 0, forward_ms = 0, backward_ms = 0, optimizer_ms = 0, step_ms = 0;
  int64_t steps = 0;
  std::string method;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("data_ms", s.data_ms, Better::kNone);
    v("h2d_ms", s.h2d_ms, Better::kNone);
    v("forward_ms", s.forward_ms, Better::kNone);
    v("backward_ms", s.backward_ms, Better::kNone);
    v("optimizer_ms", s.optimizer_ms, Better::kNone);
    v("step_ms", s.step_ms, Better::kNone);
    v("steps", s.steps, Better::kNone);
    v("method", s.method, Better::kNone);
  }
};

/// One GPU's activity over the profiled window (device events).
struct GpuActivity {
  double window_ms = 0, busy_ms = 0, idle_ms = 0, busy_pct = 0, idle_pct = 0;
  std::map<std::string, double> kernel_ms_by_category, kernel_pct_by_category;  // compute, memcpy_h2d, ...
  int64_t kernels = 0;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("window_ms", s.window_ms, Better::kNone);
    v("busy_ms", s.busy_ms, Better::kNone);
    v("idle_ms", s.idle_ms, Better::kNone);
    v("busy_pct", s.busy_pct, Better::kNone);
    v("idle_pct", s.idle_pct, Better::kNone);
    v("kernel_ms_by_category", s.kernel_ms_by_category, Better::kNone);
    v("kernel_pct_by_category", s.kernel_pct_by_category, Better::kNone);
    v("kernels", s.kernels, Better::kNone);
  }
};

struct StepBreakdown {
  std::string device;
  int64_t profiled_steps = 0;
  PhaseMs phases_host_ms;
  PhasePct phases_pct;  // share of the sum of the five phases, sums to 100 %
  std::string phases_method;
  std::optional<DevicePhases> phases_device_ms;
  std::optional<std::map<std::string, GpuActivity>> gpu;  // "cuda:0" -> activity; absent on the CPU
  std::string gpu_absent_reason;
  /// `measure --profile-steps` (docs/measure.md#a-profiled-window): mean ms per profiled step in
  /// each of the profiler plugin's categories (trainscope/trace_analysis.h Category, keyed by
  /// category_key: "kernel", ..., "other"; they sum to the mean step). Absent for `run`.
  std::optional<std::map<std::string, double>> trace_categories_ms;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("device", s.device, Better::kNone);
    v("profiled_steps", s.profiled_steps, Better::kNone);
    v("phases_host_ms", s.phases_host_ms, Better::kNone);
    v("phases_pct", s.phases_pct, Better::kNone);
    v("phases_method", s.phases_method, Better::kNone);
    v("phases_device_ms", s.phases_device_ms, Better::kNone);
    v("gpu", s.gpu, Better::kNone);
    v("gpu_absent_reason", s.gpu_absent_reason, Better::kNone);
    v("trace_categories_ms", s.trace_categories_ms, Better::kNone);
  }
};

/// Mean step time inside the profiled windows against steps outside (the profiler's cost).
struct ProfilerOverhead {
  int64_t window_steps = 0, outside_steps = 0;
  OptD window_step_ms_mean, outside_step_ms_mean, window_step_ms_median, outside_step_ms_median, overhead_pct;
  std::string overhead_absent_reason, method;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("window_steps", s.window_steps, Better::kNone);
    v("outside_steps", s.outside_steps, Better::kNone);
    v("window_step_ms_mean", s.window_step_ms_mean, Better::kNone);
    v("outside_step_ms_mean", s.outside_step_ms_mean, Better::kNone);
    v("window_step_ms_median", s.window_step_ms_median, Better::kNone);
    v("outside_step_ms_median", s.outside_step_ms_median, Better::kNone);
    v("overhead_pct", s.overhead_pct, Better::kNone);
    v("overhead_absent_reason", s.overhead_absent_reason, Better::kNone);
    v("method", s.method, Better::kNone);
  }
};

struct TraceInfo {
  int64_t bytes_uncompressed = 0, events = 0, dropped_events = 0, max_bytes = 0;
  bool truncated = false;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("bytes_uncompressed", s.bytes_uncompressed, Better::kNone);
    v("events", s.events, Better::kNone);
    v("dropped_events", s.dropped_events, Better::kNone);
    v("truncated", s.truncated, Better::kNone);
    v("max_bytes", s.max_bytes, Better::kNone);
  }
};

/// Files of the profile, relative to the run folder ("" when not written).
struct ProfileFiles {
  std::string ops_csv, trace;
  std::vector<std::string> kineto_traces;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("ops_csv", s.ops_csv, Better::kNone);
    v("trace", s.trace, Better::kNone);
    v("kineto_traces", s.kineto_traces, Better::kNone);
  }
};

/// The record's profile section (trainscope/profile.h RunProfiler::finish).
struct ProfileSection {
  std::string backend;  // "kineto" | "record_function"
  ProfileSchedule schedule;
  ProfileWindow window;
  std::vector<OpRow> op_table;  // sorted by self CPU time, then self device time
  OpTableTotals op_table_totals;
  StepBreakdown step_breakdown;
  ProfilerOverhead overhead;
  std::optional<TraceInfo> trace;
  ProfileFiles files;
  std::vector<std::string> warnings;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("backend", s.backend, Better::kNone);
    v("schedule", s.schedule, Better::kNone);
    v("window", s.window, Better::kNone);
    v("op_table", s.op_table, Better::kNone);
    v("op_table_totals", s.op_table_totals, Better::kNone);
    v("step_breakdown", s.step_breakdown, Better::kNone);
    v("overhead", s.overhead, Better::kNone);
    v("trace", s.trace, Better::kNone);
    v("files", s.files, Better::kNone);
    v("warnings", s.warnings, Better::kNone);
  }
};

}  // namespace trainscope

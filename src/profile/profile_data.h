// Internal event model of the operator profiler (no LibTorch headers: the analysis and the
// trace writer are plain C++ and are tested with synthetic events).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trainscope/record_sections.h"
#include "trainscope/telemetry.h"

namespace trainscope::profile {

/// A host-side operator call (aten op, autograd node, user scope, CUDA runtime call).
struct OpEvent {
  std::string name;
  int64_t t0_ns = 0, t1_ns = 0;   // matrix clock
  uint64_t tid = 0;               // thread (system tid on the RecordFunction path)
  double flops = 0;               // 0 = not counted
  std::string shapes;             // "[[64, 1, 28, 28], [32, 1, 3, 3]]" when recorded
  int64_t correlation = 0;        // Kineto: the op's id that device events link to
  int64_t linked = 0;             // Kineto: for runtime calls, the op they belong to
  std::string category = "cpu_op";  // Kineto's "cat": cpu_op, cuda_runtime, user_annotation
};

enum class DeviceCategory { kCompute, kMemcpyH2D, kMemcpyD2H, kMemcpyD2D, kMemset, kCommunication };
const char* to_string(DeviceCategory c);
/// Category of a device activity from its Kineto/CUPTI name ("Memcpy HtoD (Pinned -> Device)",
/// "Memset (Device)", "ncclDevKernel_AllReduce...", anything else = compute kernel).
DeviceCategory classify_device_event(const std::string& name);

/// A device activity (kernel, memcpy, memset).
struct DeviceEvent {
  std::string name;
  int64_t t0_ns = 0, t1_ns = 0;
  int device = 0;                 // CUDA index
  int64_t stream = 0;
  int64_t linked = 0;             // correlation of the launching OpEvent (0: unknown)
  int64_t bytes = 0;              // memcpy/memset size when known
  /// Kineto: CUPTI correlation id, shared with the runtime call that launched it (an OpEvent of
  /// category "cuda_runtime" with the same `correlation`); 0 = unknown. Keys the trace's flows.
  int64_t correlation = 0;
};

/// One allocator report: bytes > 0 allocated, < 0 freed.
struct MemEvent {
  int64_t t_ns = 0;
  uint64_t tid = 0;
  int64_t bytes = 0;
  std::string device = "cpu";
};

struct PhaseSpan {
  int64_t step = 0;
  std::string phase;              // data, h2d, forward, backward, optimizer
  int64_t t0_ns = 0, t1_ns = 0;
};

struct StepSpan {
  int64_t step = 0;
  int64_t t0_ns = 0, t1_ns = 0;   // from the data span's start to the optimizer span's end
  bool profiled = false;          // inside an active window
  bool warmup = false;
};

/// Everything a run's profiling recorded.
struct ProfileData {
  std::vector<OpEvent> ops;
  std::vector<DeviceEvent> device_events;
  std::vector<MemEvent> mem_events;
  std::vector<PhaseSpan> phases;  // active steps only
  std::vector<StepSpan> steps;    // every step of the run
  uint64_t main_tid = 0;          // the training thread (phase slices go there)
  int64_t pid = 0;
  std::map<uint64_t, std::string> thread_names;
};

// ---- analysis (op_table.cpp) ----

/// A slice after nesting: index into the source list, clipped end, depth, parent.
struct Nested {
  size_t index = 0;
  int64_t t0_ns = 0, t1_ns = 0;
  int parent = -1;                // index into the nested vector, same thread
  bool clipped = false;
};
/// Orders a thread's intervals into a strict nesting: sorted by (start, longer first); a slice
/// that ends after its parent is clipped to the parent's end. `rank` breaks ties (lower = outer).
std::vector<Nested> nest_intervals(const std::vector<std::pair<int64_t, int64_t>>& iv, const std::vector<int>& rank);

/// Operator table rows (one per name, trainscope/record_sections.h OpRow), sorted by self CPU
/// time then self device time. `totals` receives Σ self CPU, busy CPU (Σ per-thread union),
/// Σ device self, memory outside ops.
std::vector<OpRow> build_op_table(const ProfileData& d, OpTableTotals* totals);

/// Step breakdown: phases (mean ms and share of the step over profiled steps), and per GPU the
/// kernel time by category and busy/idle time over the profiled window.
StepBreakdown build_step_breakdown(const ProfileData& d, const std::string& device,
                                   const std::optional<DevicePhases>& device_phases);

/// Mean step time inside active windows against steps outside (skip_first excluded).
ProfilerOverhead build_overhead(const ProfileData& d, int64_t skip_first);

// ---- outputs (trace_writer.cpp) ----

struct TraceOptions {
  int64_t max_bytes = 64ll << 20;   // uncompressed size cap
  int64_t t0_ns = 0, t1_ns = 0;     // counter points outside are dropped
  nlohmann::json metadata;          // written as "trainscope" at the top
  std::string device;               // the run's device, for process naming
  /// Data-parallel runs: {"backend", "rank", "world_size"}, written as the top-level
  /// "distributedInfo" that Holistic Trace Analysis and Perfetto read (docs/distributed.md);
  /// null otherwise. NCCL kernels keep their names ("ncclDevKernel_AllReduce..."), by which
  /// HTA classifies them as communication.
  nlohmann::json distributed_info;
};
struct TraceResult {
  bool ok = false;
  bool truncated = false;
  int64_t bytes = 0;                // uncompressed bytes written
  int64_t events = 0, dropped = 0;
  int64_t flows = 0;                // launch-to-kernel flows ("ac2g" s/f pairs) written
  std::string error;
};
/// Writes a gzip Chrome trace as a stream. On CUDA runs each runtime call in `d` with device
/// events gets a launch-to-kernel flow in Kineto's "ac2g" convention (pytorch/kineto
/// libkineto/src/output_json.cpp): ph "s" at the runtime call's start on its thread, ph "f" with
/// bp "e" at its earliest device event's start on that stream, id = the correlation id; written
/// after every slice, so a size cap drops flows first.
TraceResult write_trace(const std::string& path, const ProfileData& d, const std::vector<CounterSeries>& counters,
                        const TraceOptions& o);

/// The op table as CSV text with "# key: value" provenance lines first; columns are the fields
/// of OpRow.
std::string op_table_csv(const std::vector<OpRow>& rows, const nlohmann::json& provenance);

}  // namespace trainscope::profile

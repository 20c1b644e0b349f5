// Analysis of PyTorch profiler traces (`*.pt.trace.json[.gz]`) written by the user's own program
// (`trainscope analyze`, docs/analyze.md). Torch-free: it reads the trace file, never LibTorch.
//
// Two schemas are read, both as a stream, in bounded memory: the JSON document is never held;
// what adds up is summed as events pass, and the compact records of the parts that join or order
// events are sorted within AnalyzeOptions::memory_budget_bytes (the rest in a temporary file), so
// memory does not grow with the trace (only with its steps, names, threads and streams):
//   * "kineto": PyTorch 2.x (Kineto) writes an object with `schemaVersion` (1), `traceEvents`,
//     `deviceProperties` and `distributedInfo` (rank, world size); events carry `cat`
//     (cpu_op, user_annotation, cuda_runtime, kernel, gpu_memcpy, gpu_memset, ...).
//   * "legacy": PyTorch built without Kineto (Debian's torch 1.13) writes a bare array of "X"
//     events without `cat`; pid "CPU functions" are operators, pid "CUDA functions" kernels.
// Times in the files are microseconds (with a nanosecond fraction in Kineto's); every figure
// here is integer nanoseconds.
//
// Errors: a file that cannot be opened, is not JSON, is truncated or has another schema throws
// Error(kDataFormat) (kIo for an unreadable file) naming the file and the byte offset in the
// (decompressed) text, e.g. "trace.pt.trace.json: truncated at byte 1834 ...".
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainscope::trace {

/// The step-time categories of TensorBoard's PyTorch profiler plugin ("Overview" page), in its
/// priority order: a moment of a step belongs to the first category active then, and what no
/// category covers is Other (kineto tb_plugin, torch_tb_profiler/profiler/overall_parser.py and
/// step_parser.py). So the categories of a step sum to its duration exactly.
///   Kernel: GPU kernels other than communication; Memcpy, Memset: GPU copies and fills;
///   Communication: kernels whose name contains "nccl" (HTA's rule; the plugin matches them by
///   the External id of nccl:* operators, which legacy traces lack); Runtime: CUDA runtime and
///   driver calls; DataLoader: operators "enumerate(DataLoader)#*.__next__"; CPU Exec: other
///   operators (cpu_op, and "python" events); Other: the rest of the step.
enum class Category : int { kKernel, kMemcpy, kMemset, kCommunication, kRuntime, kDataLoader, kCpuExec, kOther };
inline constexpr int kCategoryCount = 8;
/// "Kernel", "Memcpy", "Memset", "Communication", "Runtime", "DataLoader", "CPU Exec", "Other".
const char* category_name(Category c);
/// "kernel", "memcpy", ..., "cpu_exec", "other" (JSON keys).
const char* category_key(Category c);

/// One step: a `ProfilerStep#N` annotation, its span extended to the end of the GPU work that
/// the step's runtime calls launched and started no earlier than the previous step's end (the
/// plugin's step_parser.py, _update_steps_consider_device_side, including its removal of tail
/// steps that launched fewer than 80 % of the previous step's GPU work). A trace without step
/// annotations has one step "0" from its first to its last operator.
struct Step {
  std::string name;  // "ProfilerStep#5" (or "0")
  int64_t start_ns = 0, end_ns = 0;
  std::array<int64_t, kCategoryCount> category_ns{};  // sums to end_ns - start_ns
  int64_t duration_ns() const { return end_ns - start_ns; }
};

/// Operators (cpu_op and legacy CPU events, including DataLoader, excluding step annotations)
/// aggregated by name. Self time: the operator's duration minus that of the operators nested
/// directly in it on its thread. Device time: the kernels, copies and fills that carry the
/// operator instance's External id (Kineto only; the innermost operator that launched them).
struct OperatorRow {
  std::string name;
  int64_t calls = 0;
  int64_t self_ns = 0, total_ns = 0, device_ns = 0;
};

/// GPU kernels aggregated by name (copies and fills are not kernels here).
struct KernelRow {
  std::string name;
  int64_t calls = 0;
  int64_t total_ns = 0, min_ns = 0, max_ns = 0;
};

/// GPU idle time on one stream, split as Holistic Trace Analysis does
/// (hta/analyzers/breakdown_analysis.py, _analyze_idle_time_for_stream): for each GPU event
/// (kernel, copy, fill) after the first on a stream, the gap since the previous one ended is
///   host wait   when its runtime call started after the previous event ended (the CPU had not
///               launched it yet),
///   kernel wait else when the gap is shorter than the consecutive-kernel delay (HTA's 30 ns),
///   other       else.
/// Gaps of overlapping events (zero or negative) count as no idle time (HTA would add a
/// negative interval). Events without a runtime call (no matching correlation) are never host
/// wait.
struct StreamIdle {
  int device = 0;
  int64_t stream = 0;
  int64_t busy_ns = 0;  // union of the stream's GPU events
  int64_t host_wait_ns = 0, kernel_wait_ns = 0, other_ns = 0;
  int64_t idle_ns() const { return host_wait_ns + kernel_wait_ns + other_ns; }
};

/// Communication against computation on the GPU, over the steps: computation is the union of
/// non-communication kernels, communication the union of communication kernels, overlap their
/// intersection (the plugin's StepCommunicationCosts; overlap_pct as HTA's
/// get_comm_comp_overlap: the share of communication time during which computation runs).
struct CommOverlap {
  int64_t computation_ns = 0, communication_ns = 0, overlap_ns = 0;
  int64_t other_ns = 0;  // steps' time minus computation and communication (overlap once)
  double overlap_pct() const { return communication_ns > 0 ? 100.0 * overlap_ns / communication_ns : 0.0; }
};

struct AnalyzeOptions {
  int top = 15;                         // rows of the operator and kernel tables
  int64_t consecutive_kernel_delay_ns = 30;  // HTA's default
  /// Memory for the event records the analysis sorts (operators by thread, GPU events by
  /// stream and by correlation and External id, each category's time ranges), bytes; beyond it
  /// they go to a temporary file in $TMPDIR (or /tmp): about 0.4 MB per MB of trace at the
  /// default, 32 MiB (docs/analyze.md#memory). Positive, else Error(kInvalidArgument).
  int64_t memory_budget_bytes = int64_t{32} << 20;
};

/// The analysis of one trace file (one rank).
struct TraceAnalysis {
  std::string path;
  std::string schema;  // "kineto" or "legacy"
  std::optional<int> rank, world_size;
  std::string backend;               // distributedInfo.backend ("nccl"), may be empty
  std::vector<std::string> devices;  // deviceProperties names, by position
  int64_t events = 0;                // duration events read
  std::vector<Step> steps;
  std::array<int64_t, kCategoryCount> total_ns{};  // over the steps
  int64_t steps_ns = 0;                            // sum of the steps' durations
  std::vector<OperatorRow> operators;              // top `top` by self time, then name
  std::vector<KernelRow> kernels;                  // top `top` by total time, then name
  int64_t kernel_ns = 0;                           // all kernels, summed (not a union)
  std::vector<StreamIdle> idle;                    // per GPU stream, empty without GPU events
  std::optional<CommOverlap> overlap;              // only when communication kernels exist
  std::vector<std::string> notes;                  // what was assumed or left out
  /// The most event records held in memory at once by the analysis's sorters: bounded by about
  /// memory_budget_bytes however large the trace (src/trace/spill.h gives the bound per sorter).
  int64_t max_events_held = 0;
};

/// Reads and analyses one trace (plain or gzip, recognised by its bytes). Throws as above.
TraceAnalysis analyze_trace(const std::string& path, const AnalyzeOptions& options = {});

/// The trace files named by `inputs`: a file as is; a folder's `*.pt.trace.json` and
/// `*.pt.trace.json.gz`, recursively, sorted. Throws Error(kIo) for a path that does not exist
/// and Error(kInvalidArgument) for a folder without traces.
std::vector<std::string> find_traces(const std::vector<std::string>& inputs);

/// Renderings of one or more analyses: console text (a step table with the categories, the
/// top operators and kernels, idle time, overlap), Markdown (the same tables), and JSON
/// (schema "trainscope.analyze/1", every figure in ns; docs/analyze.md#json).
std::string render_text(const std::vector<TraceAnalysis>& analyses);
std::string render_markdown(const std::vector<TraceAnalysis>& analyses);
std::string render_json(const std::vector<TraceAnalysis>& analyses);

}  // namespace trainscope::trace

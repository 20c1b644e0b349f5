// The compact event the trace reader hands on (include/trainscope/trace_analysis.h): one record
// per duration event that an analysis uses, names interned once. The JSON text is never held;
// the analysis keeps of the events what streams.h says.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace trainscope::trace {

/// What an event is for the analysis (from its `cat`, or its pid in a legacy trace).
enum class Kind : uint8_t {
  kOperator,    // cpu_op / operator, legacy "CPU functions"
  kDataLoader,  // an operator "enumerate(DataLoader)#*.__next__"
  kPython,      // cat "python": CPU Exec for the breakdown, not an operator row
  kStep,        // "ProfilerStep#N" (cpu_op or user_annotation)
  kRuntime,     // cuda_runtime, cuda_driver, runtime, *_runtime
  kKernel,
  kMemcpy,
  kMemset,
};

inline bool is_gpu(Kind k) { return k == Kind::kKernel || k == Kind::kMemcpy || k == Kind::kMemset; }

struct Event {
  int64_t ts_ns = 0, dur_ns = 0;
  int64_t correlation = -1;  // args.correlation (runtime call <-> GPU event), -1: none
  int64_t external_id = -1;  // args["External id"] (operator <-> its runtime calls and GPU work)
  int64_t stream = -1;       // args.stream of a GPU event
  uint32_t name = 0;         // index into TraceInfo::names
  uint32_t thread = 0;       // index of (pid, tid) into TraceInfo::threads
  int32_t device = -1;       // args.device of a GPU event
  Kind kind = Kind::kOperator;
  int64_t end_ns() const { return ts_ns + dur_ns; }
};

/// What a trace says besides its events, and the names its events refer to by index.
struct TraceInfo {
  std::string schema;  // "kineto" or "legacy"
  std::optional<int> rank, world_size;
  std::string backend;
  std::vector<std::string> devices;
  std::vector<std::string> names;    // interned event names (not the steps' ProfilerStep#N)
  std::vector<std::string> threads;  // "pid/tid"

  uint32_t intern_name(const std::string& s) { return intern(s, names, name_ids_); }
  uint32_t intern_thread(const std::string& s) { return intern(s, threads, thread_ids_); }

 private:
  static uint32_t intern(const std::string& s, std::vector<std::string>& table,
                         std::unordered_map<std::string, uint32_t>& ids) {
    auto [it, added] = ids.emplace(s, static_cast<uint32_t>(table.size()));
    if (added) table.push_back(s);
    return it->second;
  }
  std::unordered_map<std::string, uint32_t> name_ids_, thread_ids_;
};

/// Receives each event the analysis uses, in file order, with its name's text (a step's name is
/// not interned: its Event::name is kNotInterned).
using EventSink = std::function<void(const Event&, const std::string& name)>;
inline constexpr uint32_t kNotInterned = UINT32_MAX;

/// Reads `path` (plain or gzip) as a stream into `info` and `sink`. Throws Error(kDataFormat)
/// for malformed, truncated or unknown-schema input (file and byte offset named), Error(kIo)
/// when the file cannot be opened.
void read_events(const std::string& path, TraceInfo& info, const EventSink& sink);

}  // namespace trainscope::trace

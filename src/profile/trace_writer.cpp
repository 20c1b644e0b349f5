// Chrome trace event format writer (Perfetto, chrome://tracing), streamed through zlib.
// Naming follows Kineto's output (pytorch/kineto src/output_json.cpp): host process named by
// the program, threads "thread <tid> (<name>)", GPUs as processes "GPU <n>" with one thread per
// "stream <id>", categories cpu_op / cuda_runtime / user_annotation / kernel / gpu_memcpy /
// gpu_memset.
#include <fmt/format.h>
#include <zlib.h>


#include <algorithm>
#include <cstdio>
#include <map>

#include "profile/profile_data.h"
#include "trainscope/fs.h"

namespace trainscope::profile {

namespace {

std::string jstr(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Microseconds with a nanosecond fraction: "1234.567".
std::string ts_us(int64_t ns) {
  if (ns < 0) ns = 0;
  return fmt::format("{}.{:03}", ns / 1000, ns % 1000);
}

// Streams into PATH.tmp.<pid> and renames it to PATH on a successful close (the atomic-write
// convention of trainscope/fs.h, whose leftovers the matrix removes): a reader or a killed
// process never leaves a half-written trace under the final name.
class GzStream {
 public:
  GzStream(const std::string& path, int64_t cap)
      : cap_(cap), path_(path), tmp_(temporary_path(path)) {
    f_ = gzopen(tmp_.c_str(), "wb6");
  }
  ~GzStream() {
    if (f_) {  // not closed by the writer: an error path, the partial file is dropped
      gzclose(f_);
      std::remove(tmp_.c_str());
    }
  }
  bool ok() const { return f_ != nullptr && !failed_; }
  // Writes an event unless that would pass the cap (reserve keeps room for the closing text).
  bool event(const std::string& ev, int64_t reserve) {
    if (full_) {
      ++dropped_;
      return false;
    }
    int64_t add = static_cast<int64_t>(ev.size()) + (events_ ? 2 : 1);
    if (bytes_ + add + reserve > cap_) {
      full_ = true;
      ++dropped_;
      return false;
    }
    raw(events_ ? ",\n" : "\n");
    raw(ev);
    ++events_;
    return true;
  }
  void raw(const std::string& s) {
    if (!f_ || s.empty()) return;
    if (gzwrite(f_, s.data(), static_cast<unsigned>(s.size())) != static_cast<int>(s.size())) failed_ = true;
    bytes_ += static_cast<int64_t>(s.size());
  }
  bool close() {
    if (!f_) return false;
    bool ok = gzclose(f_) == Z_OK && !failed_;
    f_ = nullptr;
    if (ok) ok = std::rename(tmp_.c_str(), path_.c_str()) == 0;
    if (!ok) std::remove(tmp_.c_str());
    return ok;
  }
  int64_t bytes_ = 0, events_ = 0, dropped_ = 0;
  bool full_ = false;

 private:
  gzFile f_ = nullptr;
  int64_t cap_;
  std::string path_, tmp_;
  bool failed_ = false;
};

std::string meta(const char* what, int64_t pid, int64_t tid, const std::string& args) {
  return fmt::format(R"({{"name": "{}", "ph": "M", "ts": 0, "pid": {}, "tid": {}, "args": {}}})", what, pid, tid, args);
}

std::string slice(const std::string& name, const char* cat, int64_t pid, int64_t tid, int64_t t0, int64_t t1,
                  const std::string& args) {
  return fmt::format(R"({{"ph": "X", "cat": "{}", "name": {}, "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {}}})",
                     cat, jstr(name), pid, tid, ts_us(t0), ts_us(t1 - t0), args);
}

struct Slice {
  int64_t t0, t1;
  int rank;           // 0 step, 1 phase, 2 op
  size_t src;         // index into steps / phases / ops
};

// Appends events to the stream, keeping room for the closing text.
struct Emit {
  GzStream& gz;
  int64_t reserve;
  bool operator()(const std::string& ev) const { return gz.event(ev, reserve); }
};

// Device events grouped by (device, stream): one trace thread each.
using StreamIndex = std::map<std::pair<int, int64_t>, std::vector<size_t>>;

StreamIndex streams_of(const ProfileData& d) {
  StreamIndex by_stream;
  for (size_t i = 0; i < d.device_events.size(); ++i)
    by_stream[{d.device_events[i].device, d.device_events[i].stream}].push_back(i);
  return by_stream;
}

// The JSON object head (schema, time unit, trainscope metadata), left open for traceEvents.
void write_head(GzStream& gz, const TraceOptions& o) {
  nlohmann::json head = nlohmann::json::object();
  head["schemaVersion"] = 1;
  head["displayTimeUnit"] = "ms";
  head["trainscope"] = o.metadata;
  if (!o.distributed_info.is_null()) head["distributedInfo"] = o.distributed_info;
  std::string h = head.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  h.pop_back();  // reopen the object to append traceEvents
  gz.raw(h + ", \"traceEvents\": [");
}

// The host process and its threads (the training thread first).
void write_host_metadata(const Emit& emit, const ProfileData& d) {
  const int64_t pid = d.pid;
  std::map<uint64_t, bool> tids;
  tids[d.main_tid] = true;
  for (const auto& op : d.ops) tids[op.tid] = true;
  emit(meta("process_name", pid, 0, R"({"name": "trainscope"})"));
  emit(meta("process_labels", pid, 0, R"({"labels": "CPU"})"));
  emit(meta("process_sort_index", pid, 0, R"({"sort_index": -1})"));
  for (const auto& [tid, _] : tids) {
    auto it = d.thread_names.find(tid);
    std::string tn = fmt::format("thread {} ({})", tid, it != d.thread_names.end() ? it->second
                                                                                    : (tid == d.main_tid ? "train" : "worker"));
    emit(meta("thread_name", pid, static_cast<int64_t>(tid), fmt::format(R"({{"name": {}}})", jstr(tn))));
    emit(meta("thread_sort_index", pid, static_cast<int64_t>(tid),
              fmt::format(R"({{"sort_index": {}}})", tid == d.main_tid ? 0 : 1)));
  }
}

// One process per GPU ("GPU <n>"), one thread per stream ("stream <id>").
void write_gpu_metadata(const Emit& emit, const StreamIndex& by_stream) {
  std::map<int, bool> gpus;
  for (const auto& [k, _] : by_stream) gpus[k.first] = true;
  for (const auto& [dev, _] : gpus) {
    emit(meta("process_name", dev, 0, fmt::format(R"({{"name": "GPU {}"}})", dev)));
    emit(meta("process_labels", dev, 0, fmt::format(R"({{"labels": "GPU {}"}})", dev)));
    emit(meta("process_sort_index", dev, 0, fmt::format(R"({{"sort_index": {}}})", 1000 + dev)));
  }
  for (const auto& [k, _] : by_stream)
    emit(meta("thread_name", k.first, k.second, fmt::format(R"({{"name": "stream {}"}})", k.second)));
}

// Telemetry: one process per telemetry device (NVML and CUDA numbering may differ); returns
// each device's pid.
std::map<std::string, int64_t> write_telemetry_metadata(const Emit& emit, const std::vector<CounterSeries>& counters) {
  std::map<std::string, int64_t> tel_pid;
  for (const auto& s : counters)
    if (!tel_pid.count(s.device)) {
      int64_t p = 1000000 + static_cast<int64_t>(tel_pid.size());
      tel_pid[s.device] = p;
      emit(meta("process_name", p, 0, fmt::format(R"({{"name": {}}})", jstr("Telemetry " + s.device))));
      emit(meta("process_sort_index", p, 0, fmt::format(R"({{"sort_index": {}}})", 2000 + tel_pid.size())));
    }
  return tel_pid;
}

// The slices of each host thread. On the training thread steps > phases > ops, and an op never
// crosses a step/phase boundary (clipped at the first edge inside it).
std::map<uint64_t, std::vector<Slice>> host_slices(const ProfileData& d) {
  std::map<uint64_t, std::vector<Slice>> threads;
  auto& main = threads[d.main_tid];
  std::vector<int64_t> bounds;
  for (size_t i = 0; i < d.steps.size(); ++i)
    if (d.steps[i].profiled) {
      main.push_back({d.steps[i].t0_ns, d.steps[i].t1_ns, 0, i});
      bounds.push_back(d.steps[i].t0_ns);
      bounds.push_back(d.steps[i].t1_ns);
    }
  for (size_t i = 0; i < d.phases.size(); ++i) {
    main.push_back({d.phases[i].t0_ns, d.phases[i].t1_ns, 1, i});
    bounds.push_back(d.phases[i].t0_ns);
    bounds.push_back(d.phases[i].t1_ns);
  }
  std::sort(bounds.begin(), bounds.end());
  for (size_t i = 0; i < d.ops.size(); ++i) {
    const auto& op = d.ops[i];
    int64_t t1 = std::max(op.t0_ns, op.t1_ns);
    if (op.tid == d.main_tid) {
      auto b = std::upper_bound(bounds.begin(), bounds.end(), op.t0_ns);
      if (b != bounds.end() && *b < t1) t1 = *b;  // would cross a step/phase edge: clip
    }
    threads[op.tid].push_back({op.t0_ns, t1, 2, i});
  }
  return threads;
}

// The event of one nested host slice (a step, a phase or an operator).
std::string host_slice_event(const ProfileData& d, uint64_t tid, const Slice& s, const Nested& n) {
  const int64_t pid = d.pid, t = static_cast<int64_t>(tid);
  std::string clipped = n.clipped || n.t1_ns != s.t1 ? R"(, "clipped": true)" : "";
  if (s.rank == 0) {
    const auto& st = d.steps[s.src];
    return slice(fmt::format("ProfilerStep#{}", st.step), "user_annotation", pid, t, n.t0_ns, n.t1_ns,
                 fmt::format(R"({{"step": {}{}}})", st.step, clipped));
  }
  if (s.rank == 1) {
    const auto& ph = d.phases[s.src];
    return slice(ph.phase, "user_annotation", pid, t, n.t0_ns, n.t1_ns, fmt::format(R"({{"step": {}{}}})", ph.step, clipped));
  }
  const auto& op = d.ops[s.src];
  std::string args = fmt::format(R"({{"External id": {})", op.correlation);
  if (!op.shapes.empty()) args += fmt::format(R"(, "Input Dims": {})", jstr(op.shapes));
  if (op.flops > 0) args += fmt::format(R"(, "flops": {})", op.flops);
  if (op.linked) args += fmt::format(R"(, "correlation": {})", op.linked);
  args += clipped + "}";
  return slice(op.name, op.category.c_str(), pid, t, n.t0_ns, n.t1_ns, args);
}

// Steps and phases now; CPU operators into `low_priority` (written last, so a cap drops them first).
void write_host_slices(const Emit& emit, const ProfileData& d, std::vector<std::string>& low_priority) {
  for (auto& [tid, sl] : host_slices(d)) {
    std::vector<std::pair<int64_t, int64_t>> iv;
    std::vector<int> rank;
    for (const auto& s : sl) {
      iv.emplace_back(s.t0, s.t1);
      rank.push_back(s.rank);
    }
    for (const auto& n : nest_intervals(iv, rank)) {
      const Slice& s = sl[n.index];
      std::string ev = host_slice_event(d, tid, s, n);
      if (s.rank == 2) low_priority.push_back(std::move(ev));
      else emit(ev);
    }
  }
}

const char* device_event_category(const std::string& name) {
  auto cat = classify_device_event(name);
  if (cat == DeviceCategory::kMemset) return "gpu_memset";
  if (cat == DeviceCategory::kMemcpyH2D || cat == DeviceCategory::kMemcpyD2H || cat == DeviceCategory::kMemcpyD2D)
    return "gpu_memcpy";
  return "kernel";
}

// GPU activity, nested per stream.
void write_device_slices(const Emit& emit, const ProfileData& d, const StreamIndex& by_stream) {
  for (const auto& [k, idx] : by_stream) {
    std::vector<std::pair<int64_t, int64_t>> iv;
    for (size_t i : idx) iv.emplace_back(d.device_events[i].t0_ns, d.device_events[i].t1_ns);
    for (const auto& n : nest_intervals(iv, {})) {
      const auto& e = d.device_events[idx[n.index]];
      std::string args = fmt::format(R"({{"device": {}, "stream": {}, "correlation": {}, "External id": {})", e.device,
                                     e.stream, e.linked, e.linked);
      if (e.bytes > 0) args += fmt::format(R"(, "bytes": {})", e.bytes);
      if (n.clipped) args += R"(, "clipped": true)";
      args += "}";
      emit(slice(e.name, device_event_category(e.name), k.first, k.second, n.t0_ns, n.t1_ns, args));
    }
  }
}

// Telemetry counters inside the run's window.
void write_counters(const Emit& emit, const std::vector<CounterSeries>& counters,
                    const std::map<std::string, int64_t>& tel_pid, const TraceOptions& o) {
  for (const auto& s : counters) {
    const int64_t p = tel_pid.at(s.device);
    for (const auto& [t, v] : s.points) {
      if (t < o.t0_ns || t > o.t1_ns) continue;
      emit(fmt::format(R"({{"ph": "C", "name": {}, "pid": {}, "tid": 0, "ts": {}, "args": {{{}: {}}}}})", jstr(s.metric),
                       p, ts_us(t), jstr(s.metric), fmt::format("{:.6g}", v)));
    }
  }
}

// Launch-to-kernel flows (Kineto's "ac2g"): from each runtime call to the earliest device event
// that shares its correlation id (a flow id opens once and closes once: a CUDA graph launch, whose
// kernels all share one id, gets an arrow to its first kernel). Returns the flows written.
int64_t write_flows(const Emit& emit, const ProfileData& d) {
  std::map<int64_t, const OpEvent*> launch;
  for (const auto& op : d.ops)
    if (op.category == "cuda_runtime" && op.correlation != 0) launch[op.correlation] = &op;
  std::map<int64_t, const DeviceEvent*> first;  // correlation -> earliest device event
  for (const auto& e : d.device_events)
    if (e.correlation != 0 && launch.count(e.correlation)) {
      auto& f = first[e.correlation];
      if (!f || e.t0_ns < f->t0_ns) f = &e;
    }
  int64_t flows = 0;
  for (const auto& [id, e] : first) {
    const OpEvent& op = *launch.at(id);
    const bool s_ok = emit(fmt::format(
        R"({{"ph": "s", "id": {}, "pid": {}, "tid": {}, "ts": {}, "cat": "ac2g", "name": "ac2g"}})", id, d.pid,
        op.tid, ts_us(op.t0_ns)));
    if (s_ok && emit(fmt::format(
                    R"({{"ph": "f", "id": {}, "pid": {}, "tid": {}, "ts": {}, "cat": "ac2g", "name": "ac2g", "bp": "e"}})",
                    id, e->device, e->stream, ts_us(e->t0_ns))))
      ++flows;
  }
  return flows;
}

}  // namespace

TraceResult write_trace(const std::string& path, const ProfileData& d, const std::vector<CounterSeries>& counters,
                        const TraceOptions& o) {
  TraceResult res;
  GzStream gz(path, std::max<int64_t>(o.max_bytes, 4096));
  if (!gz.ok()) {
    res.error = fmt::format("cannot create trace file {}", path);
    return res;
  }
  const std::string tail = "\n]}\n";
  const Emit emit{gz, static_cast<int64_t>(tail.size())};
  write_head(gz, o);
  const StreamIndex by_stream = streams_of(d);
  write_host_metadata(emit, d);
  write_gpu_metadata(emit, by_stream);
  const auto tel_pid = write_telemetry_metadata(emit, counters);
  std::vector<std::string> low_priority;
  write_host_slices(emit, d, low_priority);
  write_device_slices(emit, d, by_stream);
  write_counters(emit, counters, tel_pid, o);
  for (const auto& ev : low_priority) emit(ev);
  res.flows = write_flows(emit, d);
  gz.raw(tail);
  res.truncated = gz.full_;
  res.bytes = gz.bytes_;
  res.events = gz.events_;
  res.dropped = gz.dropped_;
  res.ok = gz.close();
  if (!res.ok) res.error = fmt::format("writing trace file {} failed", path);
  return res;
}

}  // namespace trainscope::profile

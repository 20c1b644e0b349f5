// Chrome trace event format writer (Perfetto, chrome://tracing), streamed through zlib.
// Naming follows Kineto's output (pytorch/kineto src/output_json.cpp): host process named by
// the program, threads "thread <tid> (<name>)", GPUs as processes "GPU <n>" with one thread per
// "stream <id>", categories cpu_op / cuda_runtime / user_annotation / kernel / gpu_memcpy /
// gpu_memset.
#include <fmt/format.h>
#include <zlib.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "profile/profile_data.h"

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
      : cap_(cap), path_(path), tmp_(path + ".tmp." + std::to_string(::getpid())) {
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
  const int64_t reserve = static_cast<int64_t>(tail.size());
  nlohmann::json head = nlohmann::json::object();
  head["schemaVersion"] = 1;
  head["displayTimeUnit"] = "ms";
  head["trainscope"] = o.metadata;
  std::string h = head.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  h.pop_back();  // reopen the object to append traceEvents
  gz.raw(h + ", \"traceEvents\": [");

  const int64_t pid = d.pid;
  // ---- metadata: processes, threads ----
  std::map<uint64_t, bool> tids;
  tids[d.main_tid] = true;
  for (const auto& op : d.ops) tids[op.tid] = true;
  gz.event(meta("process_name", pid, 0, R"({"name": "trainscope"})"), reserve);
  gz.event(meta("process_labels", pid, 0, R"({"labels": "CPU"})"), reserve);
  gz.event(meta("process_sort_index", pid, 0, R"({"sort_index": -1})"), reserve);
  for (const auto& [tid, _] : tids) {
    auto it = d.thread_names.find(tid);
    std::string tn = fmt::format("thread {} ({})", tid, it != d.thread_names.end() ? it->second
                                                                                    : (tid == d.main_tid ? "train" : "worker"));
    gz.event(meta("thread_name", pid, static_cast<int64_t>(tid), fmt::format(R"({{"name": {}}})", jstr(tn))), reserve);
    gz.event(meta("thread_sort_index", pid, static_cast<int64_t>(tid),
                  fmt::format(R"({{"sort_index": {}}})", tid == d.main_tid ? 0 : 1)), reserve);
  }
  std::map<std::pair<int, int64_t>, std::vector<size_t>> by_stream;
  for (size_t i = 0; i < d.device_events.size(); ++i)
    by_stream[{d.device_events[i].device, d.device_events[i].stream}].push_back(i);
  std::map<int, bool> gpus;
  for (const auto& [k, _] : by_stream) gpus[k.first] = true;
  for (const auto& [dev, _] : gpus) {
    gz.event(meta("process_name", dev, 0, fmt::format(R"({{"name": "GPU {}"}})", dev)), reserve);
    gz.event(meta("process_labels", dev, 0, fmt::format(R"({{"labels": "GPU {}"}})", dev)), reserve);
    gz.event(meta("process_sort_index", dev, 0, fmt::format(R"({{"sort_index": {}}})", 1000 + dev)), reserve);
  }
  for (const auto& [k, _] : by_stream)
    gz.event(meta("thread_name", k.first, k.second, fmt::format(R"({{"name": "stream {}"}})", k.second)), reserve);
  // Telemetry: one process per telemetry device (NVML and CUDA numbering may differ).
  std::map<std::string, int64_t> tel_pid;
  for (const auto& s : counters)
    if (!tel_pid.count(s.device)) {
      int64_t p = 1000000 + static_cast<int64_t>(tel_pid.size());
      tel_pid[s.device] = p;
      gz.event(meta("process_name", p, 0, fmt::format(R"({{"name": {}}})", jstr("Telemetry " + s.device))), reserve);
      gz.event(meta("process_sort_index", p, 0, fmt::format(R"({{"sort_index": {}}})", 2000 + tel_pid.size())), reserve);
    }

  // ---- nest the training thread: steps > phases > ops; ops never cross a step/phase boundary ----
  std::map<uint64_t, std::vector<Slice>> threads;
  {
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
  }
  std::vector<std::string> low_priority;  // CPU operators go last, so a cap drops them first
  for (auto& [tid, sl] : threads) {
    std::vector<std::pair<int64_t, int64_t>> iv;
    std::vector<int> rank;
    for (const auto& s : sl) {
      iv.emplace_back(s.t0, s.t1);
      rank.push_back(s.rank);
    }
    for (const auto& n : nest_intervals(iv, rank)) {
      const Slice& s = sl[n.index];
      std::string clipped = n.clipped || n.t1_ns != s.t1 ? R"(, "clipped": true)" : "";
      if (s.rank == 0) {
        const auto& st = d.steps[s.src];
        gz.event(slice(fmt::format("ProfilerStep#{}", st.step), "user_annotation", pid, static_cast<int64_t>(tid), n.t0_ns,
                       n.t1_ns, fmt::format(R"({{"step": {}{}}})", st.step, clipped)), reserve);
      } else if (s.rank == 1) {
        const auto& ph = d.phases[s.src];
        gz.event(slice(ph.phase, "user_annotation", pid, static_cast<int64_t>(tid), n.t0_ns, n.t1_ns,
                       fmt::format(R"({{"step": {}{}}})", ph.step, clipped)), reserve);
      } else {
        const auto& op = d.ops[s.src];
        std::string args = fmt::format(R"({{"External id": {})", op.correlation);
        if (!op.shapes.empty()) args += fmt::format(R"(, "Input Dims": {})", jstr(op.shapes));
        if (op.flops > 0) args += fmt::format(R"(, "flops": {})", op.flops);
        if (op.linked) args += fmt::format(R"(, "correlation": {})", op.linked);
        args += clipped + "}";
        low_priority.push_back(slice(op.name, op.category.c_str(), pid, static_cast<int64_t>(tid), n.t0_ns, n.t1_ns, args));
      }
    }
  }
  // ---- GPU activity per stream ----
  for (const auto& [k, idx] : by_stream) {
    std::vector<std::pair<int64_t, int64_t>> iv;
    for (size_t i : idx) iv.emplace_back(d.device_events[i].t0_ns, d.device_events[i].t1_ns);
    for (const auto& n : nest_intervals(iv, {})) {
      const auto& e = d.device_events[idx[n.index]];
      auto cat = classify_device_event(e.name);
      const char* kc = cat == DeviceCategory::kMemset ? "gpu_memset"
                       : (cat == DeviceCategory::kMemcpyH2D || cat == DeviceCategory::kMemcpyD2H ||
                          cat == DeviceCategory::kMemcpyD2D)
                           ? "gpu_memcpy"
                           : "kernel";
      std::string args = fmt::format(R"({{"device": {}, "stream": {}, "correlation": {}, "External id": {})", e.device,
                                     e.stream, e.linked, e.linked);
      if (e.bytes > 0) args += fmt::format(R"(, "bytes": {})", e.bytes);
      if (n.clipped) args += R"(, "clipped": true)";
      args += "}";
      gz.event(slice(e.name, kc, k.first, k.second, n.t0_ns, n.t1_ns, args), reserve);
    }
  }
  // ---- telemetry counters inside the run's window ----
  for (const auto& s : counters) {
    int64_t p = tel_pid[s.device];
    for (const auto& [t, v] : s.points) {
      if (t < o.t0_ns || t > o.t1_ns) continue;
      gz.event(fmt::format(R"({{"ph": "C", "name": {}, "pid": {}, "tid": 0, "ts": {}, "args": {{{}: {}}}}})",
                           jstr(s.metric), p, ts_us(t), jstr(s.metric), fmt::format("{:.6g}", v)),
               reserve);
    }
  }
  for (const auto& ev : low_priority) gz.event(ev, reserve);
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

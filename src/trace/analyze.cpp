// analyze_trace and find_traces (include/trainscope/trace_analysis.h): the trace read once into
// the sums and sorters of TraceStreams (streams.h), then each part of the analysis from them.
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>

#include "trace/streams.h"
#include "trainscope/error.h"

namespace trainscope::trace {

const char* category_name(Category c) {
  static const char* const names[kCategoryCount] = {"Kernel",  "Memcpy",     "Memset",   "Communication",
                                                    "Runtime", "DataLoader", "CPU Exec", "Other"};
  return names[static_cast<int>(c)];
}

const char* category_key(Category c) {
  static const char* const keys[kCategoryCount] = {"kernel",  "memcpy",     "memset",   "communication",
                                                   "runtime", "dataloader", "cpu_exec", "other"};
  return keys[static_cast<int>(c)];
}

namespace {

template <class Row, class Key>
std::vector<Row> top_rows(std::vector<Row> rows, int top, Key key) {
  std::sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    return key(a) != key(b) ? key(a) > key(b) : a.name < b.name;
  });
  if (top >= 0 && rows.size() > static_cast<size_t>(top)) rows.resize(static_cast<size_t>(top));
  return rows;
}

// The step table: the steps extended to their GPU work, their categories and totals, and the
// communication overlap.
void add_steps(TraceAnalysis& a, TraceStreams& s) {
  std::vector<Step> steps = host_steps(s);
  const DeviceWork work = join_correlations(s, steps);
  a.steps = device_steps(std::move(steps), work, s, a.notes);
  a.overlap = break_down(a.steps, s);
  for (const Step& st : a.steps) {
    a.steps_ns += st.duration_ns();
    for (int c = 0; c < kCategoryCount; ++c) a.total_ns[c] += st.category_ns[c];
  }
}

}  // namespace

TraceAnalysis analyze_trace(const std::string& path, const AnalyzeOptions& options) {
  if (options.memory_budget_bytes <= 0)
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("{}: the memory budget of the analysis is {} bytes; give a positive one (--memory-mb)",
                            path, options.memory_budget_bytes));
  TraceStreams s(options.memory_budget_bytes);
  read_events(path, s.info, [&s](const Event& e, const std::string& name) { s.add(e, name); });
  TraceAnalysis a;
  a.path = path;
  a.schema = s.info.schema;
  a.rank = s.info.rank, a.world_size = s.info.world_size, a.backend = s.info.backend;
  a.devices = s.info.devices;
  a.events = s.events;
  if (s.events == 0)
    throw_error(ErrorKind::kDataFormat,
                fmt::format("{}: the trace holds no profiler events (no operator, runtime or GPU event); was the "
                            "profiler's schedule active for any step?",
                            path));
  add_steps(a, s);
  a.operators = top_rows(operator_rows(s), options.top, [](const OperatorRow& r) { return r.self_ns; });
  std::vector<KernelRow> kernels = kernel_rows(s);
  for (const KernelRow& k : kernels) a.kernel_ns += k.total_ns;
  a.kernels = top_rows(std::move(kernels), options.top, [](const KernelRow& r) { return r.total_ns; });
  a.idle = stream_idle(s, options.consecutive_kernel_delay_ns);
  if (s.info.schema == "legacy")
    a.notes.push_back("legacy trace (PyTorch without Kineto): CPU operators only, times to the microsecond");
  a.max_events_held = s.held.peak;
  return a;
}

namespace {

bool is_trace_name(const std::string& name) {
  auto ends = [&](const std::string& t) { return name.size() >= t.size() && name.compare(name.size() - t.size(), t.size(), t) == 0; };
  return ends(".pt.trace.json") || ends(".pt.trace.json.gz");
}

}  // namespace

std::vector<std::string> find_traces(const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const std::string& in : inputs) {
    std::error_code ec;
    const auto st = fs::status(in, ec);
    if (ec || !fs::exists(st)) throw_error(ErrorKind::kIo, fmt::format("{}: no such file or folder", in));
    if (!fs::is_directory(st)) {
      out.push_back(in);
      continue;
    }
    std::vector<std::string> found;
    for (auto it = fs::recursive_directory_iterator(in, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_regular_file() && is_trace_name(it->path().filename().string())) found.push_back(it->path().string());
    if (found.empty())
      throw_error(ErrorKind::kInvalidArgument,
                  fmt::format("{}: the folder holds no *.pt.trace.json or *.pt.trace.json.gz file (the names "
                              "torch.profiler.tensorboard_trace_handler writes); name the trace file itself",
                              in));
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

}  // namespace trainscope::trace

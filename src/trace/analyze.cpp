// analyze_trace and find_traces (include/trainscope/trace_analysis.h).
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>

#include "trace/analysis.h"
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

}  // namespace

TraceAnalysis analyze_trace(const std::string& path, const AnalyzeOptions& options) {
  EventStore store = read_events(path);
  TraceAnalysis a;
  a.path = path;
  a.schema = store.schema;
  a.rank = store.rank, a.world_size = store.world_size, a.backend = store.backend;
  a.devices = store.devices;
  a.events = static_cast<int64_t>(store.events.size());
  if (store.events.empty())
    throw_error(ErrorKind::kDataFormat,
                fmt::format("{}: the trace holds no profiler events (no operator, runtime or GPU event); was the "
                            "profiler's schedule active for any step?",
                            path));
  const RoleRanges roles = role_ranges(store, communication_names(store));
  a.steps = find_steps(store, a.notes);
  break_down(a.steps, roles);
  for (const Step& s : a.steps) {
    a.steps_ns += s.duration_ns();
    for (int c = 0; c < kCategoryCount; ++c) a.total_ns[c] += s.category_ns[c];
  }
  a.overlap = comm_overlap(a.steps, roles);
  a.operators = top_rows(operator_rows(store), options.top, [](const OperatorRow& r) { return r.self_ns; });
  std::vector<KernelRow> kernels = kernel_rows(store);
  for (const KernelRow& k : kernels) a.kernel_ns += k.total_ns;
  a.kernels = top_rows(std::move(kernels), options.top, [](const KernelRow& r) { return r.total_ns; });
  a.idle = stream_idle(store, options.consecutive_kernel_delay_ns);
  if (store.schema == "legacy")
    a.notes.push_back("legacy trace (PyTorch without Kineto): CPU operators only, times to the microsecond");
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

// RunProfiler: drives a Recorder on the schedule from the trainer's hooks and turns what it
// recorded into the run record's profile section, a CSV operator table and a trace.
#include <cmath>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <map>

#include "dist/context.h"
#include "common/text.h"
#include "profile/profile_data.h"
#include "profile/recorder.h"
#include "results/record_json.h"
#include "train/compat.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/profile.h"

namespace trainscope {

using namespace profile;

const char* to_string(ProfileStepState s) {
  switch (s) {
    case ProfileStepState::kSkip: return "skip";
    case ProfileStepState::kWait: return "wait";
    case ProfileStepState::kWarmup: return "warmup";
    case ProfileStepState::kActive: return "active";
    case ProfileStepState::kDone: return "done";
  }
  return "done";
}

ProfileStepState profile_step_state(const ProfileConfig& c, int64_t step) {
  if (step < c.skip_first) return ProfileStepState::kSkip;
  const int64_t cycle = std::max<int64_t>(c.wait, 0) + std::max<int64_t>(c.warmup, 0) + std::max<int64_t>(c.active, 0);
  if (c.active <= 0 || cycle <= 0) return ProfileStepState::kDone;
  const int64_t k = step - c.skip_first;
  if (c.repeat > 0 && k >= c.repeat * cycle) return ProfileStepState::kDone;
  const int64_t r = k % cycle;
  if (r < c.wait) return ProfileStepState::kWait;
  if (r < c.wait + c.warmup) return ProfileStepState::kWarmup;
  return ProfileStepState::kActive;
}

int64_t profile_schedule_steps(const ProfileConfig& c) {
  if (c.repeat <= 0) return -1;
  return c.skip_first + c.repeat * (c.wait + c.warmup + c.active);
}

ProfileConfig resolve_profile_schedule(const ProfileConfig& c, int64_t warmup_steps, int64_t planned_steps,
                                       std::string* note) {
  if (c.skip_first >= 0) return c;
  ProfileConfig r = c;
  const int64_t need = std::max<int64_t>(c.repeat, 1) * (c.wait + c.warmup + c.active);
  const int64_t earliest = warmup_steps + 1;
  r.skip_first = std::max(planned_steps - need, earliest);
  if (note && planned_steps - need < earliest)
    *note = fmt::format("the profiling schedule ({} steps) does not fit after the {} warm-up steps and one headline "
                        "step in the run's {} planned steps: the profiler starts at step {} and {}; the headline "
                        "still comes from unprofiled steps. Run longer or lower --profile-steps",
                        need, warmup_steps, planned_steps, r.skip_first,
                        r.skip_first + c.wait >= planned_steps ? "no step is profiled" : "the run ends inside its window");
  return r;
}

int64_t profile_first_touched_step(const ProfileConfig& c) {
  if (c.active <= 0) return -1;
  return std::max<int64_t>(c.skip_first, 0) + std::max<int64_t>(c.wait, 0);
}

const char* profile_backend() {
#ifdef TRAINSCOPE_WITH_CUDA
  return "kineto";
#else
  return "record_function";
#endif
}

struct RunProfiler::Impl {
  ProfileConfig cfg;
  std::string run_id, device;
  std::unique_ptr<Recorder> rec;
  ProfileData data;
  std::map<int64_t, StepSpan> steps;
  std::vector<std::string> warnings;
  bool warming = false, active = false;
  int64_t steps_seen = 0, active_steps = 0, windows = 0;
  std::vector<std::pair<int64_t, int64_t>> window_steps;  // [first, last] active step of each window

  void close_window() {
    if (!active && !warming) return;
    std::string w;
    try {
      w = rec->deactivate(data);
    } catch (const std::exception& e) {
      w = fmt::format("profiler stop failed: {}", e.what());
    }
    if (!w.empty()) warnings.push_back(w);
    active = warming = false;
  }
};

RunProfiler::RunProfiler(const ProfileConfig& cfg, std::string run_id, std::string device,
                         std::chrono::steady_clock::time_point origin)
    : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  m.cfg = cfg;
  m.run_id = std::move(run_id);
  m.device = std::move(device);
#ifdef TRAINSCOPE_WITH_CUDA
  m.rec = make_kineto_recorder(cfg, m.device, origin);
#else
  m.rec = make_record_function_recorder(cfg, origin);
#endif
  m.data.pid = static_cast<int64_t>(::getpid());
  m.data.main_tid = m.rec->current_tid();
  m.data.thread_names[m.data.main_tid] = "train";
}

RunProfiler::~RunProfiler() {
  try {
    stop();
  } catch (...) {
  }
}

void RunProfiler::on_step_begin(int64_t step) {
  auto& m = *impl_;
  auto st = profile_step_state(m.cfg, step);
  try {
    if (st == ProfileStepState::kWarmup && !m.warming && !m.active) {
      m.rec->warmup();
      m.warming = true;
    } else if (st == ProfileStepState::kActive && !m.active) {
      m.rec->activate();
      m.warming = false;
      m.active = true;
      m.window_steps.push_back({step, step});
      ++m.windows;
    }
    if (m.active) m.rec->step_begin(step);
  } catch (const std::exception& e) {
    m.warnings.push_back(fmt::format("profiler could not start at step {}: {}", step, e.what()));
    m.active = m.warming = false;
  }
  if (m.active) {
    ++m.active_steps;
    m.window_steps.back().second = step;
  }
  auto& s = m.steps[step];
  s.step = step;
  s.profiled = m.active;
  s.warmup = st == ProfileStepState::kWarmup;
}

void RunProfiler::on_step_end(int64_t step) {
  auto& m = *impl_;
  m.steps_seen = std::max(m.steps_seen, step + 1);  // steps that ended, as the record's steps_completed
  if (!m.active) return;
  m.rec->step_end();
  if (profile_step_state(m.cfg, step + 1) != ProfileStepState::kActive) m.close_window();
}

void RunProfiler::on_phase_span(int64_t step, const char* phase, int64_t t0_ns, int64_t t1_ns) {
  auto& m = *impl_;
  auto& s = m.steps[step];
  s.step = step;
  std::string ph = phase;
  if (ph == "data") s.t0_ns = t0_ns;
  if (ph == "optimizer" || ph == "graph_replay") s.t1_ns = t1_ns;  // graph_replay: a replayed CUDA-graph step
  if (s.profiled) m.data.phases.push_back({step, ph, t0_ns, t1_ns});
}

void RunProfiler::stop() {
  auto& m = *impl_;
  if (m.active || m.warming) {
    if (m.active)
      m.warnings.push_back(fmt::format("the run ended inside the profiling window (after {} active step(s)); the window "
                                       "was closed there",
                                       m.active_steps));
    m.close_window();
  }
}

namespace {

// The schedule as configured and the windows it recorded.
void schedule_and_window(const ProfileConfig& c, const std::vector<std::pair<int64_t, int64_t>>& windows,
                         int64_t active_steps, int64_t steps_seen, ProfileSection& out) {
  out.schedule = {c.skip_first, c.wait, c.warmup, c.active, c.repeat, c.record_shapes, c.profile_memory, c.with_flops};
  for (const auto& [a, b] : windows) out.window.windows.push_back({a, b});
  out.window.active_steps = active_steps;
  out.window.run_steps = steps_seen;
}

// The trainer's phase means, copied beside the profiled ones.
std::optional<DevicePhases> device_phases(const RunRecord& rec) {
  if (!rec.phases) return std::nullopt;
  const auto& p = *rec.phases;
  return DevicePhases{p.data_ms, p.h2d_ms, p.forward_ms, p.backward_ms, p.optimizer_ms, p.step_ms, p.steps, p.method};
}

}  // namespace

ProfileSection RunProfiler::finish(const std::string& run_dir, const RunRecord& rec,
                                   const std::vector<CounterSeries>& counters, const Provenance* prov) {
  auto& m = *impl_;
  stop();
  for (const auto& [k, s] : m.steps) m.data.steps.push_back(s);

  ProfileSection out;
  schedule_and_window(m.cfg, m.window_steps, m.active_steps, m.steps_seen, out);
  out.backend = m.rec->backend();

  int64_t need = profile_schedule_steps(m.cfg);
  if (need > 0 && m.steps_seen < need && rec.status == RunStatus::kInterrupted)
    m.warnings.push_back(fmt::format("the run was interrupted after {} step(s), before the profiling schedule's {} "
                                     "ended; recorded {} active step(s)",
                                     m.steps_seen, need, m.active_steps));
  else if (need > 0 && m.steps_seen < need)
    m.warnings.push_back(fmt::format("the run had {} step(s) but the profiling schedule needs {} (skip_first {} + {} x "
                                     "(wait {} + warmup {} + active {})); recorded {} active step(s). Lower "
                                     "--profile-steps/skip_first or run longer",
                                     m.steps_seen, need, m.cfg.skip_first, m.cfg.repeat, m.cfg.wait, m.cfg.warmup,
                                     m.cfg.active, m.active_steps));
  if (m.active_steps == 0) m.warnings.push_back("no step was profiled: the operator table and trace hold no operators");

  out.op_table = build_op_table(m.data, &out.op_table_totals);
  out.step_breakdown = build_step_breakdown(m.data, m.device, device_phases(rec));
  out.overhead = build_overhead(m.data, rec.warmup_steps);  // outside = every step after the warm-up

  nlohmann::json meta = {{"run_id", m.run_id}, {"device", m.device}, {"backend", m.rec->backend()},
                         {"libtorch_version", compat::torch_version()}, {"written_utc", utc_timestamp()},
                         {"clock", "steady_clock since the matrix start; trace ts in us"}};
  if (prov) meta["provenance"] = to_json(*prov);

  namespace fs = std::filesystem;
  // Operator CSV.
  try {
    ensure_writable_dir(run_dir + "/profiles");
    nlohmann::json head = {{"run_id", m.run_id}, {"device", m.device}, {"backend", m.rec->backend()},
                           {"libtorch_version", compat::torch_version()}, {"written_utc", utc_timestamp()}};
    if (prov) {
      head["host"] = prov->host;
      head["cpu"] = prov->cpu_model;
      head["git_commit"] = prov->git_commit;
      head["command_line"] = prov->command_line;
    }
    std::string rel = "profiles/" + m.run_id + ".ops.csv";
    write_file_atomic(run_dir + "/" + rel, op_table_csv(out.op_table, head));
    out.files.ops_csv = rel;
  } catch (const std::exception& e) {
    m.warnings.push_back(fmt::format("operator CSV not written: {}", e.what()));
  }
  // Trace.
  try {
    ensure_writable_dir(run_dir + "/traces");
    std::string rel = "traces/" + m.run_id + ".trace.json.gz";
    TraceOptions o;
    o.max_bytes = m.cfg.trace_max_bytes;
    o.t0_ns = rec.start_ns;
    o.t1_ns = rec.end_ns > rec.start_ns ? rec.end_ns : INT64_MAX;
    o.metadata = meta;
    o.device = m.device;
    if (const auto* ctx = dist::current())
      o.distributed_info = {{"backend", ctx->backend()}, {"rank", ctx->rank()}, {"world_size", ctx->world()}};
    auto r = write_trace(run_dir + "/" + rel, m.data, counters, o);
    if (!r.ok) {
      m.warnings.push_back(r.error);
    } else {
      out.files.trace = rel;
      out.trace = TraceInfo{r.bytes, r.events, r.dropped, m.cfg.trace_max_bytes, r.truncated};
      if (r.truncated)
        m.warnings.push_back(fmt::format("trace cut at the size cap of {} bytes: {} event(s) dropped (CPU operators "
                                         "first); the summaries cover everything recorded. Raise trace_max_bytes or "
                                         "shorten the window",
                                         m.cfg.trace_max_bytes, r.dropped));
    }
    std::string w;
    auto native = m.rec->save_native(run_dir + "/traces/" + m.run_id, &w);
    if (!w.empty()) m.warnings.push_back(w);
    if (!native.empty()) {
      for (const auto& f : native) out.files.kineto_traces.push_back(fs::relative(f, run_dir).string());
    }
  } catch (const std::exception& e) {
    m.warnings.push_back(fmt::format("trace not written: {}", e.what()));
  }
  out.warnings = m.warnings;
  return out;
}

namespace {

// One operator row of the console table.
std::string op_line(const OpRow& r, bool dev) {
  // "-0.0" for a tiny negative net would read as a measurement; print 0.0 for |x| < 0.05 MiB.
  auto mib = [](double b) {
    double m = b / 1048576.0;
    return fmt::format("{:.1f}", std::fabs(m) < 0.05 ? 0.0 : m);
  };
  std::string name = r.name.size() > 44 ? r.name.substr(0, 41) + "..." : r.name;
  std::string s = fmt::format("{:<44} {:>6} {:>10.3f} {:>7.2f} {:>10.3f}", name, r.calls, r.cpu_self_us / 1000,
                              r.cpu_self_pct, r.cpu_total_us / 1000);
  if (dev)
    s += fmt::format(" {:>10.3f} {:>7.2f} {:>10.3f}", r.device_self_us.value_or(0) / 1000,
                     r.device_self_pct.value_or(0), r.device_total_us.value_or(0) / 1000);
  s += fmt::format(" {:>9} {:>9} {:>9} {:>8}\n", mib(static_cast<double>(r.mem_alloc_bytes)),
                   mib(static_cast<double>(r.mem_freed_bytes)), mib(static_cast<double>(r.mem_net_bytes)),
                   r.flops ? fmt::format("{:.2f}", *r.flops / 1e9) : "—");
  return s;
}

}  // namespace

std::string format_op_table(const ProfileSection& p, int64_t top_n) {
  const auto& rows = p.op_table;
  if (rows.empty() && p.warnings.empty()) return "";
  bool dev = false, any_flops = false;
  for (const auto& r : rows) {
    dev = dev || r.device_self_us.value_or(0) > 0;
    any_flops = any_flops || r.flops.has_value();
  }
  std::vector<const OpRow*> v;
  for (const auto& r : rows) v.push_back(&r);
  if (dev)
    std::stable_sort(v.begin(), v.end(), [](const OpRow* a, const OpRow* b) {
      return a->device_self_us.value_or(0) > b->device_self_us.value_or(0);
    });
  std::string s;
  s += fmt::format("{:<44} {:>6} {:>10} {:>7} {:>10}", "operator", "calls", "self CPU ms", "self %", "CPU tot ms");
  if (dev) s += fmt::format(" {:>10} {:>7} {:>10}", "self dev ms", "dev %", "dev tot ms");
  s += fmt::format(" {:>9} {:>9} {:>9} {:>8}\n", "alloc MiB", "freed MiB", "net MiB", "GFLOP");
  for (size_t i = 0; i < v.size() && static_cast<int64_t>(i) < top_n; ++i) s += op_line(*v[i], dev);
  if (rows.size() > static_cast<size_t>(std::max<int64_t>(top_n, 0)))
    s += fmt::format("({} more operators in the CSV/JSON)\n", rows.size() - static_cast<size_t>(top_n));
  if (!any_flops) s += "GFLOP —: not recorded; --profile-flops counts them (it records input shapes: more overhead)\n";
  for (const auto& w : p.warnings) s += "warning: " + w + "\n";
  return s;
}

}  // namespace trainscope

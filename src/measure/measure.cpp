// measure_command (include/trainscope/measure.h): the run folder, the Python hook, the telemetry
// sampler around the child, the steps, the steady window and measure.json.
#include <fmt/core.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "common/provenance_json.h"
#include "measure/child.h"
#include "measure/process_tree.h"
#include "measure/profile.h"
#include "results/record_json.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/measure.h"
#include "trainscope/provenance.h"
#include "trainscope/reporter.h"

namespace trainscope::measure {

/// The text of src/measure/python_hook.py (python_hook_text.cpp, generated at configure time).
extern const char* const kPythonHook;

namespace {

void validate(const MeasureConfig& c) {
  if (c.command.empty())
    throw_error(ErrorKind::kInvalidArgument, "measure: no command given; write it after --: trainscope measure -- python3 train.py");
  if (c.warmup_steps < 1) throw_error(ErrorKind::kInvalidArgument, fmt::format("measure: --warmup-steps must be >= 1, not {}", c.warmup_steps));
  if (c.items_per_step && !(*c.items_per_step > 0))
    throw_error(ErrorKind::kInvalidArgument, fmt::format("measure: --items-per-step must be > 0, not {}", *c.items_per_step));
  if (c.stall_timeout_s < 0) throw_error(ErrorKind::kInvalidArgument, "measure: --stall-timeout must be >= 0 (0: none)");
  if (!(c.tree_interval_s > 0)) throw_error(ErrorKind::kInvalidArgument, "measure: the process-tree interval must be > 0");
  if (c.profile_steps && c.profile_steps->first < c.warmup_steps + 2)
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("measure: --profile-steps {}-{} starts before the steady window has a step: the window "
                            "runs from step {} (after {} warm-up) to the step before the profiled ones; start the "
                            "profiled steps at {} or later, or lower --warmup-steps",
                            c.profile_steps->first, c.profile_steps->second, c.warmup_steps + 1, c.warmup_steps,
                            c.warmup_steps + 2));
  if (c.profile_steps && !c.python_hook)
    throw_error(ErrorKind::kInvalidArgument, "measure: --profile-steps needs the Python hook (drop --no-hook)");
}

// <out>/hook/sitecustomize.py, and the environment that puts it first on PYTHONPATH (and asks it
// for the profiled window).
std::vector<std::string> hook_environment(const MeasureConfig& c) {
  const std::string dir = std::filesystem::absolute(c.out_dir + "/hook").string();
  ensure_writable_dir(dir);
  write_file_atomic(dir + "/sitecustomize.py", kPythonHook);
  const char* old = std::getenv("PYTHONPATH");
  std::vector<std::string> env{"PYTHONPATH=" + dir + (old && *old ? ":" + std::string(old) : ""), "TRAINSCOPE_HOOK_DIR=" + dir};
  if (c.profile_steps) {
    env.push_back(fmt::format("TRAINSCOPE_PROFILE_STEPS={}-{}", c.profile_steps->first, c.profile_steps->second));
    env.push_back("TRAINSCOPE_PROFILE_DIR=" + std::filesystem::absolute(c.out_dir + "/" + kProfileDir).string());
  }
  return env;
}

// The command with "{device}" in each argument replaced by the run's device.
std::vector<std::string> substitute_device(std::vector<std::string> argv, const std::string& device) {
  if (device.empty()) return argv;
  for (size_t i = 1; i < argv.size(); ++i)
    for (size_t at; (at = argv[i].find("{device}")) != std::string::npos;) argv[i].replace(at, 8, device);
  return argv;
}

std::string describe(const ChildExit& x) {
  if (!x.exec_error.empty()) return "could not be started: " + x.exec_error;
  if (x.signal) return fmt::format("killed by signal {} ({})", *x.signal, strsignal(*x.signal));
  return fmt::format("exited {}", x.exit_code);
}

std::string steps_csv(const MeasureResult& r) {
  std::string s = "step,end_ns,step_ms\n";
  for (size_t i = 0; i < r.step_end_ns.size(); ++i)
    s += fmt::format("{},{},{}\n", i + 1, r.step_end_ns[i],
                     i ? fmt::format("{:.6f}", static_cast<double>(r.step_end_ns[i] - r.step_end_ns[i - 1]) * 1e-6) : "");
  return s;
}

// The telemetry device of the headline: the configured one, else the run's device (cuda:N ->
// gpuN), else gpu0 when NVML sees a GPU.
std::string headline_device(const MeasureConfig& c, const TelemetrySampler& s) {
  if (!c.device.empty()) return c.device;
  if (c.run_device == "cpu") return "cpu";
  if (c.run_device.rfind("cuda", 0) == 0) return "gpu" + (c.run_device.size() > 5 ? c.run_device.substr(5) : "0");
  return s.gpus().empty() ? "cpu" : "gpu0";
}

nlohmann::json result_json(const MeasureResult& r, const MeasureConfig& c, const Provenance& p) {
  nlohmann::json j;
  j["provenance"] = to_json(p);
  j["schema"] = "trainscope.measure/1";
  j["command"] = c.command;
  j["exit_code"] = r.exit_code;
  j["signal"] = r.signal ? nlohmann::json(*r.signal) : nlohmann::json(nullptr);
  j["outcome"] = r.outcome;
  j["stalled"] = r.stalled;
  j["start_ns"] = r.start_ns, j["end_ns"] = r.end_ns;
  j["steps"] = r.step_end_ns.size();
  j["warmup_steps"] = c.warmup_steps;
  j["run_device"] = c.run_device;
  j["items_per_step"] = r.items_per_step ? nlohmann::json(*r.items_per_step) : nlohmann::json(nullptr);
  j["items_per_step_source"] = c.items_per_step ? "option" : r.items_per_step ? "program" : "";
  j["items_reported"] = r.items_reported;
  j["window_start_ns"] = r.window_start_ns ? nlohmann::json(*r.window_start_ns) : nlohmann::json(nullptr);
  j["window_end_ns"] = r.window_end_ns ? nlohmann::json(*r.window_end_ns) : nlohmann::json(nullptr);
  j["window"] = {{"steps", r.window.steps}, {"step_ms_mean", r.window.mean_ms}, {"step_ms_p50", r.window.p50_ms},
                 {"step_ms_p95", r.window.p95_ms}, {"step_ms_max", r.window.max_ms}};
  j["steps_per_s"] = r.steps_per_s ? nlohmann::json(*r.steps_per_s) : nlohmann::json(nullptr);
  j["items_per_s"] = r.items_per_s ? nlohmann::json(*r.items_per_s) : nlohmann::json(nullptr);
  if (r.telemetry) j["telemetry"] = record_json::write(*r.telemetry);
  const TreeSummary& t = r.tree_window;
  auto num = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  j["process_tree"] = {{"samples", t.samples}, {"cpu_pct_mean", num(t.cpu_pct_mean)}, {"cpu_pct_max", num(t.cpu_pct_max)},
                       {"rss_bytes_max", num(t.rss_bytes_max)}, {"threads_max", num(t.threads_max)},
                       {"processes_max", num(t.processes_max)}};
  if (c.profile_steps) j["profile"] = profile_json(r, c);
  j["notes"] = r.notes;
  return j;
}

}  // namespace

namespace {

// What the poll loop's callbacks share (all on the caller's thread).
struct Watch {
  int64_t origin_mono_ns = 0;
  std::string partial;  // a step line not yet complete
  MeasureResult* r = nullptr;
  int bad_lines = 0;
  std::chrono::steady_clock::time_point origin;
  std::unique_ptr<ProcessTree> tree;
  std::shared_ptr<PidSet> pids;  // the tree's pids, read by the sampler's thread (NVML's process list)
  int64_t tree_due_ns = 0;

  int64_t now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - origin).count();
  }
  void on_steps(const std::string& chunk) {
    partial += chunk;
    const auto cut = partial.rfind('\n');
    if (cut == std::string::npos) return;
    bad_lines += parse_step_lines(partial.substr(0, cut + 1), origin_mono_ns, r->step_end_ns, &r->items_reported,
                                  &r->step_items);
    partial.erase(0, cut + 1);
  }
  void on_tick(const MeasureConfig& c) {
    const int64_t now = now_ns();
    if (!tree || now < tree_due_ns) return;
    tree->sample(now);
    if (pids) pids->set(tree->pids());
    tree_due_ns = now + static_cast<int64_t>(c.tree_interval_s * 1e9);
  }
  // A stall: steps began and none came for `timeout_s`.
  bool stalled(double timeout_s) {
    if (timeout_s <= 0 || r->step_end_ns.empty() || r->stalled) return false;
    const double quiet_s = static_cast<double>(now_ns() - r->step_end_ns.back()) * 1e-9;
    if (quiet_s < timeout_s) return false;
    r->stalled = true;
    r->notes.push_back(fmt::format("stalled: no step for {:.1f} s after step {} (at {:.1f} s); the program was stopped "
                                   "(SIGTERM, SIGKILL after 5 s) and the steps measured before are kept",
                                   quiet_s, r->step_end_ns.size(), static_cast<double>(r->step_end_ns.back()) * 1e-9));
    return true;
  }
};

ChildSpec child_spec(const MeasureConfig& c) {
  ChildSpec spec;
  spec.argv = substitute_device(c.command, c.run_device);
  spec.argv[0] = resolve_command(c.command[0]);
  spec.stdout_path = c.out_dir + "/stdout.log";
  spec.stderr_path = c.out_dir + "/stderr.log";
  spec.echo = c.echo_output;
  spec.step_pipe = c.python_hook;
  if (c.python_hook) spec.env = hook_environment(c);
  if (!c.run_device.empty()) spec.env.push_back("TRAINSCOPE_DEVICE=" + c.run_device);
  return spec;
}

// The telemetry section of the window (or of the whole run without one).
void add_telemetry(MeasureResult& r, const MeasureConfig& c, TelemetrySampler& s) {
  const bool window = r.window_start_ns.has_value();
  const int64_t t0 = window ? *r.window_start_ns : r.start_ns, t1 = window ? *r.window_end_ns : r.end_ns;
  const int64_t items = window && r.items_per_step ? static_cast<int64_t>(*r.items_per_step * r.window.steps) : 0;
  r.telemetry = s.run_section(t0, t1, items, headline_device(c, s));
  r.telemetry->headline.window = window ? "headline" : "run";
  // the headline's "process" is the program measured (its process tree), not trainscope
  r.telemetry->headline.process_cpu_pct_mean = r.tree_window.cpu_pct_mean;
  r.telemetry->headline.process_rss_bytes_max =
      r.tree_window.rss_bytes_max ? std::optional<double>(static_cast<double>(*r.tree_window.rss_bytes_max)) : std::nullopt;
  s.write_samples_csv_gz(c.out_dir + "/telemetry.csv.gz");
}

// results.json and results.csv: the run record, as `run` writes them.
void write_results(MeasureResult& r, const MeasureConfig& c, const Provenance& p, const TelemetrySampler* s,
                   std::chrono::steady_clock::time_point origin) {
  std::string device_name = p.cpu_model;
  const std::string dev = r.telemetry ? r.telemetry->headline.device : "";
  if (s && dev.rfind("gpu", 0) == 0)
    for (const GpuInfo& g : s->gpus())
      if ("gpu" + std::to_string(g.nvml_index) == dev) device_name = g.name;
  const int64_t unix_origin = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  (std::chrono::system_clock::now() - (std::chrono::steady_clock::now() - origin)).time_since_epoch())
                                  .count();
  r.record = measure_record(r, c, device_name, unix_origin);
  ResultsFilesReporter files;
  files.start(p, c.out_dir, 1);
  files.run_finished(r.record);
  files.finish({r.record});
}

}  // namespace

MeasureResult measure_command(const MeasureConfig& config) {
  validate(config);
  ensure_writable_dir(config.out_dir);
  const ChildSpec spec = child_spec(config);
  MeasureResult r;
  r.run_dir = config.out_dir;
  Watch watch;
  watch.r = &r;
  watch.origin = std::chrono::steady_clock::now();
  watch.origin_mono_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(watch.origin.time_since_epoch()).count();
  std::unique_ptr<TelemetrySampler> sampler;
  if (config.telemetry) {
    TelemetryOptions options = config.telemetry_options;
    watch.pids = std::make_shared<PidSet>();
    options.gpu_process_pids = [pids = watch.pids] { return pids->get(); };
    sampler = std::make_unique<TelemetrySampler>(options, watch.origin);
    sampler->start();
  }
  ChildEvents events;
  events.on_start = [&](int pid) {
    watch.tree = std::make_unique<ProcessTree>(pid, config.proc_root);
    watch.on_tick(config);
  };
  events.on_tick = [&] { watch.on_tick(config); };
  events.on_steps = [&](const std::string& chunk) { watch.on_steps(chunk); };
  events.should_stop = [&] { return watch.stalled(config.stall_timeout_s); };
  r.start_ns = watch.now_ns();
  const ChildExit x = run_child(spec, events);
  r.end_ns = watch.now_ns();
  if (sampler) sampler->stop();
  r.exit_code = x.exit_code, r.signal = x.signal;
  r.outcome = r.stalled ? "stalled, then " + describe(x) : describe(x);
  if (watch.bad_lines) r.notes.push_back(fmt::format("{} malformed step line(s) skipped", watch.bad_lines));
  steady_window(r, config.warmup_steps, config.items_per_step,
                config.profile_steps ? std::optional<int64_t>(config.profile_steps->first - 1) : std::nullopt);
  if (watch.tree) r.tree = watch.tree->samples();
  r.tree_window = summarize_tree(r.tree, r.window_start_ns.value_or(r.start_ns), r.window_end_ns.value_or(r.end_ns));
  if (!r.tree_window.cpu_pct_mean && r.window_start_ns && !r.tree.empty()) {
    r.tree_window = summarize_tree(r.tree, r.start_ns, r.end_ns);
    r.notes.push_back("the steady window was shorter than the process-tree readings: its figures cover the whole run");
  }
  if (sampler) add_telemetry(r, config, *sampler);
  if (config.profile_steps) ingest_profile(r, config);
  Provenance& p = r.provenance;
  p = collect_host_provenance();
  p.command_line = config.command_line;
  write_file_atomic(config.out_dir + "/steps.csv", steps_csv(r));
  write_file_atomic(config.out_dir + "/process_tree.csv", tree_csv(r.tree));
  write_file_atomic(config.out_dir + "/measure.json", result_json(r, config, p).dump(2) + "\n");
  write_results(r, config, p, sampler.get(), watch.origin);
  return r;
}

}  // namespace trainscope::measure

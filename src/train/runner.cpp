#include "trainscope/runner.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <ctime>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <map>
#include <filesystem>
#include <thread>

#include "infer/bench.h"
#include "train/compat.h"
#include "train/device.h"
#include "train/trainer.h"
#include "trainscope/dataset.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/profile.h"
#include "trainscope/telemetry.h"

namespace trainscope {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::vector<std::pair<std::string, std::string>> list_devices() {
  auto host = collect_host_provenance();
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& d : visible_devices()) out.emplace_back(d, device_display_name(d, host.cpu_model));
  return out;
}

Provenance collect_provenance(const std::string& command_line, uint64_t seed) {
  Provenance p = collect_host_provenance();
  add_torch_provenance(p);
  p.command_line = command_line;
  p.seed = seed;
  p.intra_op_threads = at::get_num_threads();
  return p;
}

namespace {

std::string timestamp_folder() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

// Headline numbers of a telemetry summary for one device (means/peaks over the window).
nlohmann::json telemetry_headline(const nlohmann::json& summary, const std::string& device) {
  nlohmann::json h = nlohmann::json::object();
  h["device"] = device.empty() ? nlohmann::json(nullptr) : nlohmann::json(device);
  auto field = [&](const std::string& dev, const std::string& metric, const char* stat) -> nlohmann::json {
    if (!summary.contains("devices") || !summary["devices"].contains(dev)) return nullptr;
    const auto& d = summary["devices"][dev];
    if (!d.contains("fields") || !d["fields"].contains(metric)) return nullptr;
    const auto& f = d["fields"][metric];
    return f.contains(stat) ? f[stat] : nlohmann::json(nullptr);
  };
  if (!device.empty()) {
    for (const char* m : {"util_pct", "sm_activity_pct", "sm_occupancy_pct", "tensor_activity_pct", "mem_util_pct",
                          "power_w", "power_avg_w", "power_instant_w", "temp_c", "sm_clock_mhz", "package_power_w"}) {
      h[std::string(m) + "_mean"] = field(device, m, "mean");
      h[std::string(m) + "_max"] = field(device, m, "max");
    }
    h["mem_used_bytes_max"] = field(device, "mem_used_bytes", "max");
    h["process_mem_bytes_max"] = field(device, "process_mem_bytes", "max");
    h["clocks_event_reasons_mask_max"] = field(device, "clocks_event_reasons_mask", "max");
    if (summary.contains("devices") && summary["devices"].contains(device) &&
        summary["devices"][device].contains("energy")) {
      const auto& e = summary["devices"][device]["energy"];
      h["energy_j"] = e.value("energy_j", nlohmann::json(nullptr));
      h["joules_per_sample"] = e.value("joules_per_sample", nlohmann::json(nullptr));
      h["energy_method"] = e.value("energy_method", nlohmann::json(nullptr));
      h["energy_short_window"] = e.value("short_window", nlohmann::json(nullptr));
    }
  }
  h["cpu_util_pct_mean"] = field("cpu", "util_pct", "mean");
  h["cpu_util_pct_max"] = field("cpu", "util_pct", "max");
  h["process_cpu_pct_mean"] = field("process", "cpu_pct", "mean");
  h["process_rss_bytes_max"] = field("process", "rss_bytes", "max");
  h["host_mem_used_bytes_max"] = field("cpu", "mem_used_bytes", "max");
  h["cpu_temp_c_max"] = field("cpu", "temp_c", "max");
  return h;
}

}  // namespace

nlohmann::json checkpoint_description(const RunSpec& spec, const DataConfig& data, const Workload& w) {
  const auto& tr = w.data.train;
  return {{"schema_version", kSchemaVersion},
          {"model", spec.model},
          {"input_shape", {tr.channels, tr.height, tr.width}},
          {"num_classes", tr.num_classes},
          {"normalisation", {{"mean", w.data.mean}, {"std", w.data.std}}},
          {"data", {{"format", data.format}, {"path", data.path}, {"image_size", data.image_size},
                    {"image_channels", data.image_channels}}},
          {"weights_format", is_torchscript_path(spec.model) ? "torchscript" : "libtorch_archive"},
          {"trained_on", spec.device},
          {"batch_size", spec.batch_size},
          {"seed", spec.train.seed}};
}

namespace {

void write_results(const MatrixResult& res) {
  write_file_atomic(res.run_dir + "/results.json", results_json(res.provenance, res.runs));
  write_file_atomic(res.run_dir + "/results.csv", results_csv(res.provenance, res.runs));
}

}  // namespace

MatrixResult run_matrix(const MatrixConfig& cfg_in, MatrixObserver* obs, const std::atomic<bool>* stop_requested) {
  MatrixConfig cfg = cfg_in;
  validate(cfg);
  auto origin = Clock::now();  // the matrix clock's zero (moved back on --resume, below)
  int64_t threads = cfg.train.threads > 0 ? cfg.train.threads : static_cast<int64_t>(std::thread::hardware_concurrency());
  at::set_num_threads(static_cast<int>(std::max<int64_t>(threads, 1)));

  std::string notice;
  auto devices = resolve_devices(cfg.devices, &notice);
  if (!notice.empty() && obs) obs->on_notice(notice);

  // Data first: a bad path or corrupt file stops us before any training.
  auto workload = make_workload(load_datasets(cfg.data, cfg.train.seed));
  const auto& tr = workload.data.train;
  if (tr.count < 1) throw_error(ErrorKind::kDataFormat, "the training set is empty");

  // Models: build each once on the CPU to reject unknown names, shape mismatches and models
  // with nothing to train before anything runs.
  for (const auto& m : cfg.models)
    check_model_fits(*make_model(m, tr.channels, tr.height, tr.width, tr.num_classes), workload.train_x,
                     tr.num_classes, /*need_trainable=*/true, fmt::format("model '{}'", m));

  MatrixResult res;
  res.run_dir = (fs::path(cfg.out_dir) / (cfg.run_name.empty() ? timestamp_folder() : cfg.run_name)).string();
  ensure_writable_dir(res.run_dir);
  // One writer per run folder: a second trainscope on the same --name fails instead of mixing
  // results. The lock is released when the process ends, however it ends.
  struct FolderLock {
    int fd = -1;
    ~FolderLock() {
      if (fd >= 0) ::close(fd);
    }
  } folder_lock;
  folder_lock.fd = ::open((res.run_dir + "/.trainscope.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (folder_lock.fd < 0 || ::flock(folder_lock.fd, LOCK_EX | LOCK_NB) != 0)
    throw_error(ErrorKind::kIo, fmt::format("run folder '{}' is in use by another trainscope process; {}",
                                            res.run_dir,
                                            cfg.resume ? "wait for it to finish (or stop it), then resume"
                                                       : "choose another --name"));
  if (!cfg.resume && file_exists(res.run_dir + "/results.json"))
    throw_error(ErrorKind::kIo, fmt::format("run folder '{}' already holds results; continue it with --resume {} or "
                                            "choose another --name (nothing was changed)",
                                            res.run_dir, res.run_dir));
  // A process killed inside write_file_atomic (e.g. a second Ctrl-C) leaves NAME.tmp.<pid>;
  // with the folder lock held nobody else is writing, so such leftovers are removed.
  for (const auto* sub : {"", "/checkpoints"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(res.run_dir + sub, ec)) {
      std::string n = e.path().filename().string();
      auto at = n.rfind(".tmp.");
      if (at != std::string::npos && at + 5 < n.size() &&
          n.find_first_not_of("0123456789", at + 5) == std::string::npos)
        fs::remove(e.path(), ec);
    }
  }
  ensure_writable_dir(res.run_dir + "/checkpoints");
  res.provenance = collect_provenance(cfg.command_line, cfg.train.seed);
  size_t planned = devices.size() * cfg.models.size() * cfg.batch_sizes.size() * static_cast<size_t>(cfg.repeats);
  // --resume: runs already measured as ok are kept as they are and not repeated.
  std::map<std::string, RunRecord> done;
  if (cfg.resume) {
    const std::string prev = res.run_dir + "/results.json";
    if (!file_exists(prev))
      throw_error(ErrorKind::kIo, fmt::format("cannot resume '{}': it has no results.json; give the run folder that "
                                              "`trainscope run` printed",
                                              res.run_dir));
    nlohmann::json j;
    try {
      auto bytes = read_file_bytes(prev, uint64_t{1} << 30);
      j = nlohmann::json::parse(bytes.begin(), bytes.end());
      int64_t last_ns = 0;
      for (const auto& rj : j.at("runs")) {
        auto r = run_record_from_json(rj);
        if (r.status == RunStatus::kOk) done[r.run_id] = r;
        last_ns = std::max(last_ns, r.end_ns);
      }
      // One matrix clock across sessions: this session starts 1 s after the last run recorded,
      // so its runs and telemetry samples follow the kept ones instead of overlapping them.
      origin -= std::chrono::nanoseconds(last_ns + 1'000'000'000);
    } catch (const nlohmann::json::exception& e) {
      throw_error(ErrorKind::kDataFormat, fmt::format("cannot resume: '{}' is not a trainscope results file ({})", prev,
                                                      e.what()));
    }
    if (obs)
      obs->on_notice(fmt::format("resuming {}: {} of {} runs already measured are kept", res.run_dir, done.size(),
                                 planned));
  }
  write_file_atomic(res.run_dir + "/matrix.json", matrix_config_to_json(cfg));
  if (obs) obs->on_matrix_start(res.run_dir, res.provenance, planned);
  if (!cfg.resume) write_results(res);

  // Telemetry: one sampler for the whole matrix, on the matrix clock; a source that fails
  // to probe is listed as unavailable, and a sampler that cannot start at all never stops
  // training.
  std::unique_ptr<TelemetrySampler> sampler;
  std::vector<GpuInfo> telemetry_gpus;
  if (cfg.telemetry.enabled) {
    try {
      TelemetryOptions to;
      to.interval_s = cfg.telemetry.interval_s;
      to.nvml_library = cfg.telemetry.nvml_library;
      to.proc_root = cfg.telemetry.proc_root;
      to.sys_root = cfg.telemetry.sys_root;
      sampler = std::make_unique<TelemetrySampler>(to, origin);
      sampler->start();
      telemetry_gpus = sampler->gpus();
      for (const auto& src : sampler->sources())
        if (!src.value("available", false) && obs)
          obs->on_notice(fmt::format("telemetry source '{}' unavailable: {}", src.value("name", "?"),
                                     src.value("reason", "")));
      for (const auto& src : sampler->sources())
        if (src.value("name", "") == "nvml" && src.contains("details")) {
          const auto& d = src["details"];
          if (d.contains("driver_version") && d["driver_version"].is_string())
            res.provenance.gpu_driver = d["driver_version"].get<std::string>();
          if (d.contains("nvml_version") && d["nvml_version"].is_string())
            res.provenance.nvml_version = d["nvml_version"].get<std::string>();
        }
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kInvalidArgument) throw;
      if (obs) obs->on_notice(fmt::format("telemetry disabled: {}", e.what()));
      sampler.reset();
    }
  }

  ProgressBar progress(cfg.progress);
  const auto model_names = run_id_model_names(cfg.models);  // one per list entry, unique
  for (int64_t rep = 0; rep < cfg.repeats && !res.interrupted; ++rep)
    for (const auto& model : cfg.models)
      for (int64_t b : cfg.batch_sizes)
        for (const auto& dev : devices) {
          if (res.interrupted) break;
          RunSpec spec;
          spec.run_id = fmt::format("{}-{}-b{}-r{}", dev == "cpu" ? "cpu" : dev.substr(0, 4) + dev.substr(5),
                                    model_names[static_cast<size_t>(&model - cfg.models.data())], b, rep);
          if (auto it = done.find(spec.run_id); it != done.end()) {
            res.runs.push_back(it->second);
            if (obs) obs->on_run_skipped(res.runs.back());
            continue;
          }
          spec.device = dev;
          spec.model = model;
          spec.batch_size = b;
          spec.repeat = rep;
          spec.train = cfg.train;
          spec.origin = origin;
          std::string ckpt_rel = "checkpoints/" + spec.run_id + ".pt";
          spec.checkpoint_path = res.run_dir + "/" + ckpt_rel;
          RunRecord rec;
          rec.run_id = spec.run_id;
          rec.device = dev;
          rec.model = model;
          rec.batch_size = b;
          rec.repeat = rep;
          rec.device_name = device_display_name(dev, res.provenance.cpu_model);
          if (obs) obs->on_run_start(rec);
          TrainHooks hooks;
          hooks.progress = &progress;
          hooks.stop_requested = stop_requested;
          // ---- hooks of other components attach here (profiler: on_step_*/on_phase_span;
          //      inference: on_trained). Keep each component's code to a few lines + a call
          //      into its own src/<component>/ files.
          // profile: the scheduled operator-profiling window (src/profile/).
          std::unique_ptr<RunProfiler> profiler;
          if (cfg.profile.enabled) {  // placed after the headline window (docs/profiling.md#measurement-protocol)
            std::string fit_note;
            spec.profile = resolve_profile_schedule(cfg.profile, cfg.train.warmup_steps,
                                                    planned_train_steps(cfg.train, tr.count, b), &fit_note);
            spec.profile_skip_first_auto = cfg.profile.skip_first < 0;
            if (!fit_note.empty()) rec.notes.push_back(fit_note);
            profiler = std::make_unique<RunProfiler>(*spec.profile, spec.run_id, dev, origin);
            hooks.on_step_begin = [p = profiler.get()](int64_t s) { p->on_step_begin(s); };
            hooks.on_step_end = [p = profiler.get()](int64_t s) { p->on_step_end(s); };
            hooks.on_phase_span = [p = profiler.get()](int64_t s, const char* ph, int64_t t0, int64_t t1) {
              p->on_phase_span(s, ph, t0, t1);
            };
          }
          if (cfg.inference.enabled)  // single-stream + offline (+ server) on the trained model
            hooks.on_trained = [&](Model& m, const torch::Device& d) {
              // A run that ends inside the profiling window: close it first, so inference
              // operators never land in the training operator table or trace.
              if (profiler) profiler->stop();
              if (obs) obs->on_notice(fmt::format("{}: training done; measuring inference (Ctrl-C ends it early)", spec.run_id));
              rec.inference = inference_after_training(
                  m, d, workload.test_x.numel() > 0 ? workload.test_x : workload.train_x, cfg.inference,
                  cfg.train.seed, sampler.get(), sampler ? telemetry_device(dev, res.provenance, telemetry_gpus) : "",
                  stop_requested);
            };
          // ---- end of component hooks
          try {
            train_run(spec, workload, hooks, &rec);
            if (rec.status == RunStatus::kOk) {
              rec.checkpoint_path = ckpt_rel;
              write_file_atomic(res.run_dir + "/checkpoints/" + spec.run_id + ".json",
                                checkpoint_description(spec, cfg.data, workload).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
            }
          } catch (const Error& e) {
            rec.status = e.kind() == ErrorKind::kInterrupted ? RunStatus::kInterrupted : RunStatus::kFailed;
            rec.error_kind = std::string(to_string(e.kind()));
            rec.failure_reason = e.what();
          } catch (const c10::Error& e) {
            rec.status = RunStatus::kFailed;
            if (compat::is_out_of_memory(e)) {
              auto ms = device_memory_stats(torch::Device(dev));
              rec.error_kind = "out_of_memory";
              rec.failure_reason = fmt::format(
                  "{} ran out of memory at batch size {} (peak allocated {:.2f} GiB of {:.2f} GiB); use a smaller batch",
                  dev, b, ms.peak_allocated_bytes.value_or(0) / 1073741824.0, ms.total_bytes.value_or(0) / 1073741824.0);
              release_device_cache(torch::Device(dev));
            } else {
              rec.error_kind = "libtorch";
              rec.failure_reason = e.what_without_backtrace();
            }
          } catch (const std::bad_alloc&) {
            rec.status = RunStatus::kFailed;
            rec.error_kind = "out_of_memory";
            rec.failure_reason = fmt::format("host memory exhausted at batch size {}", b);
          } catch (const std::exception& e) {
            rec.status = RunStatus::kFailed;
            rec.error_kind = "internal";
            rec.failure_reason = e.what();
          }
          progress.end();
          if (sampler && !rec.epochs.empty()) {
            std::string tdev = telemetry_device(dev, res.provenance, telemetry_gpus);
            int64_t samples = 0;
            for (const auto& e : rec.epochs) samples += e.samples;
            auto summary = sampler->summarize(rec.epochs.front().start_ns, rec.epochs.back().end_ns, samples);
            for (auto& e : rec.epochs) {
              if (tdev.empty()) break;
              auto es = sampler->summarize(e.start_ns, e.end_ns, e.samples);
              if (es.contains("devices") && es["devices"].contains(tdev) && es["devices"][tdev].contains("energy") &&
                  es["devices"][tdev]["energy"]["energy_j"].is_number())
                e.energy_j = es["devices"][tdev]["energy"]["energy_j"].get<double>();
            }
            // The headline figures come from the headline window only; the whole run stays in "summary".
            const auto& mw = rec.measurement;
            const bool window = mw.headline_end_ns > mw.headline_start_ns;
            auto headline = telemetry_headline(
                window ? sampler->summarize(mw.headline_start_ns, mw.headline_end_ns, mw.headline_samples) : summary, tdev);
            headline["window"] = window ? "headline" : "run";
            rec.telemetry = {{"headline", headline}, {"summary", summary}};
            auto cpu = summary.value(nlohmann::json::json_pointer("/devices/sampler/fields/cpu_pct/mean"),
                                     nlohmann::json(nullptr));
            if (cpu.is_number()) rec.measurement.sampler_cpu_pct_mean = cpu.get<double>();
            if (tdev.empty() && dev != "cpu")
              rec.notes.push_back("GPU telemetry absent: NVML did not report a GPU with this device's PCI bus id");
          }
          // ---- per-run post-processing of other components (profile summary and trace, ...)
          if (profiler) {  // profile: op table, step breakdown, trace (never fails the run)
            try {
              rec.profile = profiler->finish(res.run_dir, rec, sampler ? sampler->series() : std::vector<CounterSeries>{},
                                             &res.provenance);
            } catch (const std::exception& e) {
              rec.notes.push_back(fmt::format("profile absent: {}", e.what()));
            }
            profiler.reset();
          }
          rate_instrumentation_cost(rec);
          // ---- end of per-run post-processing
          if (rec.device_name.empty()) rec.device_name = device_display_name(dev, res.provenance.cpu_model);
          if (rec.end_ns == 0) rec.end_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - origin).count();
          if (rec.status == RunStatus::kFailed) res.any_failed = true;
          if (rec.status == RunStatus::kInterrupted) res.interrupted = true;
          // Ctrl-C after the last step (during inference): this run is complete and kept, the
          // matrix stops here.
          if (stop_requested && stop_requested->load()) res.interrupted = true;
          res.runs.push_back(rec);
          write_results(res);
          if (obs) obs->on_run_end(res.runs.back());
        }
  if (sampler) {
    sampler->stop();
    const std::string tel = res.run_dir + "/telemetry.csv.gz";
    try {
      if (cfg.resume && file_exists(tel)) {
        // --resume: keep the earlier sessions' samples and append this session's (same clock).
        const std::string part = res.run_dir + "/telemetry.session.csv.gz";
        sampler->write_samples_csv_gz(part);
        auto old_rows = read_file_bytes(tel);
        auto new_rows = read_file_bytes(part);
        std::string merged(old_rows.begin(), old_rows.end());
        if (!merged.empty() && merged.back() != '\n') merged += '\n';
        auto body = std::find(new_rows.begin(), new_rows.end(), '\n');  // skip the header line
        if (body != new_rows.end()) merged.append(body + 1, new_rows.end());
        write_file_atomic(tel, gzip_compress(merged));
        std::remove(part.c_str());
      } else {
        sampler->write_samples_csv_gz(tel);
      }
    } catch (const Error& e) {
      if (obs) obs->on_notice(e.what());
    }
  }
  write_results(res);
  return res;
}

}  // namespace trainscope

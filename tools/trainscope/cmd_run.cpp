// `trainscope run`: the experiment matrix (devices x models x batch sizes x repeats).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <optional>

#include "commands.h"
#include "workload/model.h"
#include "trainscope/config.h"
#include "trainscope/console_table.h"
#include "trainscope/error.h"
#include "trainscope/history.h"
#include "trainscope/report.h"
#include "trainscope/profile.h"
#include "trainscope/fs.h"
#include "trainscope/runner.h"

namespace trainscope::cli {

namespace {

std::atomic<bool> g_stop{false};

void on_run_signal(int) {
  if (g_stop.exchange(true)) _exit(kExitInterrupted);  // second Ctrl-C: exit at once
  static const char kMsg[] = "\ntrainscope: interrupt received; finishing the current step and writing results "
                             "(press Ctrl-C again to exit at once)\n";
  ssize_t ignored = ::write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
  (void)ignored;
}

std::string ms3(const std::optional<double>& v) { return v ? fmt::format("{:.3f} ms", *v) : "—"; }

// "; server Q qps: p99 X ms (meets the T ms target)" when [inference] server_qps is set.
std::string server_figure(const std::optional<ServerResult>& srv) {
  if (!srv || srv->runs.empty()) return "";
  const ServerRun& sr = srv->runs.back();
  // A configured rate (server_qps) carries its verdict (absent when interrupted); a search only
  // has the verdict of its last rate.
  const std::optional<bool> mt = srv->qps ? srv->meets_target : std::optional<bool>(sr.meets_target);
  return fmt::format("; server {} qps: p99 {} ({} the {} ms target)", sr.qps, ms3(sr.latency.p99_ms),
                     mt ? (*mt ? "meets" : "misses") : "not judged against", srv->target_p99_ms);
}

// One line of inference figures after a run (trainscope/inference.h); nothing when skipped.
void print_inference(const RunRecord& r) {
  if (!r.inference) return;
  const InferenceSection& i = *r.inference;
  if (i.failed()) {
    fmt::print("    inference failed ({}): {}\n", i.error_kind, i.error);
    return;
  }
  const LatencyFields ss = i.single_stream ? i.single_stream->latency : LatencyFields{};
  std::string best = "—";
  if (i.offline && i.offline->best_samples_per_s)
    best = fmt::format("{} samples/s at batch {}", format_rate(*i.offline->best_samples_per_s),
                       i.offline->best_batch_size.value_or(0));
  const bool cut_ss = i.single_stream && i.single_stream->interrupted, cut_off = i.offline && i.offline->interrupted,
             cut_srv = i.server && i.server->interrupted;
  if (best == "—" && cut_off) best = "— (interrupted before it was measured)";
  fmt::print("    inference: single-stream p50 {}, p99 {}{}; offline best {}{}{}\n", ms3(ss.p50_ms), ms3(ss.p99_ms),
             i.single_stream && ss.too_few_queries ? " (too few queries: percentiles unreliable)" : "", best,
             server_figure(i.server), cut_ss || cut_off || cut_srv ? " [cut short by Ctrl-C: partial figures]" : "");
}

class ConsoleObserver final : public MatrixObserver {
 public:
  void on_notice(const std::string& m) override { fmt::print(stderr, "trainscope: note: {}\n", m); }
  void on_matrix_start(const std::string& dir, const Provenance& p, size_t planned) override {
    planned_ = planned;
    fmt::print("trainscope {} · LibTorch {}{} · {} ({} logical CPUs, {} intra-op threads){}\n", p.trainscope_version,
               p.libtorch_version, p.cuda_runtime.empty() ? "" : " · CUDA " + p.cuda_runtime, p.cpu_model,
               p.cpu_logical_cores, p.intra_op_threads, p.gpus.empty() ? "" : fmt::format(" · {} GPU(s): {}", p.gpus.size(), p.gpus[0].name));
    fmt::print("run folder: {}\n{} runs planned\n", dir, planned);
  }
  void on_run_skipped(const RunRecord& r) override {
    ++done_;
    fmt::print("[{}/{}] {} {} b{}: already measured, kept (resume)\n", done_, planned_, r.device, r.model, r.batch_size);
  }
  void on_run_end(const RunRecord& r) override {
    ++done_;
    if (r.status == RunStatus::kOk)
      fmt::print("[{}/{}] {} {} b{}: {} samples/s, test accuracy {}, {} of training\n", done_, planned_, r.device,
                 r.model, r.batch_size, r.steady_samples_per_s ? format_rate(*r.steady_samples_per_s) : "—",
                 r.test_accuracy_pct ? fmt::format("{:.1f} %", *r.test_accuracy_pct) : "—",
                 format_duration(r.train_time_s));
    else
      fmt::print("[{}/{}] {} {} b{}: {}: {}\n", done_, planned_, r.device, r.model, r.batch_size, to_string(r.status),
                 r.failure_reason);
    print_inference(r);
    std::fflush(stdout);
  }

 private:
  size_t planned_ = 0, done_ = 0;
};

struct RunFlags {
  std::string config, preset, resume;
  std::vector<std::string> devices, models;
  std::vector<int64_t> batch_sizes;
  std::optional<int64_t> repeats, epochs, seed, threads, warmup, max_steps, limit_train, limit_test, image_size,
      image_channels, eval_batch;
  std::optional<double> lr, time_budget;
  std::optional<std::string> optimizer, optimizer_impl, data, data_format, out, name;
  bool no_progress = false, no_telemetry = false;
  bool no_inference = false;
  std::optional<double> telemetry_interval;
  std::optional<std::string> nvml_library;
  int64_t inject_nan = -1;
  bool profile = false, no_profile = false, profile_shapes = false, profile_flops = false, profile_no_memory = false;
  std::optional<int64_t> profile_steps, profile_skip, profile_top;
};


}  // namespace

void add_run_command(CLI::App& app, int& exit_status) {
  auto f = std::make_shared<RunFlags>();
  auto* sub = app.add_subcommand("run", "Train the matrix devices x models x batch sizes x repeats and compare devices");
  sub->add_option("--resume", f->resume,
                  "continue the matrix of this run folder (its matrix.json), skipping runs already measured")
      ->check(CLI::ExistingDirectory);
  sub->add_option("-c,--config", f->config, "TOML configuration file (flags given here override it)")
      ->check(CLI::ExistingFile);
  sub->add_option("--preset", f->preset, "paper: the study's setup (Adam, 20 epochs, batch 64/128, mlp + resnet18); "
                                         "quick: 200 steps per run");
  sub->add_option("-d,--devices", f->devices, "cpu, cuda (all GPUs), cuda:N (default: cpu and every GPU)")->delimiter(',');
  sub->add_option("-m,--models", f->models, "mlp, cnn, resnet18, vgg11 or a TorchScript file (default: mlp,cnn)")
      ->delimiter(',');
  sub->add_option("-b,--batch-sizes", f->batch_sizes, "batch sizes (default: 64,128)")->delimiter(',');
  sub->add_option("--repeats", f->repeats, "repeats of every cell (median and spread are reported)");
  sub->add_option("-e,--epochs", f->epochs, "epochs per run (default 1)");
  sub->add_option("--optimizer", f->optimizer, "adam or sgd (default adam)");
  sub->add_option("--optimizer-impl", f->optimizer_impl,
                  "adam implementation: auto (fused kernel on CUDA), fused, loop (torch::optim)");
  sub->add_option("--lr", f->lr, "learning rate (default 0.001)");
  sub->add_option("--seed", f->seed, "random seed for weights and shuffling (default 42)");
  sub->add_option("--threads", f->threads, "intra-op CPU threads (default: all online CPUs)");
  sub->add_option("--warmup-steps", f->warmup, "steps excluded from steady-state samples/s (default 10)");
  sub->add_option("--max-steps", f->max_steps, "stop each run after N steps and estimate the full time");
  sub->add_option("--time-budget", f->time_budget, "stop each run after this many seconds of training");
  sub->add_option("--eval-batch-size", f->eval_batch, "test-set evaluation batch size (default 1024)");
  sub->add_option("--data", f->data, "data folder (default /usr/share/datasets/fashion-mnist)");
  sub->add_option("--data-format", f->data_format, "idx, cifar10, folder or synthetic (default idx)");
  sub->add_option("--image-size", f->image_size, "folder: resize images to N x N (default 32)");
  sub->add_option("--image-channels", f->image_channels, "folder: 1 or 3 channels (default 3)");
  sub->add_option("--limit-train", f->limit_train, "use only the first N training samples");
  sub->add_option("--limit-test", f->limit_test, "use only the first N test samples");
  sub->add_option("-o,--out", f->out, "folder for run folders (default trainscope-runs)");
  sub->add_option("--name", f->name, "run folder name (default: UTC timestamp)");
  sub->add_flag("--no-progress", f->no_progress, "no progress bar even on a terminal");
  sub->add_flag("--no-telemetry", f->no_telemetry, "do not sample hardware telemetry");
  sub->add_flag("--no-inference", f->no_inference, "skip the single-stream and offline inference after each run");
  sub->add_option("--telemetry-interval", f->telemetry_interval, "telemetry sampling period in s (default 0.1 = 10 Hz)");
  sub->add_option("--nvml-library", f->nvml_library, "NVML library to dlopen (default libnvidia-ml.so.1)");
  sub->add_flag("--profile", f->profile, "record an operator-profiling window (default on)");
  sub->add_flag("--no-profile", f->no_profile, "no operator profiling, trace or op table");
  sub->add_option("--profile-steps", f->profile_steps, "profiled (active) steps per run (default 5)");
  sub->add_option("--profile-skip", f->profile_skip, "steps before the profiler's warm-up (default 10)");
  sub->add_flag("--profile-shapes", f->profile_shapes, "record operator input shapes");
  sub->add_flag("--profile-flops", f->profile_flops, "FLOPs per operator in the op table (records input shapes)");
  sub->add_flag("--profile-no-memory", f->profile_no_memory, "no allocator events in the profiling window");
  sub->add_option("--profile-top", f->profile_top, "operators shown per run on the console (default 15, 0: none)");
  sub->add_option("--inject-nan-at-step", f->inject_nan, "testing: make the loss NaN at this step")->group("");
  sub->callback([f, sub, &exit_status] {
    MatrixConfig m;
    if (!f->resume.empty()) {
      // --resume repeats the matrix recorded in matrix.json, settings included: a flag that
      // changes the matrix would mix differently measured runs in one results file.
      std::vector<std::string> given;
      for (const auto* o : sub->get_options())
        if (o->count() > 0 && o->get_name() != "--resume" && o->get_name() != "--no-progress" &&
            o->get_name() != "--help")
          given.push_back(o->get_name());
      if (!given.empty())
        throw_error(ErrorKind::kInvalidArgument,
                    fmt::format("--resume continues the matrix recorded in {}/matrix.json with its own settings; {} "
                                "cannot be combined with it (only --no-progress can). To measure other settings, "
                                "start a new run folder without --resume",
                                f->resume, fmt::join(given, ", ")));
      namespace fs = std::filesystem;
      fs::path dir = fs::absolute(f->resume).lexically_normal();  // "--resume ." from inside the folder works too
      if (dir.filename().empty()) dir = dir.parent_path();
      auto mj = (dir / "matrix.json").string();
      if (!file_exists(mj))
        throw_error(ErrorKind::kInvalidArgument,
                    fmt::format("cannot resume '{}': it has no matrix.json; give the run folder that `trainscope "
                                "run` printed (it holds matrix.json and results.json)",
                                dir.string()));
      auto bytes = read_file_bytes(mj, 1 << 20);
      m = matrix_config_from_json(std::string(bytes.begin(), bytes.end()), mj);
      m.out_dir = dir.parent_path().empty() ? "." : dir.parent_path().string();
      m.run_name = dir.filename().string();
      m.resume = true;
    }
    // --preset is the base; with --config it takes the place of the file's own preset, and the
    // file's other keys, then the other flags, override it.
    if (!f->preset.empty() && f->config.empty()) apply_preset(f->preset, m);
    if (!f->config.empty()) load_toml_config(f->config, m, f->preset);
    if (f->seed && *f->seed < 0)
      throw_error(ErrorKind::kInvalidArgument, fmt::format("--seed {} is negative; use 0 or a positive integer", *f->seed));
    if (!f->devices.empty()) m.devices = f->devices;
    if (!f->models.empty()) m.models = f->models;
    if (!f->batch_sizes.empty()) m.batch_sizes = f->batch_sizes;
    if (f->repeats) m.repeats = *f->repeats;
    if (f->epochs) m.train.epochs = *f->epochs;
    if (f->optimizer) m.train.optimizer = *f->optimizer;
    if (f->lr) m.train.learning_rate = *f->lr;
    if (f->optimizer_impl) m.train.optimizer_impl = *f->optimizer_impl;
    if (f->seed) m.train.seed = static_cast<uint64_t>(*f->seed);
    if (f->threads) m.train.threads = *f->threads;
    if (f->warmup) m.train.warmup_steps = *f->warmup;
    if (f->max_steps) m.train.max_steps = *f->max_steps;
    if (f->time_budget) m.train.time_budget_s = *f->time_budget;
    if (f->eval_batch) m.train.eval_batch_size = *f->eval_batch;
    if (f->data) m.data.path = *f->data;
    if (f->data_format) m.data.format = *f->data_format;
    if (f->image_size) m.data.image_size = *f->image_size;
    if (f->image_channels) m.data.image_channels = *f->image_channels;
    if (f->limit_train) m.data.limit_train = *f->limit_train;
    if (f->limit_test) m.data.limit_test = *f->limit_test;
    if (f->out) m.out_dir = *f->out;
    if (f->name) m.run_name = *f->name;
    if (f->no_progress) m.progress = false;
    if (f->no_telemetry) m.telemetry.enabled = false;
    if (f->no_inference) m.inference.enabled = false;
    if (f->telemetry_interval) m.telemetry.interval_s = *f->telemetry_interval;
    if (f->nvml_library) m.telemetry.nvml_library = *f->nvml_library;
    if (f->profile) m.profile.enabled = true;
    if (f->no_profile) m.profile.enabled = false;
    if (f->profile_steps) m.profile.active = *f->profile_steps;
    if (f->profile_skip) m.profile.skip_first = *f->profile_skip;
    if (f->profile_shapes) m.profile.record_shapes = true;
    if (f->profile_flops) m.profile.with_flops = true;
    if (f->profile_no_memory) m.profile.profile_memory = false;
    if (f->profile_top) m.profile.top_n = *f->profile_top;
    if (f->inject_nan >= 0) m.train.inject_nan_at_step = f->inject_nan;
    // Provenance: a resumed matrix keeps the command that started it and adds this one.
    m.command_line = m.resume && !m.command_line.empty() ? m.command_line + " ; resumed: " + command_line()
                                                         : command_line();
    // validate() speaks in flags; when a value may come from a file, say which file too.
    if (m.resume || !f->config.empty()) {
      try {
        validate(m);
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kInvalidArgument) throw;
        throw_error(ErrorKind::kInvalidArgument,
                    fmt::format("{} (the value comes from the command line or {}; the TOML key of each flag is in "
                                "README 'Configuration file')",
                                e.what(), m.resume ? f->resume + "/matrix.json" : f->config));
      }
    }
    if (!m.resume) {
      // Paths are stored absolute in matrix.json, so --resume from another working directory
      // reads the same data, models and libraries (never a same-named folder elsewhere).
      auto absolute = [](std::string& p) {
        if (!p.empty()) p = std::filesystem::absolute(p).lexically_normal().string();
      };
      if (m.data.format != "synthetic") absolute(m.data.path);
      for (auto& model : m.models)
        if (is_torchscript_path(model)) absolute(model);
      absolute(m.history_db);
      if (m.telemetry.nvml_library.find('/') != std::string::npos) absolute(m.telemetry.nvml_library);
      absolute(m.telemetry.proc_root);
      absolute(m.telemetry.sys_root);
    }

    std::signal(SIGINT, on_run_signal);
    std::signal(SIGTERM, on_run_signal);
    ConsoleObserver obs;
    // report component: every run goes into the history database as it starts and ends
    HistoryObserver history(m.history_db.empty() ? m.out_dir + "/history.sqlite" : m.history_db, &obs);
    MatrixResult res = run_matrix(m, &history, &g_stop);
    fmt::print("\n{}\n", format_matrix_table(res.runs));
    for (const auto& r : res.runs)  // profile: top operators of each run
      if (m.profile.top_n > 0 && r.profile)
        if (auto t = format_op_table(*r.profile, m.profile.top_n); !t.empty())
          fmt::print("top operators of {} (profiled steps; {}/profiles/{}.ops.csv, traces/{}.trace.json.gz):\n{}\n",
                     r.run_id, res.run_dir, r.run_id, r.run_id, t);
    fmt::print("results: {}/results.json, {}/results.csv\n", res.run_dir, res.run_dir);
    try {  // report component: RQ answers and advice on the console, report.md + report.html last
      ReportInput rin{res.provenance, res.runs, res.run_dir};
      auto rep = write_report(rin, res.run_dir);
      fmt::print("\n{}\nreport: {}\n{}\n", render_console(rin, analyze(rin)), rep.markdown_path, rep.html_path);
    } catch (const Error& e) {
      fmt::print(stderr, "trainscope: report not written: {}\n", e.what());
    }
    if (res.interrupted) {
      fmt::print(stderr, "trainscope: interrupted; the runs measured so far are in {}\n", res.run_dir);
      exit_status = kExitInterrupted;
    } else if (res.any_failed) {
      fmt::print(stderr, "trainscope: some runs failed; see the status column and {}/results.json\n", res.run_dir);
      exit_status = kExitRunFailed;
    }
  });
}

}  // namespace trainscope::cli

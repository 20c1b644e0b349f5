// `trainscope run`: the experiment matrix (devices x models x batch sizes x repeats).
#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>

#include "commands.h"
#include "common/text.h"
#include "dist/rank.h"
#include "dist/env.h"
#include "dist/launch.h"
#include "dist/rank_table.h"
#include "settings_cli.h"
#include "train/device.h"
#include "workload/model.h"
#include "trainscope/variants.h"
#include "trainscope/config.h"
#include "trainscope/console_table.h"
#include "trainscope/error.h"
#include "trainscope/history.h"
#include "trainscope/report.h"
#include "trainscope/profile.h"
#include "trainscope/fs.h"
#include "trainscope/reporter.h"
#include "trainscope/reporter_registry.h"
#include "trainscope/runner.h"
#include "trainscope/tensorboard.h"
#include "interrupt.h"

namespace trainscope::cli {

namespace {

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

// One line of inference figures after a run (trainscope/inference.h); "" when skipped.
std::string inference_line(const RunRecord& r) {
  if (!r.inference) return "";
  const InferenceSection& i = *r.inference;
  if (i.failed()) return fmt::format("    inference failed ({}): {}\n", i.error_kind, i.error);
  const LatencyFields ss = i.single_stream ? i.single_stream->latency : LatencyFields{};
  std::string best = "—";
  if (i.offline && i.offline->best_samples_per_s)
    best = fmt::format("{} samples/s at batch {}", format_rate(*i.offline->best_samples_per_s),
                       i.offline->best_batch_size.value_or(0));
  const bool cut_ss = i.single_stream && i.single_stream->interrupted, cut_off = i.offline && i.offline->interrupted,
             cut_srv = i.server && i.server->interrupted;
  if (best == "—" && cut_off) best = "— (interrupted before it was measured)";
  return fmt::format("    inference: single-stream p50 {}, p99 {}{}; offline best {}{}{}\n", ms3(ss.p50_ms),
                     ms3(ss.p99_ms), i.single_stream && ss.too_few_queries ? " (too few queries: percentiles unreliable)" : "",
                     best, server_figure(i.server),
                     cut_ss || cut_off || cut_srv ? " [cut short by Ctrl-C: partial figures]" : "");
}

// The console: a header, one line per run, then the matrix table. After the matrix the CLI
// prints the answer (summary, advice, research questions) and then details(): the top operators
// of each run and where the files are, so that the answer is not buried under the tables.
// The console is optional: a write that fails (stdout closed by `| head`, a full disk) turns it
// off and the matrix goes on; lost() then says why.
class ConsoleReporter final : public Reporter {
 public:
  explicit ConsoleReporter(int64_t profile_top) : profile_top_(profile_top) {}
  /// "3/8"; beyond the plan (a --batch-sizes auto sweep adds runs as it goes) just "9".
  std::string counter() const { return done_ <= planned_ ? fmt::format("{}/{}", done_, planned_) : std::to_string(done_); }
  void notice(const std::string& m) override { write(stderr, fmt::format("trainscope: note: {}\n", m)); }
  void warning(const std::string& m) override { write(stderr, fmt::format("trainscope: warning: {}\n", m)); }
  void start(const Provenance& p, const std::string& dir, size_t planned) override {
    planned_ = planned;
    run_dir_ = dir;
    write(stdout, fmt::format("trainscope {} · LibTorch {}{} · {} ({}, {}){}\n", p.trainscope_version,
                              p.libtorch_version, p.cuda_runtime.empty() ? "" : " · CUDA " + p.cuda_runtime,
                              p.cpu_model, cpu_count_words(p), count_of(p.intra_op_threads, "intra-op thread"),
                              p.gpus.empty() ? "" : fmt::format(" · {} GPU(s): {}", p.gpus.size(), p.gpus[0].name)));
    write(stdout, fmt::format("run folder: {}\n{} planned\n", dir, count_of(static_cast<long long>(planned), "run")));
  }
  // "; validation loss 2.5 reached in 41 s, 1.2M tokens, 3.1 kJ" (--target-loss), or "" without one.
  static std::string target_loss_text(const LanguageModelSection& l) {
    if (!l.target_loss) return "";
    if (!l.target_loss_reached.value_or(false) || !l.time_to_target_loss_s)
      return fmt::format("; validation loss {:.4g} not reached (best {})", *l.target_loss,
                         l.best_val_loss ? fmt::format("{:.3f}", *l.best_val_loss) : "—");
    return fmt::format("; validation loss {:.4g} reached in {}, {} tokens{}", *l.target_loss,
                       format_duration(*l.time_to_target_loss_s), format_rate(static_cast<double>(l.tokens_to_target_loss.value_or(0))),
                       l.energy_to_target_loss_j ? fmt::format(", {:.0f} J", *l.energy_to_target_loss_j) : "");
  }
  // "cpu mlp [bf16] b32", "cpu mlp ×2 ranks b64": the cell as the report names it (model_label).
  static std::string cell(const RunRecord& r) { return fmt::format("{} {} b{}", r.device, workload_of(r).model, r.batch_size); }
  void run_skipped(const RunRecord& r) override {
    ++done_;
    write(stdout, fmt::format("[{}] {}: already measured, kept (resume)\n", counter(), cell(r)));
  }
  void run_finished(const RunRecord& r) override {
    ++done_;
    if (r.status == RunStatus::kOk && r.language_model)  // docs/language-models.md
      write(stdout, fmt::format("[{}] {}: {} tokens/s, validation loss {} nats/token (perplexity {}), {} of training{}\n",
                                counter(), cell(r), r.language_model->steady_tokens_per_s ? format_rate(*r.language_model->steady_tokens_per_s) : "—",
                                r.language_model->val_loss ? fmt::format("{:.3f}", *r.language_model->val_loss) : "—",
                                r.language_model->val_perplexity ? fmt::format("{:.1f}", *r.language_model->val_perplexity) : "—",
                                format_duration(r.train_time_s), target_loss_text(*r.language_model)));
    else if (r.status == RunStatus::kOk)
      write(stdout, fmt::format("[{}] {}: {} samples/s, test accuracy {}, {} of training\n", counter(), cell(r),
                                r.steady_samples_per_s ? format_rate(*r.steady_samples_per_s) : "—",
                                r.test_accuracy_pct ? fmt::format("{:.1f} %", *r.test_accuracy_pct) : "—",
                                format_duration(r.train_time_s)));
    else
      write(stdout, fmt::format("[{}] {}: {}\n", counter(), cell(r),
                                status_with_reason(r.status, r.failure_reason.empty() ? r.variant_note : r.failure_reason)));
    write(stdout, inference_line(r));
  }
  void finish(const std::vector<RunRecord>& runs) override {
    if (run_dir_.empty()) return;
    runs_ = runs;
    std::string out = fmt::format("\n{}\n", format_matrix_table(runs));
    for (const auto& r : runs)  // dist: each data-parallel run's ranks
      if (auto t = dist::format_rank_table(r); !t.empty()) out += t + "\n";
    write(stdout, out);
  }
  /// After the answer: the top operators of each profiled run (--profile-top rows) and the
  /// paths of the results files.
  void details() {
    if (run_dir_.empty()) return;
    std::string out;
    for (const auto& r : runs_)
      if (profile_top_ > 0 && r.profile)
        if (auto t = format_op_table(*r.profile, profile_top_); !t.empty())
          out += fmt::format("\ntop operators of {} (profiled steps; {}/profiles/{}.ops.csv, traces/{}.trace.json.gz):\n{}",
                             r.run_id, run_dir_, r.run_id, r.run_id, t);
    write(stdout, fmt::format("{}\nresults: {}/results.json, {}/results.csv\n", out, run_dir_, run_dir_));
  }
  /// Writes `text` to stdout or stderr unless that stream was lost; a failed write (or flush)
  /// loses it, the other stream goes on.
  void write(FILE* to, const std::string& text) {
    std::string& lost = to == stdout ? lost_ : lost_stderr_;
    if (!lost.empty() || text.empty()) return;
    errno = 0;
    if (std::fwrite(text.data(), 1, text.size(), to) != text.size() || std::fflush(to) != 0)
      lost = fmt::format("{} could not be written: {}", to == stdout ? "standard output" : "standard error",
                         std::strerror(errno ? errno : EIO));
  }
  /// Why standard output stopped ("" while it works).
  const std::string& lost() const { return lost_; }

 private:
  int64_t profile_top_;
  std::string run_dir_;
  size_t planned_ = 0, done_ = 0;
  std::vector<RunRecord> runs_;
  std::string lost_, lost_stderr_;
};

// Testing only (hidden --inject-reporter-failure): fails after the first finished run, the way a
// full disk ("io") or a bug ("internal") would, to check exit statuses 5 and 6.
class FaultReporter final : public Reporter {
 public:
  explicit FaultReporter(std::string kind) : kind_(std::move(kind)) {}
  void run_finished(const RunRecord&) override {
    if (kind_ == "io") throw_error(ErrorKind::kIo, "injected write failure (--inject-reporter-failure io)");
    throw std::logic_error("injected internal error (--inject-reporter-failure internal)");
  }

 private:
  std::string kind_;
};

// Exit status of a matrix (commands.h), with the line that says where the kept runs are:
// `kept` runs are in its results files (the run whose write failed is not).
int matrix_exit_status(const MatrixResult& res, size_t kept) {
  if (res.abort != MatrixAbort::kNone) {
    bool io = res.abort == MatrixAbort::kIo;
    std::fputs(fmt::format("trainscope: error ({}): {}; the matrix stopped, the {} run(s) finished before are kept in {}\n",
               io ? "io" : "internal", res.abort_reason, kept, res.run_dir).c_str(), stderr);
    return io ? kExitIoError : kExitInternal;
  }
  if (res.interrupted) {
    std::fputs(fmt::format("trainscope: interrupted; the runs measured so far are in {}\n", res.run_dir).c_str(), stderr);
    return kExitInterrupted;
  }
  if (res.any_failed) {
    std::fputs(fmt::format("trainscope: some runs failed; see the status column and {}/results.json\n", res.run_dir).c_str(), stderr);
    return kExitRunFailed;
  }
  const bool measured = std::any_of(res.runs.begin(), res.runs.end(),
                                    [](const RunRecord& r) { return r.status != RunStatus::kNotApplicable; });
  if (!res.runs.empty() && !measured) {
    std::fputs(fmt::format("trainscope: error (invalid_argument): nothing was measured: every cell of the matrix is not "
               "applicable ({}: {}); choose --variants, --models or --devices that apply (docs/variants.md#applicability)\n",
               res.runs.front().run_id, res.runs.front().variant_note).c_str(), stderr);
    return kExitUsage;
  }
  return kExitOk;
}

// What the reporters of one `trainscope run` read and where they live: the console and the
// report are read by others (notices) and after the matrix (the summary); the rest are owned here.
// A data-parallel rank other than 0 (`secondary`) writes only its own results files (its folder
// is <run folder>/ranks/rankN); rank 0 reports for the whole job (docs/distributed.md).
struct RunOutputs {
  const MatrixConfig& m;
  std::string inject_failure;
  bool secondary = false;
  ConsoleReporter console{m.profile.top_n};
  ReportFilesReporter report{&console};
  ResultsFilesReporter* results = nullptr;
  std::vector<std::unique_ptr<Reporter>> owned;
  Reporter* own(std::unique_ptr<Reporter> r) { return owned.emplace_back(std::move(r)).get(); }
};

// The outputs of `trainscope run`, by name (trainscope/reporter_registry.h), in the order the
// matrix calls them: results first, so a later reporter's failure never loses a run.
const ReporterRegistry<RunOutputs>& run_reporters() {
  static const ReporterRegistry<RunOutputs> reg = [] {
    ReporterRegistry<RunOutputs> r;
    r.add("results", "results.json and results.csv, rewritten after every run", [](RunOutputs& o) {
      auto r = std::make_unique<ResultsFilesReporter>();
      o.results = r.get();
      return o.own(std::move(r));
    });
    r.add("inject-failure", "testing only (--inject-reporter-failure): fails after the first run",
          [](RunOutputs& o) -> Reporter* {
            return o.inject_failure.empty() ? nullptr : o.own(std::make_unique<FaultReporter>(o.inject_failure));
          });
    r.add("history", "the run history database (history.sqlite)", [](RunOutputs& o) -> Reporter* {
      if (o.secondary) return nullptr;
      const std::string db = o.m.history_db.empty() ? o.m.out_dir + "/history.sqlite" : o.m.history_db;
      return o.own(std::make_unique<HistoryReporter>(db, &o.console));
    });
    r.add("console", "a line per run, the matrix table, the top operators",
          [](RunOutputs& o) -> Reporter* { return o.secondary ? nullptr : &o.console; });
    r.add("report", "report.md and report.html at the end",
          [](RunOutputs& o) -> Reporter* { return o.secondary ? nullptr : &o.report; });
    r.add("tensorboard", "a TensorBoard event file per run (unless --no-tensorboard)", [](RunOutputs& o) -> Reporter* {
      if (!o.m.tensorboard.enabled || o.secondary) return nullptr;
      return o.own(std::make_unique<TensorBoardReporter>(o.m.tensorboard.dir, &o.console));
    });
    return r;
  }();
  return reg;
}

int run_with_reporters(const MatrixConfig& m, const std::string& inject_failure, bool secondary = false) {
  RunOutputs out{m, inject_failure, secondary};
  const std::vector<Reporter*> reporters = run_reporters().make(out);
  const ReportFilesReporter& report = out.report;
  const auto& stop = install_interrupt_handler(
      "\ntrainscope: interrupt received; finishing the current step and writing results (press Ctrl-C again to exit "
      "at once)\n");
  MatrixRescue rescue;  // the run a hung model holds: written as interrupted before the exit
  MatrixResult res = [&] {
    // Finishing a step, writing the results and the report take seconds; a hung model forever.
    const double grace_s = std::max(m.dist.timeout_s, 30.0);
    const StopDeadline deadline(
        stop, grace_s,
        fmt::format("trainscope: the work in progress did not stop within {:g} s of the interrupt (the longer of "
                    "--dist-timeout and 30 s): a model or collective hangs; exiting now. The runs finished before are "
                    "kept; `trainscope run --resume <run folder>` runs the rest\n",
                    grace_s),
        [&rescue, grace_s] {
          const std::string why = fmt::format(
              "interrupted (SIGINT/SIGTERM) while its model hung: the work in progress did not return within {:g} s "
              "of the interrupt; what it measured before is kept",
              grace_s);
          if (rescue.salvage_now(why))
            std::fputs("trainscope: the hung run's measurements so far are written as interrupted\n", stderr);
        });
    return run_matrix(m, reporters, &stop, &rescue);
  }();
  restore_interrupt_defaults();
  ConsoleReporter& console = out.console;
  if (report.written())  // the answer right after the matrix table: RQ answers and advice
    console.write(stdout, fmt::format("\n{}", render_console(report.input(), analyze(report.input()))));
  if (!secondary) console.details();
  if (report.written()) console.write(stdout, fmt::format("report: {}\n{}\n", report.markdown_path(), report.html_path()));
  if (!console.lost().empty())  // stderr may be gone too: nothing to do about that
    std::fprintf(stderr, "trainscope: note: the console output stopped (%s); the matrix went on, every run is in %s\n",
                 console.lost().c_str(), res.run_dir.c_str());
  return matrix_exit_status(res, out.results ? out.results->runs_written() : res.runs.size());
}

// The options of one invocation; every setting's option comes from the settings table.
struct RunFlags {
  std::string config, resume;
  SettingOptions settings;
  std::string inject_reporter_failure;  // testing only: io | internal
};

// `--batch-sizes auto` or `--batch-sizes 32,auto`: the batch sweep (trainscope/batch_sweep.h)
// starts at the smallest number given, else at batch_sweep.start.
void use_batch_sweep(MatrixConfig& m) {
  std::erase(m.batch_sizes, 0);
  m.batch_sweep.enabled = true;
  if (m.batch_sizes.empty()) m.batch_sizes = {m.batch_sweep.start};
}

// The devices exist on this machine; when they come from the --config file (not --devices), the
// error names the file and its key.
void check_devices(const MatrixConfig& m, const RunFlags& f, CLI::App* sub) {
  try {
    const auto devices = resolve_devices(m.devices, nullptr);
    check_gpu_only_variants(m.train.variants, devices, !m.devices.empty());  // once, before any rank starts
    const bool cpu = std::find(devices.begin(), devices.end(), "cpu") != devices.end();
    if (cpu && m.train.optimizer == "adam" && m.train.optimizer_impl == "fused")
      throw_error(ErrorKind::kInvalidArgument,
                  "--optimizer-impl fused needs a CUDA device for every run, and the matrix trains on cpu; use auto "
                  "(the fused kernel on GPUs, LibTorch's Adam on the CPU), loop, or --devices cuda");
  } catch (const Error& e) {
    const auto* flag = sub->get_option_no_throw("--devices");
    if (e.kind() != ErrorKind::kDevice || f.config.empty() || m.resume || (flag && flag->count() > 0)) throw;
    throw_error(ErrorKind::kDevice, fmt::format("{} (key 'devices' in the config file {})", e.what(), f.config));
  }
}

// A --tensorboard folder that cannot be written is bad input before training, not a note after it.
void check_tensorboard_dir(const MatrixConfig& m) {
  if (!m.tensorboard.enabled || m.tensorboard.dir.empty()) return;
  try {
    ensure_writable_dir(m.tensorboard.dir);
  } catch (const Error& e) {
    std::string why = e.what();  // ensure_writable_dir's message, without its --out advice
    if (auto at = why.find("; choose another with --out"); at != std::string::npos) why.resize(at);
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("--tensorboard (TOML tensorboard.dir): {}; choose another folder, leave it empty for "
                            "<run folder>/tensorboard, or pass --no-tensorboard",
                            why));
  }
}

// The matrix the flags ask for: --resume's matrix.json, or the preset, then the --config file,
// then the flags; validated, with paths made absolute.
MatrixConfig matrix_from_flags(const RunFlags& f, CLI::App* sub) {
  MatrixConfig m;
  if (!f.resume.empty()) {
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
                              f.resume, fmt::join(given, ", ")));
    namespace fs = std::filesystem;
    fs::path dir = fs::absolute(f.resume).lexically_normal();  // "--resume ." from inside the folder works too
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
  const std::string preset = f.settings.text("preset");
  if (!preset.empty() && f.config.empty()) apply_preset(preset, m);
  if (!f.config.empty()) load_toml_config(f.config, m, preset);
  f.settings.apply(m, {"preset"});  // the preset was applied first, above
  if (f.settings.has_item("batch_sizes", "auto")) use_batch_sweep(m);  // "auto" stands as 0 in the list
  // Provenance: a resumed matrix keeps the command that started it and adds this one.
  m.command_line = m.resume && !m.command_line.empty() ? m.command_line + " ; resumed: " + command_line()
                                                       : command_line();
  // Validated here, before anything is written (the history database included). validate()
  // names the flag and the TOML key; when a value may come from a file, say which file too.
  try {
    validate(m);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kInvalidArgument || (!m.resume && f.config.empty())) throw;
    throw_error(ErrorKind::kInvalidArgument, fmt::format("{} (the value comes from the command line or {})", e.what(),
                                                         m.resume ? f.resume + "/matrix.json" : f.config));
  }
  check_devices(m, f, sub);
  for (const auto& line : ignored_settings(m)) fmt::print(stderr, "trainscope: note: {}\n", line);
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
    absolute(m.tensorboard.dir);
  }
  check_tensorboard_dir(m);
  return m;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_status) {
  auto f = std::make_shared<RunFlags>();
  auto* sub = app.add_subcommand("run", "Train the matrix devices x models x batch sizes x repeats and compare devices");
  sub->add_option("--resume", f->resume,
                  "continue the matrix of this run folder (its matrix.json), skipping runs already measured")
      ->check(CLI::ExistingDirectory);
  sub->add_option("-c,--config", f->config, "TOML configuration file (flags given here override it; keys: "
                                             "`trainscope settings`)")
      ->check(CLI::ExistingFile);
  f->settings.add_all(sub);
  f->settings.name_item("batch_sizes", "auto", 0);
  sub->add_option("--inject-reporter-failure", f->inject_reporter_failure, "testing: io or internal")
      ->check(CLI::IsMember({"io", "internal"}))
      ->group("");
  sub->callback([f, sub, &exit_status] {
    MatrixConfig m = matrix_from_flags(*f, sub);
    if (m.dist.nproc_per_node > 1 && !dist::detect_env()) {  // this process launches the ranks
      exit_status = dist::launch_local(m);
      return;
    }
    struct ShutDown {
      ~ShutDown() { dist::shut_down(); }
    } shut_down_at_exit;  // also when the matrix throws
    const bool secondary = dist::setup_rank(m) && dist::current_rank() != 0;
    exit_status = run_with_reporters(m, f->inject_reporter_failure, secondary);
  });
}

}  // namespace trainscope::cli


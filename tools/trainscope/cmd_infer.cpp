// `trainscope infer`: inference scenarios (single-stream, offline, server) on a checkpoint from
// `trainscope run`, a TorchScript file, or fresh weights, on each device asked for.
#include <csignal>
#include <atomic>
#include <unistd.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "commands.h"
#include "settings_cli.h"
#include "interrupt.h"
#include "dist/stall.h"
#include "infer/bench.h"
#include "infer/checkpoint.h"
#include "infer_history.h"
#include "infer_lm.h"
#include "report/cpu_contention.h"
#include "results/record_json.h"
#include "train/compat.h"
#include "train/device.h"
#include "train/trainer.h"
#include "workload/aoti_model.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/host_malloc.h"
#include "trainscope/inference.h"
#include "trainscope/inference_reporter.h"
#include "trainscope/runner.h"
#include "trainscope/telemetry.h"

namespace trainscope::cli {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct InferFlags {
  std::vector<std::string> checkpoints;
  std::string run_dir, model, data, data_format, out;
  std::string db;  // --db: the history database (tools/trainscope/infer_history.h)
  bool untrained = false, find_max_qps = false, no_telemetry = false;
  std::vector<std::string> devices;
  std::vector<std::string> scenarios = {"single-stream", "offline"};
  std::vector<int64_t> batch_sizes;
  std::optional<double> qps, target_p99_ms, budget;
  std::optional<int64_t> min_queries, threads, seed, max_batch, limit;
  double stall_timeout_s = 60;  // --dist-timeout: a measurement without progress this long is named as stalled
  bool malloc_tuning = true;  // set_host_malloc, as `run` does
  TelemetryOptions telemetry;
  SettingOptions settings;  // the options shared with `run`: same keys, same ranges
  GenerationFlags gen;      // language models (tools/trainscope/infer_lm.h)
  std::vector<std::string> image_flags_given;  // flags of the image scenarios the user gave
  CLI::App* sub = nullptr;
};

// The shared options (settings_cli.h), range-checked as `run` checks them, into the flags above.
void read_shared_settings(InferFlags& f) {
  f.settings.check_given();
  MatrixConfig m;
  f.settings.apply(m);
  auto given = [&](const char* key) { return f.settings.given(key); };
  if (given("data.path")) f.data = m.data.path;
  if (given("data.format")) f.data_format = m.data.format;
  if (given("data.limit_test")) f.limit = m.data.limit_test;
  if (given("devices")) f.devices = m.devices;
  if (given("inference.offline_batch_sizes")) f.batch_sizes = m.inference.offline_batch_sizes;
  if (given("inference.server_qps")) f.qps = m.inference.server_qps;
  if (given("inference.server_target_p99_ms")) f.target_p99_ms = m.inference.server_target_p99_ms;
  if (given("inference.single_stream_budget_s")) f.budget = m.inference.single_stream_budget_s;
  if (given("inference.min_queries")) f.min_queries = m.inference.min_queries;
  if (given("train.threads")) f.threads = m.train.threads;
  f.malloc_tuning = m.train.malloc_tuning;
  f.stall_timeout_s = m.dist.timeout_s;  // given or the table's default
  f.seed = static_cast<int64_t>(m.train.seed);  // given or the table's default
  f.no_telemetry = !m.telemetry.enabled;
  f.telemetry.interval_s = m.telemetry.interval_s;
  f.telemetry.slow_interval_s = m.telemetry.slow_interval_s;
  f.telemetry.pcie_interval_s = m.telemetry.pcie_interval_s;
  f.telemetry.nvml_library = m.telemetry.nvml_library;
  read_generation_flags(f.sub, f.settings, m, f.gen);
  for (const char* flag : {"--scenario", "--find-max-qps", "--max-batch"})
    if (f.sub->count(flag) > 0) f.image_flags_given.push_back(flag);
  for (const auto& [key, flag] : {std::pair<const char*, const char*>{"inference.offline_batch_sizes", "--batch-sizes"},
                                  {"inference.server_qps", "--qps"},
                                  {"inference.server_target_p99_ms", "--target-p99-ms"}})
    if (f.settings.given(key)) f.image_flags_given.push_back(flag);
}

// One thing to measure: a model with its weights and the inputs it runs on.
struct Subject {
  std::unique_ptr<Model> model;
  InferenceInputs inputs;
  int64_t classes = 0;
  InferenceRun base;            // what every measurement of it reports: label, weights, description
  std::optional<int64_t> trained_threads;  // a checkpoint's training run's intra-op threads
  std::optional<LmSubject> lm;  // a language model: the generation scenarios instead of the image ones
};

std::optional<json> read_json_file(const fs::path& p) {
  std::ifstream f(p);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  try {
    return json::parse(ss.str());
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

// Intra-op threads the training run used (its results.json), so inference runs like training did:
// the checkpoint's own run's (a threadsN variant sets them per run), else the invocation's.
std::optional<int64_t> training_threads(const std::string& checkpoint) {
  auto run_dir = fs::path(checkpoint).parent_path().parent_path();
  auto j = read_json_file(run_dir / "results.json");
  if (!j) return std::nullopt;
  const std::string run_id = fs::path(checkpoint).stem().string();
  if (auto runs = j->find("runs"); runs != j->end() && runs->is_array())
    for (const auto& r : *runs)
      if (r.is_object() && r.value("run_id", std::string()) == run_id && r.value("intra_op_threads", int64_t{0}) > 0)
        return r.value("intra_op_threads", int64_t{0});
  if (!j->contains("provenance")) return std::nullopt;
  auto v = (*j)["provenance"].value("intra_op_threads", int64_t{0});
  return v > 0 ? std::optional<int64_t>(v) : std::nullopt;
}

// "cpu" or "gpuN" (NVML index) for a run device, matched by PCI bus id as the matrix does.
DataConfig data_override(DataConfig d, const InferFlags& f) {
  if (!f.data.empty()) d.path = f.data;
  if (!f.data_format.empty()) d.format = f.data_format;
  return d;
}

// The fields every measurement of `s` repeats that come from its inputs.
void describe_inputs(Subject& s) {
  s.base.dataset = s.inputs.dataset;
  s.base.test_samples = s.inputs.x.size(0);
  s.base.normalisation.mean.assign(s.inputs.mean.begin(), s.inputs.mean.end());
  s.base.normalisation.std.assign(s.inputs.std.begin(), s.inputs.std.end());
}

// A language model's checkpoint with the validation text of its data (or --data's).
Subject load_lm_subject(const InferFlags& f, const std::string& path) {
  if (!f.image_flags_given.empty())
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("checkpoint '{}' is a language model: the image scenarios ({}) do not apply to it; drop "
                            "them to run its generation scenarios (--pp, --tg, --gen-batches, --server-rates)",
                            path, fmt::join(f.image_flags_given, ", ")));
  Subject s;
  LmSubject lm;
  lm.checkpoint = read_lm_checkpoint(path);
  const DataConfig data = data_override(lm.checkpoint.data, f);
  lm.text = validation_tokens(data, lm.checkpoint.seed);
  if (data.format == "text") lm.paragraph_break = {'\n', '\n'};  // byte tokens: a blank line
  // The flags against this model's context and text before its weights load or anything is written.
  check_generation_fit(f.gen, lm.checkpoint, lm.text, lm.paragraph_break);
  lm.model = load_lm_model(lm.checkpoint);
  s.base.label = path;
  s.base.weights = "checkpoint";
  s.base.checkpoint = path;
  s.base.model = lm.checkpoint.model;
  s.base.trained_on = lm.checkpoint.trained_on;
  s.base.trained_batch_size = lm.checkpoint.batch_size;
  s.base.description.text = lm.checkpoint.description;
  s.base.dataset = fmt::format("validation tokens of {} ({} tokens)", lm.checkpoint.data.path, lm.text.numel());
  s.trained_threads = training_threads(path);
  s.lm = std::move(lm);
  return s;
}

// Generation flags on a checkpoint that is not a language model's: a description that cannot say
// (missing, not JSON) is named as such (check_checkpoint_description), else the model's kind.
[[noreturn]] void refuse_generation_flags(const InferFlags& f, const std::string& path) {
  check_checkpoint_description(path);
  const std::string task = checkpoint_task(path);
  throw_error(ErrorKind::kInvalidArgument,
              fmt::format("checkpoint '{}' is not a language model's (its description names {}): the generation "
                          "scenarios ({}) need the checkpoint of a language model (trainscope run -m gpt-mini "
                          "--data-format text); drop them to measure this model's image scenarios",
                          path, task.empty() ? "no \"task\"" : "task \"" + task + "\"",
                          fmt::join(f.gen.flags_given, ", ")));
}

std::vector<Subject> load_subjects(const InferFlags& f, uint64_t seed) {
  std::vector<Subject> out;
  std::vector<std::string> ckpts = f.checkpoints;
  if (!f.run_dir.empty()) {
    auto more = run_checkpoints(f.run_dir);
    ckpts.insert(ckpts.end(), more.begin(), more.end());
  }
  for (const auto& path : ckpts) {
    if (checkpoint_task(path) == "causal_lm") {
      out.push_back(load_lm_subject(f, path));
      continue;
    }
    if (!f.gen.flags_given.empty()) refuse_generation_flags(f, path);
    Subject s;
    auto info = read_checkpoint_description(path);
    s.base.label = path;
    s.base.weights = "checkpoint";
    s.model = load_checkpoint_model(info);
    s.classes = info.num_classes;
    s.inputs = load_inference_inputs(data_override(info.data, f), info.seed, f.limit.value_or(0), &info.mean, &info.std);
    check_model_fits_inputs(*s.model, s.inputs.x, info.num_classes, {info.channels, info.height, info.width},
                            fmt::format("checkpoint '{}' (model {})", path, info.model));
    s.base.checkpoint = path;
    s.trained_threads = training_threads(path);
    s.base.model = info.model;
    s.base.trained_on = info.trained_on;
    s.base.trained_batch_size = info.batch_size;
    s.base.description.text = info.description.is_null() ? "" : info.description.dump();
    describe_inputs(s);
    out.push_back(std::move(s));
  }
  if (!f.model.empty()) {
    Subject s;
    DataConfig d = data_override(DataConfig{}, f);
    s.inputs = load_inference_inputs(d, seed, f.limit.value_or(0));
    int64_t c = s.inputs.x.size(1), h = s.inputs.x.size(2), w = s.inputs.x.size(3);
    s.classes = 0;
    if (is_aoti_package_path(f.model)) {
      s.base.weights = "aoti";  // workload/aoti_model.h: compiled weights, run as they are
    } else if (is_torchscript_path(f.model)) {
      s.base.weights = "torchscript";
    } else {
      if (!f.untrained)
        throw_error(ErrorKind::kInvalidArgument,
                    fmt::format("--model {} without --checkpoint has no trained weights; pass --checkpoint FILE.pt or "
                                "--run DIR for a trained model, or --untrained to measure fresh weights",
                                f.model));
      s.base.weights = "untrained";
      fmt::print(stderr, "trainscope: warning: measuring '{}' with FRESH, UNTRAINED weights (seed {}): latency and "
                         "throughput are representative, its predictions are not\n", f.model, seed);
    }
    // Classes: the data set's label range, as training would have used.
    s.classes = s.inputs.y.numel() > 0 ? s.inputs.y.max().item<int64_t>() + 1 : 10;
    torch::manual_seed(seed);
    s.model = make_model(f.model, c, h, w, s.classes);
    const bool own_head = s.base.weights == "torchscript" || s.base.weights == "aoti";  // its classes are its own
    check_model_fits_inputs(*s.model, s.inputs.x, own_head ? 0 : s.classes, {}, fmt::format("model '{}'", f.model));
    if (own_head) s.classes = 0;
    s.base.label = f.model;
    s.base.model = f.model;
    describe_inputs(s);
    out.push_back(std::move(s));
  }
  if (out.empty())
    throw_error(ErrorKind::kInvalidArgument,
                "nothing to measure: pass --checkpoint FILE.pt, --run DIR, --model FILE.pt (TorchScript), --model "
                "FILE.pt2 (AOTInductor package, LibTorch >= 2.6) or --model NAME --untrained");
  return out;
}

// The scenarios and their settings the flags ask for.
InferenceOptions inference_options(const InferFlags& f) {
  InferenceOptions opt;
  opt.single_stream = opt.offline = false;
  for (const auto& s : f.scenarios) {
    if (s == "single-stream" || s == "single_stream") opt.single_stream = true;
    else if (s == "offline") opt.offline = true;
    else if (s == "server") opt.server = true;
    else
      throw_error(ErrorKind::kInvalidArgument,
                  fmt::format("unknown scenario '{}'; use single-stream, offline, server (comma-separated)", s));
  }
  if (f.find_max_qps) opt.find_max_qps = true;
  if (opt.server && !f.qps && !f.find_max_qps)
    throw_error(ErrorKind::kInvalidArgument, "--scenario server needs --qps N or --find-max-qps");
  if (f.qps) {
    if (!(*f.qps > 0))
      throw_error(ErrorKind::kInvalidArgument, "--qps 0 runs no server scenario; give a rate > 0 queries/s, up to 1000000");
    opt.server = true;
    opt.server_qps = *f.qps;
  } else {
    opt.server = false;  // find_max_qps alone runs the search only
  }
  if (!f.batch_sizes.empty()) opt.offline_batch_sizes = f.batch_sizes;
  if (f.target_p99_ms) opt.server_target_p99_ms = *f.target_p99_ms;
  if (f.budget) {
    opt.single_stream_budget_s = opt.server_budget_s = *f.budget;
    opt.offline_budget_s = *f.budget / 2;
  }
  if (f.min_queries) opt.min_queries = *f.min_queries;
  if (f.max_batch) opt.server_max_batch = *f.max_batch;
  if (opt.server_max_batch < 1) throw_error(ErrorKind::kInvalidArgument, "--max-batch must be >= 1");
  opt.seed = static_cast<uint64_t>(f.seed.value_or(0));  // read_shared_settings sets it: --seed or train.seed's default
  return opt;
}

// The running telemetry sampler (null with --no-telemetry, or with a note when it cannot start).
std::unique_ptr<TelemetrySampler> start_telemetry(const InferFlags& f, std::vector<GpuInfo>& gpus) {
  if (f.no_telemetry) return nullptr;
  try {
    auto sampler = std::make_unique<TelemetrySampler>(f.telemetry, std::chrono::steady_clock::now());
    sampler->start();
    gpus = sampler->gpus();
    return sampler;
  } catch (const Error& e) {
    fmt::print(stderr, "trainscope: note: telemetry disabled: {}\n", e.what());
    return nullptr;
  }
}

// Intra-op threads for one subject: as given, else as its training run used (each checkpoint its
// own run's count: a threadsN variant sets it per run), else every usable CPU (the trainer's
// default). Each count is warned about once when it exceeds the usable CPUs.
void set_threads(const InferFlags& f, const std::optional<int64_t>& trained) {
  static std::set<int64_t> warned;
  const std::optional<int64_t> threads = f.threads ? f.threads : trained;
  std::string warning;  // 0: every usable CPU, as in `run`
  set_intra_op_threads(threads.value_or(0), "--threads", &warning);
  if (warning.empty() || !warned.insert(threads.value_or(0)).second) return;
  if (!f.threads) warning += " (the value is the training run's, from its checkpoint; --threads overrides it)";
  fmt::print(stderr, "trainscope: warning: {}\n", warning);
}

// The reporters of one `infer` command, called in order (trainscope/inference_reporter.h).
struct InferReporters {
  std::vector<InferenceReporter*> all;
  template <class Fn>
  void each(Fn&& fn) {
    for (auto* r : all) fn(*r);
  }
};

// A CPU measurement whose process got clearly fewer cores than its intra-op threads while other
// processes kept the machine busy: the warning the report's cpu_contention advice gives `run`
// (report/cpu_contention.h), from the telemetry of the measurement's window [t0_ns, now].
void warn_contention(const InferenceRun& r, const TelemetrySampler* sampler, int64_t t0_ns, const Provenance& prov) {
  if (!sampler || r.device != "cpu" || !r.inference || r.failed()) return;
  const auto h = telemetry_headline(sampler->summarize(t0_ns, sampler->now_ns()), "cpu", {});
  if (const auto c = cpu_contention_of(h, r.inference->intra_op_threads, prov.cpu_logical_cores))
    fmt::print(stderr, "trainscope: warning: {} on cpu: {} ({})\n", r.label, c->advice, c->evidence);
}

// One subject on one device, measured; a failure is recorded in the run, not thrown.
InferenceRun measure_one(const InferFlags& f, Subject& s, const std::string& dev, const InferenceOptions& opt, const Provenance& prov,
                         TelemetrySampler* sampler, const std::vector<GpuInfo>& gpus, InferReporters& reporters,
                         const std::atomic<bool>* stop) {
  InferenceRun r = s.base;
  r.device = dev;
  r.device_name = device_display_name(dev, prov.cpu_model);
  reporters.each([&](InferenceReporter& x) { x.measurement_started(r); });
  if (s.lm) {
    if (sampler) focus_telemetry(*sampler, dev, prov, gpus);
    r = measure_generation_run(*s.lm, r, dev, f.gen, opt.seed, stop,
                               GenerationTelemetry{sampler, sampler ? telemetry_device(dev, prov, gpus) : ""},
                               [&](const std::string& line) { reporters.each([&](InferenceReporter& x) { x.progress(line); }); });
    return r;
  }
  try {
    if (sampler) focus_telemetry(*sampler, dev, prov, gpus);  // slow NVML fields for this device's GPU only
    torch::Device d(dev);
    s.model->to(d);
    if (s.classes > 0 && s.base.weights != "untrained") {
      auto [acc, loss] = evaluate(*s.model, s.inputs.x, s.inputs.y, d, 1024, opt.on_progress);
      r.test_accuracy_pct = acc;
      r.test_loss = loss;
    }
    auto pool = s.inputs.x.narrow(0, 0, std::min<int64_t>(s.inputs.x.size(0), kPoolSamples));
    r.inference = measure_inference(*s.model, d, pool, opt, sampler, sampler ? telemetry_device(dev, prov, gpus) : "",
                                    [&](const std::string& line) { reporters.each([&](InferenceReporter& x) { x.progress(line); }); });
    s.model->to(torch::kCPU);
  } catch (const Error&) {
    record_measurement_failure(r, dev);
  } catch (const c10::Error&) {
    record_measurement_failure(r, dev);
  }
  return r;
}

void run_infer(const InferFlags& f, int& exit_status) {
  InferenceOptions opt = inference_options(f);
  const uint64_t seed = opt.seed;
  std::string malloc_warning;
  set_host_malloc(f.malloc_tuning, &malloc_warning);  // before the checkpoints and inputs allocate
  if (!malloc_warning.empty()) fmt::print(stderr, "trainscope: warning: {}\n", malloc_warning);

  std::string notice;
  auto devices = resolve_devices(f.devices, &notice);
  if (!notice.empty()) fmt::print(stderr, "trainscope: note: {}\n", notice);
  set_threads(f, std::nullopt);

  auto subjects = load_subjects(f, seed);
  Provenance prov = collect_provenance(command_line(), seed);

  std::vector<GpuInfo> gpus;
  std::unique_ptr<TelemetrySampler> sampler = start_telemetry(f, gpus);

  std::string out_path = f.out;
  if (out_path.empty()) out_path = f.run_dir.empty() ? "inference.json" : (fs::path(f.run_dir) / "inference.json").string();
  InferenceFileReporter file(out_path);
  InferenceConsoleReporter console(out_path);
  GenerationConsoleReporter gen_console(out_path, f.gen.output, f.gen.dtype);
  InferReporters reporters{{&file}};
  GenerationHistoryReporter history(infer_history_db(f.db, f.run_dir), f.run_dir);
  const auto lm_count = std::count_if(subjects.begin(), subjects.end(), [](const Subject& s) { return s.lm.has_value(); });
  if (lm_count < static_cast<long>(subjects.size())) reporters.all.push_back(&console);
  if (lm_count > 0) reporters.all.push_back(&gen_console);
  if (lm_count > 0 && !infer_history_db(f.db, f.run_dir).empty()) reporters.all.push_back(&history);
  reporters.each([&](InferenceReporter& x) { x.start(prov); });

  std::vector<InferenceRun> runs;
  // Ctrl-C / SIGTERM: finish the measurement in progress (each is bounded by its time budget),
  // keep it, print the table and exit 130; a second Ctrl-C exits at once.
  const auto& stop = install_interrupt_handler(
      "\ntrainscope: interrupt received; finishing the current measurement (Ctrl-C again to exit at once)\n");
  // A model that hangs never reaches the next query: named after --dist-timeout (the stall
  // watch), and an interrupt ends the process after the deadline (the file holds what finished).
  dist::StallWatch watch("infer", f.stall_timeout_s, nullptr,
                         [](const std::string& m) { fmt::print(stderr, "trainscope: warning: {}\n", m); });
  const double grace_s = std::max(f.stall_timeout_s, 30.0);
  watch.set_advice(fmt::format("Ctrl-C ends the process within {:g} s; the measurements finished before are in {}",
                               grace_s, out_path));
  const StopDeadline deadline(
      stop, grace_s,
      fmt::format("trainscope: the measurement in progress did not stop within {:g} s of the interrupt (the longer of "
                  "--dist-timeout and 30 s): the model hangs; exiting now. The measurements finished before are in {}\n",
                  grace_s, out_path));
  opt.on_progress = [&watch] { watch.progress(); };  // a batch or query returned
  for (auto& s : subjects)
    for (const auto& dev : devices) {
      if (stop) break;
      set_threads(f, s.trained_threads);
      watch.work_begin(fmt::format("the measurement of {} on {}", s.base.label, dev));
      const int64_t t0_ns = sampler ? sampler->now_ns() : 0;
      runs.push_back(measure_one(f, s, dev, opt, prov, sampler.get(), gpus, reporters, &stop));
      watch.work_end();
      warn_contention(runs.back(), sampler.get(), t0_ns, prov);
      // The file is rewritten after every measurement: nothing measured is lost if a later one fails.
      reporters.each([&](InferenceReporter& x) { x.measurement_finished(runs.back()); });
    }
  if (sampler) sampler->stop();
  reporters.each([&](InferenceReporter& x) { x.finish(runs); });
  if (std::any_of(runs.begin(), runs.end(), [](const InferenceRun& r) { return r.failed(); })) {
    fmt::print(stderr, "trainscope: some measurements failed; see the table and {}\n", out_path);
    exit_status = kExitRunFailed;
  }
  if (stop) {
    fmt::print(stderr, "trainscope: interrupted; the {} measurement(s) finished are in {}\n", runs.size(), out_path);
    exit_status = kExitInterrupted;
  }
  restore_interrupt_defaults();
}

}  // namespace

void add_infer_command(CLI::App& app, int& exit_status) {
  auto f = std::make_shared<InferFlags>();
  auto* sub = app.add_subcommand("infer", "Inference latency and throughput (single-stream, offline, server) of a "
                                          "checkpoint, a TorchScript file or fresh weights");
  sub->add_option("--checkpoint", f->checkpoints, "checkpoint .pt written by trainscope run (its .json beside it)")
      ->delimiter(',');
  sub->add_option("--run", f->run_dir, "run folder: every checkpoint in <DIR>/checkpoints");
  sub->add_option("--model", f->model, "TorchScript file (.pt), AOTInductor package (.pt2, LibTorch >= 2.6), or a built-in name (mlp, cnn, resnet18, vgg11, vit-s, vit-ti) with --untrained");
  sub->add_flag("--untrained", f->untrained, "measure a built-in model with fresh weights (warns)");
  auto& shared = f->settings;
  shared.add(sub, "data.path", "--data", "data folder (default: the data the checkpoint was trained on)", false);
  shared.add(sub, "data.format", "--data-format", "data format (default: the checkpoint's)", false);
  shared.add(sub, "data.limit_test", "--limit", "use only the first N test samples");
  shared.add(sub, "devices", "-d,--devices", "devices: cpu, cuda, cuda:N");
  sub->add_option("--scenario", f->scenarios, "single-stream, offline, server (default single-stream,offline)")
      ->delimiter(',');
  shared.add(sub, "inference.offline_batch_sizes", "-b,--batch-sizes", "offline batch sizes");
  shared.add(sub, "inference.server_qps", "--qps", "server: Poisson arrival rate, queries per second");
  shared.add(sub, "inference.server_target_p99_ms", "--target-p99-ms", "server: p99 latency target in ms");
  sub->add_flag("--find-max-qps", f->find_max_qps, "server: bisection for the highest rate meeting the p99 target");
  sub->add_option("--max-batch", f->max_batch, "server: queries the worker may take at once (default 1)");
  shared.add(sub, "inference.single_stream_budget_s", "--budget",
             "seconds per scenario (single-stream, each server rate; half per offline batch size)");
  shared.add(sub, "inference.min_queries", "--min-queries", "fewer timed queries flag the percentiles");
  shared.add(sub, "train.threads", "--threads", "intra-op CPU threads (default: as the training run, else every usable CPU)", false);
  shared.add(sub, "train.malloc_tuning", "", "fixing glibc malloc's thresholds (docs/configuration.md#host-memory-allocator)");
  shared.add(sub, "train.seed", "--seed", "seed for fresh weights, synthetic data and arrivals");
  sub->add_option("-o,--out", f->out, "output JSON (default <run>/inference.json or ./inference.json)");
  sub->add_option("--db", f->db,
                  "language models: history database the generation results are recorded in (default: with --run, "
                  "the one beside the run folder when it exists)");
  shared.add(sub, "telemetry.enabled", "", "power and energy sampling");
  shared.add(sub, "telemetry.interval_s", "--telemetry-interval", "telemetry sampling period");
  shared.add(sub, "telemetry.slow_interval_s");
  shared.add(sub, "telemetry.pcie_interval_s");
  shared.add(sub, "telemetry.nvml_library", "--nvml-library", "NVML library to dlopen (name or path)");
  shared.add(sub, "dist.timeout_s", "--dist-timeout",
             "a measurement without progress this long is named as stalled; an interrupt waits at most the longer "
             "of this and 30 s");
  shared.add(sub, "inference.gen_pp", "--pp", "language models: llama-bench pp tests, prompt tokens (e.g. 512)");
  shared.add(sub, "inference.gen_tg", "--tg", "language models: llama-bench tg tests, generated tokens (e.g. 128)");
  shared.add(sub, "inference.gen_depth", "--depth", "language models: tokens in the cache before each test (@ dN)");
  shared.add(sub, "inference.gen_repetitions", "--repetitions", "language models: timed repetitions of each test");
  shared.add(sub, "inference.gen_prompt_len", "--prompt-len", "language models, server: prompt tokens per request");
  shared.add(sub, "inference.gen_output_len", "--output-len", "language models, server: output tokens per request");
  shared.add(sub, "inference.gen_server_batching", "--server-batching",
             "language models, server: fcfs or continuous (iteration-level batching)");
  shared.add(sub, "inference.gen_server_max_batch", "--server-max-batch",
             "language models, server, continuous: requests decoded together at most");
  shared.add(sub, "inference.gen_server_lengths", "--server-lengths",
             "language models, server: fixed lengths, or text (paragraphs of the validation text)");
  shared.add(sub, "inference.gen_slo_ttft_ms", "--slo-ttft-ms", "language models, server: goodput's TTFT limit");
  shared.add(sub, "inference.gen_slo_tpot_ms", "--slo-tpot-ms", "language models, server: goodput's TPOT limit");
  add_generation_flags(sub, f->gen);
  f->sub = sub;
  sub->callback([f, &exit_status] {
    read_shared_settings(*f);
    run_infer(*f, exit_status);
  });
}

}  // namespace trainscope::cli

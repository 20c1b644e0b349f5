// `trainscope infer` on a language model (tools/trainscope/infer_lm.h).
#include "infer_lm.h"

#include <c10/core/InferenceMode.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "results/generation_output.h"
#include "train/compat.h"
#include "train/device.h"
#include "trainscope/error.h"
#include "trainscope/report.h"

namespace trainscope::cli {

namespace {

// The generation settings and the flags `infer` gives them (add_infer_command).
constexpr std::pair<const char*, const char*> kGenKeys[] = {
    {"inference.gen_pp", "--pp"},
    {"inference.gen_tg", "--tg"},
    {"inference.gen_depth", "--depth"},
    {"inference.gen_repetitions", "--repetitions"},
    {"inference.gen_prompt_len", "--prompt-len"},
    {"inference.gen_output_len", "--output-len"},
    {"inference.gen_server_batching", "--server-batching"},
    {"inference.gen_server_max_batch", "--server-max-batch"},
    {"inference.gen_server_lengths", "--server-lengths"},
    {"inference.gen_slo_ttft_ms", "--slo-ttft-ms"},
    {"inference.gen_slo_tpot_ms", "--slo-tpot-ms"}};

std::vector<int64_t> parse_batches(const std::string& text) {
  std::vector<int64_t> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    size_t used = 0;
    int64_t v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || v < 1)
      throw_error(ErrorKind::kInvalidArgument,
                  fmt::format("--gen-batches {}: '{}' is not a batch of at least 1 row; use auto, none, or a list "
                              "such as 1,2,4",
                              text, item));
    out.push_back(v);
    at = comma + 1;
  }
  return out;
}

// The rates of --server-rates, its words joined by commas: every item a number > 0 (no empty item).
std::vector<double> parse_rates(const std::vector<std::string>& words) {
  std::string text;
  for (const auto& w : words) text += (text.empty() ? "" : ",") + w;
  std::vector<double> out;
  for (size_t at = 0; at <= text.size();) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || !(v > 0) || !std::isfinite(v))
      throw_error(ErrorKind::kInvalidArgument,
                  fmt::format("--server-rates {}: {} is not a rate > 0 requests/s; give rates such as 1,2,4", text,
                              item.empty() ? "an empty item" : "'" + item + "'"));
    out.push_back(v);
    at = comma + 1;
  }
  return out;
}

// The given list, or the default shortened so that depth + tokens fits the context.
std::vector<int64_t> tokens_or_default(const GenerationFlags& g, const char* key, const std::vector<int64_t>& v,
                                       int64_t room) {
  if (std::find(g.given.begin(), g.given.end(), key) != g.given.end()) return v;
  std::vector<int64_t> out;
  for (int64_t x : v) out.push_back(std::min(x, room));
  return out;
}

// A context no flag exceeds: the checks that do not depend on the model's context use it.
constexpr int64_t kAnyContext = int64_t{1} << 40;

bool given(const GenerationFlags& g, const char* key) {
  return std::find(g.given.begin(), g.given.end(), key) != g.given.end();
}

}  // namespace

void add_generation_flags(CLI::App* sub, GenerationFlags& g) {
  const char* group = "Language models (generation)";
  sub->add_option("--gen-batches", g.gen_batches,
                  "decode batch sweep: auto (1, 2, 4, ... until tokens/s stops rising), none, or a list such as 1,2,4")
      ->group(group);
  sub->add_option("--gen-batch", g.batch, "rows decoded together in the pp/tg tests (default 1)")->group(group);
  // Words, split here: CLI11 drops the empty items of a delimited list ("1,,2" reads 1,2).
  sub->add_option("--server-rates", g.server_rates_words, "server scenario: Poisson arrival rates, requests/s (e.g. 1,2,4)")
      ->group(group);
  sub->add_option("--output", g.output, "console format of the pp/tg tests: md, csv, json, jsonl, sql (llama-bench's)")
      ->group(group);
  sub->add_option("--temperature", g.temperature, "server scenario: sampling temperature (0 = greedy, the default)")
      ->group(group);
  sub->add_option("--top-k", g.top_k, "server scenario: sample among the k likeliest tokens (0 = all)")->group(group);
  sub->add_option("--dtype", g.dtype, "built-in GPT: compute in float32 (default), bfloat16 or float16")->group(group);
  sub->add_flag("--graphs", g.graphs, "CUDA: replay one-token decoding steps as CUDA graphs")->group(group);
}

void read_generation_flags(CLI::App* sub, const SettingOptions& settings, const MatrixConfig& m, GenerationFlags& g) {
  g.cfg = m.inference;
  for (const auto& [key, flag] : kGenKeys)
    if (settings.given(key)) g.given.push_back(key), g.flags_given.push_back(flag);
  for (const char* flag : {"--gen-batches", "--gen-batch", "--server-rates", "--output", "--temperature", "--top-k",
                           "--dtype", "--graphs"})
    if (sub->count(flag) > 0) g.flags_given.push_back(flag);
  // Bad values are errors before anything is loaded or measured (those that depend on the
  // model's context and text: check_generation_fit, before the weights load).
  (void)generation_dtype(g);
  (void)generation_bench_output({}, g.output);
  if (g.gen_batches != "auto" && g.gen_batches != "none") (void)parse_batches(g.gen_batches);
  if (sub->count("--server-rates") > 0) g.server_rates = parse_rates(g.server_rates_words);
  check_generation_values(generation_options(g, kAnyContext, 0, nullptr));
  if (given(g, "inference.gen_server_max_batch") && g.cfg.gen_server_batching == "fcfs")
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("--server-max-batch {} with --server-batching fcfs: fcfs serves one request at a time "
                            "(batch 1), so a running batch of several does not apply; drop --server-max-batch, or use "
                            "--server-batching continuous",
                            g.cfg.gen_server_max_batch));
}

void check_generation_fit(const GenerationFlags& g, const LmCheckpoint& c, const torch::Tensor& text,
                          const std::vector<int64_t>& paragraph_break) {
  const auto o = generation_options(g, c.shape.context, 0, nullptr);
  check_generation_options(o, c.shape.context);
  if (!o.server_rates.empty() && o.server_lengths == "text")
    (void)server_text_spans(text, paragraph_break, 1, o.prompt_len, o.output_len, c.shape.context, 0);
}

torch::ScalarType generation_dtype(const GenerationFlags& g) {
  if (g.dtype == "float32") return torch::kFloat;
  if (g.dtype == "bfloat16") return torch::kBFloat16;
  if (g.dtype == "float16") return torch::kHalf;
  throw_error(ErrorKind::kInvalidArgument, fmt::format("--dtype {}: use float32, bfloat16 or float16", g.dtype));
}

GenerationOptions generation_options(const GenerationFlags& g, int64_t context, uint64_t seed,
                                     const std::atomic<bool>* stop) {
  GenerationOptions o;
  const auto& c = g.cfg;
  o.depth = c.gen_depth;
  o.pp = tokens_or_default(g, "inference.gen_pp", c.gen_pp, std::max<int64_t>(context - o.depth, 0));
  o.tg = tokens_or_default(g, "inference.gen_tg", c.gen_tg, std::max<int64_t>(context - o.depth, 0));
  o.repetitions = c.gen_repetitions;
  o.batch = g.batch;
  o.sweep = g.gen_batches != "none";
  if (o.sweep && g.gen_batches != "auto") o.sweep_batches = parse_batches(g.gen_batches);
  o.server_rates = g.server_rates;
  o.prompt_len = given(g, "inference.gen_prompt_len") ? c.gen_prompt_len : std::min(c.gen_prompt_len, context / 2);
  o.output_len = given(g, "inference.gen_output_len") ? c.gen_output_len
                                                        : std::min(c.gen_output_len, context - o.prompt_len);
  o.server_batching = c.gen_server_batching;
  o.server_max_batch = c.gen_server_max_batch;
  o.server_lengths = c.gen_server_lengths;
  o.slo_ttft_ms = c.gen_slo_ttft_ms, o.slo_tpot_ms = c.gen_slo_tpot_ms;
  o.sampling = SamplingOptions{g.temperature, g.top_k, seed};
  o.seed = seed;
  o.stop_requested = stop;
  return o;
}

void record_measurement_failure(InferenceRun& r, const std::string& dev) {
  try {
    throw;
  } catch (const Error& e) {
    r.error_kind = std::string(to_string(e.kind()));
    r.error = e.what();
  } catch (const c10::Error& e) {
    r.error_kind = compat::is_out_of_memory(e) ? "out_of_memory" : "libtorch";
    r.error = e.what_without_backtrace();
    release_device_cache(torch::Device(dev));
  }
}

InferenceRun measure_generation_run(LmSubject& s, const InferenceRun& base, const std::string& dev,
                                    const GenerationFlags& g, uint64_t seed, const std::atomic<bool>* stop,
                                    const GenerationTelemetry& tel, const std::function<void(const std::string&)>& log) {
  InferenceRun r = base;
  r.device = dev;
  try {
    const torch::Device d(dev);
    auto opt = generation_options(g, s.checkpoint.shape.context, seed, stop);
    opt.paragraph_break = s.paragraph_break;
    s.model->to(d);
    auto dec = make_lm_decoder(*s.model, s.checkpoint, d, generation_dtype(g), g.graphs);
    auto slots = opt.server_rates.empty() || opt.server_batching != "continuous"
                     ? nullptr
                     : make_lm_slot_decoder(*s.model, s.checkpoint, generation_dtype(g));
    InferenceSection inf;
    inf.device = d.str();
    inf.intra_op_threads = at::get_num_threads();
    inf.inter_op_threads = at::get_num_interop_threads();
    inf.grad_mode = "inference_mode";
    inf.eval_mode = true;
    inf.timer = "steady_clock, device synchronised at each timed token boundary";
    inf.percentile_method = "exact, linear interpolation between closest ranks (Hyndman-Fan type 7)";
    inf.generation = measure_generation(*dec, s.text, opt, tel, log, slots.get());
    inf.execution = inf.generation->execution;
    int64_t bytes = 0;
    for (const auto& p : s.model->parameters()) bytes += p.numel() * static_cast<int64_t>(p.element_size());
    inf.generation->model_parameters = s.model->parameter_count();
    inf.generation->model_size_bytes = bytes;
    inf.generation->kv_cache = "allocated once per reset() for the longest sequence (workload/decoder.h)";
    inf.generation->dtype = g.dtype;  // the compute type the decoders ran in (compare pairs by it)
    r.inference = inf;
    dec = nullptr;  // the caches, before the model leaves the device
    slots = nullptr;
    s.model->to(torch::kCPU);
  } catch (const Error&) {
    record_measurement_failure(r, dev);
  } catch (const c10::Error&) {
    record_measurement_failure(r, dev);
  }
  return r;
}

void GenerationConsoleReporter::measurement_started(const InferenceRun& r) {
  fmt::print(stderr, "{} on {}\n", r.label, r.device);
}

void GenerationConsoleReporter::progress(const std::string& line) { fmt::print(stderr, "  {}\n", line); }

namespace {

GenerationBenchInfo bench_info(const InferenceRun& r, const Provenance& p, const std::string& dtype) {
  const auto& g = *r.inference->generation;
  GenerationBenchInfo i;
  i.build_commit = p.git_commit;
  i.cpu_info = p.cpu_model;
  i.gpu_info = r.device.rfind("cuda", 0) == 0 ? r.device_name : "";
  i.backends = r.device.rfind("cuda", 0) == 0 ? "CUDA" : "CPU";
  i.devices = r.device;
  i.model_filename = r.checkpoint;
  i.model_type = generation_label(r.model, dtype, g.execution);  // the sweep's and server's label too
  i.test_time = p.date_utc;
  i.execution = g.execution;
  i.model_size = g.model_size_bytes.value_or(0);
  i.model_n_params = g.model_parameters.value_or(0);
  i.n_threads = r.inference->intra_op_threads;
  return i;
}

}  // namespace

void GenerationConsoleReporter::finish(const std::vector<InferenceRun>& runs) {
  std::vector<GenerationBenchRow> rows;
  std::vector<std::pair<std::string, DecodeSweep>> sweeps;
  std::vector<std::pair<std::string, GenerationServer>> servers;
  for (const auto& r : runs) {
    if (r.failed()) {
      fmt::print(stderr, "{} on {}: error ({}): {}\n", r.label, r.device, r.error_kind, r.error);
      continue;
    }
    if (!r.inference || !r.inference->generation) continue;
    const auto& g = *r.inference->generation;
    // One label per model in every table, as the report's and compare's (trainscope/report.h).
    const std::string label = fmt::format("{} {}", generation_label(r.model, dtype_, g.execution), r.device);
    for (const auto& t : g.tests) rows.push_back({bench_info(r, provenance_, dtype_), t});
    if (g.decode_sweep) sweeps.emplace_back(label, *g.decode_sweep);
    if (g.server) servers.emplace_back(label, *g.server);
  }
  fmt::print("{}", generation_bench_output(rows, format_));
  if (format_ == "md") {
    if (!sweeps.empty()) fmt::print("\ndecode batch sweep (tokens/s = batch x generated tokens / time):\n{}", decode_sweep_table(sweeps));
    if (!servers.empty())
      fmt::print("\nserver (one worker; batching fcfs = batch 1, continuous = iteration-level; TTFT includes "
                 "queueing):\n{}",
                 generation_server_table(servers));
    fmt::print("\nresults: {}\n", results_path_);
  } else {
    fmt::print(stderr, "results: {}\n", results_path_);
  }
  std::fflush(stdout);
}

}  // namespace trainscope::cli

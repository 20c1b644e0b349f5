// The pieces the generation scenarios share (src/infer/generate.h): token selection, tokens
// drawn from the text, the checks before a run, a window's telemetry.
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "infer/generate.h"
#include "trainscope/error.h"

namespace trainscope {

torch::Tensor select_tokens(const torch::Tensor& logits, const SamplingOptions& s, at::Generator& gen) {
  if (!(s.temperature > 0)) return logits.argmax(-1).view({-1, 1});
  auto l = logits.to(torch::kCPU, torch::kFloat) / s.temperature;
  if (s.top_k > 0 && s.top_k < l.size(-1)) {
    auto kth = std::get<0>(l.topk(s.top_k, -1)).select(-1, s.top_k - 1).unsqueeze(-1);
    l = l.masked_fill(l < kth, -std::numeric_limits<float>::infinity());
  }
  auto drawn = at::multinomial(torch::softmax(l, -1), 1, false, gen);
  return drawn.to(logits.device());
}

torch::Tensor text_tokens(const torch::Tensor& text, int64_t offset, int64_t batch, int64_t count,
                          const torch::Device& device) {
  const int64_t n = text.numel();
  auto idx = (torch::arange(batch * count, torch::kLong) + offset).remainder(n);
  return text.index_select(0, idx).view({batch, count}).to(device);
}

namespace {

// The server's batching and lengths (src/infer/generate.h).
void check_server_options(const GenerationOptions& o) {
  auto bad = [](const std::string& m) { throw_error(ErrorKind::kInvalidArgument, m); };
  if (o.server_batching != "fcfs" && o.server_batching != "continuous")
    bad(fmt::format("--server-batching {}: unknown; use fcfs or continuous", o.server_batching));
  if (o.server_max_batch < 1)
    bad(fmt::format("--server-max-batch {}: the running batch must hold at least 1 request", o.server_max_batch));
  if (o.server_lengths != "fixed" && o.server_lengths != "text")
    bad(fmt::format("--server-lengths {}: unknown; use fixed or text", o.server_lengths));
}

// Something to measure: a pp or tg test, the sweep or a server rate.
bool measures_something(const GenerationOptions& o) {
  auto positive = [](const std::vector<int64_t>& v) { return std::any_of(v.begin(), v.end(), [](int64_t x) { return x > 0; }); };
  return positive(o.pp) || positive(o.tg) || o.sweep || !o.server_rates.empty();
}

// The sampling of the server scenario.
void check_sampling(const SamplingOptions& s) {
  auto bad = [](const std::string& m) { throw_error(ErrorKind::kInvalidArgument, m); };
  if (!(s.temperature >= 0) || !std::isfinite(s.temperature))
    bad(fmt::format("--temperature {:g}: must be a number >= 0 (0 = greedy argmax, the default; > 0 samples, e.g. 0.8)", s.temperature));
  if (s.top_k < 0) bad(fmt::format("--top-k {}: must be >= 0 (0 = every token, the default)", s.top_k));
}

}  // namespace

void check_generation_values(const GenerationOptions& o) {
  auto bad = [](const std::string& m) { throw_error(ErrorKind::kInvalidArgument, m); };
  if (o.batch < 1) bad(fmt::format("--gen-batch {}: the batch must be at least 1 row", o.batch));
  if (o.repetitions < 1) bad(fmt::format("--repetitions {}: must be at least 1", o.repetitions));
  if (o.depth < 0) bad(fmt::format("--depth {}: must be >= 0", o.depth));
  for (int64_t b : o.sweep_batches)
    if (b < 1) bad(fmt::format("--gen-batches {}: every batch must be at least 1 row", b));
  for (int64_t v : o.pp)
    if (v < 0) bad(fmt::format("--pp {}: must be >= 0 (0 = no pp test)", v));
  for (int64_t v : o.tg)
    if (v < 0) bad(fmt::format("--tg {}: must be >= 0 (0 = no tg test)", v));
  for (double r : o.server_rates)
    if (!(r > 0) || !std::isfinite(r))
      bad(fmt::format("--server-rates {:g}: every rate must be a number > 0 requests/s; give rates such as 1,2,4", r));
  check_server_options(o);
  if (!(o.slo_ttft_ms > 0) || !(o.slo_tpot_ms > 0)) bad("--slo-ttft-ms and --slo-tpot-ms must be > 0 ms");
  check_sampling(o.sampling);
  if (!measures_something(o))
    bad("nothing to measure: no pp or tg test (--pp 0, --tg 0), no decode sweep (--gen-batches none) and no server "
        "scenario (no --server-rates); give --pp N, --tg N, --gen-batches auto or --server-rates R");
}

void check_generation_options(const GenerationOptions& o, int64_t context) {
  auto bad = [](const std::string& m) { throw_error(ErrorKind::kInvalidArgument, m); };
  check_generation_values(o);
  for (int64_t v : o.pp)
    if (o.depth + v > context)
      bad(fmt::format("--pp {} at --depth {}: {} tokens exceed the model's context of {} tokens; lower --pp or --depth",
                      v, o.depth, o.depth + v, context));
  for (int64_t v : o.tg)
    if (o.depth + v > context)
      bad(fmt::format("--tg {} at --depth {}: {} tokens exceed the model's context of {} tokens; lower --tg or --depth",
                      v, o.depth, o.depth + v, context));
  if (!o.server_rates.empty() && (o.prompt_len < 1 || o.output_len < 1 || o.prompt_len + o.output_len > context))
    bad(fmt::format("--prompt-len {} + --output-len {}: a request needs 1 to {} tokens in all (the model's context), "
                    "each length at least 1",
                    o.prompt_len, o.output_len, context));
}

ScenarioTelemetry window_telemetry(const GenerationTelemetry& tel, int64_t t0_ns, int64_t t1_ns, int64_t samples) {
  ScenarioTelemetry out;
  if (!tel.sampler) {
    out.absent_reason = "telemetry is off (--no-telemetry, or the sampler could not start)";
    return out;
  }
  if (tel.device.empty()) {
    out.absent_reason = "no telemetry device matches this device (NVML did not report it)";
    return out;
  }
  return scenario_telemetry(tel.sampler->summarize(t0_ns, t1_ns, samples), tel.device);
}

}  // namespace trainscope

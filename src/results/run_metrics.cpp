// run_metrics(): every numeric metric of a run record, for compare and history
// (trainscope/record_sections.h). Telemetry headline metrics come from TelemetryHeadline::fields.
#include <string>
#include <type_traits>

#include "trainscope/run_record.h"

namespace trainscope {

namespace {

bool ends_with(const std::string& s, const std::string& x) {
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

// Unit from the name's suffix (units are in field names).
std::string unit_of(const std::string& name) {
  static const std::pair<const char*, const char*> kUnits[] = {
      {"_samples_per_s", "samples/s"}, {"_tokens_per_s", "tokens/s"}, {"_loss", "nats/token"}, {"_flops_per_s", "FLOP/s"}, {"_per_sample", "J/sample"}, {"_pct", "%"}, {"_ms", "ms"}, {"_s", "s"},
      {"_bytes", "bytes"}, {"_w", "W"}, {"_j", "J"}, {"_c", "°C"}, {"_mhz", "MHz"}};
  std::string base = name;
  for (const char* stat : {"_mean", "_max"})
    if (ends_with(base, stat)) base = base.substr(0, base.size() - std::string(stat).size());
  for (auto [suffix, unit] : kUnits)
    if (ends_with(base, suffix)) return unit;
  return "";
}

std::optional<double> d(const std::optional<int64_t>& v) {
  return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
}

void add(std::vector<RunMetric>& out, std::string name, bool higher,
         std::function<std::optional<double>(const RunRecord&)> f) {
  std::string unit = unit_of(name);
  out.push_back({std::move(name), std::move(unit), higher, std::move(f)});
}

void add_record_metrics(std::vector<RunMetric>& m) {
  add(m, "steady_samples_per_s", true, [](const RunRecord& r) { return r.steady_samples_per_s; });
  add(m, "mean_epoch_time_s", false, [](const RunRecord& r) { return r.mean_epoch_time_s; });
  add(m, "time_for_requested_epochs_s", false, [](const RunRecord& r) { return r.time_for_requested_epochs_s; });
  add(m, "test_accuracy_pct", true, [](const RunRecord& r) { return r.test_accuracy_pct; });
  add(m, "train_time_s", false,
      [](const RunRecord& r) { return r.train_time_s > 0 ? std::optional<double>(r.train_time_s) : std::nullopt; });
  add(m, "peak_rss_bytes", false, [](const RunRecord& r) { return d(r.peak_rss_bytes); });
  add(m, "device_peak_allocated_bytes", false, [](const RunRecord& r) { return d(r.device_peak_allocated_bytes); });
  add(m, "device_peak_reserved_bytes", false, [](const RunRecord& r) { return d(r.device_peak_reserved_bytes); });
  // variants, MFU, time-to-accuracy
  add(m, "train_flops_per_s", true, [](const RunRecord& r) { return r.train_flops_per_s; });
  add(m, "mfu_pct", true, [](const RunRecord& r) { return r.mfu_pct; });
  add(m, "time_to_accuracy_s", false, [](const RunRecord& r) {
    return r.time_to_accuracy && r.time_to_accuracy->reached ? r.time_to_accuracy->time_s : std::nullopt;
  });
}

template <class T>
constexpr bool kIsOptDouble = std::is_same_v<std::decay_t<T>, std::optional<double>>;

// Every headline field with a direction, by its own name ("util_pct_mean", "energy_j", ...).
void add_headline_metrics(std::vector<RunMetric>& m) {
  TelemetryHeadline probe;
  TelemetryHeadline::fields(probe, [&](const char* name, const auto& member, Better b) {
    if constexpr (kIsOptDouble<decltype(member)>) {
      if (b == Better::kNone) return;
      add(m, name, b == Better::kHigher, [key = std::string(name)](const RunRecord& r) {
        std::optional<double> out;
        if (r.telemetry)
          TelemetryHeadline::fields(r.telemetry->headline, [&](const char* k, const auto& v, Better) {
            if constexpr (kIsOptDouble<decltype(v)>)
              if (key == k) out = v;
          });
        return out;
      });
    }
  });
}

// Every language-model figure with a direction (trainscope/language_model_section.h), by its name
// prefixed "lm_" ("lm_steady_tokens_per_s", "lm_val_loss", ...); absent for image runs.
void add_language_model_metrics(std::vector<RunMetric>& m) {
  LanguageModelSection probe;
  LanguageModelSection::fields(probe, [&](const char* name, const auto& member, Better b, auto&&...) {
    if constexpr (kIsOptDouble<decltype(member)>) {
      if (b == Better::kNone) return;
      add(m, std::string("lm_") + name, b == Better::kHigher, [key = std::string(name)](const RunRecord& r) {
        std::optional<double> out;
        if (r.language_model)
          LanguageModelSection::fields(*r.language_model, [&](const char* k, const auto& v, Better, auto&&...) {
            if constexpr (kIsOptDouble<decltype(v)>)
              if (key == k) out = v;
          });
        return out;
      });
    }
  });
}

void add_inference_metrics(std::vector<RunMetric>& m) {
  auto ss = [](const RunRecord& r) -> const SingleStreamResult* {
    return r.inference && r.inference->single_stream ? &*r.inference->single_stream : nullptr;
  };
  add(m, "inference_p50_ms", false, [ss](const RunRecord& r) { return ss(r) ? ss(r)->latency.p50_ms : std::nullopt; });
  add(m, "inference_p99_ms", false, [ss](const RunRecord& r) { return ss(r) ? ss(r)->latency.p99_ms : std::nullopt; });
  add(m, "inference_samples_per_s", true, [](const RunRecord& r) -> std::optional<double> {
    return r.inference && r.inference->offline ? r.inference->offline->best_samples_per_s : std::nullopt;
  });
}

}  // namespace

const std::vector<RunMetric>& run_metrics() {
  static const std::vector<RunMetric> m = [] {
    std::vector<RunMetric> v;
    add_record_metrics(v);
    add_headline_metrics(v);
    add_inference_metrics(v);
    add_language_model_metrics(v);
    return v;
  }();
  return m;
}

const RunMetric* find_run_metric(const std::string& name) {
  for (const auto& m : run_metrics())
    if (m.name == name) return &m;
  return nullptr;
}

}  // namespace trainscope

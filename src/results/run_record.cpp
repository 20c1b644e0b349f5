#include "trainscope/run_record.h"

#include "common/text.h"
#include "results/record_json.h"

#include <fmt/format.h>

#include <cmath>

#include <utility>

#include "trainscope/error.h"

namespace trainscope {

using nlohmann::json;

namespace {
// Each status and its name in results.json, the CSV and the history: one table for both directions.
constexpr std::pair<RunStatus, const char*> kRunStatusNames[] = {
    {RunStatus::kOk, "ok"}, {RunStatus::kFailed, "failed"}, {RunStatus::kInterrupted, "interrupted"},
    {RunStatus::kRunning, "running"}, {RunStatus::kNotApplicable, "not_applicable"}};
}  // namespace

std::string to_string(RunStatus s) {
  for (const auto& [status, name] : kRunStatusNames)
    if (status == s) return name;
  return "unknown";
}

std::string status_with_reason(RunStatus s, const std::string& reason) {
  if (reason.empty()) return to_string(s);
  if (s == RunStatus::kNotApplicable && reason.rfind("not applicable", 0) == 0) return reason;
  return to_string(s) + ": " + reason;
}

RunStatus run_status_from_string(const std::string& s) {
  for (const auto& [status, name] : kRunStatusNames)
    if (s == name) return status;
  throw_error(ErrorKind::kDataFormat, fmt::format("unknown run status '{}'", s));
}

namespace {


// A whole number (a byte count, a peak read from a counter) in full, as spreadsheets read it
// back exactly; any other value to 6 significant digits. 2^53: the largest such a double holds.
std::string csv_number(double v) {
  if (std::isfinite(v) && v == std::trunc(v) && std::fabs(v) < 9007199254740992.0) return fmt::format("{:.0f}", v);
  return fmt::format("{:.6g}", v);
}
// An optional count (an integer) as written; absent: an empty cell.
template <typename T>
std::string csv_count(const std::optional<T>& v) {
  return v ? fmt::format("{}", *v) : std::string();
}
// An optional figure as csv_number writes it; absent: an empty cell.
std::string csv_number(const std::optional<double>& v) { return v ? csv_number(*v) : std::string(); }

// CSV cell of a headline field (numbers: whole ones in full, others 6 significant digits; absent: empty).
struct CsvCell {
  std::vector<std::string>* out;
  std::string operator()(const std::string& v) const { return csv_field(v); }
  std::string operator()(const OptD& v) const { return csv_number(v); }
  std::string operator()(const OptI& v) const { return csv_count(v); }
  std::string operator()(const std::optional<bool>& v) const { return v ? (*v ? "true" : "false") : ""; }
  template <class T>
  void operator()(const char*, const T& v, Better) const {
    out->push_back((*this)(v));
  }
};

std::vector<std::string> headline_cells(const std::optional<TelemetrySection>& t) {
  std::vector<std::string> out;
  TelemetryHeadline h = t ? t->headline : TelemetryHeadline{};
  TelemetryHeadline::fields(h, CsvCell{&out});
  return out;
}

std::vector<std::string> inference_cells(const std::optional<InferenceSection>& i) {
  const auto* ss = i && i->single_stream ? &*i->single_stream : nullptr;
  const auto* off = i && i->offline ? &*i->offline : nullptr;
  return {csv_number(ss ? ss->latency.p50_ms : std::nullopt), csv_number(ss ? ss->latency.p99_ms : std::nullopt),
          csv_number(off ? off->best_samples_per_s : std::nullopt)};
}

}  // namespace

std::vector<std::string> csv_header() {
  std::vector<std::string> cols = {"run_id", "device", "device_name", "model", "batch_size", "repeat", "status", "error_kind", "failure_reason",
          "dataset", "train_samples", "test_samples", "parameters", "forward_flops_per_sample", "optimizer",
          "learning_rate", "seed", "intra_op_threads", "epochs_requested", "epochs_completed", "steps_completed",
          "steps_per_epoch", "train_time_s", "steady_samples_per_s", "mean_epoch_time_s",
          "time_for_requested_epochs_s", "time_for_requested_epochs_is_estimate", "stopped_early", "stop_reason",
          "final_train_loss", "final_train_accuracy_pct", "test_accuracy_pct", "phase_data_ms", "phase_h2d_ms",
          "phase_forward_ms", "phase_backward_ms", "phase_optimizer_ms", "phase_step_ms", "phase_method",
          "peak_rss_bytes", "device_peak_allocated_bytes", "device_peak_reserved_bytes",
          "infer_single_stream_p50_ms", "infer_single_stream_p99_ms", "infer_offline_samples_per_s", "world_size"};
  TelemetryHeadline h;
  TelemetryHeadline::fields(h, [&](const char* name, const auto&, Better) { cols.push_back(std::string("telemetry_") + name); });
  for (const char* c : {"variant", "variant_note", "train_flops_per_s", "mfu_pct", "mfu_precision",
                        "target_accuracy_pct", "target_reached", "time_to_target_s", "samples_to_target",
                        "energy_to_target_j"})
    cols.push_back(c);  // variants, MFU, time-to-accuracy
  return cols;
}

std::vector<std::string> csv_row(const RunRecord& r) {
  auto ph = [&](double PhaseBreakdown::*m) { return r.phases ? csv_number(r.phases.value().*m) : std::string(); };
  std::vector<std::string> row = {csv_field(r.run_id), r.device, csv_field(r.device_name), csv_field(r.model), std::to_string(r.batch_size),
          std::to_string(r.repeat), to_string(r.status), r.error_kind, csv_field(r.failure_reason),
          csv_field(r.dataset), std::to_string(r.train_samples), std::to_string(r.test_samples), csv_count(r.parameters),
          csv_number(r.forward_flops_per_sample), r.optimizer, csv_number(r.learning_rate), std::to_string(r.seed),
          std::to_string(r.intra_op_threads), std::to_string(r.epochs_requested), std::to_string(r.epochs_completed),
          std::to_string(r.steps_completed), std::to_string(r.steps_per_epoch), csv_number(r.train_time_s),
          csv_number(r.steady_samples_per_s), csv_number(r.mean_epoch_time_s), csv_number(r.time_for_requested_epochs_s),
          r.time_for_requested_epochs_is_estimate ? "true" : "false", r.stopped_early ? "true" : "false",
          r.stop_reason, csv_number(r.final_train_loss), csv_number(r.final_train_accuracy_pct), csv_number(r.test_accuracy_pct),
          ph(&PhaseBreakdown::data_ms), ph(&PhaseBreakdown::h2d_ms), ph(&PhaseBreakdown::forward_ms),
          ph(&PhaseBreakdown::backward_ms), ph(&PhaseBreakdown::optimizer_ms), ph(&PhaseBreakdown::step_ms),
          r.phases ? r.phases->method : "", csv_count(r.peak_rss_bytes), csv_count(r.device_peak_allocated_bytes),
          csv_count(r.device_peak_reserved_bytes)};
  for (auto& c : inference_cells(r.inference)) row.push_back(std::move(c));
  row.push_back(std::to_string(r.world_size));
  for (auto& c : headline_cells(r.telemetry)) row.push_back(std::move(c));
  const auto& tta = r.time_to_accuracy;  // variants, MFU, time-to-accuracy
  for (auto& c : std::initializer_list<std::string>{csv_field(r.variant), csv_field(r.variant_note), csv_number(r.train_flops_per_s), csv_number(r.mfu_pct),
                  r.mfu_precision, tta ? csv_number(tta->target_pct) : "", std::string(tta ? (tta->reached ? "true" : "false") : ""),
                  csv_number(tta ? tta->time_s : std::nullopt), csv_count(tta ? tta->samples : std::nullopt),
                  csv_number(tta ? tta->energy_j : std::nullopt)})
    row.push_back(c);
  return row;
}

std::string results_json(const Provenance& p, const std::vector<RunRecord>& runs) {
  json arr = json::array();
  for (const auto& r : runs) arr.push_back(to_json(r));
  return record_document_json(p, std::move(arr));
}

std::string results_csv(const Provenance& p, const std::vector<RunRecord>& runs) {
  std::string out = provenance_csv_comment(p);
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v[i];
    return s + "\n";
  };
  out += join(csv_header());
  for (const auto& r : runs) out += join(csv_row(r));
  return out;
}

}  // namespace trainscope

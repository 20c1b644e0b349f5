#include "trainscope/run_record.h"

#include "common/text.h"
#include "results/record_json.h"

#include <fmt/format.h>

#include <cmath>
#include <type_traits>
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
std::string csv_bool(bool v) { return v ? "true" : "false"; }

// CSV cell of a headline field (numbers: whole ones in full, others 6 significant digits; absent: empty).
struct CsvCell {
  std::string operator()(const std::string& v) const { return csv_field(v); }
  std::string operator()(const OptD& v) const { return csv_number(v); }
  std::string operator()(const OptI& v) const { return csv_count(v); }
  std::string operator()(const std::optional<bool>& v) const { return v ? csv_bool(*v) : ""; }
};

// The columns of results.csv, walked from RunRecord::fields(): every field marked kCsv, in the
// list's order. A scalar is one column named as the field; a section or sub-object is the
// columns of its CSV form below. Collects the header's names, a row's cells, or both.
class CsvColumns {
 public:
  CsvColumns(std::vector<std::string>* names, std::vector<std::string>* cells) : names_(names), cells_(cells) {}

  template <class T, class... Tags>
  void operator()(const char* name, const T& v, Better, Tags...) const {
    if constexpr ((std::is_same_v<Tags, CsvColumn> || ...)) columns(name, v);
  }

 private:
  void add(std::string name, std::string cell) const {
    if (names_) names_->push_back(std::move(name));
    if (cells_) cells_->push_back(std::move(cell));
  }
  void columns(const char* name, const std::string& v) const { add(name, csv_field(v)); }
  void columns(const char* name, int64_t v) const { add(name, std::to_string(v)); }
  void columns(const char* name, uint64_t v) const { add(name, std::to_string(v)); }
  void columns(const char* name, double v) const { add(name, csv_number(v)); }
  void columns(const char* name, bool v) const { add(name, csv_bool(v)); }
  void columns(const char* name, const OptD& v) const { add(name, csv_number(v)); }
  void columns(const char* name, const OptI& v) const { add(name, csv_count(v)); }
  void columns(const char* name, RunStatus v) const { add(name, to_string(v)); }

  // The mean phase times and their method as phase_<field>; the count of steps averaged is none.
  void columns(const char*, const std::optional<PhaseBreakdown>& p) const {
    const PhaseBreakdown shown = p.value_or(PhaseBreakdown{});
    PhaseBreakdown::fields(shown, [&](const char* name, const auto& v, Better, auto&&...) {
      using T = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<T, double>) add(std::string("phase_") + name, p ? csv_number(v) : "");
      else if constexpr (std::is_same_v<T, std::string>) add(std::string("phase_") + name, csv_field(v));
    });
  }
  // Every headline field as telemetry_<field> (trainscope/telemetry_section.h).
  void columns(const char*, const std::optional<TelemetrySection>& t) const {
    const TelemetryHeadline h = t ? t->headline : TelemetryHeadline{};
    TelemetryHeadline::fields(h, [&](const char* name, const auto& v, Better) { add(std::string("telemetry_") + name, CsvCell{}(v)); });
  }
  // The inference headline figures: single-stream p50 and p99 latency, the best offline rate.
  void columns(const char*, const std::optional<InferenceSection>& i) const {
    const auto* ss = i && i->single_stream ? &*i->single_stream : nullptr;
    const auto* off = i && i->offline ? &*i->offline : nullptr;
    add("infer_single_stream_p50_ms", csv_number(ss ? ss->latency.p50_ms : std::nullopt));
    add("infer_single_stream_p99_ms", csv_number(ss ? ss->latency.p99_ms : std::nullopt));
    add("infer_offline_samples_per_s", csv_number(off ? off->best_samples_per_s : std::nullopt));
  }
  // Every language-model field as lm_<field> (trainscope/language_model_section.h); empty for images.
  void columns(const char*, const std::optional<LanguageModelSection>& l) const {
    const LanguageModelSection shown = l.value_or(LanguageModelSection{});
    LanguageModelSection::fields(shown, [&](const char* name, const auto& v, Better, auto&&...) {
      using T = std::decay_t<decltype(v)>;
      const std::string col = std::string("lm_") + name;
      if constexpr (std::is_same_v<T, std::string>) add(col, l ? csv_field(v) : "");
      else if constexpr (std::is_same_v<T, int64_t>) add(col, l ? std::to_string(v) : "");
      else add(col, l ? CsvCell{}(v) : "");
    });
  }
  // The target and what reaching it took (docs/variants.md#time-to-accuracy); empty without one.
  void columns(const char*, const std::optional<TimeToAccuracy>& t) const {
    add("target_accuracy_pct", t ? csv_number(t->target_pct) : "");
    add("target_reached", t ? csv_bool(t->reached) : "");
    add("time_to_target_s", csv_number(t ? t->time_s : std::nullopt));
    add("samples_to_target", csv_count(t ? t->samples : std::nullopt));
    add("energy_to_target_j", csv_number(t ? t->energy_j : std::nullopt));
  }

  std::vector<std::string>* names_;
  std::vector<std::string>* cells_;
};

}  // namespace

std::vector<std::string> csv_header() {
  std::vector<std::string> cols;
  const RunRecord none;
  RunRecord::fields(none, CsvColumns(&cols, nullptr));
  return cols;
}

std::vector<std::string> csv_row(const RunRecord& r) {
  std::vector<std::string> row;
  RunRecord::fields(r, CsvColumns(nullptr, &row));
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

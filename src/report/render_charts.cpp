// The charts' data of report.html (report/render_charts.h).
#include "report/render_charts.h"

#include <fmt/format.h>

#include <algorithm>

#include "report/report_util.h"

namespace trainscope::report_detail {

using nlohmann::json;

namespace {

// The top `n` operators of a run's profile by self time: self device time when the profiler
// recorded device events (OpRow::device_self_us), else self CPU time (OpRow::cpu_self_us).
json top_operators(const RunRecord& r, size_t n) {
  if (!r.profile || r.profile->op_table.empty()) return nullptr;
  const auto& rows = r.profile->op_table;
  const bool dev = std::any_of(rows.begin(), rows.end(), [](const OpRow& o) { return o.device_self_us.value_or(0) > 0; });
  std::vector<std::pair<double, std::string>> ops;
  for (const auto& o : rows) ops.emplace_back((dev ? o.device_self_us.value_or(0) : o.cpu_self_us) / 1000, o.name);
  std::stable_sort(ops.begin(), ops.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  json out = {{"labels", json::array()}, {"ms", json::array()}, {"key", dev ? "device_self_us" : "cpu_self_us"}};
  for (size_t i = 0; i < ops.size() && i < n; ++i) {
    out["labels"].push_back(ops[i].second.size() > 48 ? ops[i].second.substr(0, 45) + "..." : ops[i].second);
    out["ms"].push_back(ops[i].first);
  }
  return out;
}

json nullable(const Stat& s, double scale = 1) { return s.ok() ? json(s.median * scale) : json(nullptr); }

json speedup_chart(const ReportInput& in, const Analysis& a) {
  json d = {{"labels", json::array()}, {"values", json::array()}};
  for (const auto& c : a.device_comparisons)
    if (c.speedup) {
      d["labels"].push_back(fmt::format("{} b{} {}{}", c.model, c.batch_size, c.gpu_device, c.noise ? " (noise)" : ""));
      d["values"].push_back(*c.speedup);
    }
  d["absent"] = a.has_gpu ? "no GPU cell has a CPU cell of the same model and batch size to compare with"
                          : "no speed-up: no GPU run in these results (provenance lists " +
                                std::to_string(in.provenance.gpus.size()) + " GPU(s))";
  return d;
}

json throughput_chart(const Analysis& a) {
  std::vector<std::string> labels, devices;
  double lo = 0, hi = 0;
  for (const auto& c : a.cells) {
    std::string l = fmt::format("{} b{}", c.model, c.batch_size);
    if (std::find(labels.begin(), labels.end(), l) == labels.end()) labels.push_back(l);
    const std::string dev = where_label(a, c);
    if (std::find(devices.begin(), devices.end(), dev) == devices.end()) devices.push_back(dev);
    if (c.samples_per_s.ok() && c.samples_per_s.median > 0) {
      lo = lo > 0 ? std::min(lo, c.samples_per_s.median) : c.samples_per_s.median;
      hi = std::max(hi, c.samples_per_s.median);
    }
  }
  json sets = json::array();
  for (const auto& dev : devices) {
    json vals = json::array();
    for (const auto& l : labels) {
      json v = nullptr;
      for (const auto& c : a.cells)
        if (where_label(a, c) == dev && fmt::format("{} b{}", c.model, c.batch_size) == l) v = nullable(c.samples_per_s);
      vals.push_back(v);
    }
    sets.push_back({{"label", dev}, {"data", vals}});
  }
  return {{"labels", labels}, {"sets", sets}, {"log", lo > 0 && hi / lo > 20}};
}

json batches_chart(const Analysis& a) {
  json sets = json::array();
  for (const auto& s : a.batch_scaling) {
    json pts = json::array();
    for (size_t i = 0; i < s.batch_sizes.size(); ++i)
      if (s.samples_per_s[i]) pts.push_back({{"x", s.batch_sizes[i]}, {"y", *s.samples_per_s[i]}});
    std::string label = fmt::format("{} {}{}", s.model, s.device, a.multi_host ? " (" + s.host + ")" : "");
    sets.push_back({{"label", label}, {"points", pts}, {"saturation", s.saturation_batch ? json(*s.saturation_batch) : json(nullptr)}});
  }
  return {{"sets", sets},
          {"absent", "one batch size per device and model: no scaling to chart (measure several with --batch-sizes auto)"}};
}

json energy_chart(const ReportInput& in, const Analysis& a) {
  json d = {{"labels", json::array()}, {"values", json::array()}};
  for (const auto& c : a.cells)
    if (c.energy_per_sample_j.ok()) {
      d["labels"].push_back(fmt::format("{} b{} {}", c.model, c.batch_size, c.device));
      d["values"].push_back(c.energy_per_sample_j.median * 1000);
    }
  std::string why = source_reason(in.runs, "nvml");
  std::string rapl = source_reason(in.runs, "rapl");
  d["absent"] = fmt::format("energy not measured: GPU: {}; CPU: {}", why.empty() ? "no energy reading" : why,
                            rapl.empty() ? "no energy reading" : rapl);
  return d;
}

json latency_chart(const Analysis& a) {
  json d = {{"labels", json::array()}, {"sets", json::array()}};
  json p50 = json::array(), p99 = json::array();
  for (const auto& c : a.cells)
    if (c.latency_p50_ms.ok()) {
      d["labels"].push_back(fmt::format("{} b{} {}", c.model, c.batch_size, c.device));
      p50.push_back(c.latency_p50_ms.median);
      p99.push_back(nullable(c.latency_p99_ms));
    }
  d["sets"] = json::array({{{"label", "p50"}, {"data", p50}}, {{"label", "p99"}, {"data", p99}}});
  d["absent"] = "no inference measurements in these runs (the inference benchmark did not run)";
  return d;
}

// Time series, grouped by what they measure.
json series_chart(const std::vector<CounterSeries>& series, const std::string& telemetry_absent_reason) {
  struct Group {
    const char* title;
    const char* unit;
    std::vector<std::string> metrics;
    double scale;
  };
  const Group groups[] = {{"Utilisation over time", "%", {"util_pct", "sm_activity_pct"}, 1},
                          {"Power over time", "W", {"power_w", "package_power_w"}, 1},
                          {"Temperature over time", "°C", {"temp_c"}, 1},
                          {"Memory over time", "GiB", {"mem_used_bytes", "rss_bytes"}, 1.0 / (1024.0 * 1024 * 1024)}};
  json d = {{"groups", json::array()}};
  for (const auto& g : groups) {
    json sets = json::array();
    for (const auto& s : series) {
      if (std::find(g.metrics.begin(), g.metrics.end(), s.metric) == g.metrics.end()) continue;
      json pts = json::array();
      for (const auto& [t, v] : s.points) pts.push_back({{"x", static_cast<double>(t) / 1e9}, {"y", v * g.scale}});
      std::string label = s.device + " " + s.metric;
      if (s.device == "cpu" && s.metric == "mem_used_bytes") label = "host mem_used_bytes";
      sets.push_back({{"label", label}, {"points", pts}});
    }
    if (!sets.empty()) d["groups"].push_back({{"title", g.title}, {"unit", g.unit}, {"sets", sets}});
  }
  d["absent"] = telemetry_absent_reason.empty() ? "no telemetry samples" : telemetry_absent_reason;
  return d;
}

// Step breakdown per cell (the last ok run of the cell with phases).
json steps_chart(const ReportInput& in, const Analysis& a) {
  json d = {{"labels", json::array()}, {"sets", json::array()}};
  const char* names[] = {"data", "h2d", "forward", "backward", "optimizer", "other"};
  std::vector<json> vals(6, json::array());
  for (const auto& c : a.cells) {
    const RunRecord* r = nullptr;
    for (const auto& x : in.runs)
      if (x.status == RunStatus::kOk && x.device == c.device && workload_of(x) == c.workload && x.phases)
        r = &x;
    if (!r) continue;
    const auto& p = *r->phases;
    d["labels"].push_back(fmt::format("{} b{} {}", c.model, c.batch_size, c.device));
    double known = p.data_ms + p.h2d_ms + p.forward_ms + p.backward_ms + p.optimizer_ms;
    double parts[] = {p.data_ms, p.h2d_ms, p.forward_ms, p.backward_ms, p.optimizer_ms, std::max(0.0, p.step_ms - known)};
    for (int i = 0; i < 6; ++i) vals[i].push_back(parts[i]);
  }
  for (int i = 0; i < 6; ++i) d["sets"].push_back({{"label", names[i]}, {"data", vals[i]}});
  d["absent"] = "no phase breakdown in these runs";
  return d;
}

// Top operators of the first profiled run of each device.
json ops_chart(const ReportInput& in) {
  json ops = json::array();
  std::vector<std::string> seen;
  for (const auto& r : in.runs) {
    if (r.status != RunStatus::kOk || std::find(seen.begin(), seen.end(), r.device) != seen.end()) continue;
    json t = top_operators(r, 10);
    if (t.is_null()) continue;
    seen.push_back(r.device);
    t["device"] = r.device;
    t["run"] = r.run_id;
    ops.push_back(t);
  }
  return ops;
}

}  // namespace

json chart_data(const ReportInput& in, const Analysis& a, const std::vector<CounterSeries>& series,
                const std::string& telemetry_absent_reason) {
  json d;
  d["speedup"] = speedup_chart(in, a);
  d["throughput"] = throughput_chart(a);
  d["batches"] = batches_chart(a);
  d["energy"] = energy_chart(in, a);
  d["latency"] = latency_chart(a);
  d["series"] = series_chart(series, telemetry_absent_reason);
  d["epochs"] = json::array();
  for (const auto& r : in.runs)
    for (const auto& e : r.epochs)
      d["epochs"].push_back({{"t_s", static_cast<double>(e.start_ns) / 1e9}, {"epoch", e.epoch}, {"run", r.run_id}});
  d["steps"] = steps_chart(in, a);
  d["ops"] = ops_chart(in);
  d["opsAbsent"] = "no operator profile in these runs (the profiler did not run; rec.profile is empty)";
  return d;
}

}  // namespace trainscope::report_detail

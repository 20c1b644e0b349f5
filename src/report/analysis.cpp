// Analysis of run records: cells (median and spread over repeats), comparisons, RQ answers and
// advice. Everything here is arithmetic on recorded numbers; nothing is measured or invented.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "report/report_util.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/report.h"
#include "trainscope/stats.h"

namespace trainscope {

using nlohmann::json;
using namespace report_detail;

Stat make_stat(const std::vector<double>& v) {
  Stat s;
  std::vector<double> f;
  for (double x : v)
    if (std::isfinite(x)) f.push_back(x);
  if (f.empty()) return s;
  s.n = static_cast<int>(f.size());
  s.median = *median(f);
  s.min = *std::min_element(f.begin(), f.end());
  s.max = *std::max_element(f.begin(), f.end());
  return s;
}

bool within_noise(const Stat& a, const Stat& b) {
  if (!a.ok() || !b.ok()) return false;
  if (a.n < 2 && b.n < 2) return false;  // no spread measured: cannot call anything noise
  // Noise when the min..max ranges of the repeats overlap (a single repeat is a point). The
  // looser "|difference of medians| <= sum of the spreads" let a 75 % drop with disjoint ranges
  // pass as noise (found by a new-user review).
  return std::max(a.min, b.min) <= std::min(a.max, b.max);
}

ReportInput load_run_folder(const std::string& dir) {
  std::string path = dir + "/results.json";
  if (!file_exists(path))
    throw_error(ErrorKind::kIo, fmt::format("{}: no results.json; pass a folder written by `trainscope run`", dir));
  auto bytes = read_file_bytes(path, uint64_t{1} << 31);
  json j;
  try {
    j = json::parse(bytes.begin(), bytes.end());
  } catch (const json::exception& e) {
    throw_error(ErrorKind::kDataFormat, fmt::format("{}: not valid JSON ({})", path, e.what()));
  }
  if (!j.is_object() || !j.contains("runs") || !j["runs"].is_array())
    throw_error(ErrorKind::kDataFormat, fmt::format("{}: no \"runs\" array; is it a trainscope results.json?", path));
  ReportInput in;
  in.run_dir = dir;
  try {
    if (j.contains("provenance") && j["provenance"].is_object()) in.provenance = provenance_from_json(j["provenance"]);
    for (const auto& r : j["runs"]) in.runs.push_back(run_record_from_json(r));
  } catch (const json::exception& e) {
    throw_error(ErrorKind::kDataFormat, fmt::format("{}: a run record is malformed ({})", path, e.what()));
  }
  return in;
}

namespace report_detail {

std::optional<double> jnum(const json& j, std::initializer_list<const char*> path) {
  const json* cur = &j;
  for (const char* k : path) {
    if (!cur->is_object()) return std::nullopt;
    auto it = cur->find(k);
    if (it == cur->end()) return std::nullopt;
    cur = &*it;
  }
  if (!cur->is_number()) return std::nullopt;
  double v = cur->get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

bool is_gpu(const std::string& device) { return device.rfind("cuda", 0) == 0; }

std::optional<int> cuda_index(const std::string& device) {
  if (device.rfind("cuda:", 0) != 0) return std::nullopt;
  try {
    size_t pos = 0;
    int i = std::stoi(device.substr(5), &pos);
    if (pos == device.size() - 5) return i;
  } catch (...) {
  }
  return std::nullopt;
}

std::string fmt_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(b) >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{} {}", fmt_num(b), units[u]);
}

std::string fmt_stat(const Stat& s, const std::string& unit, double scale) {
  if (!s.ok()) return "—";
  std::string v = fmt_num(s.median * scale) + unit;
  if (s.n > 1)
    v += s.spread() > 0 ? fmt::format(" (±{}{}, n={})", fmt_num(s.spread() * scale / 2), unit, s.n)
                        : fmt::format(" (n={})", s.n);
  return v;
}

std::string source_reason(const std::vector<RunRecord>& runs, const std::string& source) {
  for (const auto& r : runs) {
    const json& t = r.telemetry;
    if (!t.is_object() || !t.contains("summary") || !t["summary"].is_object()) continue;
    const json& s = t["summary"];
    if (!s.contains("sources") || !s["sources"].is_array()) continue;
    for (const auto& src : s["sources"])
      if (src.is_object() && src.value("name", "") == source) {
        if (src.value("available", false)) return "";
        return src.value("reason", std::string("unavailable"));
      }
  }
  bool any_telemetry = std::any_of(runs.begin(), runs.end(), [](const RunRecord& r) { return r.telemetry.is_object(); });
  return any_telemetry ? source + " was not probed" : "telemetry was not recorded (--no-telemetry?)";
}

}  // namespace report_detail

namespace {

struct Acc {
  std::vector<double> sps, epoch_t, tfe, acc, gu, gux, sm, smx, cpu_u, alloc, resv, gmem, rss, pw, pwx, temp, e_ep, e_s,
      data, h2d, p50, p99, inf;
};

void push(std::vector<double>& v, std::optional<double> x) {
  if (x && std::isfinite(*x)) v.push_back(*x);
}

std::string cell_key(const std::string& d, const std::string& m, int64_t b) { return fmt::format("{}\x1f{}\x1f{}", d, m, b); }

void accumulate(const RunRecord& r, Acc& a, Cell& c) {
  const json& h = (r.telemetry.is_object() && r.telemetry.contains("headline")) ? r.telemetry["headline"] : json();
  push(a.sps, r.steady_samples_per_s);
  if (r.mean_epoch_time_s)
    push(a.epoch_t, r.mean_epoch_time_s);
  else if (r.steady_samples_per_s && *r.steady_samples_per_s > 0 && r.steps_per_epoch > 0) {
    a.epoch_t.push_back(static_cast<double>(r.steps_per_epoch * r.batch_size) / *r.steady_samples_per_s);
    c.epoch_time_is_estimate = true;
  }
  push(a.tfe, r.time_for_requested_epochs_s);
  if (r.time_for_requested_epochs_is_estimate) c.time_for_epochs_is_estimate = true;
  push(a.acc, r.test_accuracy_pct);
  const bool gpu = is_gpu(r.device);
  if (gpu) {
    push(a.gu, jnum(h, {"util_pct_mean"}));
    push(a.gux, jnum(h, {"util_pct_max"}));
    push(a.sm, jnum(h, {"sm_activity_pct_mean"}));
    push(a.smx, jnum(h, {"sm_activity_pct_max"}));
    push(a.gmem, jnum(h, {"mem_used_bytes_max"}));
    auto pw = jnum(h, {"power_w_mean"});
    if (!pw) pw = jnum(h, {"power_avg_w_mean"});
    push(a.pw, pw);
    auto pwx = jnum(h, {"power_w_max"});
    if (!pwx) pwx = jnum(h, {"power_avg_w_max"});
    push(a.pwx, pwx);
    push(a.temp, jnum(h, {"temp_c_max"}));
    if (auto m = jnum(h, {"clocks_event_reasons_mask_max"}))
      c.clocks_event_reasons_mask = c.clocks_event_reasons_mask.value_or(0) | static_cast<uint64_t>(*m);
    if (auto l = jnum(h, {"power_limit_w"})) c.power_limit_w = *l;
  } else {
    push(a.pw, jnum(h, {"package_power_w_mean"}));
    push(a.pwx, jnum(h, {"package_power_w_max"}));
    push(a.temp, jnum(h, {"cpu_temp_c_max"}));
  }
  push(a.cpu_u, jnum(h, {"cpu_util_pct_mean"}));
  if (r.device_peak_allocated_bytes) a.alloc.push_back(static_cast<double>(*r.device_peak_allocated_bytes));
  if (r.device_peak_reserved_bytes) a.resv.push_back(static_cast<double>(*r.device_peak_reserved_bytes));
  if (r.peak_rss_bytes)
    a.rss.push_back(static_cast<double>(*r.peak_rss_bytes));
  else
    push(a.rss, jnum(h, {"process_rss_bytes_max"}));
  // Energy: per sample from the run's energy over the samples it trained; per epoch scales that
  // to one full pass over the training set (runs stopped early have no complete epoch).
  std::optional<double> energy = jnum(h, {"energy_j"});
  int64_t samples = 0;
  double epoch_energy = 0;
  bool all_epochs_have_energy = !r.epochs.empty();
  for (const auto& e : r.epochs) {
    samples += e.samples;
    if (e.energy_j)
      epoch_energy += *e.energy_j;
    else
      all_epochs_have_energy = false;
  }
  if (!energy && all_epochs_have_energy) energy = epoch_energy;
  std::optional<double> per_sample = jnum(h, {"joules_per_sample"});
  if (!per_sample && energy && samples > 0) per_sample = *energy / static_cast<double>(samples);
  push(a.e_s, per_sample);
  if (per_sample && r.train_samples > 0) a.e_ep.push_back(*per_sample * static_cast<double>(r.train_samples));
  if (r.phases && r.phases->step_ms > 0) {
    a.data.push_back(100.0 * r.phases->data_ms / r.phases->step_ms);
    if (gpu) a.h2d.push_back(100.0 * r.phases->h2d_ms / r.phases->step_ms);
  }
  push(a.p50, jnum(r.inference, {"single_stream", "p50_ms"}));
  push(a.p99, jnum(r.inference, {"single_stream", "p99_ms"}));
  push(a.inf, jnum(r.inference, {"offline", "best_samples_per_s"}));
  for (const auto& n : r.notes)
    if (std::find(c.absent_reasons.begin(), c.absent_reasons.end(), n) == c.absent_reasons.end())
      c.absent_reasons.push_back(n);
}

std::vector<std::string> run_gpus(const json& devices) {
  std::vector<std::string> all;
  for (auto it = devices.begin(); it != devices.end(); ++it)
    if (it.key().rfind("gpu", 0) == 0) all.push_back(it.key());
  std::sort(all.begin(), all.end());
  return all;
}

bool multi_gpu_device(const std::string& d) {
  return d == "cuda" || (is_gpu(d) && (d.find(',') != std::string::npos || d.find('+') != std::string::npos));
}

std::string throttle_reasons(uint64_t mask) {
  // NVML nvmlClocksEventReason* bits (nvml.h): only those that mean "slowed down".
  static const std::pair<uint64_t, const char*> kBits[] = {{0x4, "software power cap"},
                                                           {0x8, "hardware slowdown"},
                                                           {0x20, "software thermal slowdown"},
                                                           {0x40, "hardware thermal slowdown"},
                                                           {0x80, "hardware power brake"}};
  std::string s;
  for (auto [bit, name] : kBits)
    if (mask & bit) s += (s.empty() ? "" : ", ") + std::string(name);
  return s;
}

const Cell* find_cell(const std::vector<Cell>& cells, const std::string& d, const std::string& m, int64_t b) {
  for (const auto& c : cells)
    if (c.device == d && c.model == m && c.batch_size == b) return &c;
  return nullptr;
}


std::string pct(double v) { return fmt_num(v) + " %"; }

}  // namespace

Analysis analyze(const ReportInput& in, const AdviceThresholds& t) {
  Analysis a;
  std::map<std::string, size_t> index;
  std::vector<Acc> accs;
  for (const auto& r : in.runs) {
    std::string k = cell_key(r.device, r.model, r.batch_size);
    auto it = index.find(k);
    if (it == index.end()) {
      it = index.emplace(k, a.cells.size()).first;
      Cell c;
      c.device = r.device;
      c.device_name = r.device_name;
      c.model = r.model;
      c.batch_size = r.batch_size;
      c.epochs_requested = r.epochs_requested;
      if (auto i = cuda_index(r.device); i && *i >= 0 && static_cast<size_t>(*i) < in.provenance.gpus.size() &&
                                         in.provenance.gpus[*i].memory_total_bytes > 0)
        c.device_memory_total_bytes = in.provenance.gpus[*i].memory_total_bytes;
      a.cells.push_back(c);
      accs.emplace_back();
    }
    Cell& c = a.cells[it->second];
    if (r.status != RunStatus::kOk) {
      ++c.runs_failed;
      continue;
    }
    ++c.runs_ok;
    c.run_ids.push_back(r.run_id);
    accumulate(r, accs[it->second], c);
  }
  for (size_t i = 0; i < a.cells.size(); ++i) {
    Cell& c = a.cells[i];
    const Acc& x = accs[i];
    c.samples_per_s = make_stat(x.sps);
    c.epoch_time_s = make_stat(x.epoch_t);
    c.time_for_epochs_s = make_stat(x.tfe);
    c.test_accuracy_pct = make_stat(x.acc);
    c.gpu_util_pct_mean = make_stat(x.gu);
    c.gpu_util_pct_max = make_stat(x.gux);
    c.sm_activity_pct_mean = make_stat(x.sm);
    c.sm_activity_pct_max = make_stat(x.smx);
    c.cpu_util_pct_mean = make_stat(x.cpu_u);
    c.device_peak_allocated_bytes = make_stat(x.alloc);
    c.device_peak_reserved_bytes = make_stat(x.resv);
    c.gpu_mem_used_bytes_max = make_stat(x.gmem);
    c.rss_bytes_max = make_stat(x.rss);
    c.power_w_mean = make_stat(x.pw);
    c.power_w_max = make_stat(x.pwx);
    c.temp_c_max = make_stat(x.temp);
    c.energy_per_epoch_j = make_stat(x.e_ep);
    c.energy_per_sample_j = make_stat(x.e_s);
    c.data_share_pct = make_stat(x.data);
    c.h2d_share_pct = make_stat(x.h2d);
    c.latency_p50_ms = make_stat(x.p50);
    c.latency_p99_ms = make_stat(x.p99);
    c.inference_samples_per_s = make_stat(x.inf);
    if (is_gpu(c.device) && c.runs_ok > 0) a.has_gpu = true;
    if (c.device == "cpu" && c.runs_ok > 0) a.has_cpu = true;
    if (c.samples_per_s.n > 1) a.has_repeats = true;
  }
  std::stable_sort(a.cells.begin(), a.cells.end(), [](const Cell& p, const Cell& q) {
    if (p.model != q.model) return p.model < q.model;
    if (p.batch_size != q.batch_size) return p.batch_size < q.batch_size;
    if ((p.device == "cpu") != (q.device == "cpu")) return p.device == "cpu";
    return p.device < q.device;
  });
  if (!a.has_repeats)
    a.notes.push_back("one repeat per cell: there is no spread, so no difference is called noise (use --repeats 3)");

  // ---- comparisons
  for (const auto& g : a.cells) {
    if (!is_gpu(g.device) || g.runs_ok == 0) continue;
    const Cell* c = find_cell(a.cells, "cpu", g.model, g.batch_size);
    if (!c || c->runs_ok == 0) continue;
    DeviceComparison d;
    d.model = g.model;
    d.gpu_device = g.device;
    d.batch_size = g.batch_size;
    if (g.samples_per_s.ok() && c->samples_per_s.ok() && c->samples_per_s.median > 0)
      d.speedup = g.samples_per_s.median / c->samples_per_s.median;
    d.noise = within_noise(g.samples_per_s, c->samples_per_s);
    if (c->time_for_epochs_s.ok()) d.cpu_time_for_epochs_s = c->time_for_epochs_s.median;
    if (g.time_for_epochs_s.ok()) d.gpu_time_for_epochs_s = g.time_for_epochs_s.median;
    if (g.test_accuracy_pct.ok() && c->test_accuracy_pct.ok())
      d.accuracy_diff_pct = g.test_accuracy_pct.median - c->test_accuracy_pct.median;
    if (c->energy_per_sample_j.ok()) d.cpu_energy_per_sample_j = c->energy_per_sample_j.median;
    if (g.energy_per_sample_j.ok()) d.gpu_energy_per_sample_j = g.energy_per_sample_j.median;
    a.device_comparisons.push_back(d);
  }
  {
    std::map<std::pair<std::string, std::string>, std::vector<const Cell*>> by;
    for (const auto& c : a.cells)
      if (c.runs_ok > 0) by[{c.device, c.model}].push_back(&c);
    for (auto& [k, v] : by) {
      std::sort(v.begin(), v.end(), [](const Cell* p, const Cell* q) { return p->batch_size < q->batch_size; });
      for (size_t i = 0; i + 1 < v.size(); ++i) {
        const Cell& p = *v[i];
        const Cell& q = *v[i + 1];
        BatchComparison b;
        b.device = k.first;
        b.model = k.second;
        b.batch_a = p.batch_size;
        b.batch_b = q.batch_size;
        if (p.samples_per_s.ok() && q.samples_per_s.ok() && p.samples_per_s.median > 0)
          b.samples_per_s_ratio = q.samples_per_s.median / p.samples_per_s.median;
        b.noise = within_noise(p.samples_per_s, q.samples_per_s);
        const bool gpu = is_gpu(b.device);
        const Stat& ua = gpu ? p.gpu_util_pct_mean : p.cpu_util_pct_mean;
        const Stat& ub = gpu ? q.gpu_util_pct_mean : q.cpu_util_pct_mean;
        if (ua.ok()) b.util_a_pct = ua.median;
        if (ub.ok()) b.util_b_pct = ub.median;
        const Stat& ma = gpu ? p.device_peak_allocated_bytes : p.rss_bytes_max;
        const Stat& mb = gpu ? q.device_peak_allocated_bytes : q.rss_bytes_max;
        if (ma.ok()) b.mem_a_bytes = ma.median;
        if (mb.ok()) b.mem_b_bytes = mb.median;
        a.batch_comparisons.push_back(b);
      }
    }
  }
  // ---- per-GPU balance
  for (const auto& r : in.runs) {
    if (r.status != RunStatus::kOk || !is_gpu(r.device) || !r.telemetry.is_object()) continue;
    const json* devs = nullptr;
    if (r.telemetry.contains("summary") && r.telemetry["summary"].is_object() &&
        r.telemetry["summary"].contains("devices") && r.telemetry["summary"]["devices"].is_object())
      devs = &r.telemetry["summary"]["devices"];
    if (!devs) continue;
    auto gpus = run_gpus(*devs);
    if (gpus.size() < 2) continue;
    GpuBalance b;
    b.run_id = r.run_id;
    b.run_device = r.device;
    b.multi_gpu_run = multi_gpu_device(r.device);
    for (const auto& g : gpus) {
      GpuBalance::Entry e;
      e.gpu = g;
      const json& d = (*devs)[g];
      if (auto v = jnum(d, {"fields", "util_pct", "mean"})) e.util_pct_mean = v;
      e.power_w_mean = jnum(d, {"fields", "power_w", "mean"});
      e.power_w_max = jnum(d, {"fields", "power_w", "max"});
      e.mem_used_bytes_max = jnum(d, {"fields", "mem_used_bytes", "max"});
      b.gpus.push_back(e);
    }
    a.balance.push_back(b);
  }

  // ---- advice
  auto add = [&](std::string rule, const Cell* c, std::string advice, std::string evidence) {
    Advice x;
    x.rule = std::move(rule);
    if (c) {
      x.device = c->device;
      x.model = c->model;
      x.batch_size = c->batch_size;
    }
    x.advice = std::move(advice);
    x.evidence = std::move(evidence);
    a.advice.push_back(std::move(x));
  };
  for (const auto& c : a.cells) {
    if (c.runs_ok == 0) continue;
    const std::string where = fmt::format("`{}` batch {} on {}", c.model, c.batch_size, c.device);
    const bool gpu = is_gpu(c.device);
    const bool data_bound = c.data_share_pct.ok() && c.data_share_pct.median >= t.data_share_pct;
    if (gpu) {
      bool low_u = c.gpu_util_pct_mean.ok() && c.gpu_util_pct_mean.median < t.low_gpu_util_pct;
      bool low_sm = c.sm_activity_pct_mean.ok() && c.sm_activity_pct_mean.median < t.low_sm_activity_pct;
      if (low_u || low_sm) {
        std::string ev = fmt::format("{}: mean GPU utilisation {} (threshold {} %), mean SM activity {} (threshold {} %)",
                                     where, c.gpu_util_pct_mean.ok() ? pct(c.gpu_util_pct_mean.median) : "not measured",
                                     fmt_num(t.low_gpu_util_pct),
                                     c.sm_activity_pct_mean.ok() ? pct(c.sm_activity_pct_mean.median) : "not measured",
                                     fmt_num(t.low_sm_activity_pct));
        if (c.data_share_pct.ok()) ev += fmt::format("; data loading {} of the step", pct(c.data_share_pct.median));
        add("low_utilisation", &c,
            data_bound ? "The GPU waits for data: data loading is the bottleneck. Prepare batches ahead (more loader "
                         "threads, prefetching, data decoded once and kept in memory) before raising the batch size."
                       : "The GPU is under-used: raise the batch size (see the memory headroom advice) or use a "
                         "larger model per step; small kernels leave SMs idle.",
            ev);
      }
      if (c.h2d_share_pct.ok() && c.h2d_share_pct.median >= t.h2d_share_pct)
        add("h2d_copies", &c,
            "Host-to-device copies take a large share of each step: use pinned (page-locked) host memory with "
            "non-blocking copies, prefetch the next batch while this one computes, or keep the whole data set on "
            "the device when it fits.",
            fmt::format("{}: host-to-device copy {} of the step (rec.phases h2d_ms / step_ms; threshold {} %)",
                        where, pct(c.h2d_share_pct.median), fmt_num(t.h2d_share_pct)));
      if (c.device_memory_total_bytes && (c.device_peak_reserved_bytes.ok() || c.device_peak_allocated_bytes.ok())) {
        double total = static_cast<double>(*c.device_memory_total_bytes);
        double used = c.device_peak_reserved_bytes.ok() ? c.device_peak_reserved_bytes.median
                                                         : c.device_peak_allocated_bytes.median;
        double used_pct = 100.0 * used / total;
        if (used_pct < t.memory_headroom_pct && c.device_peak_allocated_bytes.ok() &&
            c.device_peak_allocated_bytes.median > 0) {
          // Two batch sizes measured: allocated = fixed + per_sample * batch (a line through both).
          // One: scale allocated linearly with the batch (a lower bound: the fixed part does not grow).
          double budget = t.memory_safety_fraction * total;
          std::optional<double> est;
          std::string how;
          const Cell* other = nullptr;
          for (const auto& o : a.cells)
            if (&o != &c && o.device == c.device && o.model == c.model && o.batch_size != c.batch_size &&
                o.device_peak_allocated_bytes.ok())
              other = &o;
          if (other) {
            double per = (c.device_peak_allocated_bytes.median - other->device_peak_allocated_bytes.median) /
                         static_cast<double>(c.batch_size - other->batch_size);
            double fixed = c.device_peak_allocated_bytes.median - per * static_cast<double>(c.batch_size);
            if (per > 0) {
              est = (budget - fixed) / per;
              how = fmt::format("line through batch {} ({}) and batch {} ({}): {} per sample + {} fixed",
                                other->batch_size, fmt_bytes(other->device_peak_allocated_bytes.median), c.batch_size,
                                fmt_bytes(c.device_peak_allocated_bytes.median), fmt_bytes(per), fmt_bytes(fixed));
            }
          }
          if (!est) {
            est = static_cast<double>(c.batch_size) * budget / c.device_peak_allocated_bytes.median;
            how = "peak allocated scaled linearly with the batch (a lower bound)";
          }
          int64_t max_b = static_cast<int64_t>(std::floor(*est));
          int64_t pow2 = 1;
          while (pow2 * 2 <= max_b) pow2 *= 2;
          if (max_b > c.batch_size)
            add("memory_headroom", &c,
                fmt::format("Memory headroom: a batch of about {} should fit ({} % of device memory); the largest "
                            "power of two below it is {}. A larger batch usually raises utilisation; re-tune the "
                            "learning rate when you change it.",
                            max_b, fmt_num(t.memory_safety_fraction * 100), pow2),
                fmt::format("{}: peak {} {} of {} device memory ({} < {} %); estimate from {}", where,
                            c.device_peak_reserved_bytes.ok() ? "reserved" : "allocated", fmt_bytes(used),
                            fmt_bytes(total), pct(used_pct), fmt_num(t.memory_headroom_pct), how));
        }
      }
      if (c.clocks_event_reasons_mask) {
        std::string why = throttle_reasons(*c.clocks_event_reasons_mask);
        if (!why.empty())
          add("throttling", &c,
              "The GPU slowed its clocks during the run, so these numbers are below what it can do: check cooling, "
              "air flow and the power limit (nvidia-smi -q -d PERFORMANCE,POWER), then measure again.",
              fmt::format("{}: NVML clocks event reasons 0x{:x} ({}) seen during the run", where,
                          *c.clocks_event_reasons_mask, why));
      }
    } else if (data_bound) {
      add("data_loading", &c,
          "Data loading is a large part of each step: prepare batches ahead (loader threads, prefetching, data "
          "decoded once and kept in memory).",
          fmt::format("{}: data loading {} of the step (threshold {} %)", where, pct(c.data_share_pct.median),
                      fmt_num(t.data_share_pct)));
    }
    if (gpu && data_bound && !std::any_of(a.advice.begin(), a.advice.end(), [&](const Advice& x) {
          return x.rule == "low_utilisation" && x.device == c.device && x.model == c.model && x.batch_size == c.batch_size;
        }))
      add("data_loading", &c,
          "Data loading is a large part of each step: prepare batches ahead (loader threads, prefetching, data "
          "kept on the device).",
          fmt::format("{}: data loading {} of the step (threshold {} %)", where, pct(c.data_share_pct.median),
                      fmt_num(t.data_share_pct)));
  }
  for (const auto& d : a.device_comparisons) {
    if (!d.speedup || *d.speedup >= 1 || d.noise) continue;
    const Cell* c = find_cell(a.cells, "cpu", d.model, d.batch_size);
    const Cell* g = find_cell(a.cells, d.gpu_device, d.model, d.batch_size);
    add("cpu_faster", c,
        fmt::format("Train `{}` on the CPU: it is {}× faster than {} at batch {}; the model is too small for the "
                    "GPU to pay for its launch and copy overheads.",
                    d.model, fmt_num(1 / *d.speedup), d.gpu_device, d.batch_size),
        fmt::format("steady training throughput: CPU {} vs {} {} samples/s", fmt_stat(c->samples_per_s, "", 1),
                    d.gpu_device, fmt_stat(g->samples_per_s, "", 1)));
  }
  for (const auto& b : a.balance) {
    if (!b.multi_gpu_run) continue;
    const GpuBalance::Entry *lo = nullptr, *hi = nullptr;
    for (const auto& e : b.gpus) {
      if (!e.power_w_mean) continue;
      if (!lo || *e.power_w_mean < *lo->power_w_mean) lo = &e;
      if (!hi || *e.power_w_mean > *hi->power_w_mean) hi = &e;
    }
    if (lo && hi && lo != hi && *lo->power_w_mean < t.unbalanced_power_ratio * *hi->power_w_mean) {
      Advice x;
      x.rule = "unbalanced_gpus";
      x.device = b.run_device;
      for (const auto& r : in.runs)
        if (r.run_id == b.run_id) {
          x.model = r.model;
          x.batch_size = r.batch_size;
        }
      x.advice =
          "The GPUs are unbalanced: one does almost nothing. Spread the work (one process per GPU with "
          "DistributedDataParallel, equal shards) or check that the model and data are placed on every device.";
      x.evidence = fmt::format("run {}: {} drew {} W on average (peak {}) while {} drew {} W (peak {}); threshold: "
                               "below {} % of the busiest GPU",
                               b.run_id, lo->gpu, fmt_num(*lo->power_w_mean),
                               lo->power_w_max ? fmt_num(*lo->power_w_max) + " W" : "—", hi->gpu,
                               fmt_num(*hi->power_w_mean), hi->power_w_max ? fmt_num(*hi->power_w_max) + " W" : "—",
                               fmt_num(t.unbalanced_power_ratio * 100));
      a.advice.push_back(x);
    }
  }

  // ---- answers
  build_answers(in, a);
  return a;
}

}  // namespace trainscope

// Analysis of run records: cells (median and spread over repeats), comparisons, RQ answers and
// advice. Everything here is arithmetic on recorded numbers; nothing is measured or invented.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <map>
#include <cctype>

#include "report/report_util.h"
#include "results/record_json.h"
#include "trainscope/cpu_budget.h"
#include "trainscope/variants.h"
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

std::vector<std::string> report_detail::inference_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file(ec) && name.rfind("inference", 0) == 0 && name.size() > 5 &&
        name.compare(name.size() - 5, 5, ".json") == 0)
      out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
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
  // A newer trainscope's record may mean other things by the same names: refused, not misread.
  for (const json* v : {&j, j.contains("provenance") ? &j["provenance"] : nullptr})
    if (v && v->is_object() && v->contains("schema_version") && (*v)["schema_version"].is_number() &&
        (*v)["schema_version"].get<double>() > kSchemaVersion)
      throw_error(ErrorKind::kDataFormat,
                  fmt::format("{}: schema version {} is newer than this trainscope's ({}); read it with the "
                              "trainscope that wrote it (its provenance names the version) or a newer one",
                              path, (*v)["schema_version"].dump(), kSchemaVersion));
  ReportInput in;
  in.run_dir = dir;
  try {
    if (j.contains("provenance") && j["provenance"].is_object()) in.provenance = provenance_from_json(j["provenance"]);
    for (const auto& r : j["runs"]) in.runs.push_back(run_record_from_json(r));
  } catch (const json::exception& e) {
    throw_error(ErrorKind::kDataFormat, fmt::format("{}: a run record is malformed ({})", path, e.what()));
  }
  // `trainscope infer --run <dir>` writes its results beside the training's: inference.json, and
  // under another name given with -o (inference-graphs.json: a --graphs invocation beside an eager
  // one), docs/generation.md#outputs.
  for (const auto& path : report_detail::inference_files(dir)) in.inference.push_back(load_inference_document(path));
  return in;
}

std::string model_label(const std::string& model, const std::string& variant, int64_t world_size) {
  const std::string ranks = world_size > 1 ? fmt::format("{} ×{} ranks", model, world_size) : model;
  return model_with_variant(ranks, variant);  // "[variant]" last: split_model_variant gives {"mlp ×2 ranks", "bf16"}
}

WorkloadId workload_of(const RunRecord& r) {
  WorkloadId w;
  // The variant and the world size make their own workloads (trainscope/variants.h, docs/distributed.md).
  // A language model's sequence length (a matrix dimension, --seq-lens) and the micro-batches of
  // a step (--grad-accum) make their own workloads too: "gpt-mini T256", "mlp ×4 micro-batches".
  std::string model = r.model;
  if (r.language_model && r.language_model->seq_len > 0) model += fmt::format(" T{}", r.language_model->seq_len);
  if (r.grad_accum > 1) model += fmt::format(" ×{} micro-batches", r.grad_accum);
  w.model = model_label(model, r.variant, r.world_size);
  w.dataset = r.dataset;
  w.batch_size = r.batch_size;
  w.seed = r.seed;
  return w;
}

std::string workload_key(const WorkloadId& w) {
  return fmt::format("{}\x1f{:012d}\x1f{}\x1f{}", w.model, w.batch_size, w.dataset, w.seed);
}

std::string workload_label(const WorkloadId& w) {
  return fmt::format("`{}` b{} ({}, seed {})", w.model, w.batch_size, w.dataset.empty() ? "data set ?" : w.dataset,
                     w.seed);
}

ReportInput merge_inputs(const std::vector<ReportInput>& parts) {
  if (parts.empty()) throw_error(ErrorKind::kInvalidArgument, "no run folder given; pass one or more run folders");
  if (parts.size() == 1) return parts.front();
  ReportInput in;
  in.provenance = parts.front().provenance;
  in.run_dir = parts.front().run_dir;
  for (const auto& p : parts) {
    in.sources.push_back({p.provenance, p.run_dir});
    in.inference.insert(in.inference.end(), p.inference.begin(), p.inference.end());
    for (const auto& r : p.runs) {
      in.runs.push_back(r);
      in.run_source.push_back(in.sources.size() - 1);
    }
  }
  return in;
}

const Provenance& provenance_of(const ReportInput& in, size_t i) {
  if (i < in.run_source.size() && in.run_source[i] < in.sources.size()) return in.sources[in.run_source[i]].provenance;
  return in.provenance;
}

namespace report_detail {

bool is_gpu(const std::string& device) { return device.rfind("cuda", 0) == 0; }

Variant variant_of_label(const std::string& variant) {
  try {
    return parse_variant(variant, "a recorded variant");
  } catch (const Error&) {
    return Variant{};
  }
}

std::string without_threads(const std::string& variant) {
  Variant v = variant_of_label(variant);
  v.threads = 0;
  return v.name();
}

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
    if (!r.telemetry) continue;
    for (const auto& src : r.telemetry->summary.sources)
      if (src.name == source) return src.available ? "" : (src.reason.empty() ? "unavailable" : src.reason);
  }
  bool any_telemetry = std::any_of(runs.begin(), runs.end(), [](const RunRecord& r) { return r.telemetry.has_value(); });
  return any_telemetry ? source + " was not probed" : no_telemetry_reason(runs);
}

std::string no_telemetry_cause(const std::vector<RunRecord>& runs) {
  const std::string failed = RunRecord::kSamplerFailedNote;
  for (const auto& r : runs)
    for (const auto& n : r.notes)
      if (n.rfind(failed, 0) == 0) return "the sampler could not start: " + n.substr(failed.size());
  return "the runs had telemetry off, by --no-telemetry or telemetry.enabled = false";
}

std::string no_telemetry_reason(const std::vector<RunRecord>& runs) {
  return "no telemetry was recorded: " + no_telemetry_cause(runs);
}

std::optional<double> speedup(const Cell& gpu, const Cell& cpu) {
  if (!gpu.samples_per_s.ok() || !cpu.samples_per_s.ok() || !(cpu.samples_per_s.median > 0)) return std::nullopt;
  return gpu.samples_per_s.median / cpu.samples_per_s.median;
}

const Cell* find_cell(const std::vector<Cell>& cells, const std::string& d, const std::string& m, int64_t b,
                      const std::string& host) {
  for (const auto& c : cells)
    if (c.device == d && c.model == m && c.batch_size == b && (host.empty() || c.host == host)) return &c;
  return nullptr;
}

std::vector<std::vector<const Cell*>> batch_series(const Analysis& a) {
  std::map<std::string, std::vector<const Cell*>> by;
  for (const auto& c : a.cells) {
    WorkloadId w = c.workload;
    w.batch_size = 0;
    by[fmt::format("{}\x1f{}\x1f{}", c.host, c.device, workload_key(w))].push_back(&c);
  }
  std::vector<std::vector<const Cell*>> out;
  for (auto& [k, v] : by) {
    std::sort(v.begin(), v.end(), [](const Cell* p, const Cell* q) { return p->batch_size < q->batch_size; });
    out.push_back(v);
  }
  return out;
}

std::string where_label(const Analysis& a, const Cell& c) {
  return a.multi_host ? fmt::format("{} on {}", c.device, c.host) : c.device;
}

}  // namespace report_detail

namespace {

struct Acc {
  std::vector<double> sps, epoch_t, tfe, acc, gu, gux, sm, smx, cpu_u, proc_c, alloc, resv, gmem, rss, pw, pwx, temp, e_ep, e_s,
      data, h2d, p50, p99, inf, tta_t, tta_e;
};

void push(std::vector<double>& v, std::optional<double> x) {
  if (x && std::isfinite(*x)) v.push_back(*x);
}
void push(std::vector<double>& v, std::optional<int64_t> x) {
  if (x) v.push_back(static_cast<double>(*x));
}

std::string cell_key(const RunRecord& r, const std::string& host) {
  return fmt::format("{}\x1f{}\x1f{}", host, r.device, workload_key(workload_of(r)));
}

// Training throughput and times of one run.
void accumulate_training(const RunRecord& r, Acc& a, Cell& c) {
  push(a.sps, r.steady_samples_per_s);
  if (r.mean_epoch_time_s)
    push(a.epoch_t, r.mean_epoch_time_s);
  else if (r.steady_samples_per_s && *r.steady_samples_per_s > 0 && r.steps_per_epoch > 0) {
    a.epoch_t.push_back(static_cast<double>(r.steps_per_epoch * r.batch_size * r.grad_accum) / *r.steady_samples_per_s);
    c.epoch_time_is_estimate = true;
  }
  push(a.tfe, r.time_for_requested_epochs_s);
  if (r.time_for_requested_epochs_is_estimate) c.time_for_epochs_is_estimate = true;
  push(a.acc, r.test_accuracy_pct);
  if (const auto& t = r.time_to_accuracy) {
    c.target_pct = t->target_pct;
    if (t->reached) {
      push(a.tta_t, t->time_s);
      push(a.tta_e, t->energy_j);
    } else {
      ++c.runs_target_missed;
    }
  }
  push(a.alloc, r.device_peak_allocated_bytes);
  push(a.resv, r.device_peak_reserved_bytes);
  if (r.phases && r.phases->step_ms > 0) {
    a.data.push_back(100.0 * r.phases->data_ms / r.phases->step_ms);
    if (is_gpu(r.device)) a.h2d.push_back(100.0 * r.phases->h2d_ms / r.phases->step_ms);
  }
  if (r.inference && r.inference->single_stream) {
    push(a.p50, r.inference->single_stream->latency.p50_ms);
    push(a.p99, r.inference->single_stream->latency.p99_ms);
  }
  if (r.inference && r.inference->offline) push(a.inf, r.inference->offline->best_samples_per_s);
  for (const auto& n : r.notes)
    if (std::find(c.absent_reasons.begin(), c.absent_reasons.end(), n) == c.absent_reasons.end())
      c.absent_reasons.push_back(n);
}

// Telemetry headline of one run: the run's device (GPU: NVML; CPU: RAPL/hwmon) and the host.
void accumulate_telemetry(const RunRecord& r, Acc& a, Cell& c) {
  const TelemetryHeadline h = r.telemetry ? r.telemetry->headline : TelemetryHeadline{};
  if (is_gpu(r.device)) {
    push(a.gu, h.util_pct_mean);
    push(a.gux, h.util_pct_max);
    push(a.sm, h.sm_activity_pct_mean);
    push(a.smx, h.sm_activity_pct_max);
    push(a.gmem, h.mem_used_bytes_max);
    push(a.pw, h.power_w_mean ? h.power_w_mean : h.power_avg_w_mean);
    push(a.pwx, h.power_w_max ? h.power_w_max : h.power_avg_w_max);
    push(a.temp, h.temp_c_max);
    if (h.clocks_event_reasons_mask_max)
      c.clocks_event_reasons_mask = c.clocks_event_reasons_mask.value_or(0) | static_cast<uint64_t>(*h.clocks_event_reasons_mask_max);
    if (h.power_limit_w) c.power_limit_w = h.power_limit_w;
  } else {
    push(a.pw, h.package_power_w_mean);
    push(a.pwx, h.package_power_w_max);
    push(a.temp, h.cpu_temp_c_max);
  }
  push(a.cpu_u, h.cpu_util_pct_mean);
  if (h.process_cpu_pct_mean) a.proc_c.push_back(*h.process_cpu_pct_mean / 100.0);  // 100 % = one core
  if (h.stats_samples_min) c.telemetry_samples_min = std::min(c.telemetry_samples_min.value_or(*h.stats_samples_min), *h.stats_samples_min);
  if (r.peak_rss_bytes)
    push(a.rss, r.peak_rss_bytes);
  else
    push(a.rss, h.process_rss_bytes_max);
}

// Energy: per sample from the run's energy over the samples it trained; per epoch scales that
// to one full pass over the training set (runs stopped early have no complete epoch).
void accumulate_energy(const RunRecord& r, Acc& a) {
  const TelemetryHeadline h = r.telemetry ? r.telemetry->headline : TelemetryHeadline{};
  std::optional<double> energy = h.energy_j;
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
  std::optional<double> per_sample = h.joules_per_sample;
  if (!per_sample && energy && samples > 0) per_sample = *energy / static_cast<double>(samples);
  push(a.e_s, per_sample);
  if (per_sample && r.train_samples > 0) a.e_ep.push_back(*per_sample * static_cast<double>(r.train_samples));
}

void finish_cell(Cell& c, const Acc& x) {
  c.samples_per_s = make_stat(x.sps);
  c.epoch_time_s = make_stat(x.epoch_t);
  c.time_for_epochs_s = make_stat(x.tfe);
  c.time_to_target_s = make_stat(x.tta_t);
  c.energy_to_target_j = make_stat(x.tta_e);
  c.test_accuracy_pct = make_stat(x.acc);
  c.gpu_util_pct_mean = make_stat(x.gu);
  c.gpu_util_pct_max = make_stat(x.gux);
  c.sm_activity_pct_mean = make_stat(x.sm);
  c.sm_activity_pct_max = make_stat(x.smx);
  c.cpu_util_pct_mean = make_stat(x.cpu_u);
  c.process_cpu_cores = make_stat(x.proc_c);
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
}

Cell new_cell(const RunRecord& r, const Provenance& p) {
  Cell c;
  c.workload = workload_of(r);
  c.host = p.host;
  c.device = r.device;
  c.device_name = r.device_name;
  c.model = c.workload.model;  // with its variant and world size: different workloads (workload_of)
  c.batch_size = r.batch_size;
  c.epochs_requested = r.epochs_requested;
  if (r.language_model && r.language_model->seq_len > 0) c.tokens_per_sample = r.language_model->seq_len;
  if (auto i = cuda_index(r.device);
      i && *i >= 0 && static_cast<size_t>(*i) < p.gpus.size() && p.gpus[*i].memory_total_bytes > 0)
    c.device_memory_total_bytes = p.gpus[*i].memory_total_bytes;
  return c;
}

// Cells (device, model, batch) over the repeats that finished ok, sorted model, batch, CPU first.
void build_cells(const ReportInput& in, Analysis& a) {
  std::map<std::string, size_t> index;
  std::vector<Acc> accs;
  std::vector<std::vector<const RunRecord*>> members;  // the ok runs of each cell
  for (size_t i = 0; i < in.runs.size(); ++i) {
    const RunRecord& r = in.runs[i];
    const Provenance& prov = provenance_of(in, i);
    if (prov.host != in.provenance.host) a.multi_host = true;
    auto [it, added] = index.emplace(cell_key(r, prov.host), a.cells.size());
    if (added) {
      a.cells.push_back(new_cell(r, prov));
      accs.emplace_back();
      members.emplace_back();
    }
    Cell& c = a.cells[it->second];
    if (r.status == RunStatus::kNotApplicable) {
      ++c.runs_not_applicable;
      c.not_applicable = r.variant_note;
      continue;
    }
    if (r.status != RunStatus::kOk) {
      ++c.runs_failed;
      if (r.status == RunStatus::kInterrupted) ++c.runs_interrupted;
      continue;
    }
    ++c.runs_ok;
    c.run_ids.push_back(r.run_id);
    members[it->second].push_back(&r);
    accumulate_training(r, accs[it->second], c);
    accumulate_telemetry(r, accs[it->second], c);
    accumulate_energy(r, accs[it->second]);
  }
  for (size_t i = 0; i < a.cells.size(); ++i) {
    Cell& c = a.cells[i];
    finish_cell(c, accs[i]);
    c.settings_differ = settings_that_differ({members[i]});
    if (is_gpu(c.device) && c.runs_ok > 0) a.has_gpu = true;
    if (c.device == "cpu" && c.runs_ok > 0) a.has_cpu = true;
    if (c.samples_per_s.n > 1) a.has_repeats = true;
  }
  std::stable_sort(a.cells.begin(), a.cells.end(), [](const Cell& p, const Cell& q) {
    if (p.model != q.model) return p.model < q.model;
    if (p.batch_size != q.batch_size) return p.batch_size < q.batch_size;
    if (p.workload != q.workload) return workload_key(p.workload) < workload_key(q.workload);
    if ((p.device == "cpu") != (q.device == "cpu")) return p.device == "cpu";
    if (p.device != q.device) return p.device < q.device;
    return p.host < q.host;
  });
  if (!a.has_repeats)
    a.notes.push_back("one repeat per cell: there is no spread, so no difference is called noise (use --repeats 3)");
  for (const auto& c : a.cells)
    if (!c.settings_differ.empty())
      a.notes.push_back(fmt::format("{} on {} pools runs whose settings differ ({}): its medians mix them; report "
                                    "such folders apart",
                                    workload_label(c.workload), where_label(a, c), fmt::join(c.settings_differ, "; ")));
}

// The CPU cell a GPU cell is compared with, at the CPU's fastest measured thread count: among
// `c` and the cells that differ from it only by a threadsN variant (same host, data, batch, seed,
// model and other techniques) whose N is within the usable CPUs (`usable_cpus`, 0: unknown, no
// limit), the one with the highest median samples/s. A thread count is a CPU setting, so the
// fair verdict gives the CPU its best (docs/variants.md#cpu-threads); a note names the cell
// when it is not `c`.
const Cell* fastest_thread_count(Analysis& a, const Cell& c, int64_t usable_cpus) {
  if (!c.samples_per_s.ok()) return &c;
  const auto [base, variant] = split_model_variant(c.model);
  const std::string recipe = without_threads(variant);
  const Cell* best = &c;
  for (const auto& x : a.cells) {
    if (x.device != "cpu" || x.host != c.host || !x.samples_per_s.ok() || x.workload.dataset != c.workload.dataset ||
        x.batch_size != c.batch_size || x.workload.seed != c.workload.seed)
      continue;
    const auto [xb, xv] = split_model_variant(x.model);
    const int64_t n = variant_of_label(xv).threads;
    if (usable_cpus > 0 && n > usable_cpus) continue;  // oversubscribed: not a count to train with
    if (xb == base && without_threads(xv) == recipe && x.samples_per_s.median > best->samples_per_s.median) best = &x;
  }
  if (best != &c) {
    const std::string note = fmt::format(
        "the CPU side of {} b{}'s GPU speed-ups is {} ({} samples/s), its fastest thread count measured, not {} ({} "
        "samples/s)",
        c.model, c.batch_size, best->model, fmt_num(best->samples_per_s.median), c.model, fmt_num(c.samples_per_s.median));
    if (std::find(a.notes.begin(), a.notes.end(), note) == a.notes.end()) a.notes.push_back(note);
  }
  return best;
}

void compare_devices(Analysis& a, int64_t usable_cpus) {
  for (const auto& g : a.cells) {
    if (!is_gpu(g.device) || g.runs_ok == 0) continue;
    auto cpu_cell = [&](const WorkloadId& w) {
      const Cell* c = nullptr;
      for (const auto& x : a.cells)
        if (x.device == "cpu" && x.runs_ok > 0 && x.workload == w && (!c || x.host == g.host)) c = &x;
      return c;
    };
    const Cell* c = cpu_cell(g.workload);
    // A GPU-only variant (graphs, tf32) has no CPU cell of its own: it is compared with CPU eager.
    if (!c) {
      WorkloadId eager = g.workload;
      eager.model = split_model_variant(eager.model).first;
      c = cpu_cell(eager);
    }
    if (!c) continue;
    c = fastest_thread_count(a, *c, usable_cpus);
    DeviceComparison d;
    d.model = g.model;
    d.cpu_model = c->model;
    d.gpu_device = g.device;
    d.gpu_host = g.host;
    d.cpu_host = c->host;
    d.batch_size = g.batch_size;
    d.speedup = speedup(g, *c);
    d.noise = within_noise(g.samples_per_s, c->samples_per_s);
    if (c->time_for_epochs_s.ok()) d.cpu_time_for_epochs_s = c->time_for_epochs_s.median;
    if (g.time_for_epochs_s.ok()) d.gpu_time_for_epochs_s = g.time_for_epochs_s.median;
    if (g.test_accuracy_pct.ok() && c->test_accuracy_pct.ok())
      d.accuracy_diff_pct = g.test_accuracy_pct.median - c->test_accuracy_pct.median;
    if (c->energy_per_sample_j.ok()) d.cpu_energy_per_sample_j = c->energy_per_sample_j.median;
    if (g.energy_per_sample_j.ok()) d.gpu_energy_per_sample_j = g.energy_per_sample_j.median;
    a.device_comparisons.push_back(d);
  }
}

BatchComparison compare_batch_pair(const std::string& device, const std::string& model, const Cell& p, const Cell& q) {
  BatchComparison b;
  b.device = device;
  b.model = model;
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
  return b;
}

void compare_batches(Analysis& a) {
  for (auto v : batch_series(a)) {
    std::erase_if(v, [](const Cell* c) { return c->runs_ok == 0; });
    for (size_t i = 0; i + 1 < v.size(); ++i)
      a.batch_comparisons.push_back(compare_batch_pair(v[i]->device, v[i]->model, *v[i], *v[i + 1]));
  }
}

// NVML devices of a summary ("gpu0", "gpu1", ...), sorted.
std::vector<std::string> telemetry_gpus(const TelemetrySummary& s) {
  std::vector<std::string> all;
  for (const auto& [name, d] : s.devices)
    if (name.size() > 3 && name.rfind("gpu", 0) == 0 && std::isdigit(static_cast<unsigned char>(name[3]))) all.push_back(name);
  return all;
}

// Per-GPU load of every run whose telemetry saw several GPUs: GPU runs, and runs that trained
// on several processes (world_size > 1).
void gpu_balance(const ReportInput& in, Analysis& a) {
  for (const auto& r : in.runs) {
    if (r.status != RunStatus::kOk || !r.telemetry || !(is_gpu(r.device) || r.world_size > 1)) continue;
    const TelemetrySummary& s = r.telemetry->summary;
    auto gpus = telemetry_gpus(s);
    if (gpus.size() < 2) continue;
    GpuBalance b;
    b.run_id = r.run_id;
    b.run_device = r.device;
    b.multi_gpu_run = r.world_size > 1;
    for (const auto& g : gpus) {
      GpuBalance::Entry e;
      e.gpu = g;
      if (const auto* m = s.metric(g, "util_pct")) e.util_pct_mean = m->mean;
      if (const auto* m = s.metric(g, "power_w")) e.power_w_mean = m->mean, e.power_w_max = m->max;
      if (const auto* m = s.metric(g, "mem_used_bytes")) e.mem_used_bytes_max = m->max;
      b.gpus.push_back(e);
    }
    a.balance.push_back(b);
  }
}

}  // namespace

ShownSpeedup shown_speedup(const Analysis& a, const std::string& device, const std::string& model, int64_t batch_size,
                           const std::string& host) {
  ShownSpeedup out;
  for (const auto& d : a.device_comparisons) {
    if (d.model != model || d.batch_size != batch_size || !d.speedup) continue;
    if (!host.empty() && host != (device == "cpu" ? d.cpu_host : d.gpu_host)) continue;
    if (d.gpu_device == device) {
      out.value = d.speedup;
      out.noise = d.noise;
      return out;
    }
    if (device == "cpu") {
      out.value = 1.0;
      out.baseline = true;
    }
  }
  return out;
}

Analysis analyze(const ReportInput& in, const AdviceThresholds& t) {
  Analysis a;
  build_cells(in, a);
  compare_devices(a, in.provenance.cpu_usable_cores);
  compare_batches(a);
  gpu_balance(in, a);
  build_batch_scaling(in, t, a);
  compare_hosts(in, a);
  add_advice(in, t, a);
  build_verdicts(t, a);
  build_answers(in, a);
  return a;
}

}  // namespace trainscope

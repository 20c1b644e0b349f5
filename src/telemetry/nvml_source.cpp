// NVIDIA GPUs through NVML (dlopen). Cheap fields (microseconds per call) are polled every sample;
// the slow ones (total energy, process list, GPM: milliseconds per call) every slow_interval and
// PCIe throughput (tens of ms per call, waiting in the driver) every pcie_interval, only for the
// GPUs a run uses (set_run_devices), because a slow poll holds a core that an all-core CPU run may
// wait for (the figures: bench/RESULTS.md, "Figures the code's choices rest on").
// A call answering NOT_SUPPORTED (or an entry point the library lacks) marks
// that field unsupported for that GPU: counted once as dropped, never polled again. GPU_IS_LOST
// retires the GPU; the others go on.
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "telemetry/nvml_loader.h"
#include "telemetry/source.h"

namespace trainscope::telemetry {
namespace {

constexpr unsigned int kSentinelU32 = 0xFFFFFFFFu;

struct Gpu {
  int index = 0;
  nvmlDevice_t handle = nullptr;
  GpuInfo info;
  bool lost = false;
  int64_t lost_at_ns = 0;
  std::set<std::string> unsupported;  // metrics
  bool gpm = false;
  nvmlGpmSample_t gpm_prev = nullptr, gpm_cur = nullptr;
  bool gpm_have_prev = false;
  bool run_device = true;  // a run uses this GPU (or no run said which): its slow fields are read
  bool slow_now = false;   // just became a run device: read its slow fields at the next poll
  int64_t gpm_not_before_ns = 0;  // the first GPM value after that: a whole slow interval after its baseline
};

class NvmlSource final : public TelemetrySource {
 public:
  NvmlSource(std::string library, int64_t slow_interval_ns, int64_t pcie_interval_ns,
             std::function<std::vector<int>()> process_pids)
      : library_(std::move(library)), slow_(slow_interval_ns), pcie_(pcie_interval_ns), process_pids_(std::move(process_pids)) {}

  ~NvmlSource() override {
    for (auto& g : gpus_) {
      if (api().gpm_sample_free) {
        if (g.gpm_prev) api().gpm_sample_free(g.gpm_prev);
        if (g.gpm_cur) api().gpm_sample_free(g.gpm_cur);
      }
    }
  }

  std::string name() const override { return "nvml"; }

  SourceProbe probe() override {
    if (!lib_.load(library_)) return {false, lib_.error()};
    nvmlReturn_t rc = api().init();
    if (rc != NVML_SUCCESS) return {false, "nvmlInit failed: " + lib_.error_string(rc)};
    lib_.set_initialized();
    char buf[128] = {};
    if (api().system_get_driver_version && api().system_get_driver_version(buf, sizeof buf) == NVML_SUCCESS) driver_ = buf;
    buf[0] = 0;
    if (api().system_get_nvml_version && api().system_get_nvml_version(buf, sizeof buf) == NVML_SUCCESS) nvml_version_ = buf;
    unsigned int count = 0;
    rc = api().device_get_count(&count);
    if (rc != NVML_SUCCESS) return {false, "nvmlDeviceGetCount failed: " + lib_.error_string(rc)};
    if (count == 0) return {false, "NVML reports no GPU"};
    for (unsigned int i = 0; i < count; ++i) {
      Gpu g;
      g.index = static_cast<int>(i);
      g.info.nvml_index = g.index;
      rc = api().device_get_handle_by_index(i, &g.handle);
      if (rc != NVML_SUCCESS) {
        notes_.push_back("gpu" + std::to_string(i) + ": nvmlDeviceGetHandleByIndex failed: " + lib_.error_string(rc));
        continue;
      }
      char s[TS_NVML_DEVICE_UUID_BUFFER_SIZE] = {};
      if (api().device_get_name && api().device_get_name(g.handle, s, sizeof s) == NVML_SUCCESS) g.info.name = s;
      s[0] = 0;
      if (api().device_get_uuid && api().device_get_uuid(g.handle, s, sizeof s) == NVML_SUCCESS) g.info.uuid = s;
      nvmlPciInfo_t pci{};
      if (api().device_get_pci_info && api().device_get_pci_info(g.handle, &pci) == NVML_SUCCESS) {
        pci.busId[sizeof pci.busId - 1] = 0;
        g.info.pci_bus_id = pci.busId;
      }
      unsigned int mw = 0;
      if (api().device_get_enforced_power_limit && api().device_get_enforced_power_limit(g.handle, &mw) == NVML_SUCCESS &&
          mw != kSentinelU32)
        g.info.power_limit_w = mw / 1000.0;
      if (auto total = memory_total(g)) g.info.memory_total_bytes = *total;
      if (api().gpm_query_device_support && api().gpm_sample_alloc && api().gpm_sample_get && api().gpm_metrics_get) {
        nvmlGpmSupport_t sup{};
        sup.version = TS_NVML_GPM_SUPPORT_VERSION;
        if (api().gpm_query_device_support(g.handle, &sup) == NVML_SUCCESS && sup.isSupportedDevice &&
            api().gpm_sample_alloc(&g.gpm_prev) == NVML_SUCCESS && api().gpm_sample_alloc(&g.gpm_cur) == NVML_SUCCESS)
          g.gpm = true;
      }
      gpus_.push_back(std::move(g));
    }
    if (gpus_.empty()) return {false, "no GPU handle could be opened"};
    return {true, ""};
  }

  std::vector<std::string> fields_supported() const override {
    std::vector<std::string> out;
    for (const char* f : kAllFields) {
      bool any = std::any_of(gpus_.begin(), gpus_.end(), [&](const Gpu& g) {
        return !g.lost && !g.unsupported.count(f) && entry_present(f) && (g.gpm || !is_gpm(f));
      });
      if (any) out.push_back(f);
    }
    return out;
  }

  std::vector<GpuInfo> gpus() const override {
    std::vector<GpuInfo> out;
    for (const auto& g : gpus_) out.push_back(g.info);
    return out;
  }

  nlohmann::json details() const override {
    nlohmann::json gpus = nlohmann::json::array();
    for (const auto& g : gpus_) {
      nlohmann::json j = {{"device", "gpu" + std::to_string(g.index)}, {"name", g.info.name}, {"uuid", g.info.uuid},
                          {"pci_bus_id", g.info.pci_bus_id}, {"gpm", g.gpm},
                          {"unsupported", std::vector<std::string>(g.unsupported.begin(), g.unsupported.end())}};
      j["lost"] = g.lost;
      if (g.lost) j["lost_at_ns"] = g.lost_at_ns;
      gpus.push_back(j);
    }
    return {{"library", library_}, {"driver_version", driver_}, {"nvml_version", nvml_version_}, {"gpus", gpus},
            {"entry_points", lib_.resolved()}, {"missing_entry_points", lib_.missing()}, {"notes", notes_}};
  }

  void sample(int64_t t_ns, SampleBatch& out) override {
    const bool slow = slow_.due(t_ns), pcie = pcie_.due(t_ns);
    for (auto& g : gpus_) {
      if (g.lost) continue;
      sample_fast(g, t_ns, out);
      if (!g.run_device || g.lost) continue;
      if (slow || g.slow_now) {
        if (g.slow_now) g.gpm_not_before_ns = t_ns + slow_.period_ns() - slow_.period_ns() / 20;
        sample_slow(g, t_ns, out);
      } else if (energy_now_) {
        sample_energy(g, t_ns, out);
      }
      if ((pcie || g.slow_now) && !g.lost) sample_pcie(g, t_ns, out);
      g.slow_now = false;
    }
    energy_now_ = false;
  }

  // A GPU that becomes a run device gets its slow fields at the next poll (its energy counter
  // at the run's start), and a fresh GPM baseline, so its first SM activity does not average
  // over the time it was not read.
  void set_run_devices(const std::optional<std::set<std::string>>& devices) override {
    for (auto& g : gpus_) {
      const bool use = !devices || devices->count(dev(g));
      if (use && !g.run_device) {
        g.slow_now = true;
        g.gpm_have_prev = false;
      }
      g.run_device = use;
    }
  }

  void read_energy_at_next_poll() override { energy_now_ = true; }

 private:
  static constexpr const char* kAllFields[] = {
      "util_pct", "mem_util_pct", "mem_used_bytes", "mem_reserved_bytes", "mem_total_bytes", "power_w",
      "power_avg_w", "power_instant_w", "energy_j", "temp_c", "sm_clock_mhz", "mem_clock_mhz",
      "clocks_event_reasons_mask", "pcie_tx_bytes_per_s", "pcie_rx_bytes_per_s", "process_mem_bytes",
      "sm_activity_pct", "sm_occupancy_pct", "tensor_activity_pct"};

  const NvmlApi& api() const { return lib_.api(); }
  static bool is_gpm(std::string_view f) { return f == "sm_activity_pct" || f == "sm_occupancy_pct" || f == "tensor_activity_pct"; }

  bool entry_present(std::string_view f) const {
    const NvmlApi& a = api();
    if (f == "util_pct" || f == "mem_util_pct") return a.device_get_utilization_rates;
    if (f == "mem_reserved_bytes") return a.device_get_memory_info_v2;
    if (f == "mem_used_bytes" || f == "mem_total_bytes") return a.device_get_memory_info_v2 || a.device_get_memory_info;
    if (f == "power_w") return a.device_get_power_usage || a.device_get_field_values;
    if (f == "power_avg_w" || f == "power_instant_w") return a.device_get_field_values;
    if (f == "energy_j") return a.device_get_total_energy_consumption;
    if (f == "temp_c") return a.device_get_temperature;
    if (f == "sm_clock_mhz" || f == "mem_clock_mhz") return a.device_get_clock_info;
    if (f == "clocks_event_reasons_mask") return a.device_get_clocks_event_reasons;
    if (f == "pcie_tx_bytes_per_s" || f == "pcie_rx_bytes_per_s") return a.device_get_pcie_throughput;
    if (f == "process_mem_bytes") return a.device_get_compute_running_processes;
    return true;  // GPM: checked at probe
  }

  static std::string dev(const Gpu& g) { return "gpu" + std::to_string(g.index); }

  /// Handles a non-success return; true when the caller should use the value.
  bool check(Gpu& g, nvmlReturn_t rc, const std::string& metric, int64_t t_ns, SampleBatch& out) {
    if (rc == NVML_SUCCESS) return true;
    if (rc == NVML_ERROR_GPU_IS_LOST) {
      g.lost = true;
      g.lost_at_ns = t_ns;
      out.drop(dev(g), metric, drop_reason::kGpuLost);
      notes_.push_back(dev(g) + " lost (NVML_ERROR_GPU_IS_LOST) at t_ns=" + std::to_string(t_ns) + "; sampling goes on for the others");
    } else if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_FUNCTION_NOT_FOUND) {
      g.unsupported.insert(metric);
      out.drop(dev(g), metric, drop_reason::kNotSupported);
    } else {
      out.drop(dev(g), metric, drop_reason::kNvmlError);
    }
    return false;
  }

  bool wanted(const Gpu& g, const char* metric, SampleBatch& out, bool present) {
    if (g.lost || g.unsupported.count(metric)) return false;
    if (!present) {
      const_cast<Gpu&>(g).unsupported.insert(metric);
      out.drop(dev(g), metric, drop_reason::kNotSupported);
      return false;
    }
    return true;
  }

  void add_u32(Gpu& g, const char* metric, unsigned int v, double scale, SampleBatch& out) {
    if (v == kSentinelU32) return out.drop(dev(g), metric, drop_reason::kSentinel);
    out.add(dev(g), metric, v * scale);
  }

  std::optional<uint64_t> memory_total(Gpu& g) {
    if (api().device_get_memory_info_v2) {
      nvmlMemory_v2_t m{};
      m.version = TS_NVML_MEMORY_V2_VERSION;
      if (api().device_get_memory_info_v2(g.handle, &m) == NVML_SUCCESS) return m.total;
    }
    nvmlMemory_t m{};
    if (api().device_get_memory_info && api().device_get_memory_info(g.handle, &m) == NVML_SUCCESS) return m.total;
    return std::nullopt;
  }

  void sample_fast(Gpu& g, int64_t t, SampleBatch& out) {
    const NvmlApi& a = api();
    if (wanted(g, "util_pct", out, a.device_get_utilization_rates)) {
      nvmlUtilization_t u{};
      if (check(g, a.device_get_utilization_rates(g.handle, &u), "util_pct", t, out)) {
        add_u32(g, "util_pct", u.gpu, 1.0, out);
        add_u32(g, "mem_util_pct", u.memory, 1.0, out);
      }
    }
    if (g.lost) return;
    if (!g.unsupported.count("mem_used_bytes")) {
      bool done = false;
      if (a.device_get_memory_info_v2 && !g.unsupported.count("mem_reserved_bytes")) {
        nvmlMemory_v2_t m{};
        m.version = TS_NVML_MEMORY_V2_VERSION;
        nvmlReturn_t rc = a.device_get_memory_info_v2(g.handle, &m);
        if (rc == NVML_SUCCESS) {
          done = true;
          add_mem(g, m.used, m.total, out);
          if (m.reserved == TS_NVML_VALUE_NOT_AVAILABLE) out.drop(dev(g), "mem_reserved_bytes", drop_reason::kSentinel);
          else out.add(dev(g), "mem_reserved_bytes", static_cast<double>(m.reserved));
        } else if (!check(g, rc, "mem_reserved_bytes", t, out) && g.lost) {
          return;
        }
      } else if (!a.device_get_memory_info_v2) {
        wanted(g, "mem_reserved_bytes", out, false);
      }
      if (!done && wanted(g, "mem_used_bytes", out, a.device_get_memory_info)) {
        nvmlMemory_t m{};
        if (check(g, a.device_get_memory_info(g.handle, &m), "mem_used_bytes", t, out)) add_mem(g, m.used, m.total, out);
      }
    }
    if (g.lost) return;
    std::optional<double> instant_w;
    if (wanted(g, "power_avg_w", out, a.device_get_field_values)) {
      nvmlFieldValue_t fv[2] = {};
      fv[0].fieldId = TS_NVML_FI_DEV_POWER_AVERAGE;
      fv[1].fieldId = TS_NVML_FI_DEV_POWER_INSTANT;
      if (check(g, a.device_get_field_values(g.handle, 2, fv), "power_avg_w", t, out)) {
        const char* names[2] = {"power_avg_w", "power_instant_w"};
        for (int i = 0; i < 2; ++i) {
          if (g.unsupported.count(names[i])) continue;
          if (fv[i].nvmlReturn != NVML_SUCCESS) {
            check(g, fv[i].nvmlReturn == NVML_ERROR_GPU_IS_LOST ? NVML_ERROR_UNKNOWN : fv[i].nvmlReturn, names[i], t, out);
            continue;
          }
          auto v = field_value(fv[i]);
          if (!v) {
            out.drop(dev(g), names[i], drop_reason::kSentinel);
            continue;
          }
          size_t before = out.values.size();
          out.add(dev(g), names[i], *v / 1000.0);
          if (i == 1 && out.values.size() > before) instant_w = *v / 1000.0;
        }
      }
    }
    if (g.lost) return;
    if (a.device_get_power_usage) {
      if (!g.unsupported.count("power_w")) {
        unsigned int mw = 0;
        if (check(g, a.device_get_power_usage(g.handle, &mw), "power_w", t, out)) add_u32(g, "power_w", mw, 1e-3, out);
      }
    } else if (instant_w) {
      out.add(dev(g), "power_w", *instant_w);
    }
    if (g.lost) return;
    if (wanted(g, "temp_c", out, a.device_get_temperature)) {
      unsigned int c = 0;
      if (check(g, a.device_get_temperature(g.handle, TS_NVML_TEMPERATURE_GPU, &c), "temp_c", t, out)) add_u32(g, "temp_c", c, 1.0, out);
    }
    for (auto [metric, clock] : {std::pair{"sm_clock_mhz", TS_NVML_CLOCK_SM}, std::pair{"mem_clock_mhz", TS_NVML_CLOCK_MEM}}) {
      if (g.lost || !wanted(g, metric, out, a.device_get_clock_info)) continue;
      unsigned int mhz = 0;
      if (check(g, a.device_get_clock_info(g.handle, clock, &mhz), metric, t, out)) add_u32(g, metric, mhz, 1.0, out);
    }
    if (!g.lost && wanted(g, "clocks_event_reasons_mask", out, a.device_get_clocks_event_reasons)) {
      unsigned long long mask = 0;
      if (check(g, a.device_get_clocks_event_reasons(g.handle, &mask), "clocks_event_reasons_mask", t, out))
        out.add(dev(g), "clocks_event_reasons_mask", static_cast<double>(mask));
    }
  }

  void add_mem(Gpu& g, unsigned long long used, unsigned long long total, SampleBatch& out) {
    if (used == TS_NVML_VALUE_NOT_AVAILABLE || (total != TS_NVML_VALUE_NOT_AVAILABLE && used > total))
      out.drop(dev(g), "mem_used_bytes", used == TS_NVML_VALUE_NOT_AVAILABLE ? drop_reason::kSentinel : drop_reason::kOutOfRange);
    else
      out.add(dev(g), "mem_used_bytes", static_cast<double>(used));
    if (total == TS_NVML_VALUE_NOT_AVAILABLE) out.drop(dev(g), "mem_total_bytes", drop_reason::kSentinel);
    else out.add(dev(g), "mem_total_bytes", static_cast<double>(total));
  }

  static std::optional<double> field_value(const nvmlFieldValue_t& f) {
    switch (f.valueType) {
      case NVML_VALUE_TYPE_DOUBLE: return f.value.dVal;
      case NVML_VALUE_TYPE_UNSIGNED_INT:
        if (f.value.uiVal == kSentinelU32) return std::nullopt;
        return f.value.uiVal;
      case NVML_VALUE_TYPE_UNSIGNED_LONG:
      case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
        if (f.value.ullVal == TS_NVML_VALUE_NOT_AVAILABLE) return std::nullopt;
        return static_cast<double>(f.value.ullVal);
      case NVML_VALUE_TYPE_SIGNED_LONG_LONG: return static_cast<double>(f.value.sllVal);
      case NVML_VALUE_TYPE_SIGNED_INT: return f.value.siVal;
      case NVML_VALUE_TYPE_UNSIGNED_SHORT: return f.value.usVal;
      default: return std::nullopt;
    }
  }

  void sample_energy(Gpu& g, int64_t t, SampleBatch& out) {
    const NvmlApi& a = api();
    if (!wanted(g, "energy_j", out, a.device_get_total_energy_consumption)) return;
    unsigned long long mj = 0;
    if (check(g, a.device_get_total_energy_consumption(g.handle, &mj), "energy_j", t, out)) {
      if (mj == TS_NVML_VALUE_NOT_AVAILABLE || mj == kSentinelU32) out.drop(dev(g), "energy_j", drop_reason::kSentinel);
      else out.add(dev(g), "energy_j", static_cast<double>(mj) * 1e-3);
    }
  }

  void sample_slow(Gpu& g, int64_t t, SampleBatch& out) {
    const NvmlApi& a = api();
    sample_energy(g, t, out);
    if (!g.lost && wanted(g, "process_mem_bytes", out, a.device_get_compute_running_processes)) sample_process(g, t, out);
    if (!g.lost && g.gpm) sample_gpm(g, t, out);
  }

  // Each call samples the link for ~20 ms and returns KB/s over that sample (NVML API reference,
  // nvmlDeviceGetPcieThroughput): a snapshot, not an average over the interval.
  void sample_pcie(Gpu& g, int64_t t, SampleBatch& out) {
    for (auto [metric, counter] : {std::pair{"pcie_tx_bytes_per_s", TS_NVML_PCIE_UTIL_TX_BYTES},
                                   std::pair{"pcie_rx_bytes_per_s", TS_NVML_PCIE_UTIL_RX_BYTES}}) {
      if (g.lost || !wanted(g, metric, out, api().device_get_pcie_throughput)) continue;
      unsigned int kbps = 0;
      if (check(g, api().device_get_pcie_throughput(g.handle, counter, &kbps), metric, t, out))
        add_u32(g, metric, kbps, 1024.0, out);
    }
  }

  void sample_process(Gpu& g, int64_t t, SampleBatch& out) {
    std::vector<nvmlProcessInfo_t> procs(64);
    for (int attempt = 0; attempt < 2; ++attempt) {
      unsigned int n = static_cast<unsigned int>(procs.size());
      nvmlReturn_t rc = api().device_get_compute_running_processes(g.handle, &n, procs.data());
      if (rc == NVML_ERROR_INSUFFICIENT_SIZE && attempt == 0) {
        procs.resize(n + 16);
        continue;
      }
      if (!check(g, rc, "process_mem_bytes", t, out)) return;
      double bytes = 0;
      const std::vector<int> pids = process_pids_ ? process_pids_() : std::vector<int>{static_cast<int>(::getpid())};
      for (unsigned int i = 0; i < n && i < procs.size(); ++i) {
        if (std::find(pids.begin(), pids.end(), static_cast<int>(procs[i].pid)) == pids.end()) continue;
        if (procs[i].usedGpuMemory == TS_NVML_VALUE_NOT_AVAILABLE) return out.drop(dev(g), "process_mem_bytes", drop_reason::kSentinel);
        bytes += static_cast<double>(procs[i].usedGpuMemory);
      }
      out.add(dev(g), "process_mem_bytes", bytes);  // 0: none of the pids has a context on the GPU
      return;
    }
  }

  void sample_gpm(Gpu& g, int64_t t, SampleBatch& out) {
    if (g.gpm_have_prev && t < g.gpm_not_before_ns) return;  // keep the baseline: a value over a whole slow interval
    nvmlReturn_t rc = api().gpm_sample_get(g.handle, g.gpm_cur);
    if (!check(g, rc, "sm_activity_pct", t, out)) return;
    if (g.gpm_have_prev) {
      auto m = std::make_unique<nvmlGpmMetricsGet_t>();
      *m = nvmlGpmMetricsGet_t{};
      m->version = TS_NVML_GPM_METRICS_GET_VERSION;
      m->numMetrics = 3;
      m->sample1 = g.gpm_prev;
      m->sample2 = g.gpm_cur;
      m->metrics[0].metricId = TS_NVML_GPM_METRIC_SM_UTIL;
      m->metrics[1].metricId = TS_NVML_GPM_METRIC_SM_OCCUPANCY;
      m->metrics[2].metricId = TS_NVML_GPM_METRIC_ANY_TENSOR_UTIL;
      if (check(g, api().gpm_metrics_get(m.get()), "sm_activity_pct", t, out)) {
        const char* names[3] = {"sm_activity_pct", "sm_occupancy_pct", "tensor_activity_pct"};
        for (int i = 0; i < 3; ++i) {
          if (m->metrics[i].nvmlReturn != NVML_SUCCESS) out.drop(dev(g), names[i], drop_reason::kNotSupported);
          else out.add(dev(g), names[i], m->metrics[i].value);
        }
      }
    }
    std::swap(g.gpm_prev, g.gpm_cur);
    g.gpm_have_prev = true;
  }

  std::string library_;
  NvmlLibrary lib_;
  std::vector<Gpu> gpus_;
  std::string driver_, nvml_version_;
  std::vector<std::string> notes_;
  SlowFieldClock slow_;  // energy, processes, GPM
  SlowFieldClock pcie_;  // PCIe throughput
  std::function<std::vector<int>()> process_pids_;  // TelemetryOptions::gpu_process_pids
  bool energy_now_ = false;  // read_energy_at_next_poll: the run GPUs' energy counters at the next poll
};

}  // namespace

std::unique_ptr<TelemetrySource> make_nvml_source(std::string library, int64_t slow_interval_ns, int64_t pcie_interval_ns,
                                                  std::function<std::vector<int>()> process_pids) {
  return std::make_unique<NvmlSource>(std::move(library), slow_interval_ns, pcie_interval_ns, std::move(process_pids));
}

}  // namespace trainscope::telemetry

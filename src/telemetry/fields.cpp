// The metric catalogue (names, valid ranges, help text) and the helpers shared by sources.
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "telemetry/source.h"

namespace trainscope {

namespace {
constexpr double kInf = 1e300;
// Ranges are physical plausibility limits, not device specifications: a reading outside is a
// sensor glitch or an undecoded sentinel (e.g. 0xFFFFFFFF mW = 4.29 MW).
const std::vector<TelemetryField> kFields = {
    {"util_pct", 0, 100, "Busy time share (GPU: kernel running; CPU: jiffies neither idle, iowait nor stolen)"},
    {"steal_pct", 0, 100,
     "Share of a virtual machine's CPU time its hypervisor gave to others (/proc/stat steal; 0 on bare metal)"},
    {"mem_util_pct", 0, 100, "GPU device-memory read/write activity share"},
    {"mem_used_bytes", 0, 1e15, "Memory in use"},
    {"mem_reserved_bytes", 0, 1e15, "GPU memory reserved by the driver"},
    {"mem_total_bytes", 0, 1e15, "Total memory"},
    {"mem_available_bytes", 0, 1e15, "Host memory available for new allocations (MemAvailable)"},
    {"power_w", 0, 5000, "Power draw (NVML: power usage; RAPL: derived from the energy counter)"},
    {"power_avg_w", 0, 5000, "GPU power averaged over 1 s by the driver (NVML_FI_DEV_POWER_AVERAGE)"},
    {"power_instant_w", 0, 5000, "Instantaneous GPU power (NVML_FI_DEV_POWER_INSTANT)"},
    {"power_limit_w", 0, 5000, "Enforced power limit"},
    {"energy_j", 0, kInf, "Energy consumed since the driver started (NVML total energy counter)", true},
    {"package_energy_j", 0, kInf, "CPU package energy since sampling began (RAPL), wrap-corrected"},
    {"dram_energy_j", 0, kInf, "DRAM energy since sampling began (RAPL), wrap-corrected"},
    {"package_power_w", 0, 5000, "CPU package power from RAPL energy deltas"},
    {"dram_power_w", 0, 5000, "DRAM power from RAPL energy deltas"},
    {"temp_c", -60, 150, "Temperature"},
    {"sm_clock_mhz", 0, 10000, "SM clock"},
    {"mem_clock_mhz", 0, 50000, "Memory clock"},
    {"freq_mhz", 0, 10000, "CPU core frequency", true},
    {"clocks_event_reasons_mask", 0, 1.8446744073709552e19, "Reasons the GPU clocks are held down (NVML bit set)"},
    {"pcie_tx_bytes_per_s", 0, 1e12, "PCIe transmit throughput", true},
    {"pcie_rx_bytes_per_s", 0, 1e12, "PCIe receive throughput", true},
    {"process_mem_bytes", 0, 1e15, "GPU memory used by this process (measure: by the measured program's process tree)", true},
    {"sm_activity_pct", 0, 100, "Share of SMs busy, GPM NVML_GPM_METRIC_SM_UTIL", true},
    {"sm_occupancy_pct", 0, 100, "Active warps vs theoretical maximum, GPM NVML_GPM_METRIC_SM_OCCUPANCY", true},
    {"tensor_activity_pct", 0, 100, "Tensor-core activity, GPM NVML_GPM_METRIC_ANY_TENSOR_UTIL", true},
    {"cpu_pct", 0, 100000, "This process's CPU use; 100 = one core busy (utime+stime)"},
    {"threads_count", 0, 1e7, "Threads of this process"},
    {"rss_bytes", 0, 1e15, "Resident set size of this process (VmRSS)"},
    {"peak_rss_bytes", 0, 1e15, "Peak resident set size of this process (VmHWM)"},
    {"cgroup_mem_used_bytes", 0, 1e15,
     "Memory charged to this process's cgroup, e.g. its container (v2 memory.current, v1 memory.usage_in_bytes)"},
    {"cgroup_mem_limit_bytes", 0, 1e15,
     "Memory limit of this process's cgroup (smallest up the tree) when below the host's MemTotal "
     "(v2 memory.max, v1 memory.limit_in_bytes)"},
};
}  // namespace

const std::vector<TelemetryField>& telemetry_fields() { return kFields; }

std::optional<double> TelemetrySnapshot::get(const std::string& device, const std::string& metric) const {
  for (const auto& r : readings)
    if (r.device == device && r.metric == metric) return r.value;
  return std::nullopt;
}

namespace telemetry {

const TelemetryField* find_field(std::string_view metric) {
  for (const auto& f : kFields)
    if (metric == f.metric) return &f;
  return nullptr;
}

void SampleBatch::add(std::string device, std::string metric, double value) {
  if (!std::isfinite(value)) return drop(std::move(device), std::move(metric), drop_reason::kNonFinite);
  if (const TelemetryField* f = find_field(metric); f && (value < f->min || value > f->max))
    return drop(std::move(device), std::move(metric), drop_reason::kOutOfRange);
  values.push_back({std::move(device), std::move(metric), value});
}

void SampleBatch::drop(std::string device, std::string metric, std::string reason) {
  drops.push_back({std::move(device), std::move(metric), std::move(reason)});
}

FileRead read_text_file(const std::string& path) {
  FileRead r;
  std::FILE* f = std::fopen(path.c_str(), "re");
  if (!f) {
    r.error = errno;
    return r;
  }
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  int err = std::ferror(f) ? errno : 0;
  std::fclose(f);
  if (err != 0) {
    r.error = err;
    return r;
  }
  r.text = std::move(text);
  return r;
}

std::string errno_text(int error) {
  const char* name = error == EACCES ? "EACCES" : error == ENOENT ? "ENOENT" : error == EPERM ? "EPERM" : nullptr;
  std::string s = name ? name : "errno " + std::to_string(error);
  return s + " (" + std::strerror(error) + ")";
}

}  // namespace telemetry
}  // namespace trainscope

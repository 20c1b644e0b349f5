// NVML loaded with dlopen through a table of entry points (docs/design.md#nvml-through-dlopen).
// Each entry lists the versioned symbol names newest first; the first one the library exports wins.
// An entry that resolves to nothing stays null, which callers treat as "not supported" for the
// fields it serves only.
#pragma once

#include <string>
#include <vector>

#include "telemetry/nvml_api.h"

namespace trainscope::telemetry {

struct NvmlApi {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*system_get_driver_version)(char*, unsigned int) = nullptr;
  nvmlReturn_t (*system_get_nvml_version)(char*, unsigned int) = nullptr;
  nvmlReturn_t (*device_get_count)(unsigned int*) = nullptr;
  nvmlReturn_t (*device_get_handle_by_index)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*device_get_name)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*device_get_uuid)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*device_get_pci_info)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*device_get_utilization_rates)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*device_get_memory_info_v2)(nvmlDevice_t, nvmlMemory_v2_t*) = nullptr;
  nvmlReturn_t (*device_get_memory_info)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*device_get_power_usage)(nvmlDevice_t, unsigned int*) = nullptr;  // mW
  nvmlReturn_t (*device_get_enforced_power_limit)(nvmlDevice_t, unsigned int*) = nullptr;  // mW
  nvmlReturn_t (*device_get_field_values)(nvmlDevice_t, int, nvmlFieldValue_t*) = nullptr;
  nvmlReturn_t (*device_get_total_energy_consumption)(nvmlDevice_t, unsigned long long*) = nullptr;  // mJ
  nvmlReturn_t (*device_get_temperature)(nvmlDevice_t, int, unsigned int*) = nullptr;  // C
  nvmlReturn_t (*device_get_clock_info)(nvmlDevice_t, int, unsigned int*) = nullptr;  // MHz
  nvmlReturn_t (*device_get_clocks_event_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*device_get_pcie_throughput)(nvmlDevice_t, int, unsigned int*) = nullptr;  // KB/s
  nvmlReturn_t (*device_get_compute_running_processes)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*) = nullptr;
  nvmlReturn_t (*gpm_query_device_support)(nvmlDevice_t, nvmlGpmSupport_t*) = nullptr;
  nvmlReturn_t (*gpm_sample_alloc)(nvmlGpmSample_t*) = nullptr;
  nvmlReturn_t (*gpm_sample_free)(nvmlGpmSample_t) = nullptr;
  nvmlReturn_t (*gpm_sample_get)(nvmlDevice_t, nvmlGpmSample_t) = nullptr;
  nvmlReturn_t (*gpm_metrics_get)(nvmlGpmMetricsGet_t*) = nullptr;
};

class NvmlLibrary {
 public:
  NvmlLibrary() = default;
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;
  /// dlopen + resolve; false with error() set when the library cannot be opened or lacks the
  /// entry points nothing works without (init, count, handle).
  bool load(const std::string& library);
  const NvmlApi& api() const { return api_; }
  const std::string& error() const { return error_; }
  /// "entry -> symbol" for every resolved entry, and the entries that resolved to nothing.
  const std::vector<std::string>& resolved() const { return resolved_; }
  const std::vector<std::string>& missing() const { return missing_; }
  std::string error_string(nvmlReturn_t rc) const;
  /// Call after a successful init so the destructor shuts NVML down.
  void set_initialized() { initialized_ = true; }

 private:
  void* handle_ = nullptr;
  bool initialized_ = false;
  NvmlApi api_;
  std::string error_;
  std::vector<std::string> resolved_, missing_;
};

}  // namespace trainscope::telemetry

#include "telemetry/nvml_loader.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <initializer_list>
#include <string>
#include <string_view>

namespace trainscope::telemetry {

namespace {

// Why a library file cannot be loaded safely: a 64-bit ELF file shorter than one of its loaded
// segments (a truncated copy) would be mapped past its end, and the loader would die of SIGBUS
// touching it. "" when the file looks whole, is no such ELF (dlopen says why), or is a bare name
// the loader searches for.
std::string truncated_library(const std::string& path) {
  if (path.find('/') == std::string::npos) return "";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  Elf64_Ehdr eh{};
  if (::fstat(fd, &st) != 0 || ::pread(fd, &eh, sizeof eh, 0) != static_cast<ssize_t>(sizeof eh)) return "";
  if (std::string_view(reinterpret_cast<const char*>(eh.e_ident), 4) != ELFMAG || eh.e_ident[EI_CLASS] != ELFCLASS64)
    return "";
  const auto size = static_cast<uint64_t>(st.st_size);
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph{};
    const uint64_t at = eh.e_phoff + uint64_t{i} * eh.e_phentsize;
    if (at + sizeof ph > size || ::pread(fd, &ph, sizeof ph, static_cast<off_t>(at)) != static_cast<ssize_t>(sizeof ph))
      return "its program headers end past the end of the file (" + std::to_string(size) + " bytes): a truncated copy";
    if (ph.p_type == PT_LOAD && ph.p_offset + ph.p_filesz > size)
      return "it is " + std::to_string(size) + " bytes long, but a segment to load ends at byte " +
             std::to_string(ph.p_offset + ph.p_filesz) + ": a truncated copy";
  }
  return "";
}

// The table: member, then symbol names newest first (versions as exported by driver 5xx).
template <class Fn>
void resolve(void* h, Fn& slot, const char* entry, std::initializer_list<const char*> names,
             std::vector<std::string>& resolved, std::vector<std::string>& missing) {
  for (const char* n : names) {
    if (void* p = ::dlsym(h, n)) {
      slot = reinterpret_cast<Fn>(p);
      resolved.push_back(std::string(entry) + " -> " + n);
      return;
    }
  }
  missing.push_back(entry);
}
}  // namespace

NvmlLibrary::~NvmlLibrary() {
  if (handle_) {
    if (api_.shutdown && initialized_) api_.shutdown();
    ::dlclose(handle_);
  }
}

bool NvmlLibrary::load(const std::string& library) {
  if (auto why = truncated_library(library); !why.empty()) {
    error_ = "not loading " + library + ": " + why + "; point --nvml-library at the driver's own libnvidia-ml.so.1";
    return false;
  }
  handle_ = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* e = ::dlerror();
    error_ = "dlopen(" + library + ") failed: " + (e ? e : "unknown error") + " (no NVIDIA driver installed?)";
    return false;
  }
  auto& r = resolved_;
  auto& m = missing_;
  void* h = handle_;
  resolve(h, api_.init, "init", {"nvmlInit_v2", "nvmlInit"}, r, m);
  resolve(h, api_.shutdown, "shutdown", {"nvmlShutdown"}, r, m);
  resolve(h, api_.error_string, "error_string", {"nvmlErrorString"}, r, m);
  resolve(h, api_.system_get_driver_version, "driver_version", {"nvmlSystemGetDriverVersion"}, r, m);
  resolve(h, api_.system_get_nvml_version, "nvml_version", {"nvmlSystemGetNVMLVersion"}, r, m);
  resolve(h, api_.device_get_count, "device_count", {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}, r, m);
  resolve(h, api_.device_get_handle_by_index, "handle_by_index",
          {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}, r, m);
  resolve(h, api_.device_get_name, "name", {"nvmlDeviceGetName"}, r, m);
  resolve(h, api_.device_get_uuid, "uuid", {"nvmlDeviceGetUUID"}, r, m);
  // _v1 used a different nvmlPciInfo_t layout, so it is not in the list.
  resolve(h, api_.device_get_pci_info, "pci_info", {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"}, r, m);
  resolve(h, api_.device_get_utilization_rates, "utilization", {"nvmlDeviceGetUtilizationRates"}, r, m);
  resolve(h, api_.device_get_memory_info_v2, "memory_info_v2", {"nvmlDeviceGetMemoryInfo_v2"}, r, m);
  resolve(h, api_.device_get_memory_info, "memory_info", {"nvmlDeviceGetMemoryInfo"}, r, m);
  resolve(h, api_.device_get_power_usage, "power_usage", {"nvmlDeviceGetPowerUsage"}, r, m);
  resolve(h, api_.device_get_enforced_power_limit, "power_limit", {"nvmlDeviceGetEnforcedPowerLimit"}, r, m);
  resolve(h, api_.device_get_field_values, "field_values", {"nvmlDeviceGetFieldValues"}, r, m);
  resolve(h, api_.device_get_total_energy_consumption, "total_energy", {"nvmlDeviceGetTotalEnergyConsumption"}, r, m);
  resolve(h, api_.device_get_temperature, "temperature", {"nvmlDeviceGetTemperature"}, r, m);
  resolve(h, api_.device_get_clock_info, "clock_info", {"nvmlDeviceGetClockInfo"}, r, m);
  resolve(h, api_.device_get_clocks_event_reasons, "clocks_event_reasons",
          {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"}, r, m);
  resolve(h, api_.device_get_pcie_throughput, "pcie_throughput", {"nvmlDeviceGetPcieThroughput"}, r, m);
  resolve(h, api_.device_get_compute_running_processes, "compute_processes",
          {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"}, r, m);
  resolve(h, api_.gpm_query_device_support, "gpm_query_support", {"nvmlGpmQueryDeviceSupport"}, r, m);
  resolve(h, api_.gpm_sample_alloc, "gpm_sample_alloc", {"nvmlGpmSampleAlloc"}, r, m);
  resolve(h, api_.gpm_sample_free, "gpm_sample_free", {"nvmlGpmSampleFree"}, r, m);
  resolve(h, api_.gpm_sample_get, "gpm_sample_get", {"nvmlGpmSampleGet"}, r, m);
  resolve(h, api_.gpm_metrics_get, "gpm_metrics_get", {"nvmlGpmMetricsGet"}, r, m);
  if (!api_.init || !api_.device_get_count || !api_.device_get_handle_by_index) {
    error_ = library + " lacks nvmlInit/nvmlDeviceGetCount/nvmlDeviceGetHandleByIndex: not an NVML library";
    api_.shutdown = nullptr;
    return false;
  }
  return true;
}

std::string NvmlLibrary::error_string(nvmlReturn_t rc) const {
  const char* s = api_.error_string ? api_.error_string(rc) : nullptr;
  return std::string(s ? s : "NVML error") + " (" + std::to_string(rc) + ")";
}

}  // namespace trainscope::telemetry

// A fake NVML (libfake_nvml.so) for tests: exports the NVML entry points trainscope uses and
// answers from a JSON file named by TS_FAKE_NVML_CONFIG, so the GPU path runs without a GPU.
//
// {"driver_version": "580.0", "nvml_version": "13.580.0", "init_error": 0,
//  "devices": [{"name": "...", "uuid": "GPU-...", "pci_bus_id": "00000000:01:00.0",
//               "power_limit_mw": 700000, "gpm": true,
//               "lost_after_calls": 0,            // >0: GPU_IS_LOST after that many sampling calls
//               "readings": {"power_mw": [100000, 4294967295, ...], ...}}]}
// Each call of a reading returns its next value; the last one then repeats. A reading absent
// from "readings" answers NVML_ERROR_NOT_SUPPORTED. Reading keys: util_gpu, util_mem,
// mem_total, mem_used, mem_reserved, power_mw, power_avg_mw, power_instant_mw, energy_mj,
// temp_c, sm_clock_mhz, mem_clock_mhz, clocks_event_reasons, pcie_tx_kbps, pcie_rx_kbps,
// process_mem_bytes (reported for the calling pid; with "process_children": N in the device,
// each child process of the caller, read from /proc, is listed too with N bytes), gpm_sm_util,
// gpm_sm_occupancy, gpm_tensor.
// Built twice: full, and with FAKE_NVML_OLD (no _v2 memory, field values, GPM, clocks-event
// reasons or processes _v3) to test the versioned-symbol fallbacks and missing entry points.
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "telemetry/nvml_api.h"

namespace {

struct Device {
  nlohmann::json cfg;
  std::map<std::string, size_t> next;
  long calls = 0;
};

std::mutex g_mu;
nlohmann::json g_cfg;
std::vector<Device> g_devices;
std::map<std::string, long> g_counts;  // calls per reading key, for tests
bool g_init = false;

Device* dev(nvmlDevice_t h) {
  auto i = reinterpret_cast<uintptr_t>(h);
  if (i == 0 || i > g_devices.size()) return nullptr;
  return &g_devices[i - 1];
}

// The pids whose /proc/<pid>/stat names `parent` as parent.
[[maybe_unused]] std::vector<unsigned int> children_of(unsigned int parent) {
  std::vector<unsigned int> out;
  DIR* dir = ::opendir("/proc");
  if (!dir) return out;
  while (dirent* e = ::readdir(dir)) {
    const unsigned int pid = static_cast<unsigned int>(std::strtoul(e->d_name, nullptr, 10));
    if (pid == 0) continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    unsigned int ppid = 0;
    char state = 0;
    if (close != std::string::npos && std::sscanf(text.c_str() + close + 1, " %c %u", &state, &ppid) == 2 && ppid == parent)
      out.push_back(pid);
  }
  ::closedir(dir);
  return out;
}

// Counts a sampling call; answers GPU_IS_LOST once the device's budget is spent.
nvmlReturn_t enter(Device* d) {
  if (!g_init) return NVML_ERROR_UNINITIALIZED;
  if (!d) return NVML_ERROR_INVALID_ARGUMENT;
  long lost_after = d->cfg.value("lost_after_calls", 0L);
  ++d->calls;
  if (lost_after > 0 && d->calls > lost_after) return NVML_ERROR_GPU_IS_LOST;
  return NVML_SUCCESS;
}

// Next value of a reading, or NOT_SUPPORTED.
template <class T>
nvmlReturn_t next_value(Device* d, const char* key, T* out) {
  ++g_counts[key];
  const auto& r = d->cfg["readings"];
  if (!r.contains(key)) return NVML_ERROR_NOT_SUPPORTED;
  const auto& seq = r[key];
  if (!seq.is_array()) {
    *out = seq.get<T>();
    return NVML_SUCCESS;
  }
  if (seq.empty()) return NVML_ERROR_NOT_SUPPORTED;
  size_t& i = d->next[key];
  *out = seq[std::min(i, seq.size() - 1)].get<T>();
  ++i;
  return NVML_SUCCESS;
}

#define DEVICE_CALL(h)                     \
  std::lock_guard lock(g_mu);              \
  Device* d = dev(h);                      \
  if (nvmlReturn_t rc = enter(d); rc != 0) \
  return rc

void copy_str(const std::string& s, char* buf, unsigned int len) {
  std::strncpy(buf, s.c_str(), len);
  if (len) buf[len - 1] = 0;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) long fake_nvml_call_count(const char* key) {
  std::lock_guard lock(g_mu);
  return g_counts[key];
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlInit_v2() {
  std::lock_guard lock(g_mu);
  const char* path = std::getenv("TS_FAKE_NVML_CONFIG");
  if (!path) return NVML_ERROR_DRIVER_NOT_LOADED;
  std::ifstream in(path);
  if (!in) return NVML_ERROR_DRIVER_NOT_LOADED;
  g_cfg = nlohmann::json::parse(in);
  if (int e = g_cfg.value("init_error", 0); e != 0) return e;
  g_devices.clear();
  g_counts.clear();
  for (const auto& d : g_cfg["devices"]) g_devices.push_back({d, {}, 0});
  g_init = true;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlShutdown() {
  std::lock_guard lock(g_mu);
  g_init = false;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) const char* nvmlErrorString(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    default: return "Unknown Error";
  }
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlSystemGetDriverVersion(char* buf, unsigned int len) {
  copy_str(g_cfg.value("driver_version", "0.0"), buf, len);
  return NVML_SUCCESS;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlSystemGetNVMLVersion(char* buf, unsigned int len) {
  copy_str(g_cfg.value("nvml_version", "0.0"), buf, len);
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* n) {
  std::lock_guard lock(g_mu);
  if (!g_init) return NVML_ERROR_UNINITIALIZED;
  *n = static_cast<unsigned int>(g_devices.size());
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t* h) {
  std::lock_guard lock(g_mu);
  if (!g_init) return NVML_ERROR_UNINITIALIZED;
  if (i >= g_devices.size()) return NVML_ERROR_INVALID_ARGUMENT;
  *h = reinterpret_cast<nvmlDevice_t>(static_cast<uintptr_t>(i + 1));
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char* buf, unsigned int len) {
  std::lock_guard lock(g_mu);
  Device* d = dev(h);
  if (!d) return NVML_ERROR_INVALID_ARGUMENT;
  copy_str(d->cfg.value("name", "Fake GPU"), buf, len);
  return NVML_SUCCESS;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char* buf, unsigned int len) {
  std::lock_guard lock(g_mu);
  Device* d = dev(h);
  if (!d) return NVML_ERROR_INVALID_ARGUMENT;
  copy_str(d->cfg.value("uuid", "GPU-fake"), buf, len);
  return NVML_SUCCESS;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t h, nvmlPciInfo_t* p) {
  std::lock_guard lock(g_mu);
  Device* d = dev(h);
  if (!d) return NVML_ERROR_INVALID_ARGUMENT;
  std::memset(p, 0, sizeof *p);
  copy_str(d->cfg.value("pci_bus_id", "00000000:00:00.0"), p->busId, sizeof p->busId);
  return NVML_SUCCESS;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t h, unsigned int* mw) {
  std::lock_guard lock(g_mu);
  Device* d = dev(h);
  if (!d || !d->cfg.contains("power_limit_mw")) return NVML_ERROR_NOT_SUPPORTED;
  *mw = d->cfg["power_limit_mw"].get<unsigned int>();
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t h, nvmlUtilization_t* u) {
  DEVICE_CALL(h);
  if (auto rc = next_value(d, "util_gpu", &u->gpu); rc) return rc;
  return next_value(d, "util_mem", &u->memory);
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t* m) {
  DEVICE_CALL(h);
  if (auto rc = next_value(d, "mem_total", &m->total); rc) return rc;
  if (auto rc = next_value(d, "mem_used", &m->used); rc) return rc;
  m->free = m->total >= m->used ? m->total - m->used : 0;
  return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t h, nvmlMemory_v2_t* m) {
  DEVICE_CALL(h);
  if (m->version != TS_NVML_MEMORY_V2_VERSION) return NVML_ERROR_INVALID_ARGUMENT;  // ARGUMENT_VERSION_MISMATCH in real NVML
  if (auto rc = next_value(d, "mem_total", &m->total); rc) return rc;
  if (auto rc = next_value(d, "mem_used", &m->used); rc) return rc;
  if (auto rc = next_value(d, "mem_reserved", &m->reserved); rc) return rc;
  m->free = m->total >= m->used ? m->total - m->used : 0;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t h, int n, nvmlFieldValue_t* v) {
  DEVICE_CALL(h);
  for (int i = 0; i < n; ++i) {
    const char* key = v[i].fieldId == TS_NVML_FI_DEV_POWER_AVERAGE   ? "power_avg_mw"
                      : v[i].fieldId == TS_NVML_FI_DEV_POWER_INSTANT ? "power_instant_mw"
                                                                     : "";
    v[i].valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
    v[i].nvmlReturn = *key ? next_value(d, key, &v[i].value.uiVal) : NVML_ERROR_NOT_SUPPORTED;
  }
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t h, unsigned long long* r) {
  DEVICE_CALL(h);
  return next_value(d, "clocks_event_reasons", r);
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t h, unsigned int* n,
                                                                                           nvmlProcessInfo_t* p) {
  DEVICE_CALL(h);
  unsigned long long bytes = 0;
  if (auto rc = next_value(d, "process_mem_bytes", &bytes); rc) return rc;
  std::vector<nvmlProcessInfo_t> all{{static_cast<unsigned int>(::getpid()), bytes, 0, 0},
                                     {1u, 12345ull, 0, 0}};  // another process: must not be counted
  if (const unsigned long long child = d->cfg.value("process_children", 0ull); child > 0)
    for (unsigned int pid : children_of(static_cast<unsigned int>(::getpid()))) all.push_back({pid, child, 0, 0});
  if (*n < all.size()) {
    *n = static_cast<unsigned int>(all.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  *n = static_cast<unsigned int>(all.size());
  std::copy(all.begin(), all.end(), p);
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t h, nvmlGpmSupport_t* s) {
  std::lock_guard lock(g_mu);
  Device* d = dev(h);
  if (!d || s->version != TS_NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_INVALID_ARGUMENT;
  s->isSupportedDevice = d->cfg.value("gpm", false) ? 1 : 0;
  return NVML_SUCCESS;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* s) {
  *s = reinterpret_cast<nvmlGpmSample_t>(new nvmlDevice_t(nullptr));
  return NVML_SUCCESS;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s) {
  delete reinterpret_cast<nvmlDevice_t*>(s);
  return NVML_SUCCESS;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t h, nvmlGpmSample_t s) {
  DEVICE_CALL(h);
  *reinterpret_cast<nvmlDevice_t*>(s) = h;
  return NVML_SUCCESS;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* m) {
  std::lock_guard lock(g_mu);
  if (m->version != TS_NVML_GPM_METRICS_GET_VERSION || !m->sample1 || !m->sample2) return NVML_ERROR_INVALID_ARGUMENT;
  Device* d = dev(*reinterpret_cast<nvmlDevice_t*>(m->sample2));
  if (!d) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned int i = 0; i < m->numMetrics; ++i) {
    const char* key = m->metrics[i].metricId == TS_NVML_GPM_METRIC_SM_UTIL         ? "gpm_sm_util"
                      : m->metrics[i].metricId == TS_NVML_GPM_METRIC_SM_OCCUPANCY  ? "gpm_sm_occupancy"
                      : m->metrics[i].metricId == TS_NVML_GPM_METRIC_ANY_TENSOR_UTIL ? "gpm_tensor"
                                                                                     : "";
    m->metrics[i].nvmlReturn = *key ? next_value(d, key, &m->metrics[i].value) : NVML_ERROR_NOT_SUPPORTED;
  }
  return NVML_SUCCESS;
}
#else
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t h, unsigned long long* r) {
  DEVICE_CALL(h);
  return next_value(d, "clocks_event_reasons", r);
}
#endif

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned int* mw) {
  DEVICE_CALL(h);
  return next_value(d, "power_mw", mw);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t h, unsigned long long* mj) {
  DEVICE_CALL(h);
  return next_value(d, "energy_mj", mj);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t h, int sensor, unsigned int* c) {
  DEVICE_CALL(h);
  if (sensor != TS_NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  return next_value(d, "temp_c", c);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, int type, unsigned int* mhz) {
  DEVICE_CALL(h);
  if (type == TS_NVML_CLOCK_SM) return next_value(d, "sm_clock_mhz", mhz);
  if (type == TS_NVML_CLOCK_MEM) return next_value(d, "mem_clock_mhz", mhz);
  return NVML_ERROR_NOT_SUPPORTED;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t h, int counter, unsigned int* kbps) {
  DEVICE_CALL(h);
  return next_value(d, counter == TS_NVML_PCIE_UTIL_TX_BYTES ? "pcie_tx_kbps" : "pcie_rx_kbps", kbps);
}

}  // extern "C"

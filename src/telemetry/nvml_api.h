// The part of the NVML C API that trainscope uses, declared here because NVML is loaded with dlopen
// and nvml.h is never included (docs/design.md#nvml-through-dlopen). Types, layouts and values are
// those documented in NVIDIA's NVML API reference (docs.nvidia.com/deploy/nvml-api, nvml.h of CUDA
// 12.x / driver 5xx); each group names its section. Only this file and the fake NVML in
// tests/fake_nvml use these declarations.
#pragma once

#include <cstdint>

extern "C" {

// "Error reporting": nvmlReturn_t values.
typedef int nvmlReturn_t;
enum : int {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_UNKNOWN = 999,
};

typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlGpmSample_st* nvmlGpmSample_t;

// "Device structs".
typedef struct {
  unsigned int gpu;     // percent of time a kernel was running over the past sample period
  unsigned int memory;  // percent of time device memory was read or written
} nvmlUtilization_t;

typedef struct {
  unsigned long long total, free, used;  // bytes
} nvmlMemory_t;

typedef struct {
  unsigned int version;  // nvmlMemory_v2
  unsigned long long total, reserved, free, used;  // bytes
} nvmlMemory_v2_t;
// NVML_STRUCT_VERSION(Memory, 2) = sizeof(nvmlMemory_v2_t) | (2 << 24)
#define TS_NVML_MEMORY_V2_VERSION ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24)))

#define TS_NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define TS_NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
typedef struct {
  char busIdLegacy[TS_NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[TS_NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];  // "domain:bus:device.function"
} nvmlPciInfo_t;

// nvmlProcessInfo_v2_t, filled by nvmlDeviceGetComputeRunningProcesses_v2/_v3.
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes, or NVML_VALUE_NOT_AVAILABLE
  unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

// "Field value queries": nvmlFieldValue_t and value types.
typedef union {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
} nvmlValue_t;
enum : int {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
  NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
};
typedef struct {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;    // us since epoch
  long long latencyUsec;
  int valueType;          // nvmlValueType_t
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
} nvmlFieldValue_t;
// Field ids (nvml.h "Field Identifiers"), values in milliwatts.
#define TS_NVML_FI_DEV_POWER_AVERAGE 185  // averaged over 1 s, Ampere (except GA100) and newer
#define TS_NVML_FI_DEV_POWER_INSTANT 186  // current power, all architectures

// Enums of the device queries.
#define TS_NVML_TEMPERATURE_GPU 0      // nvmlTemperatureSensors_t
#define TS_NVML_CLOCK_SM 1             // nvmlClockType_t
#define TS_NVML_CLOCK_MEM 2
#define TS_NVML_PCIE_UTIL_TX_BYTES 0   // nvmlPcieUtilCounter_t; results in KB/s
#define TS_NVML_PCIE_UTIL_RX_BYTES 1
#define TS_NVML_VALUE_NOT_AVAILABLE (~0ULL)  // "Constants": NVML_VALUE_NOT_AVAILABLE
#define TS_NVML_DEVICE_NAME_BUFFER_SIZE 96   // NVML_DEVICE_NAME_V2_BUFFER_SIZE
#define TS_NVML_DEVICE_UUID_BUFFER_SIZE 96   // NVML_DEVICE_UUID_V2_BUFFER_SIZE
#define TS_NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define TS_NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE 80

// "GPM" (GPU Performance Monitoring, Hopper and newer).
#define TS_NVML_GPM_METRIC_SM_UTIL 2          // percent of SMs busy
#define TS_NVML_GPM_METRIC_SM_OCCUPANCY 3     // active warps vs theoretical maximum, percent
#define TS_NVML_GPM_METRIC_ANY_TENSOR_UTIL 5  // percent of time any tensor pipe was active
#define TS_NVML_GPM_METRIC_MAX 333            // array size in nvml.h of CUDA 12.8+ (older: 98)
#define TS_NVML_GPM_METRICS_GET_VERSION 1
#define TS_NVML_GPM_SUPPORT_VERSION 1
typedef struct {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
} nvmlGpmMetric_t;
typedef struct {
  unsigned int version;
  unsigned int numMetrics;
  nvmlGpmSample_t sample1, sample2;
  nvmlGpmMetric_t metrics[TS_NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;
typedef struct {
  unsigned int version;
  unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

}  // extern "C"

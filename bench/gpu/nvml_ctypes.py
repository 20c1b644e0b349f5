"""NVML through ctypes, the calls trainscope's sampler makes (src/telemetry/nvml_source.cpp), for
the GPU-host scripts nvml_stall.py and nvml_call_cost.py; needs only libnvidia-ml.so.1. NVML index
0 is taken as CUDA device 0, true on a one-GPU host. Each call returns NVML's return code (0 =
NVML_SUCCESS); gpm_sample returns None when nvmlGpmSampleAlloc failed (no GPM on this GPU)."""
import ctypes


class NVML:
    def __init__(self):
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        assert self.lib.nvmlInit_v2() == 0, "nvmlInit_v2 failed"
        self.h = ctypes.c_void_p()
        assert self.lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(self.h)) == 0
        self.gpm = ctypes.c_void_p()
        if self.lib.nvmlGpmSampleAlloc(ctypes.byref(self.gpm)) != 0:
            self.gpm = None

    def fast(self):  # return codes unchecked (the stall measurement only needs the calls' timing)
        u = (ctypes.c_uint * 2)()
        v = ctypes.c_uint()
        mem = (ctypes.c_ulonglong * 3)()
        self.lib.nvmlDeviceGetUtilizationRates(self.h, u)
        self.lib.nvmlDeviceGetPowerUsage(self.h, ctypes.byref(v))
        self.lib.nvmlDeviceGetTemperature(self.h, 0, ctypes.byref(v))
        self.lib.nvmlDeviceGetClockInfo(self.h, 1, ctypes.byref(v))
        self.lib.nvmlDeviceGetMemoryInfo(self.h, mem)

    def power(self):
        v = ctypes.c_uint()
        return self.lib.nvmlDeviceGetPowerUsage(self.h, ctypes.byref(v))

    def energy(self):
        e = ctypes.c_ulonglong()
        return self.lib.nvmlDeviceGetTotalEnergyConsumption(self.h, ctypes.byref(e))

    def pcie(self, counter):
        v = ctypes.c_uint()
        return self.lib.nvmlDeviceGetPcieThroughput(self.h, counter, ctypes.byref(v))

    def gpm_sample(self):
        return None if self.gpm is None else self.lib.nvmlGpmSampleGet(self.h, self.gpm)

    def processes(self):
        n = ctypes.c_uint(64)
        buf = (ctypes.c_ulonglong * (64 * 6))()
        return self.lib.nvmlDeviceGetComputeRunningProcesses_v3(self.h, ctypes.byref(n), buf)

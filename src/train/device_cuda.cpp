// CUDA-only parts of train/device.h. Compiled only with TRAINSCOPE_WITH_CUDA.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "train/compat.h"
#include "train/device.h"

namespace trainscope {

std::string device_display_name(const std::string& device, const std::string& cpu_model) {
  if (device == "cpu") return cpu_model;
  torch::Device d(device);
  auto* prop = at::cuda::getDeviceProperties(d.index());
  return prop ? std::string(prop->name) : device;
}

void add_torch_provenance(Provenance& p) {
  p.libtorch_version = compat::torch_version();
  int rt = 0;
  if (cudaRuntimeGetVersion(&rt) == cudaSuccess) p.cuda_runtime = fmt::format("{}.{}", rt / 1000, (rt % 1000) / 10);
  int drv = 0;
  if (cudaDriverGetVersion(&drv) == cudaSuccess && p.gpu_driver.empty())
    p.gpu_driver = fmt::format("CUDA driver API {}.{}", drv / 1000, (drv % 1000) / 10);
  if (!torch::cuda::is_available()) return;
  for (size_t i = 0; i < static_cast<size_t>(torch::cuda::device_count()); ++i) {
    auto* prop = at::cuda::getDeviceProperties(static_cast<int>(i));
    GpuDescription g;
    g.name = prop->name;
    g.memory_total_bytes = static_cast<int64_t>(prop->totalGlobalMem);
    g.compute_capability = fmt::format("{}.{}", prop->major, prop->minor);
    g.pci_bus_id = fmt::format("{:08X}:{:02X}:{:02X}.0", prop->pciDomainID, prop->pciBusID, prop->pciDeviceID);
    p.gpus.push_back(g);
  }
}

void device_synchronize(const torch::Device& d) {
  if (!d.is_cuda()) return;
  c10::cuda::CUDAGuard g(d);
  at::cuda::getCurrentCUDAStream(d.index()).synchronize();
}

void reset_device_memory_stats(const torch::Device& d) {
  if (!d.is_cuda()) return;
  c10::cuda::CUDACachingAllocator::resetPeakStats(d.index());
}

DeviceMemoryStats device_memory_stats(const torch::Device& d) {
  DeviceMemoryStats s;
  if (!d.is_cuda()) return s;
  auto st = c10::cuda::CUDACachingAllocator::getDeviceStats(d.index());
  constexpr size_t kAggregate = 0;  // StatType::AGGREGATE
  s.peak_allocated_bytes = st.allocated_bytes[kAggregate].peak;
  s.peak_reserved_bytes = st.reserved_bytes[kAggregate].peak;
  s.total_bytes = static_cast<int64_t>(at::cuda::getDeviceProperties(d.index())->totalGlobalMem);
  return s;
}

void release_device_cache(const torch::Device& d) {
  if (d.is_cuda()) c10::cuda::CUDACachingAllocator::emptyCache();
}

namespace {

class CudaPhaseClock final : public PhaseClock {
 public:
  CudaPhaseClock(const torch::Device& d, int64_t cap) : device_(d) {
    events_.reserve(static_cast<size_t>(cap * kMarks));
    for (int64_t i = 0; i < cap * kMarks; ++i) events_.emplace_back(cudaEventDefault);
  }
  void mark(int64_t slot, int k) override {
    events_[static_cast<size_t>(slot * kMarks + k)].record(at::cuda::getCurrentCUDAStream(device_.index()));
  }
  double elapsed_ms(int64_t slot, int k) override {
    auto& a = events_[static_cast<size_t>(slot * kMarks + k)];
    auto& b = events_[static_cast<size_t>(slot * kMarks + k + 1)];
    return static_cast<double>(a.elapsed_time(b));
  }
  void synchronize() override { device_synchronize(device_); }
  void wait(int64_t slot, int k) override { events_[static_cast<size_t>(slot * kMarks + k)].synchronize(); }
  std::string method() const override { return "cuda_events"; }

 private:
  torch::Device device_;
  std::vector<at::cuda::CUDAEvent> events_;
};

}  // namespace

std::unique_ptr<PhaseClock> make_cuda_phase_clock(const torch::Device& device, int64_t capacity) {
  return std::make_unique<CudaPhaseClock>(device, capacity);
}

}  // namespace trainscope

#include "train/device.h"

#include <algorithm>
#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "common/text.h"
#include "train/compat.h"
#include "trainscope/cpu_budget.h"
#include "trainscope/error.h"
#include "trainscope/provenance.h"

namespace trainscope {

std::vector<std::string> visible_devices() {
  std::vector<std::string> d = {"cpu"};
  if (torch::cuda::is_available())
    for (size_t i = 0; i < static_cast<size_t>(torch::cuda::device_count()); ++i) d.push_back(fmt::format("cuda:{}", i));
  return d;
}

std::vector<std::string> resolve_devices(const std::vector<std::string>& requested, std::string* notice) {
  auto vis = visible_devices();
  auto listing = [&] {
    std::string s;
    for (auto& v : vis) s += (s.empty() ? "" : ", ") + v;
    return s;
  };
  if (requested.empty()) {
    if (vis.size() == 1 && notice)
      *notice = "no CUDA device is visible (LibTorch " + compat::torch_version() +
                (torch::cuda::is_available() ? "" : ", CUDA not available in this build or on this machine") +
                "); running on the CPU only";
    return vis;
  }
  std::vector<std::string> out;
  auto add = [&](const std::string& d) {
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  };
  auto no_cuda = [&](const std::string& r) {  // a GPU asked for where none is visible: one message
    throw_error(ErrorKind::kDevice, fmt::format("device '{}' was asked for but no CUDA device is visible; devices "
                                                "found: {}. Use --devices cpu, or run on a machine with an "
                                                "NVIDIA GPU and a CUDA build of LibTorch",
                                                r, listing()));
  };
  for (const auto& r : requested) {
    if (r == "cpu") add("cpu");
    else if (r == "cuda" || r == "gpu") {
      if (vis.size() == 1) no_cuda(r);
      for (size_t i = 1; i < vis.size(); ++i) add(vis[i]);
    } else if (r.rfind("cuda:", 0) == 0) {
      if (vis.size() == 1) no_cuda(r);
      if (std::find(vis.begin(), vis.end(), r) == vis.end())
        throw_error(ErrorKind::kDevice,
                    fmt::format("device '{}' does not exist; devices found: {}", r, listing()));
      add(r);
    } else {
      throw_error(ErrorKind::kDevice,
                  fmt::format("unknown device '{}'; use cpu, cuda (all GPUs) or cuda:N; devices found: {}", r, listing()));
    }
  }
  return out;
}

#ifndef TRAINSCOPE_WITH_CUDA
std::string device_display_name(const std::string& device, const std::string& cpu_model) {
  return device == "cpu" ? cpu_model : device;
}
void add_torch_provenance(Provenance& p) { p.libtorch_version = compat::torch_version(); }
void device_synchronize(const torch::Device&) {}
void reset_device_memory_stats(const torch::Device&) {}
DeviceMemoryStats device_memory_stats(const torch::Device&) { return {}; }
void release_device_cache(const torch::Device&) {}
#endif

namespace {

class CpuPhaseClock final : public PhaseClock {
 public:
  explicit CpuPhaseClock(int64_t cap) : t_(static_cast<size_t>(cap * kMarks)) {}
  void mark(int64_t slot, int k) override { t_[static_cast<size_t>(slot * kMarks + k)] = std::chrono::steady_clock::now(); }
  double elapsed_ms(int64_t slot, int k) override {
    auto a = t_[static_cast<size_t>(slot * kMarks + k)], b = t_[static_cast<size_t>(slot * kMarks + k + 1)];
    return std::chrono::duration<double, std::milli>(b - a).count();
  }
  void synchronize() override {}
  std::string method() const override { return "steady_clock"; }

 private:
  std::vector<std::chrono::steady_clock::time_point> t_;
};

}  // namespace

std::unique_ptr<PhaseClock> make_cuda_phase_clock(const torch::Device& device, int64_t capacity);  // device_cuda.cpp

std::unique_ptr<PhaseClock> make_phase_clock(const torch::Device& device, int64_t capacity) {
#ifdef TRAINSCOPE_WITH_CUDA
  if (device.is_cuda()) return make_cuda_phase_clock(device, capacity);
#endif
  return std::make_unique<CpuPhaseClock>(capacity);
}

int64_t set_intra_op_threads(int64_t requested, const std::string& flag, std::string* warning) {
  const CpuBudget b = read_cpu_budget();
  const int64_t cpus = b.usable;
  const int64_t threads = requested > 0 ? requested : cpus;
  const std::string which = b.limited_by.empty() ? fmt::format("{} online", count_of(cpus, "CPU"))
                                                 : fmt::format("{} this process may use ({})", count_of(cpus, "CPU"), b.limited_by);
  if (requested > cpus && warning)
    *warning = fmt::format("{} {} is more than the {}: the intra-op threads oversubscribe the cores and "
                           "slow each step; use {} 0 (every usable CPU) or at most {}",
                           flag, requested, which, flag, cpus);
  at::set_num_threads(static_cast<int>(threads));
  return threads;
}

VariantThreads::VariantThreads(int64_t threads) : before_(threads > 0 ? at::get_num_threads() : 0) {
  if (threads <= 0) return;
  const CpuBudget b = read_cpu_budget();
  if (threads > b.usable)
    warning = fmt::format("variant threads{}: {} intra-op threads on {} ({}) oversubscribe the cores; this run measures "
                          "threads waiting for cores",
                          threads, threads, count_of(b.usable, "usable CPU"), b.limit_words());
  at::set_num_threads(static_cast<int>(threads));
}

VariantThreads::~VariantThreads() {
  if (before_ > 0) at::set_num_threads(before_);
}

void focus_telemetry(TelemetrySampler& sampler, const std::string& dev, const Provenance& p,
                     const std::vector<GpuInfo>& gpus) {
  if (dev.empty() || dev == "cpu") return sampler.set_run_devices(std::vector<std::string>{});
  const std::string tdev = telemetry_device(dev, p, gpus);
  // a GPU that NVML could not be matched to: every GPU's slow fields rather than none
  sampler.set_run_devices(tdev.empty() ? std::nullopt : std::optional(std::vector<std::string>{tdev}));
  sampler.sample_now();  // its energy counter and GPM baseline now, before the first step
}

// The telemetry device that a run's device corresponds to: "cpu", or "gpuN" (NVML index)
// matched through the PCI bus id, since CUDA and NVML may number GPUs differently.
std::string telemetry_device(const std::string& dev, const Provenance& p, const std::vector<GpuInfo>& gpus) {
  if (dev == "cpu") return "cpu";
  int idx = torch::Device(dev).index();
  if (idx >= 0 && static_cast<size_t>(idx) < p.gpus.size()) {
    auto want = p.gpus[static_cast<size_t>(idx)].pci_bus_id;
    auto norm = [](std::string s) {
      std::transform(s.begin(), s.end(), s.begin(), ::toupper);
      auto c = s.find(':');  // drop the PCI domain: "0000:19:00.0" and "00000000:19:00.0" match
      return c == std::string::npos ? s : s.substr(c + 1);
    };
    for (const auto& g : gpus)
      if (!want.empty() && norm(g.pci_bus_id) == norm(want)) return fmt::format("gpu{}", g.nvml_index);
  }
  return "";
}

}  // namespace trainscope

// Device helpers: which devices exist, and the CUDA-only pieces (events, memory statistics)
// behind an interface so the same trainer builds without CUDA
// (docs/design.md#optional-dependencies).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/cpu_budget.h"
#include "trainscope/provenance.h"
#include "trainscope/telemetry.h"

namespace trainscope {

/// "cpu" plus "cuda:N" for every visible CUDA device.
std::vector<std::string> visible_devices();

/// Resolves the user's device list ("cpu", "cuda", "cuda:N", "gpu"; empty = all visible).
/// Throws Error(kDevice) listing the devices found when one does not exist.
/// `notice` receives a one-line note when the default list had no GPU.
std::vector<std::string> resolve_devices(const std::vector<std::string>& requested, std::string* notice);

std::string device_display_name(const std::string& device, const std::string& cpu_model);

/// The telemetry device key ("cpu", "gpuN" with N the NVML index) of a training device,
/// matched through the PCI bus id since CUDA and NVML may number GPUs differently; "" when
/// NVML reports no GPU with that bus id.
std::string telemetry_device(const std::string& device, const Provenance& p, const std::vector<GpuInfo>& gpus);

/// Points the sampler's slow NVML fields at `device` (TelemetrySampler::set_run_devices,
/// docs/telemetry.md "Slow fields only for the run's GPU"): "" (between runs) or "cpu": no GPU's;
/// a GPU: its own, or every GPU's when NVML cannot be matched to it. A GPU then gets its slow
/// fields (energy counter, GPM baseline) read at once, before the caller's first step.
void focus_telemetry(TelemetrySampler& sampler, const std::string& device, const Provenance& p,
                     const std::vector<GpuInfo>& gpus);

/// Sets LibTorch's intra-op threads (at::set_num_threads) to `requested`, or to every CPU this
/// process may use (trainscope/provenance.h read_cpu_budget: affinity mask and cgroup CPU quota,
/// not every online CPU) when `requested` <= 0, and returns the count set. `warning` receives a
/// one-line warning when `requested` exceeds those CPUs, naming what limits them: threads beyond
/// the cores oversubscribe them, and each step's parallel regions then wait for descheduled
/// threads. `flag` names the setting in the warning ("--threads").
int64_t set_intra_op_threads(int64_t requested, const std::string& flag, std::string* warning);

/// A threadsN variant's intra-op threads (trainscope/variants.h) for one run: sets them when
/// `threads` > 0 and restores the count before it on destruction; `threads` 0 changes nothing.
/// `warning`: one line when `threads` exceeds the usable CPUs (the run then measures
/// oversubscribed cores, which the variant asked for).
struct VariantThreads {
  explicit VariantThreads(int64_t threads);
  ~VariantThreads();
  VariantThreads(const VariantThreads&) = delete;
  VariantThreads& operator=(const VariantThreads&) = delete;
  std::string warning;

 private:
  int before_ = 0;
};

/// Adds LibTorch / CUDA / GPU fields to a host provenance.
void add_torch_provenance(Provenance& p);

/// Records timestamps for the phases of each step. mark() never blocks the host.
class PhaseClock {
 public:
  virtual ~PhaseClock() = default;
  /// Marks boundary `k` (0..kMarks-1) of step slot `slot` (slot < capacity).
  virtual void mark(int64_t slot, int k) = 0;
  /// Milliseconds between boundary k and k+1 of `slot`, valid after synchronize().
  virtual double elapsed_ms(int64_t slot, int k) = 0;
  /// Waits for all recorded marks to complete (called outside the timed loop).
  virtual void synchronize() = 0;
  /// Blocks the host until boundary k of `slot` has completed on the device (no-op on the CPU).
  /// Used before overwriting a pinned staging buffer whose copy was queued at that step.
  virtual void wait(int64_t slot, int k) { (void)slot; (void)k; }
  virtual std::string method() const = 0;
  static constexpr int kMarks = 5;  // before h2d, after h2d, after forward, after backward, after optimizer
};

std::unique_ptr<PhaseClock> make_phase_clock(const torch::Device& device, int64_t capacity);

/// Blocks until all work queued on `device` is done (no-op on the CPU).
void device_synchronize(const torch::Device& device);

struct DeviceMemoryStats {
  std::optional<int64_t> peak_allocated_bytes, peak_reserved_bytes, total_bytes;
};
void reset_device_memory_stats(const torch::Device& device);
DeviceMemoryStats device_memory_stats(const torch::Device& device);
/// Returns cached blocks to the driver (after an out-of-memory failure).
void release_device_cache(const torch::Device& device);

}  // namespace trainscope

#include "train/mfu.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/text.h"

namespace trainscope {

namespace {

bool contains_ci(const std::string& hay, const std::string& needle) {
  return ascii_lower(hay).find(ascii_lower(needle)) != std::string::npos;
}

}  // namespace

const std::vector<DevicePeak>& device_peaks() {
  static const std::vector<DevicePeak> kPeaks = {
      {"NVIDIA H200 SXM", {"H200"}, {"NVL"}, 67, 494.7, 989.4,
       "nvidia.com/en-us/data-center/h200 (TF32 989 / BF16 1979 TFLOP/s with sparsity; dense = half)"},
      {"NVIDIA H100 SXM", {"H100"}, {"PCIe", "NVL"}, 67, 494.7, 989.4,
       "nvidia.com/en-us/data-center/h100 datasheet, SXM column (sparse figures halved)"},
      {"NVIDIA A100", {"A100"}, {}, 19.5, 156, 312,
       "nvidia.com/en-us/data-center/a100 datasheet (TF32 156, BF16 312 dense)"},
      {"NVIDIA RTX A6000", {"RTX A6000"}, {}, 38.7, 77.4, 154.8,
       "NVIDIA RTX A6000 datasheet / GA102 whitepaper (FP32 38.7; tensor BF16 154.8 dense, TF32 half of it)"},
  };
  return kPeaks;
}

const DevicePeak* find_device_peak(const std::string& device_name) {
  for (const auto& p : device_peaks()) {
    bool ok = std::all_of(p.match.begin(), p.match.end(), [&](const auto& m) { return contains_ci(device_name, m); }) &&
              std::none_of(p.exclude.begin(), p.exclude.end(), [&](const auto& x) { return contains_ci(device_name, x); });
    if (ok) return &p;
  }
  return nullptr;
}

std::string mfu_precision(bool bf16, bool tf32) { return bf16 ? "bf16" : tf32 ? "tf32" : "fp32"; }

MfuFigures compute_mfu(std::optional<double> forward_flops_per_sample, std::optional<double> samples_per_s,
                       const std::string& device, const std::string& device_name, bool bf16, bool tf32) {
  MfuFigures f;
  f.precision = mfu_precision(bf16, tf32);
  if (!forward_flops_per_sample || !samples_per_s) {
    f.note = !forward_flops_per_sample ? "MFU absent: the model's forward FLOPs were not counted"
                                       : "MFU absent: no steady-state samples/s";
    return f;
  }
  f.train_flops_per_s = 3.0 * *forward_flops_per_sample * *samples_per_s;
  if (device.rfind("cuda", 0) != 0) {
    f.note = fmt::format("MFU absent on {}: a CPU's peak depends on its vector units, clock and cores in use, which "
                         "trainscope does not measure; training FLOP/s are recorded",
                         device);
    return f;
  }
  const DevicePeak* p = find_device_peak(device_name);
  if (!p) {
    f.note = fmt::format("MFU absent: no peak for GPU '{}' in the peaks table (src/train/mfu.h)", device_name);
    return f;
  }
  const double tflops = f.precision == "bf16" ? p->bf16_tflops : f.precision == "tf32" ? p->tf32_tflops : p->fp32_tflops;
  f.peak_flops_per_s = tflops * 1e12;
  f.mfu_pct = 100.0 * *f.train_flops_per_s / *f.peak_flops_per_s;
  return f;
}

}  // namespace trainscope

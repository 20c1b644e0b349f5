// Model FLOPs utilisation (MFU) of a training run (docs/variants.md#mfu).
//
//   training FLOP/s = 3 x forward FLOPs per sample x steady samples/s
//   MFU %           = 100 x training FLOP/s / the device's dense peak FLOP/s for the precision in use
//
// Forward FLOPs per sample are counted from the operators of one real forward pass (model.h's
// count_forward_flops: 2*M*N*K per matrix product, 2*Cout*Hout*Wout*Cin*kh*kw/groups per
// convolution; element-wise operators, pooling, normalisation and the loss are not counted).
// The factor 3 is the usual convention (backward ~ 2x forward; PaLM, Chowdhery et al. 2022,
// arXiv:2204.02311, Appendix B); recomputation is not counted (model FLOPs, not hardware FLOPs).
//
// The precision in use picks the peak: bf16 -> BF16 tensor cores; tf32 -> TF32 tensor cores;
// otherwise FP32 (CUDA cores). LibTorch's default lets cuDNN use TF32 for convolutions even in
// fp32 "eager", so the trainer passes tf32 for a CUDA run of a convolutional model
// (src/train/run_figures.cpp, TrainLoop::mfu_figures; docs/variants.md#mfu).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace trainscope {

/// Dense (no structured sparsity) peak throughput of one device, TFLOP/s, at boost clock.
struct DevicePeak {
  std::string name;                  // "NVIDIA H200 SXM"
  std::vector<std::string> match;    // every substring must occur in the device name (case-insensitive)
  std::vector<std::string> exclude;  // none of these may occur ("NVL", "PCIe")
  double fp32_tflops = 0, tf32_tflops = 0, bf16_tflops = 0;
  std::string source;                // where the figures come from
};

/// The peaks table. Sources: NVIDIA's H200, H100 and A100 product pages / datasheets (tensor
/// core figures are quoted with sparsity; the dense figure is half), the GA102 (RTX A6000)
/// whitepaper figures; see each row's `source`.
const std::vector<DevicePeak>& device_peaks();

/// The row whose `match` all occur in `device_name` (an NVML/CUDA GPU name such as
/// "NVIDIA H200" or "NVIDIA A100-SXM4-80GB") and whose `exclude` do not; nullptr when none.
const DevicePeak* find_device_peak(const std::string& device_name);

/// "fp32", "tf32" or "bf16": the precision a variant computes its matrix products in.
std::string mfu_precision(bool bf16, bool tf32);

/// MFU figures of a run; absent values come with `note` saying why.
struct MfuFigures {
  std::optional<double> train_flops_per_s;  // 3 x forward FLOPs/sample x samples/s
  std::optional<double> peak_flops_per_s;   // the device's peak at `precision`
  std::optional<double> mfu_pct;
  std::string precision;                    // "fp32", "tf32", "bf16"
  std::string note;                         // "" when mfu_pct is set
};

/// Computes the figures. `device` is "cpu" or "cuda:N"; `device_name` the GPU name. A CPU has
/// no peak in the table (its peak depends on the vector units, clock and cores in use, which
/// trainscope does not measure): mfu_pct is absent with that reason; training FLOP/s are kept.
MfuFigures compute_mfu(std::optional<double> forward_flops_per_sample, std::optional<double> samples_per_s,
                       const std::string& device, const std::string& device_name, bool bf16, bool tf32);

}  // namespace trainscope

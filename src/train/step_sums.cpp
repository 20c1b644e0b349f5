// add_step_sums (step_sums.h): the fused CUDA kernel where it applies, ATen operations elsewhere.
#include "train/step_sums.h"

#ifdef TRAINSCOPE_WITH_CUDA
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <optional>

#include "train/step_sums_kernel.h"
#endif

namespace trainscope {

void add_step_sums_aten(const torch::Tensor& sums, const torch::Tensor& loss, const torch::Tensor& logits,
                        const torch::Tensor& y) {
  torch::NoGradGuard no_grad;
  sums.select(0, 0).add_(loss.detach(), static_cast<double>(y.size(0)));
  sums.select(0, 1).add_(logits.detach().argmax(1).eq(y).sum());
}

#ifdef TRAINSCOPE_WITH_CUDA
namespace {

// One thread scans a row: beyond a few dozen classes ATen's argmax (a block per row) is faster.
constexpr int64_t kMaxFusedClasses = 64;

std::optional<kernels::SumsDtype> kernel_dtype(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat: return kernels::SumsDtype::kFloat32;
    case torch::kDouble: return kernels::SumsDtype::kFloat64;
    case torch::kBFloat16: return kernels::SumsDtype::kBFloat16;
    case torch::kHalf: return kernels::SumsDtype::kFloat16;
    default: return std::nullopt;
  }
}

}  // namespace

bool add_step_sums_fused(const torch::Tensor& sums, const torch::Tensor& loss, const torch::Tensor& logits,
                         const torch::Tensor& y) {
  const auto dev = sums.device();
  if (!dev.is_cuda() || loss.device() != dev || logits.device() != dev || y.device() != dev) return false;
  if (sums.scalar_type() != torch::kDouble || sums.dim() != 1 || !sums.is_contiguous() || sums.numel() != 2)
    return false;
  if (loss.scalar_type() != torch::kFloat && loss.scalar_type() != torch::kDouble) return false;
  const auto loss_t = kernel_dtype(loss.scalar_type());
  const auto logits_t = kernel_dtype(logits.scalar_type());
  if (!logits_t) return false;
  if (loss.numel() != 1 || logits.dim() != 2 || logits.layout() != torch::kStrided || y.dim() != 1 ||
      y.scalar_type() != torch::kLong || !y.is_contiguous() || y.size(0) != logits.size(0) || logits.size(0) < 1 ||
      logits.size(1) < 1 || logits.size(1) > kMaxFusedClasses)
    return false;
  c10::cuda::CUDAGuard guard(dev);
  const auto err = kernels::launch_step_sums(
      sums.data_ptr<double>(), loss.data_ptr(), *loss_t, logits.data_ptr(), *logits_t, y.data_ptr<int64_t>(),
      logits.size(0), logits.size(1), logits.stride(0), logits.stride(1), c10::cuda::getCurrentCUDAStream(dev.index()));
  C10_CUDA_CHECK(err);
  return true;
}
#else
bool add_step_sums_fused(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&, const torch::Tensor&) {
  return false;
}
#endif

void add_step_sums(const torch::Tensor& sums, const torch::Tensor& loss, const torch::Tensor& logits,
                   const torch::Tensor& y) {
  if (add_step_sums_fused(sums, loss, logits, y)) return;
  add_step_sums_aten(sums, loss, logits, y);
}

}  // namespace trainscope

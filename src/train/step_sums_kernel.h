// One CUDA kernel for a training step's loss and accuracy sums (step_sums.h), launched by
// add_step_sums in CUDA builds instead of the ATen sequence (add, argmax, eq, sum, add: five
// kernels): inside a captured graph every kernel costs the replay a few microseconds, which a
// short step feels (bench/RESULTS.md, "Figures the code's choices rest on"). Plain
// CUDA runtime types, no LibTorch: the .cu builds without ATen's CUDA headers.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace trainscope::kernels {

/// Element types the kernel reads (logits: any; loss: kFloat32 or kFloat64).
enum class SumsDtype { kFloat32, kFloat64, kBFloat16, kFloat16 };

/// Enqueues on `stream`: sums[0] += rows x loss[0]; sums[1] += the number of rows r whose
/// argmax over logits[r, 0..classes) equals labels[r] (first maximum wins, NaN counts as the
/// maximum: torch.argmax's rules). sums: 2 float64 on the device; loss: one element of
/// `loss_dtype`; logits: rows x classes of `logits_dtype`, element (r, c) at
/// logits + r * row_stride + c * col_stride (strides in elements); labels: rows int64. Nothing
/// is read back to the host, so a graph capture can record it. Returns the launch's error
/// (cudaSuccess, or cudaErrorInvalidValue for rows < 1 or classes < 1).
cudaError_t launch_step_sums(double* sums, const void* loss, SumsDtype loss_dtype, const void* logits,
                             SumsDtype logits_dtype, const int64_t* labels, int64_t rows, int64_t classes,
                             int64_t row_stride, int64_t col_stride, cudaStream_t stream);

}  // namespace trainscope::kernels

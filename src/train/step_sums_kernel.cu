// launch_step_sums (step_sums_kernel.h): one thread per row finds the row's argmax, the block
// counts its correct rows, and one double-precision atomicAdd per block adds them (integers
// below 2^53 add exactly in any order, so the count does not depend on the blocks' order).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "train/step_sums_kernel.h"

namespace trainscope::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;

__device__ inline float as_float(float v) { return v; }
__device__ inline double as_float(double v) { return v; }
__device__ inline float as_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ inline float as_float(__half v) { return __half2float(v); }

// torch.argmax's order: a NaN beats every number, and the first of equal maxima stays.
template <typename A>
__device__ inline bool beats(A v, A best) {
  if (isnan(best)) return false;
  return isnan(v) || v > best;
}

// atomicAdd on a double exists from sm_60; older architectures in a LibTorch arch list get the
// CUDA programming guide's compare-and-swap loop.
__device__ inline void add_double(double* at, double v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 600
  auto* bits = reinterpret_cast<unsigned long long*>(at);
  unsigned long long old = *bits, seen;
  do {
    seen = old;
    old = atomicCAS(bits, seen, __double_as_longlong(v + __longlong_as_double(seen)));
  } while (seen != old);
#else
  atomicAdd(at, v);
#endif
}

template <typename T>
__device__ bool row_correct(const T* logits, int64_t r, int64_t classes, int64_t row_stride, int64_t col_stride,
                            int64_t label) {
  const T* row = logits + r * row_stride;
  auto best = as_float(row[0]);
  int64_t arg = 0;
  for (int64_t c = 1; c < classes; ++c) {
    auto v = as_float(row[c * col_stride]);
    if (beats(v, best)) {
      best = v;
      arg = c;
    }
  }
  return arg == label;
}

template <typename T, typename L>
__global__ void step_sums_kernel(double* sums, const L* loss, const T* logits, const int64_t* labels, int64_t rows,
                                 int64_t classes, int64_t row_stride, int64_t col_stride) {
  __shared__ unsigned warp_counts[kThreads / 32];
  unsigned correct = 0;
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x)
    correct += row_correct(logits, r, classes, row_stride, col_stride, labels[r]) ? 1u : 0u;
  for (int offset = 16; offset > 0; offset /= 2) correct += __shfl_down_sync(0xffffffffu, correct, offset);
  if (threadIdx.x % 32 == 0) warp_counts[threadIdx.x / 32] = correct;
  __syncthreads();
  if (threadIdx.x != 0) return;
  unsigned block_total = 0;
  for (int w = 0; w < kThreads / 32; ++w) block_total += warp_counts[w];
  if (block_total > 0) add_double(&sums[1], static_cast<double>(block_total));
  if (blockIdx.x == 0) add_double(&sums[0], static_cast<double>(rows) * static_cast<double>(loss[0]));
}

template <typename T, typename L>
cudaError_t launch_typed(double* sums, const void* loss, const void* logits, const int64_t* labels, int64_t rows,
                         int64_t classes, int64_t row_stride, int64_t col_stride, cudaStream_t stream) {
  const int64_t wanted = (rows + kThreads - 1) / kThreads;
  const int blocks = static_cast<int>(wanted < kMaxBlocks ? wanted : kMaxBlocks);
  step_sums_kernel<T, L><<<blocks, kThreads, 0, stream>>>(sums, static_cast<const L*>(loss),
                                                          static_cast<const T*>(logits), labels, rows, classes,
                                                          row_stride, col_stride);
  return cudaGetLastError();
}

template <typename L>
cudaError_t launch_for_loss(double* sums, const void* loss, const void* logits, SumsDtype logits_dtype,
                            const int64_t* labels, int64_t rows, int64_t classes, int64_t row_stride,
                            int64_t col_stride, cudaStream_t stream) {
  switch (logits_dtype) {
    case SumsDtype::kFloat32:
      return launch_typed<float, L>(sums, loss, logits, labels, rows, classes, row_stride, col_stride, stream);
    case SumsDtype::kFloat64:
      return launch_typed<double, L>(sums, loss, logits, labels, rows, classes, row_stride, col_stride, stream);
    case SumsDtype::kBFloat16:
      return launch_typed<__nv_bfloat16, L>(sums, loss, logits, labels, rows, classes, row_stride, col_stride,
                                            stream);
    case SumsDtype::kFloat16:
      return launch_typed<__half, L>(sums, loss, logits, labels, rows, classes, row_stride, col_stride, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t launch_step_sums(double* sums, const void* loss, SumsDtype loss_dtype, const void* logits,
                             SumsDtype logits_dtype, const int64_t* labels, int64_t rows, int64_t classes,
                             int64_t row_stride, int64_t col_stride, cudaStream_t stream) {
  if (rows < 1 || classes < 1) return cudaErrorInvalidValue;
  if (loss_dtype == SumsDtype::kFloat32)
    return launch_for_loss<float>(sums, loss, logits, logits_dtype, labels, rows, classes, row_stride, col_stride,
                                  stream);
  if (loss_dtype == SumsDtype::kFloat64)
    return launch_for_loss<double>(sums, loss, logits, logits_dtype, labels, rows, classes, row_stride, col_stride,
                                   stream);
  return cudaErrorInvalidValue;
}

}  // namespace trainscope::kernels

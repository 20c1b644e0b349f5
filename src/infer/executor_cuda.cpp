// CUDA executor: H2D copy, forward and D2H copy queued on the current stream of the device,
// with a timing CUDA event between each (cudaEventRecord does not block the host). The host
// waits once per query, on the last event: the result has to be in host memory anyway.
// Compiled only with TRAINSCOPE_WITH_CUDA.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>

#include <array>
#include <chrono>
#include <map>
#include <vector>

#include "infer/executor.h"

namespace trainscope {

namespace {

class CudaExecutor final : public InferenceExecutor {
 public:
  CudaExecutor(Model& m, const torch::Device& d) : model_(m), device_(d) {
    for (int i = 0; i < 4; ++i) marks_.emplace_back(cudaEventDefault);  // timing events
    for (int i = 0; i < kInFlight; ++i) ring_.emplace_back(cudaEventDisableTiming);
  }

  torch::Tensor prepare(const torch::Tensor& host) override { return host.contiguous().pin_memory(); }

  QueryTiming run(const torch::Tensor& x) override {
    c10::cuda::CUDAGuard guard(device_);
    auto stream = at::cuda::getCurrentCUDAStream(device_.index());
    auto t0 = std::chrono::steady_clock::now();
    marks_[0].record(stream);
    auto xd = x.to(device_, x.scalar_type(), /*non_blocking=*/true);
    marks_[1].record(stream);
    auto y = model_.forward(xd);
    marks_[2].record(stream);
    auto& out = host_buffer(y, 0);
    out.copy_(y, /*non_blocking=*/true);
    marks_[3].record(stream);
    marks_[3].synchronize();  // the result is in host memory
    auto t1 = std::chrono::steady_clock::now();
    QueryTiming q;
    q.e2e_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    q.h2d_ms = static_cast<double>(marks_[0].elapsed_time(marks_[1]));
    q.compute_ms = static_cast<double>(marks_[1].elapsed_time(marks_[2]));
    q.d2h_ms = static_cast<double>(marks_[2].elapsed_time(marks_[3]));
    return q;
  }

  void enqueue(const torch::Tensor& x) override {
    c10::cuda::CUDAGuard guard(device_);
    auto stream = at::cuda::getCurrentCUDAStream(device_.index());
    int slot = static_cast<int>(queued_ % kInFlight);
    // Bounded run-ahead: before reusing a slot's host output buffer, its previous copy must be done.
    if (queued_ >= kInFlight) ring_[static_cast<size_t>(slot)].synchronize();
    auto xd = x.to(device_, x.scalar_type(), /*non_blocking=*/true);
    auto y = model_.forward(xd);
    host_buffer(y, slot).copy_(y, /*non_blocking=*/true);
    ring_[static_cast<size_t>(slot)].record(stream);
    ++queued_;
  }

  void drain() override {
    c10::cuda::CUDAGuard guard(device_);
    at::cuda::getCurrentCUDAStream(device_.index()).synchronize();
    queued_ = 0;
  }

  std::string timer() const override { return "cuda_events"; }

 private:
  static constexpr int kInFlight = 4;

  // Page-locked result buffer of y's shape for `slot` (allocated once per shape and slot).
  torch::Tensor& host_buffer(const torch::Tensor& y, int slot) {
    auto key = std::make_pair(slot, y.sizes().vec());
    auto it = out_.find(key);
    if (it == out_.end())
      it = out_.emplace(key, torch::empty(y.sizes(), torch::TensorOptions().dtype(y.scalar_type()).pinned_memory(true)))
               .first;
    return it->second;
  }

  Model& model_;
  torch::Device device_;
  std::vector<at::cuda::CUDAEvent> marks_, ring_;
  std::map<std::pair<int, std::vector<int64_t>>, torch::Tensor> out_;
  int64_t queued_ = 0;
};

}  // namespace

std::unique_ptr<InferenceExecutor> make_cuda_inference_executor(Model& model, const torch::Device& device) {
  return std::make_unique<CudaExecutor>(model, device);
}

}  // namespace trainscope

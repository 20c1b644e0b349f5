// CUDA executor: H2D copy, forward and D2H copy queued on the current stream of the device,
// with a timing CUDA event between each (cudaEventRecord does not block the host). The host
// waits once per query, on the last event: the result has to be in host memory anyway.
// With ExecutorOptions::cuda_graphs the forward of each input shape is captured once as a CUDA
// graph (docs/variants.md#cuda-graphs): the H2D copy then fills the graph's static input
// buffer, "forward" is one graph launch, and the D2H copy reads the graph's output.
// Compiled only with TRAINSCOPE_WITH_CUDA.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <array>
#include <chrono>
#include <exception>
#include <map>
#include <vector>

#include "infer/executor.h"
#include "train/graph_capture_cuda.h"

namespace trainscope {

namespace {

// The forward pass of one input shape, captured once.
struct GraphedForward {
  std::unique_ptr<at::cuda::CUDAGraph> graph;  // first member: destroyed after the tensors below
  torch::Tensor in, out;                       // static input buffer; output in the graph's pool
};

class CudaExecutor final : public InferenceExecutor {
 public:
  CudaExecutor(Model& m, const torch::Device& d, const ExecutorOptions& o) : model_(m), device_(d), options_(o) {
    for (int i = 0; i < 4; ++i) marks_.emplace_back(cudaEventDefault);  // timing events
    for (int i = 0; i < kInFlight; ++i) ring_.emplace_back(cudaEventDisableTiming);
  }

  // Work queued by enqueue() or graph replays may still run: finish it before the graphs' pools
  // and buffers go back to the caching allocator.
  ~CudaExecutor() override {
    try {
      drain();
    } catch (const std::exception&) {
    }
  }
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  torch::Tensor prepare(const torch::Tensor& host) override { return host.contiguous().pin_memory(); }

  QueryTiming run(const torch::Tensor& x) override {
    c10::cuda::CUDAGuard guard(device_);
    auto stream = at::cuda::getCurrentCUDAStream(device_.index());
    GraphedForward* g = graphed(x);  // captured on the first query of this shape (untimed)
    auto t0 = std::chrono::steady_clock::now();
    marks_[0].record(stream);
    auto xd = to_device(x, g);
    marks_[1].record(stream);
    auto y = compute(xd, g);
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
    GraphedForward* g = graphed(x);
    int slot = static_cast<int>(queued_ % kInFlight);
    // Bounded run-ahead: before reusing a slot's host output buffer, its previous copy must be done.
    if (queued_ >= kInFlight) ring_[static_cast<size_t>(slot)].synchronize();
    // With a graph, batches in flight share its input and output buffers: safe, because every
    // copy and replay is queued on this one stream in order.
    auto y = compute(to_device(x, g), g);
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
  std::string execution() const override;

 private:
  static constexpr int kInFlight = 4;
  static constexpr int kWarmupForwards = 3;  // before a capture, as PyTorch's recipe

  torch::Tensor to_device(const torch::Tensor& x, GraphedForward* g) {
    if (!g) return x.to(device_, x.scalar_type(), /*non_blocking=*/true);
    g->in.copy_(x, /*non_blocking=*/true);
    return g->in;
  }
  torch::Tensor compute(const torch::Tensor& xd, GraphedForward* g) {
    if (!g) return model_.forward(xd);
    g->graph->replay();
    return g->out;
  }
  GraphedForward* graphed(const torch::Tensor& x);
  std::string capture(GraphedForward& g);

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
  ExecutorOptions options_;
  std::vector<at::cuda::CUDAEvent> marks_, ring_;
  std::map<std::pair<int, std::vector<int64_t>>, torch::Tensor> out_;
  std::map<std::vector<int64_t>, std::unique_ptr<GraphedForward>> graphs_;  // by input shape
  std::map<std::vector<int64_t>, std::string> failed_;                     // by input shape: why
  int64_t queued_ = 0;
};

// The captured forward for x's shape (capturing it on first use), or nullptr: eager (graphs off,
// or this shape's capture failed).
GraphedForward* CudaExecutor::graphed(const torch::Tensor& x) {
  if (!options_.cuda_graphs) return nullptr;
  auto shape = x.sizes().vec();
  if (auto it = graphs_.find(shape); it != graphs_.end()) return it->second.get();
  if (failed_.count(shape)) return nullptr;
  auto g = std::make_unique<GraphedForward>();
  g->in = torch::empty(x.sizes(), torch::TensorOptions().dtype(x.scalar_type()).device(device_));
  g->in.copy_(x, /*non_blocking=*/true);  // real data for the warm-up forwards
  auto why = capture(*g);
  if (!why.empty()) {
    failed_[shape] = why;
    return nullptr;
  }
  return graphs_.emplace(shape, std::move(g)).first->second.get();
}

// Warm-up forwards and the capture on a side stream (a capture cannot run on the default
// stream; the warm-up on the same stream creates its cuBLAS/cuDNN workspaces outside the
// capture), into a private memory pool. Returns "" or why the capture failed.
std::string CudaExecutor::capture(GraphedForward& g) {
  const auto dev = device_.index();
  auto caller = at::cuda::getCurrentCUDAStream(dev);
  auto side = at::cuda::getStreamFromPool(/*isHighPriority=*/false, dev);
  graphs::stream_wait(caller, side);
  std::string why;
  {
    c10::cuda::CUDAStreamGuard on_side(side);
    for (int i = 0; i < kWarmupForwards; ++i) (void)model_.forward(g.in);
    auto pool = at::cuda::graph_pool_handle();
    g.graph = std::make_unique<at::cuda::CUDAGraph>();
    try {
      g.graph->capture_begin(pool);
      g.out = model_.forward(g.in);
      g.graph->capture_end();
    } catch (const std::exception& e) {
      why = graphs::error_line(e);
      graphs::abandon_capture(*g.graph, dev, pool);  // also after a failed capture_begin
      g.out = torch::Tensor();
      g.graph.reset();
    }
  }
  graphs::stream_wait(side, caller);
  return why;
}

std::string CudaExecutor::execution() const {
  if (!options_.cuda_graphs) return "eager";
  if (failed_.empty()) return "cuda_graph_replay";
  const auto& [shape, why] = *failed_.begin();
  const int64_t batch = shape.empty() ? 0 : shape.front();
  if (graphs_.empty()) return fmt::format("eager (cuda graph capture failed for batch {}: {})", batch, why);
  return fmt::format("cuda_graph_replay, eager for batch {} (capture failed: {})", batch, why);
}

}  // namespace

std::unique_ptr<InferenceExecutor> make_cuda_inference_executor(Model& model, const torch::Device& device,
                                                                const ExecutorOptions& options) {
  return std::make_unique<CudaExecutor>(model, device, options);
}

}  // namespace trainscope

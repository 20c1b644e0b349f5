#include "infer/executor.h"

#include <chrono>

#include "trainscope/error.h"

namespace trainscope {

namespace {

class CpuExecutor final : public InferenceExecutor {
 public:
  CpuExecutor(Model& m, const ExecutorOptions& o) : model_(m), graphs_asked_(o.cuda_graphs) {}
  torch::Tensor prepare(const torch::Tensor& host) override { return host.contiguous(); }
  QueryTiming run(const torch::Tensor& x) override {
    auto t0 = std::chrono::steady_clock::now();
    auto y = model_.forward(x);
    // The CPU forward is synchronous: the logits are in host memory when it returns.
    auto t1 = std::chrono::steady_clock::now();
    sink_ = y;
    QueryTiming q;
    q.e2e_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    q.compute_ms = q.e2e_ms;
    return q;
  }
  void enqueue(const torch::Tensor& x) override { sink_ = model_.forward(x); }
  void drain() override {}
  std::string timer() const override { return "steady_clock"; }
  std::string execution() const override {
    return graphs_asked_ ? "eager (cuda graphs not applicable on cpu)" : "eager";
  }

 private:
  Model& model_;
  bool graphs_asked_;
  torch::Tensor sink_;  // keeps the last result alive so the call cannot be elided
};

}  // namespace

std::unique_ptr<InferenceExecutor> make_inference_executor(Model& model, const torch::Device& device) {
  return make_inference_executor(model, device, ExecutorOptions{});
}

std::unique_ptr<InferenceExecutor> make_inference_executor(Model& model, const torch::Device& device,
                                                           const ExecutorOptions& options) {
  if (device.is_cpu()) return std::make_unique<CpuExecutor>(model, options);
#ifdef TRAINSCOPE_WITH_CUDA
  if (device.is_cuda()) return make_cuda_inference_executor(model, device, options);
#endif
  throw_error(ErrorKind::kDevice, "inference on device '" + device.str() +
                                      "' is not supported by this build (CPU, and CUDA in CUDA builds)");
}

}  // namespace trainscope

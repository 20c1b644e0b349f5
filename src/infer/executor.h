// How a query reaches the model and its result comes back: on the CPU a forward call timed
// with the steady clock; on a GPU host-to-device copy, forward and device-to-host copy on the
// current CUDA stream, split by CUDA events (executor_cuda.cpp). The only host wait is the one
// a real server has anyway: for the result to be on the host.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>

#include "workload/model.h"

namespace trainscope {

struct QueryTiming {
  double e2e_ms = 0;                           // host steady clock: input on host -> result on host
  std::optional<double> h2d_ms, compute_ms, d2h_ms;  // CUDA events (GPU only)
};

class InferenceExecutor {
 public:
  virtual ~InferenceExecutor() = default;
  /// Returns `host` (N x C x H x W float32 CPU) in the form queries are served from: page-locked
  /// memory on a GPU (as a server's receive buffers would be), unchanged on the CPU.
  virtual torch::Tensor prepare(const torch::Tensor& host) = 0;
  /// One query, blocking until the result is in host memory.
  virtual QueryTiming run(const torch::Tensor& host_batch) = 0;
  /// Offline: queues one batch (input copy, forward, result copy); may return before it is done,
  /// with a bounded number of batches in flight. drain() waits for all of them.
  virtual void enqueue(const torch::Tensor& host_batch) = 0;
  virtual void drain() = 0;
  virtual std::string timer() const = 0;  // "steady_clock" | "cuda_events"
  /// How the forward passes ran so far (the record's inference `execution`): "eager";
  /// "cuda_graph_replay" (every batch size captured once, then replayed); with some or all
  /// captures failed, "cuda_graph_replay, eager for batch N (capture failed: reason)" or
  /// "eager (cuda graph capture failed for batch N: reason)"; on the CPU with cuda_graphs asked
  /// for, "eager (cuda graphs not applicable on cpu)".
  virtual std::string execution() const = 0;
};

struct ExecutorOptions {
  /// CUDA: capture the forward pass once per input shape (batch size) as a CUDA graph, on its
  /// first query (a static device input buffer, an output owned by the graph's private memory
  /// pool), and replay it for run() and enqueue(); a shape whose capture fails runs eagerly and
  /// execution() says why. CPU: ignored (execution() says "not applicable on cpu").
  bool cuda_graphs = false;
};

/// The executor for `device`; the model must already be on it, in eval mode. The caller holds
/// the grad-mode guard (InferenceMode is thread-local).
std::unique_ptr<InferenceExecutor> make_inference_executor(Model& model, const torch::Device& device);
std::unique_ptr<InferenceExecutor> make_inference_executor(Model& model, const torch::Device& device,
                                                           const ExecutorOptions& options);
/// CUDA version (executor_cuda.cpp, built only with TRAINSCOPE_WITH_CUDA).
std::unique_ptr<InferenceExecutor> make_cuda_inference_executor(Model& model, const torch::Device& device,
                                                                const ExecutorOptions& options);

}  // namespace trainscope

// The CUDA-graph decoder of infer/graph_decoder.h. Compiled only with TRAINSCOPE_WITH_CUDA.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <fmt/format.h>

#include <map>
#include <string>

#include "infer/graph_decoder.h"
#include "train/graph_capture_cuda.h"
#include "trainscope/error.h"

namespace trainscope {

namespace {

// One decoding step of one batch size, captured once.
struct GraphedStep {
  std::unique_ptr<at::cuda::CUDAGraph> graph;  // first member: destroyed after the tensors below
  torch::Tensor tokens, logits;                // static input [B, 1]; output in the graph's pool
};

class CudaGraphDecoder final : public Decoder {
 public:
  explicit CudaGraphDecoder(std::unique_ptr<CapturableDecoder> inner)
      : d_(std::move(inner)), position_(torch::zeros({1}, torch::TensorOptions().dtype(torch::kLong).device(d_->device()))) {}

  ~CudaGraphDecoder() override {
    try {
      c10::cuda::CUDAGuard guard(d_->device());
      at::cuda::getCurrentCUDAStream(d_->device().index()).synchronize();  // replays done before pools go
    } catch (const std::exception&) {
    }
  }
  CudaGraphDecoder(const CudaGraphDecoder&) = delete;
  CudaGraphDecoder& operator=(const CudaGraphDecoder&) = delete;

  // The cache always spans the whole context, so a graph's shapes never depend on max_len.
  void reset(int64_t batch, int64_t max_len) override {
    if (max_len > d_->context()) d_->reset(batch, max_len);  // throws the decoder's own error
    d_->reset(batch, d_->context());
    if (d_->cache_generation() != generation_) graphs_.clear();  // captured over a freed cache
    generation_ = d_->cache_generation();
    batch_ = batch;
    max_len_ = max_len;
  }

  torch::Tensor append(const torch::Tensor& tokens) override {
    if (tokens.dim() == 2 && length() + tokens.size(1) > max_len_)
      throw_error(ErrorKind::kModel, fmt::format("appending {} token(s) after {} exceeds the {} reset() made room "
                                                 "for; reset with a larger max_len",
                                                 tokens.size(1), length(), max_len_));
    GraphedStep* g = tokens.dim() == 2 && tokens.size(1) == 1 ? graphed(tokens) : nullptr;
    if (!g) return d_->append(tokens);
    c10::cuda::CUDAGuard guard(d_->device());
    g->tokens.copy_(tokens, /*non_blocking=*/true);
    position_.fill_(d_->length());
    g->graph->replay();
    d_->advanced(1);
    return g->logits.clone();
  }

  int64_t length() const override { return d_->length(); }
  int64_t context() const override { return d_->context(); }
  int64_t vocab() const override { return d_->vocab(); }
  torch::Device device() const override { return d_->device(); }
  std::string execution() const override {
    if (failed_.empty()) return "cuda_graph_replay";
    const auto& [batch, why] = *failed_.begin();
    if (graphs_.empty()) return fmt::format("eager (cuda graph capture failed for batch {}: {})", batch, why);
    return fmt::format("cuda_graph_replay, eager for batch {} (capture failed: {})", batch, why);
  }

 private:
  static constexpr int kWarmupSteps = 3;  // before a capture, as PyTorch's recipe

  GraphedStep* graphed(const torch::Tensor& tokens) {
    if (auto it = graphs_.find(batch_); it != graphs_.end()) return it->second.get();
    if (failed_.count(batch_) || tokens.size(0) != batch_) return nullptr;
    auto g = std::make_unique<GraphedStep>();
    g->tokens = tokens.clone();
    auto why = capture(*g);
    if (!why.empty()) {
      failed_[batch_] = why;
      return nullptr;
    }
    return graphs_.emplace(batch_, std::move(g)).first->second.get();
  }

  // Warm-up steps and the capture on a side stream into a private pool (as the inference
  // executor's capture, infer/executor_cuda.cpp). The warm-up steps write the cache at the
  // current length only, the position the real step writes next, so the cache stays valid.
  std::string capture(GraphedStep& g) {
    const auto dev = d_->device().index();
    c10::cuda::CUDAGuard guard(d_->device());
    auto caller = at::cuda::getCurrentCUDAStream(dev);
    auto side = at::cuda::getStreamFromPool(/*isHighPriority=*/false, dev);
    graphs::stream_wait(caller, side);
    std::string why;
    {
      c10::cuda::CUDAStreamGuard on_side(side);
      for (int i = 0; i < kWarmupSteps; ++i) {
        position_.fill_(d_->length());
        (void)d_->step_static(g.tokens, position_);
      }
      position_.fill_(d_->length());
      auto pool = at::cuda::graph_pool_handle();
      g.graph = std::make_unique<at::cuda::CUDAGraph>();
      try {
        g.graph->capture_begin(pool);
        g.logits = d_->step_static(g.tokens, position_);
        g.graph->capture_end();
      } catch (const std::exception& e) {
        why = graphs::error_line(e);
        graphs::abandon_capture(*g.graph, dev, pool);
        g.logits = torch::Tensor();
        g.graph.reset();
      }
    }
    graphs::stream_wait(side, caller);
    return why;
  }

  std::unique_ptr<CapturableDecoder> d_;
  torch::Tensor position_;  // int64 [1] on the device: the position the next replay writes
  std::map<int64_t, std::unique_ptr<GraphedStep>> graphs_;  // by batch size
  std::map<int64_t, std::string> failed_;                   // by batch size: why
  int64_t batch_ = 0, max_len_ = 0, generation_ = -1;
};

}  // namespace

std::unique_ptr<Decoder> make_cuda_graph_decoder(std::unique_ptr<CapturableDecoder> inner) {
  return std::make_unique<CudaGraphDecoder>(std::move(inner));
}

}  // namespace trainscope

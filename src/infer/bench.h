// The inference scenarios on one model and device (trainscope/inference.h describes them and
// the JSON they produce).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <string>

#include "trainscope/config.h"
#include "trainscope/inference.h"
#include "trainscope/telemetry.h"
#include "workload/model.h"

namespace trainscope {

/// Measures the scenarios of `opt` on `model`, already on `device`. `samples` is the query
/// pool: float32 N x C x H x W on the CPU (N >= 1), cycled through. Puts the model in eval
/// mode and runs under c10::InferenceMode; the intra-op thread count is whatever the caller
/// set (reported). `sampler` (may be null) gives power and energy for `telemetry_device`
/// ("cpu", "gpuN"; "" = none matches). `log` (may be empty) receives one line per scenario.
/// LibTorch errors propagate (the caller decides whether they fail anything).
InferenceSection measure_inference(Model& model, const torch::Device& device, const torch::Tensor& samples,
                                 const InferenceOptions& opt, const TelemetrySampler* sampler = nullptr,
                                 const std::string& telemetry_device = "",
                                 const std::function<void(const std::string&)>& log = {});

/// Options from the matrix's InferenceConfig (single-stream and offline; server when server_qps > 0).
InferenceOptions inference_options(const InferenceConfig& cfg, uint64_t seed);

/// The matrix's on_trained hook body: measures on up to `kPoolSamples` test samples and never
/// throws; a failure sets error_kind and error so the training run stays measured.
/// `stop_requested` (may be null): Ctrl-C ends the scenarios early (InferenceOptions).
/// `cuda_graphs`: replay captured CUDA graphs (InferenceOptions::cuda_graphs), e.g. for a run
/// of the graphs variant. `on_progress` (may be empty): InferenceOptions::on_progress.
InferenceSection inference_after_training(Model& model, const torch::Device& device, const torch::Tensor& test_x,
                                        const InferenceConfig& cfg, uint64_t seed, const TelemetrySampler* sampler,
                                        const std::string& telemetry_device,
                                        const std::atomic<bool>* stop_requested = nullptr, bool cuda_graphs = false,
                                        std::function<void()> on_progress = {});

inline constexpr int64_t kPoolSamples = 4096;

}  // namespace trainscope

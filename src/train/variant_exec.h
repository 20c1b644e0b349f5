// What an execution variant (trainscope/variants.h) changes in a training run, applied in one
// place so the eager step and the captured CUDA-graph step (graph_step.h) run the same recipe.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <string>

#include "trainscope/variants.h"
#include "workload/model.h"

namespace trainscope {

/// Switches a variant's global LibTorch state on for its lifetime and restores the previous
/// state when destroyed (also when the run throws):
///   bf16: autocast on the run's device type (CPU or CUDA) with dtype bfloat16; the autocast
///         cast cache is cleared on exit.
///   tf32: cuBLAS and cuDNN TF32 flags (at::globalContext().setAllowTF32CuBLAS/CuDNN) on.
///   cudnn_benchmark (a run setting, not a variant; config.h TrainConfig): cuDNN autotuning on a
///         CUDA device (at::globalContext().setBenchmarkCuDNN), set either way for the run.
/// eager and channels_last change no global state.
class VariantGuard {
 public:
  VariantGuard(const Variant& v, const torch::Device& device, bool cudnn_benchmark = false);
  ~VariantGuard();
  VariantGuard(const VariantGuard&) = delete;
  VariantGuard& operator=(const VariantGuard&) = delete;

 private:
  bool cuda_;
  bool autocast_set_ = false, prev_autocast_ = false, prev_cache_ = true;
  at::ScalarType prev_dtype_ = at::kFloat;
  bool tf32_set_ = false, prev_tf32_cublas_ = false, prev_tf32_cudnn_ = false;
  bool prev_cudnn_benchmark_ = false;
};

/// The memory format a variant's inputs and 4-D parameters use: ChannelsLast for channels_last
/// (NHWC strides; shape stays N x C x H x W), Contiguous otherwise.
at::MemoryFormat variant_memory_format(const Variant& v);

/// Converts the model's 4-D parameters (and their gradients, if any) to `format` in place.
/// Returns how many were converted.
int64_t convert_model_memory_format(Model& model, at::MemoryFormat format);

/// True when the model has a parameter with 4 dimensions (a convolution kernel).
bool has_4d_parameters(Model& model);

/// The training forward of a variant: logits = model(x) as float32 (B x classes), x converted
/// to the variant's memory format when it is 4-D. Autocast comes from the VariantGuard around
/// the run; bf16 logits are widened to float32 (as PyTorch's autocast does before
/// cross_entropy), so the loss and its NaN check are float32 in every variant. The eager step and
/// the graph capture use it for every model whose loss is not fused (train/lm_task.h
/// make_step_forward).
torch::Tensor variant_forward(Model& model, const torch::Tensor& x, at::MemoryFormat format);

}  // namespace trainscope

#include "train/variant_exec.h"

#include "train/compat.h"

namespace trainscope {

VariantGuard::VariantGuard(const Variant& v, const torch::Device& device, bool cudnn_benchmark) : cuda_(device.is_cuda()) {
  prev_cudnn_benchmark_ = at::globalContext().benchmarkCuDNN();
  if (cuda_) at::globalContext().setBenchmarkCuDNN(cudnn_benchmark);
  if (v.bf16) {
    prev_autocast_ = compat::autocast_enabled(cuda_);
    prev_dtype_ = compat::autocast_dtype(cuda_);
    compat::set_autocast_dtype(cuda_, at::kBFloat16);
    compat::set_autocast_enabled(cuda_, true);
    // The weight-cast cache off for the run: LibTorch keeps cached bf16 copies of the weights
    // until the autocast region ends (Python's `with autocast()` ends it every step; a C++ run
    // never would), so later forwards would use the weights of the first step. Its autograd
    // nodes also tie the parameters to the stream of that step, which breaks a later CUDA-graph
    // capture ("would make the legacy stream depend on a capturing blocking stream", H200).
    prev_cache_ = at::autocast::is_autocast_cache_enabled();
    at::autocast::set_autocast_cache_enabled(false);
    at::autocast::clear_cache();
    autocast_set_ = true;
  }
  if (v.tf32) {
    auto& ctx = at::globalContext();
    prev_tf32_cublas_ = ctx.allowTF32CuBLAS();
    prev_tf32_cudnn_ = ctx.allowTF32CuDNN();
    ctx.setAllowTF32CuBLAS(true);
    ctx.setAllowTF32CuDNN(true);
    tf32_set_ = true;
  }
}

VariantGuard::~VariantGuard() {
  if (cuda_) at::globalContext().setBenchmarkCuDNN(prev_cudnn_benchmark_);
  if (autocast_set_) {
    compat::set_autocast_enabled(cuda_, prev_autocast_);
    compat::set_autocast_dtype(cuda_, prev_dtype_);
    at::autocast::set_autocast_cache_enabled(prev_cache_);
    at::autocast::clear_cache();
  }
  if (tf32_set_) {
    auto& ctx = at::globalContext();
    ctx.setAllowTF32CuBLAS(prev_tf32_cublas_);
    ctx.setAllowTF32CuDNN(prev_tf32_cudnn_);
  }
}

at::MemoryFormat variant_memory_format(const Variant& v) {
  return v.channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
}

int64_t convert_model_memory_format(Model& model, at::MemoryFormat format) {
  torch::NoGradGuard no_grad;
  int64_t n = 0;
  for (auto& p : model.parameters()) {
    if (p.dim() != 4) continue;
    // set_data keeps the parameter object (optimizers and hooks hold it) and swaps its storage.
    p.set_data(p.data().contiguous(format));
    if (p.grad().defined()) p.mutable_grad() = p.grad().contiguous(format);
    ++n;
  }
  return n;
}

bool has_4d_parameters(Model& model) {
  for (const auto& p : model.parameters())
    if (p.dim() == 4) return true;
  return false;
}

torch::Tensor variant_forward(Model& model, const torch::Tensor& x, at::MemoryFormat format) {
  auto logits = model.forward(x.dim() == 4 && format != at::MemoryFormat::Contiguous ? x.contiguous(format) : x);
  return logits.scalar_type() == at::kFloat ? logits : logits.to(at::kFloat);
}

}  // namespace trainscope

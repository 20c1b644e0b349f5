#include "train/optimizer.h"

#include <fmt/format.h>

#include "train/compat.h"
#include "trainscope/error.h"

namespace trainscope {

namespace {

class TorchOptimizer final : public StepOptimizer {
 public:
  TorchOptimizer(std::unique_ptr<torch::optim::Optimizer> o, std::string impl) : o_(std::move(o)), impl_(std::move(impl)) {}
  void zero_grad() override { o_->zero_grad(); }
  void step() override { o_->step(); }
  std::string implementation() const override { return impl_; }

 private:
  std::unique_ptr<torch::optim::Optimizer> o_;
  std::string impl_;
};

#if defined(TRAINSCOPE_WITH_CUDA) && TORCH_VERSION_MAJOR >= 2
constexpr bool kHaveFusedAdam = true;

// Same update as torch.optim.Adam(fused=True): step counters are float32 device tensors,
// incremented with one foreach kernel, then one fused kernel updates every parameter.
class FusedAdam final : public StepOptimizer {
 public:
  FusedAdam(std::vector<torch::Tensor> params, double lr) : params_(std::move(params)), lr_(lr) {}
  void zero_grad() override {
    for (auto& p : params_) p.mutable_grad() = torch::Tensor();
  }
  void step() override {
    torch::NoGradGuard ng;
    std::vector<torch::Tensor> ps, gs;
    ps.reserve(params_.size());
    gs.reserve(params_.size());
    for (auto& p : params_)
      if (p.grad().defined()) {
        ps.push_back(p);
        gs.push_back(p.grad());
      }
    if (ps.empty()) return;
    if (exp_avgs_.empty()) {
      TS_CHECK(ps.size() == params_.size(), "fused Adam: every parameter needs a gradient on the first step");
      for (auto& p : ps) {
        exp_avgs_.push_back(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        exp_avg_sqs_.push_back(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        steps_.push_back(torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat).device(p.device())));
      }
    }
    TS_CHECK(ps.size() == exp_avgs_.size(), "fused Adam: the set of parameters with gradients changed");
    at::_foreach_add_(steps_, 1);
    std::vector<torch::Tensor> no_max;
    at::_fused_adam_(ps, gs, exp_avgs_, exp_avg_sqs_, no_max, steps_, lr_, 0.9, 0.999, 0.0, 1e-8,
                     /*amsgrad=*/false, /*maximize=*/false, /*grad_scale=*/{}, /*found_inf=*/{});
  }
  std::string implementation() const override { return "at::_fused_adam_ (fused, one kernel per step)"; }

 private:
  std::vector<torch::Tensor> params_, exp_avgs_, exp_avg_sqs_, steps_;
  double lr_;
};
#else
constexpr bool kHaveFusedAdam = false;
#endif

}  // namespace

std::unique_ptr<StepOptimizer> make_optimizer(const TrainConfig& cfg, std::vector<torch::Tensor> params,
                                              const torch::Device& device) {
  if (cfg.optimizer == "sgd") {
    if (cfg.optimizer_impl == "fused")
      throw_error(ErrorKind::kInvalidArgument, "--optimizer-impl fused is only available for adam");
    return std::make_unique<TorchOptimizer>(
        std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(cfg.learning_rate).momentum(cfg.momentum)),
        "torch::optim::SGD (per-parameter loop)");
  }
  bool want_fused = cfg.optimizer_impl == "fused" || (cfg.optimizer_impl == "auto" && device.is_cuda());
  if (want_fused && device.is_cuda() && kHaveFusedAdam) {
#if defined(TRAINSCOPE_WITH_CUDA) && TORCH_VERSION_MAJOR >= 2
    return std::make_unique<FusedAdam>(std::move(params), cfg.learning_rate);
#endif
  }
  if (cfg.optimizer_impl == "fused")
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("--optimizer-impl fused needs a CUDA device and LibTorch >= 2.0 (this is {} on {}); use "
                            "auto or loop",
                            compat::torch_version(), device.str()));
  return std::make_unique<TorchOptimizer>(
      std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(cfg.learning_rate)),
      "torch::optim::Adam (per-parameter loop)");
}

}  // namespace trainscope

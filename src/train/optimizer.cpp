#include "train/optimizer.h"

#include <fmt/format.h>

#include "train/compat.h"
#include "train/lr_schedule.h"
#include "trainscope/error.h"

namespace trainscope {

namespace {

constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;  // Kingma & Ba (2015), LibTorch's defaults

class TorchOptimizer final : public StepOptimizer {
 public:
  TorchOptimizer(std::unique_ptr<torch::optim::Optimizer> o, std::string impl) : o_(std::move(o)), impl_(std::move(impl)) {}
  void zero_grad() override { o_->zero_grad(); }
  void step() override { o_->step(); }
  std::string implementation() const override { return impl_; }
  void set_learning_rate(double lr) override {
    for (auto& g : o_->param_groups()) g.options().set_lr(lr);
  }

 private:
  std::unique_ptr<torch::optim::Optimizer> o_;
  std::string impl_;
};

void set_grads_to_none(std::vector<torch::Tensor>& params) {
  for (auto& p : params) p.mutable_grad() = torch::Tensor();
}

// The device tensor that holds a scheduled learning rate (StepOptimizer::set_learning_rate):
// made on the first call on the parameters' device, then filled (one small kernel, outside any
// capture).
void fill_rate(torch::Tensor& rate, const std::vector<torch::Tensor>& params, double lr) {
  if (!rate.defined()) {
    const auto dev = params.empty() ? torch::Device(torch::kCPU) : params.front().device();
    rate = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat).device(dev));
  }
  rate.fill_(lr);
}

// Adam from tensor operations, capturable: per parameter a float32 step tensor on the
// parameter's device, incremented there; bias corrections 1 - beta^step computed from it (no
// host read). The update is torch::optim::Adam's
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// written as PyTorch's capturable single-tensor Adam does (torch/optim/adam.py), with the step
// size folded into the denominator so that addcdiv_ needs no host scalar.
class TensorAdam final : public StepOptimizer {
 public:
  TensorAdam(std::vector<torch::Tensor> params, double lr, double weight_decay = 0)
      : params_(std::move(params)), lr_(lr), decay_(weight_decay) {
    state_.resize(params_.size());
  }
  void zero_grad() override { set_grads_to_none(params_); }
  void step() override {
    torch::NoGradGuard ng;
    for (size_t i = 0; i < params_.size(); ++i)
      if (params_[i].grad().defined()) update(params_[i], state_[i]);
  }
  std::string implementation() const override {
    return decay_ > 0 ? "trainscope AdamW (tensor ops, device step counts; capturable)"
                      : "trainscope Adam (tensor ops, device step counts; capturable)";
  }
  bool capturable() const override { return true; }
  void set_learning_rate(double lr) override {
    lr_ = lr;
    fill_rate(lr_t_, params_, lr);
  }

 private:
  struct State {
    torch::Tensor step, exp_avg, exp_avg_sq;
  };
  void update(torch::Tensor& p, State& s) {
    const auto& g = p.grad();
    if (!s.step.defined()) {  // first step: eager (capture needs the state to exist already)
      s.step = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat).device(p.device()));
      s.exp_avg = torch::zeros_like(p, torch::MemoryFormat::Preserve);
      s.exp_avg_sq = torch::zeros_like(p, torch::MemoryFormat::Preserve);
    }
    const bool on_device = lr_t_.defined();  // a schedule's rate (set_learning_rate)
    if (decay_ > 0 && p.dim() >= 2) {  // decoupled weight decay (AdamW)
      if (on_device) p.mul_(1 - lr_t_ * decay_);
      else p.mul_(1 - lr_ * decay_);
    }
    s.step.add_(1);
    s.exp_avg.mul_(kBeta1).add_(g, 1 - kBeta1);
    s.exp_avg_sq.mul_(kBeta2).addcmul_(g, g, 1 - kBeta2);
    auto bias1 = 1 - torch::pow(kBeta1, s.step);
    auto bias2_sqrt = (1 - torch::pow(kBeta2, s.step)).sqrt_();
    auto neg_step_size = on_device ? -lr_t_ / bias1 : -lr_ / bias1;  // -lr / (1 - b1^t)
    // denom = (sqrt(v) / sqrt(1 - b2^t) + eps) / -step_size, so p + m / denom is the update.
    auto denom = (s.exp_avg_sq.sqrt() / (bias2_sqrt * neg_step_size)).add_(kEps / neg_step_size);
    p.addcdiv_(s.exp_avg, denom);
  }
  std::vector<torch::Tensor> params_;
  std::vector<State> state_;
  double lr_, decay_;
  torch::Tensor lr_t_;  // a scheduled rate on the device; undefined: lr_
};

// SGD with momentum from foreach tensor operations, capturable after its first (eager) step,
// which creates the momentum buffers as copies of the gradients (torch::optim::SGD's rule).
class ForeachSgd final : public StepOptimizer {
 public:
  ForeachSgd(std::vector<torch::Tensor> params, double lr, double momentum)
      : params_(std::move(params)), lr_(lr), momentum_(momentum) {}
  void zero_grad() override { set_grads_to_none(params_); }
  void step() override {
    torch::NoGradGuard ng;
    std::vector<torch::Tensor> ps, gs;
    for (auto& p : params_)
      if (p.grad().defined()) {
        ps.push_back(p);
        gs.push_back(p.grad());
      }
    if (ps.empty()) return;
    if (momentum_ == 0) return apply(ps, gs);
    if (bufs_.empty()) {
      TS_CHECK(ps.size() == params_.size(), "capturable SGD: every parameter needs a gradient on the first step");
      for (auto& g : gs) bufs_.push_back(g.clone(torch::MemoryFormat::Preserve));
    } else {
      TS_CHECK(ps.size() == bufs_.size(), "capturable SGD: the set of parameters with gradients changed");
      at::_foreach_mul_(bufs_, momentum_);
      at::_foreach_add_(bufs_, gs);
    }
    apply(ps, bufs_);
  }
  std::string implementation() const override { return "trainscope SGD (foreach tensor ops; capturable)"; }
  bool capturable() const override { return true; }
  void set_learning_rate(double lr) override {
    lr_ = lr;
    fill_rate(neg_lr_t_, params_, -lr);
  }

 private:
  // p -= lr x d: one foreach kernel at a host rate; per parameter at a scheduled device rate.
  void apply(std::vector<torch::Tensor>& ps, const std::vector<torch::Tensor>& ds) {
    if (!neg_lr_t_.defined()) return at::_foreach_add_(ps, ds, -lr_);
    for (size_t i = 0; i < ps.size(); ++i) ps[i].addcmul_(ds[i], neg_lr_t_);
  }
  std::vector<torch::Tensor> params_, bufs_;
  double lr_, momentum_;
  torch::Tensor neg_lr_t_;  // -lr of a schedule on the device; undefined: lr_
};

#if TRAINSCOPE_HAVE_FUSED_ADAM
// Same update as torch.optim.Adam(fused=True): step counters are float32 device tensors,
// incremented with one foreach kernel, then one fused kernel updates every parameter.
// Capturable after its first step (nothing is read back to the host).
class FusedAdam final : public StepOptimizer {
 public:
  FusedAdam(std::vector<torch::Tensor> params, double lr, double weight_decay)
      : params_(std::move(params)), lr_(lr), decay_(weight_decay) {
    for (auto& p : params_)
      if (p.dim() >= 2) decayed_.push_back(p);
  }
  void zero_grad() override { set_grads_to_none(params_); }
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
#if TRAINSCOPE_HAVE_FUSED_ADAM_TENSOR_LR
    if (lr_t_.defined()) {  // a schedule's rate on the device (set_learning_rate)
      if (decay_ > 0 && !decayed_.empty()) at::_foreach_mul_(decayed_, 1 - lr_t_ * decay_);  // decoupled (AdamW)
      at::_fused_adam_(ps, gs, exp_avgs_, exp_avg_sqs_, no_max, steps_, lr_t_, kBeta1, kBeta2, 0.0, kEps,
                       /*amsgrad=*/false, /*maximize=*/false, /*grad_scale=*/{}, /*found_inf=*/{});
      return;
    }
#endif
    if (decay_ > 0 && !decayed_.empty()) at::_foreach_mul_(decayed_, 1 - lr_ * decay_);  // decoupled (AdamW)
    at::_fused_adam_(ps, gs, exp_avgs_, exp_avg_sqs_, no_max, steps_, lr_, kBeta1, kBeta2, 0.0, kEps,
                     /*amsgrad=*/false, /*maximize=*/false, /*grad_scale=*/{}, /*found_inf=*/{});
  }
  // Without the tensor-rate kernel (LibTorch < 2.2) the rate stays a host scalar: right in eager
  // steps, and make_adam never hands this optimizer a schedule under capture.
  void set_learning_rate(double lr) override {
    lr_ = lr;
    if (TRAINSCOPE_HAVE_FUSED_ADAM_TENSOR_LR) fill_rate(lr_t_, params_, lr);
  }
  std::string implementation() const override {
    return decay_ > 0 ? "at::_fused_adam_ with decoupled weight decay (AdamW; fused, two kernels per step)"
                      : "at::_fused_adam_ (fused, one kernel per step)";
  }
  bool capturable() const override { return true; }

 private:
  std::vector<torch::Tensor> params_, decayed_, exp_avgs_, exp_avg_sqs_, steps_;
  double lr_, decay_;
  torch::Tensor lr_t_;
};
#endif

// at::_fused_adam_ where this build has it (compat.h), else nullptr (params left untouched).
std::unique_ptr<StepOptimizer> fused_adam(std::vector<torch::Tensor>& params, double lr, double weight_decay) {
#if TRAINSCOPE_HAVE_FUSED_ADAM
  return std::make_unique<FusedAdam>(std::move(params), lr, weight_decay);
#else
  (void)params, (void)lr, (void)weight_decay;
  return nullptr;
#endif
}

// Clips the global L2 norm of the gradients to max_norm before the wrapped optimizer's step,
// from tensor operations alone (no host read), so a clipped step can still be captured:
// g *= min(1, max_norm / (||g||_2 + 1e-6)), torch.nn.utils.clip_grad_norm_'s rule.
class ClippedOptimizer final : public StepOptimizer {
 public:
  ClippedOptimizer(std::unique_ptr<StepOptimizer> inner, std::vector<torch::Tensor> params, double max_norm)
      : inner_(std::move(inner)), params_(std::move(params)), max_norm_(max_norm) {}
  void zero_grad() override { inner_->zero_grad(); }
  void step() override {
    clip_gradients(params_, max_norm_);
    inner_->step();
  }
  std::string implementation() const override {
    return fmt::format("{}, gradient norm clipped to {}", inner_->implementation(), max_norm_);
  }
  bool capturable() const override { return inner_->capturable(); }
  void set_learning_rate(double lr) override { inner_->set_learning_rate(lr); }

 private:
  std::unique_ptr<StepOptimizer> inner_;
  std::vector<torch::Tensor> params_;
  double max_norm_;
};

std::unique_ptr<StepOptimizer> make_adam(const TrainConfig& cfg, std::vector<torch::Tensor> params,
                                         const torch::Device& device, bool capturable) {
  // A scheduled rate under capture needs the fused kernel's tensor-rate form (compat.h).
  const bool rate_ok = !capturable || !LrSchedule::of(cfg).varies() || TRAINSCOPE_HAVE_FUSED_ADAM_TENSOR_LR;
  const bool want_fused = rate_ok && (cfg.optimizer_impl == "fused" || (cfg.optimizer_impl == "auto" && device.is_cuda()));
  if (want_fused && device.is_cuda())
    if (auto fused = fused_adam(params, cfg.learning_rate, cfg.weight_decay)) return fused;
  if (cfg.optimizer_impl == "fused")
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("--optimizer-impl fused needs a CUDA device and LibTorch >= 2.0 (this is {} on {}); use "
                            "auto or loop",
                            compat::torch_version(), device.str()));
  // "loop" with capturable or weight decay, or no fused kernel here: LibTorch's Adam cannot be
  // captured, and its weight decay is L2 (coupled), not AdamW's.
  if (capturable || cfg.weight_decay > 0)
    return std::make_unique<TensorAdam>(std::move(params), cfg.learning_rate, cfg.weight_decay);
  return std::make_unique<TorchOptimizer>(
      std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(cfg.learning_rate)),
      "torch::optim::Adam (per-parameter loop)");
}

std::unique_ptr<StepOptimizer> make_sgd(const TrainConfig& cfg, std::vector<torch::Tensor> params, bool capturable) {
  if (cfg.optimizer_impl == "fused")
    throw_error(ErrorKind::kInvalidArgument, "--optimizer-impl fused is only available for adam");
  if (capturable) return std::make_unique<ForeachSgd>(std::move(params), cfg.learning_rate, cfg.momentum);
  return std::make_unique<TorchOptimizer>(
      std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(cfg.learning_rate).momentum(cfg.momentum)),
      "torch::optim::SGD (per-parameter loop)");
}

}  // namespace

std::unique_ptr<StepOptimizer> make_optimizer(const TrainConfig& cfg, std::vector<torch::Tensor> params,
                                              const torch::Device& device, bool capturable) {
  if (cfg.optimizer == "sgd" && cfg.weight_decay > 0)
    throw_error(ErrorKind::kInvalidArgument, "--weight-decay is decoupled weight decay of Adam (AdamW); use "
                                             "--optimizer adam or leave it 0 with sgd");
  std::vector<torch::Tensor> clipped = cfg.grad_clip > 0 ? params : std::vector<torch::Tensor>{};
  auto opt = cfg.optimizer == "sgd" ? make_sgd(cfg, std::move(params), capturable)
                                    : make_adam(cfg, std::move(params), device, capturable);
  if (cfg.grad_clip > 0) return std::make_unique<ClippedOptimizer>(std::move(opt), std::move(clipped), cfg.grad_clip);
  return opt;
}

void clip_gradients(const std::vector<torch::Tensor>& params, double max_norm) {
  torch::NoGradGuard ng;
  std::vector<torch::Tensor> norms, grads;
  for (const auto& p : params)
    if (p.grad().defined()) {
      grads.push_back(p.grad());
      norms.push_back(p.grad().detach().to(torch::kFloat).norm());
    }
  if (grads.empty()) return;
  auto coef = (max_norm / (torch::stack(norms).norm() + 1e-6)).clamp_max(1.0);
  for (auto& g : grads) g.mul_(coef.to(g.scalar_type()));
}

}  // namespace trainscope

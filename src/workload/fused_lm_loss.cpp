#include "workload/fused_lm_loss.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "train/compat.h"
#include "trainscope/error.h"

namespace trainscope {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The running results of the chunks: the summed loss (float32 scalar) and, when asked for, the
// gradient of the mean loss with respect to the hidden states (compute dtype, [N, d]) and the
// weight (float32 accumulator, [V, d]).
struct Sums {
  torch::Tensor loss, grad_hidden, grad_weight;
};

// The matrix products' dtype: autocast's on the hidden states' device type while it is on (a
// linear under autocast runs in it), else the hidden states' own.
at::ScalarType compute_dtype(const torch::Tensor& hidden) {
  const bool cuda = hidden.is_cuda();
  if ((cuda || hidden.is_cpu()) && compat::autocast_enabled(cuda)) return compat::autocast_dtype(cuda);
  return hidden.scalar_type();
}

// The chunk's summed loss from its float32 logits z [rows, V] and targets t, leaving exp(z - max)
// in z and returning the row sums of those [rows, 1] (the softmax's denominators): log-sum-exp
// written out in place, so the chunk holds one [rows, V] float32 tensor, not logsumexp's
// temporary beside it.
torch::Tensor add_chunk_loss(torch::Tensor& z, const torch::Tensor& t, Sums& s) {
  const auto picked = z.gather(1, t.unsqueeze(1));
  const auto max = z.amax({1}, /*keepdim=*/true);
  const auto sum = z.sub_(max).exp_().sum({1}, /*keepdim=*/true);
  s.loss.add_((sum.log() + max - picked).sum());
  return sum;
}

// The gradient of the chunk's share of the mean loss with respect to its logits, over n rows in
// all, from exp(z - max) in e and its row sums (add_chunk_loss): (softmax(z) - onehot(t)) / n =
// (e - sum · onehot(t)) / (sum · n). The one-hot term is a scatter of rows elements; the scaling is
// one pass that writes the compute dtype (no float32 gradient beside it).
torch::Tensor logit_gradient(torch::Tensor& e, const torch::Tensor& sum, const torch::Tensor& t, int64_t n,
                             at::ScalarType dtype) {
  e.scatter_add_(1, t.unsqueeze(1), sum.neg());
  const auto scale = sum.reciprocal().mul_(1.0 / static_cast<double>(n));
  if (dtype == e.scalar_type()) return e.mul_(scale);
  auto out = at::empty(e.sizes(), e.options().dtype(dtype));
  return at::mul_out(out, e, scale);
}

// One chunk of rows: h [rows, d] and w [V, d] in the compute dtype, t [rows]; `start` is the
// chunk's first row in the batch of n.
void add_chunk(const torch::Tensor& h, const torch::Tensor& w, const torch::Tensor& t, int64_t start, int64_t n,
               Sums& s) {
  auto logits = at::mm(h, w.t());
  auto z = logits.scalar_type() == at::kFloat ? logits : logits.to(at::kFloat);
  logits = torch::Tensor();  // a bfloat16 chunk's logits are not needed once widened
  const auto sum = add_chunk_loss(z, t, s);
  if (!s.grad_hidden.defined() && !s.grad_weight.defined()) return;
  const auto dz = logit_gradient(z, sum, t, n, h.scalar_type());
  if (s.grad_hidden.defined()) {
    auto rows = s.grad_hidden.narrow(0, start, h.size(0));
    at::mm_out(rows, dz, w);
  }
  if (!s.grad_weight.defined()) return;
  if (dz.scalar_type() == at::kFloat) s.grad_weight.addmm_(dz.t(), h);
  else s.grad_weight.add_(at::mm(dz.t(), h));
}

class LinearCrossEntropy : public torch::autograd::Function<LinearCrossEntropy> {
 public:
  // with_grad_hidden / with_grad_weight: compute those gradients in this pass (gradients are being
  // recorded and the input requires them).
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& hidden, const torch::Tensor& weight,
                               const torch::Tensor& targets, int64_t chunk_rows, at::ScalarType dtype,
                               bool with_grad_hidden, bool with_grad_weight) {
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);  // dtypes are explicit here
    const int64_t n = hidden.size(0);
    const auto h = hidden.to(dtype), w = weight.to(dtype);
    Sums s{at::zeros({}, hidden.options().dtype(at::kFloat)), {}, {}};
    if (with_grad_hidden) s.grad_hidden = at::empty(h.sizes(), h.options());
    if (with_grad_weight) s.grad_weight = at::zeros(w.sizes(), w.options().dtype(at::kFloat));
    for (int64_t start = 0; start < n; start += chunk_rows) {
      const int64_t rows = std::min(chunk_rows, n - start);
      add_chunk(h.narrow(0, start, rows), w, targets.narrow(0, start, rows), start, n, s);
    }
    ctx->save_for_backward({with_grad_hidden ? s.grad_hidden.to(hidden.scalar_type()) : torch::Tensor(),
                            with_grad_weight ? s.grad_weight.to(weight.scalar_type()) : torch::Tensor()});
    return s.loss.div_(static_cast<double>(n));
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    const auto saved = ctx->get_saved_variables();
    const auto& g = grad_out[0];
    auto scaled = [&](const torch::Tensor& t) { return t.defined() ? t * g.to(t.scalar_type()) : torch::Tensor(); };
    return {scaled(saved[0]), scaled(saved[1]), {}, {}, {}, {}, {}};
  }
};

void check_shapes(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& targets,
                  int64_t chunk_rows) {
  const bool fits = hidden.dim() == 2 && weight.dim() == 2 && targets.dim() == 1 && hidden.size(0) >= 1 &&
                    hidden.size(1) == weight.size(1) && targets.size(0) == hidden.size(0) &&
                    targets.scalar_type() == at::kLong && hidden.is_floating_point() && weight.is_floating_point();
  if (!fits)
    throw_error(ErrorKind::kModel,
                fmt::format("fused linear cross-entropy needs hidden [N, d] (N >= 1), weight [V, d] and int64 "
                            "targets [N]; got hidden [{}], weight [{}], targets [{}] ({}); use train.lm_loss = full "
                            "for a model of another shape",
                            fmt::join(hidden.sizes().vec(), ", "), fmt::join(weight.sizes().vec(), ", "),
                            fmt::join(targets.sizes().vec(), ", "), std::string(c10::toString(targets.scalar_type()))));
  if (chunk_rows < 1)
    throw_error(ErrorKind::kModel, fmt::format("fused linear cross-entropy: chunk of {} rows; use at least 1", chunk_rows));
}

}  // namespace

torch::Tensor linear_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                   const torch::Tensor& targets, int64_t chunk_rows) {
  check_shapes(hidden, weight, targets, chunk_rows);
  const bool recording = torch::GradMode::is_enabled();
  return LinearCrossEntropy::apply(hidden, weight, targets, chunk_rows, compute_dtype(hidden),
                                   recording && hidden.requires_grad(), recording && weight.requires_grad());
}

}  // namespace trainscope

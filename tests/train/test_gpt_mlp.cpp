// The MLP's first layer, bias and GELU (workload/gpt.h linear_gelu): one operator
// (at::_addmm_activation) on a GPU while no gradient is recorded, linear and gelu(tanh) elsewhere,
// with the same results; and the reasons it stays two operators on the CPU and in training.
#include <gtest/gtest.h>

#include <ATen/record_function.h>

#include <map>
#include <string>

#include "torch_test_helpers.h"
#include "workload/gpt.h"
#include "workload/model.h"

using namespace trainscope;

namespace {

GptShape tiny() { return {2, 32, 4, 16, 64}; }

using trainscope::test::gpu_available;
using trainscope::test::kNeedsGpu;

thread_local std::map<std::string, int>* t_ops = nullptr;

std::unique_ptr<at::ObserverContext> count_op(const at::RecordFunction& fn) {
  if (t_ops) ++(*t_ops)[fn.name()];
  return nullptr;
}

// The operators a forward pass of `m` on x runs, by name, and its logits.
std::map<std::string, int> ops_of_forward(Model& m, const torch::Tensor& x, torch::Tensor* logits = nullptr) {
  std::map<std::string, int> ops;
  t_ops = &ops;
  auto handle = at::addThreadLocalCallback(at::RecordFunctionCallback(&count_op));
  auto out = m.forward(x);
  at::removeCallback(handle);
  t_ops = nullptr;
  if (logits) *logits = out;
  return ops;
}

}  // namespace

// Why the CPU keeps linear and gelu(tanh): LibTorch's CPU kernel of _addmm_activation applies the
// exact (erf) GELU, not GPT-2's tanh approximation. Should a LibTorch change that, this fails:
// then let linear_gelu_fuses take CPU tensors too.
TEST(GptMlp, TheCpuFusedKernelAppliesTheErfGeluSoTheCpuKeepsTwoOps) {
  torch::manual_seed(31);
  auto x = torch::randn({6, 8}), w = torch::randn({12, 8}), b = torch::randn({12});
  torch::NoGradGuard ng;
  auto pre = at::addmm(b, x, w.t());
  auto fused = at::_addmm_activation(b, x, w.t(), 1, 1, /*use_gelu=*/true);
  EXPECT_LT((fused - torch::gelu(pre)).abs().max().item<double>(), 1e-6);
  EXPECT_GT((fused - torch::gelu(pre, "tanh")).abs().max().item<double>(), 1e-5);
  EXPECT_FALSE(linear_gelu_fuses(x));
  EXPECT_TRUE(torch::allclose(linear_gelu(x, w, b), torch::gelu(pre, "tanh"), 1e-6, 1e-6));
}

// Why training keeps two ops: autograd has no derivative for _addmm_activation.
TEST(GptMlp, AutogradHasNoDerivativeForTheFusedOperator) {
  auto x = torch::randn({3, 4}), w = torch::randn({5, 4}, torch::requires_grad()), b = torch::zeros({5});
  auto y = at::_addmm_activation(b, x, w.t(), 1, 1, true);
  try {
    y.sum().backward();
    ADD_FAILURE() << "backward ran: autograd can differentiate _addmm_activation now; linear_gelu_fuses may allow it "
                     "in training (check its GELU backward against gelu(tanh)'s)";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("not implemented"), std::string::npos) << e.what();
  }
}

// On the CPU every block runs c_fc as addmm then gelu, with or without gradients.
TEST(GptMlp, OnTheCpuTheFcLayerIsAddmmThenGelu) {
  torch::manual_seed(32);
  auto m = make_gpt("tiny", tiny());
  auto x = torch::randint(0, 64, {2, 16}, torch::kLong);
  auto with_grad = ops_of_forward(*m, x);
  EXPECT_EQ(with_grad["aten::gelu"], tiny().layers);
  EXPECT_EQ(with_grad["aten::_addmm_activation"], 0);
  torch::NoGradGuard ng;
  auto eval = ops_of_forward(*m, x);
  EXPECT_EQ(eval["aten::gelu"], tiny().layers);
  EXPECT_EQ(eval["aten::addmm"], 4 * tiny().layers);
}

// On a GPU without gradients (evaluation) c_fc is one operator, bias and GELU in the product's
// epilogue, and the logits equal those of the training forward (addmm, then gelu).
TEST(GptMlp, OnAGpuWithoutGradientsTheFcLayerIsOneOperator) {
  if (!gpu_available()) GTEST_SKIP() << kNeedsGpu;
  torch::manual_seed(33);
  auto m = make_gpt("tiny", tiny());
  m->to(torch::kCUDA);
  auto x = torch::randint(0, 64, {2, 16}, torch::TensorOptions().dtype(torch::kLong).device(torch::kCUDA));
  torch::Tensor train_logits, eval_logits;
  auto train = ops_of_forward(*m, x, &train_logits);
  EXPECT_EQ(train["aten::gelu"], tiny().layers);
  EXPECT_EQ(train["aten::_addmm_activation"], 0);
  torch::NoGradGuard ng;
  auto eval = ops_of_forward(*m, x, &eval_logits);
  EXPECT_EQ(eval["aten::_addmm_activation"], tiny().layers);
  EXPECT_EQ(eval["aten::gelu"], 0);
  EXPECT_EQ(eval["aten::addmm"], 3 * tiny().layers);  // c_attn, attn_proj, mlp_proj
  EXPECT_TRUE(torch::allclose(eval_logits, train_logits.detach(), 1e-4, 1e-4))
      << (eval_logits - train_logits).abs().max().item<double>();
}

#include <gtest/gtest.h>

#include <ATen/record_function.h>

#include "train/compat.h"
#include "train/optimizer.h"
#include "train/variant_exec.h"
#include "train/script_models.h"
#include "trainscope/error.h"
#include "workload/model.h"

using namespace trainscope;

TEST(Models, OutputShapes) {
  for (const auto& name : builtin_models()) {
    for (auto [c, h] : std::vector<std::pair<int64_t, int64_t>>{{1, 28}, {3, 32}}) {
      auto m = make_model(name, c, h, h, 10);
      torch::NoGradGuard ng;
      m->set_training(false);
      auto out = m->forward(torch::randn({2, c, h, h}));
      EXPECT_EQ(out.sizes(), (std::vector<int64_t>{2, 10})) << name << " " << c << "x" << h;
    }
  }
}

TEST(Models, ParameterCounts) {
  // mlp: 784*128+128 + 128*10+10
  EXPECT_EQ(make_model("mlp", 1, 28, 28, 10)->parameter_count(), 784 * 128 + 128 + 128 * 10 + 10);
  // cnn: conv1 1*32*9+32, conv2 32*64*9+64, fc1 64*7*7*128+128, fc2 128*10+10
  EXPECT_EQ(make_model("cnn", 1, 28, 28, 10)->parameter_count(),
            (9 * 32 + 32) + (32 * 64 * 9 + 64) + (64 * 49 * 128 + 128) + (128 * 10 + 10));
  // ResNet-18 with 3x3 stem, 3 input channels, 10 classes: 11,173,962 (the CIFAR variant's count).
  EXPECT_EQ(make_model("resnet18", 3, 32, 32, 10)->parameter_count(), 11173962);
  auto r1 = make_model("resnet18", 1, 28, 28, 10)->parameter_count();
  EXPECT_NEAR(static_cast<double>(r1) / 1e6, 11.2, 0.05);
}

TEST(Models, ForwardFlopsFromShapes) {
  auto mlp = make_model("mlp", 1, 28, 28, 10);
  EXPECT_DOUBLE_EQ(*count_forward_flops(*mlp, 1, 28, 28), 2.0 * (784 * 128 + 128 * 10));
  auto cnn = make_model("cnn", 1, 28, 28, 10);
  double conv1 = 2.0 * 32 * 28 * 28 * 1 * 9, conv2 = 2.0 * 64 * 14 * 14 * 32 * 9;
  double fc = 2.0 * (64 * 49 * 128 + 128 * 10);
  EXPECT_DOUBLE_EQ(*count_forward_flops(*cnn, 1, 28, 28), conv1 + conv2 + fc);
  // ResNet-18 (CIFAR variant) is ~0.56 GMAC = ~1.1 GFLOP per 32x32 sample.
  auto rn = make_model("resnet18", 3, 32, 32, 10);
  EXPECT_NEAR(*count_forward_flops(*rn, 3, 32, 32) / 1e9, 1.11, 0.03);
}

// From 64 px the ImageNet stem applies: torchvision's resnet18 is 1.81 G multiply-adds at 224x224
// (He et al. 2016, Table 1), i.e. 3.6 GFLOPs; the CIFAR stem would cost 49x the 32 px figure.
TEST(Models, Resnet18UsesTheImageNetStemFromSixtyFourPixels) {
  auto big = make_model("resnet18", 3, 224, 224, 10);
  EXPECT_NEAR(*count_forward_flops(*big, 3, 224, 224) / 1e9, 3.63, 0.08);
  EXPECT_EQ(big->parameter_count(), make_model("resnet18", 3, 32, 32, 10)->parameter_count() + 64 * 3 * (49 - 9));
  auto out = big->forward(torch::randn({2, 3, 224, 224}));
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{2, 10}));
  auto edge = make_model("resnet18", 1, 63, 100, 10);  // shorter side under 64: CIFAR stem
  EXPECT_EQ(edge->parameter_count(), make_model("resnet18", 1, 28, 28, 10)->parameter_count());
}

// Model FLOPs do not depend on the precision: counted under the bf16 variant's autocast they
// equal the fp32 count (autocast's cast wrapper once counted every matrix product twice).
TEST(Models, ForwardFlopsAreTheSameUnderBf16Autocast) {
  for (const char* name : {"mlp", "cnn"}) {
    auto m = make_model(name, 1, 28, 28, 10);
    const auto fp32 = count_forward_flops(*m, 1, 28, 28);
    Variant v;
    v.bf16 = true;
    VariantGuard guard(v, torch::kCPU);
    EXPECT_EQ(count_forward_flops(*m, 1, 28, 28), fp32) << name;
  }
}

TEST(Models, UnknownNameIsModelError) {
  try {
    make_model("resnet19", 1, 28, 28, 10);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kModel);
    EXPECT_NE(std::string(e.what()).find("resnet18"), std::string::npos);
  }
  EXPECT_THROW(make_model("/nonexistent/model.pt", 1, 28, 28, 10), Error);
}

TEST(Models, CheckpointReloadsToIdenticalOutputs) {
  torch::manual_seed(1);
  auto a = make_model("cnn", 1, 28, 28, 10);
  std::string p = ::testing::TempDir() + "cnn.pt";
  a->save(p);
  torch::manual_seed(2);
  auto b = make_model("cnn", 1, 28, 28, 10);
  auto x = torch::randn({3, 1, 28, 28});
  torch::NoGradGuard ng;
  a->set_training(false);
  b->set_training(false);
  EXPECT_FALSE(torch::equal(a->forward(x), b->forward(x)));
  b->load(p);
  EXPECT_TRUE(torch::equal(a->forward(x), b->forward(x)));
  auto wrong = make_model("mlp", 1, 28, 28, 10);
  try {
    wrong->load(p);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCheckpoint);
  }
}

// Weight sharing: one Linear(784, 784) registered under three names is one set of
// parameters, counted once (the traversal lists it three times: 1,854,170 before the fix).
TEST(Models, SharedParametersAreCountedOnce) {
  auto path = ts_test::save_shared_linear_net(::testing::TempDir() + "shared_counted.pt");
  auto m = make_model(path, 1, 28, 28, 10);
  EXPECT_EQ(m->parameter_count(), 784 * 784 + 784 + 784 * 10 + 10);  // 623,290
  EXPECT_EQ(m->parameters().size(), 4u);
  // Its checkpoint keeps the sharing: reloaded, it is still one tensor under three names.
  const std::string ckpt = ::testing::TempDir() + "shared_counted_ckpt.pt";
  m->save(ckpt);
  m->load(ckpt);
  EXPECT_EQ(m->parameter_count(), 623290);
  EXPECT_EQ(m->parameters().size(), 4u);
}

namespace {
thread_local int t_addcdiv = 0;
std::unique_ptr<at::ObserverContext> count_addcdiv(const at::RecordFunction& fn) {
  if (std::string(compat::op_name(fn)) == "aten::addcdiv_") ++t_addcdiv;
  return nullptr;
}
}  // namespace

// ... and stepped once: one SGD step without momentum moves the shared weight by lr * grad
// (3x as far before the fix), and Adam updates 4 tensors per step (8 before).
TEST(Models, SharedParametersAreSteppedOnce) {
  auto path = ts_test::save_shared_linear_net(::testing::TempDir() + "shared_stepped.pt");
  for (const char* optimizer : {"sgd", "adam"}) {
    torch::manual_seed(3);
    auto m = make_model(path, 1, 28, 28, 10);
    TrainConfig cfg;
    cfg.optimizer = optimizer;
    cfg.optimizer_impl = "loop";
    cfg.momentum = 0;
    cfg.learning_rate = 0.1;
    auto opt = make_optimizer(cfg, m->parameters(), torch::kCPU);
    auto w = m->parameters().front();  // the shared weight (a.weight, first in the traversal)
    ASSERT_EQ(w.sizes(), (std::vector<int64_t>{784, 784}));
    auto before = w.detach().clone();
    opt->zero_grad();
    torch::nn::functional::cross_entropy(m->forward(torch::randn({8, 1, 28, 28})), torch::arange(8)).backward();
    auto grad = w.grad().clone();
    t_addcdiv = 0;
    auto handle = at::addThreadLocalCallback(at::RecordFunctionCallback(&count_addcdiv));
    opt->step();
    at::removeCallback(handle);
    if (std::string(optimizer) == "sgd")
      EXPECT_TRUE(torch::allclose(before - w.detach(), 0.1 * grad, 1e-4, 1e-6))
          << "moved " << (before - w.detach()).abs().sum().item<double>() << " instead of "
          << (0.1 * grad).abs().sum().item<double>();
    else
      EXPECT_EQ(t_addcdiv, 4) << "one Adam update per distinct parameter tensor";
  }
}

// Run ids: a name taken by an earlier entry of the list gets the first free "-2", "-3", ...
TEST(Models, RunIdNamesAreUniqueInListOrder) {
  EXPECT_EQ(run_id_model_names({"mlp", "/x/mlp.pt", "cnn", "/y/mlp.pth", "/z/mlp-2.ts"}),
            (std::vector<std::string>{"mlp", "mlp-2", "cnn", "mlp-3", "mlp-2-2"}));
  EXPECT_EQ(run_id_model_names({"/x/resnet.pt", "mlp"}), (std::vector<std::string>{"resnet", "mlp"}));
}

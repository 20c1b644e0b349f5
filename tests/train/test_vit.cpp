// The built-in vision transformers (src/workload/vit.h): timm's parameter counts, the FLOP count
// against the model card, the patch size rule, the two attention paths, timm's initialisation,
// check_model_fits, checkpoints, and a ViT that learns.
#include <gtest/gtest.h>

#include <cmath>

#include "test_helpers.h"
#include "trainscope/error.h"
#include "workload/model.h"
#include "workload/vit.h"

using namespace trainscope;

namespace {

// A small ViT for the learning test: the code path of vit-s at a CPU test's cost.
VitShape small_vit(int64_t classes) { return {2, 32, 4, 64, 1, 16, 16, 4, classes}; }

// Bright rows band `c` of 4 on noise: learnable from its patches.
std::pair<torch::Tensor, torch::Tensor> band_images(int64_t n) {
  auto y = torch::randint(0, 4, {n}, torch::kLong);
  auto x = 0.3 * torch::randn({n, 1, 16, 16});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = y[i].item<int64_t>();
    x.index({i, 0, torch::indexing::Slice(4 * c, 4 * c + 4)}) += 2.0;
  }
  return {x, y};
}

}  // namespace

// timm 'vit_small_patch16_224' and 'vit_tiny_patch16_224' (num_classes 1000): 22,050,664 and
// 5,717,416 parameters; the counts are also worked out from the shape (vit_parameter_count).
TEST(Vit, ParameterCountsAreTimms) {
  const auto s = vit_preset("vit-s", 3, 224, 224, 1000), ti = vit_preset("vit-ti", 3, 224, 224, 1000);
  EXPECT_EQ(s.patch, 16);
  EXPECT_EQ(vit_parameter_count(s), 22050664);
  EXPECT_EQ(vit_parameter_count(ti), 5717416);
  EXPECT_EQ(make_model("vit-s", 3, 224, 224, 1000)->parameter_count(), 22050664);
  EXPECT_EQ(make_model("vit-ti", 3, 224, 224, 1000)->parameter_count(), 5717416);
  // 28 px grey, 10 classes: patch 4, 49 patches + the class token
  const auto mnist = vit_preset("vit-s", 1, 28, 28, 10);
  EXPECT_EQ(mnist.patch, 4);
  EXPECT_EQ(make_model("vit-s", 1, 28, 28, 10)->parameter_count(), vit_parameter_count(mnist));
}

// timm's model card: ViT-S/16 at 224 px is 4.6 GMACs, ViT-Ti/16 1.3 GMACs (2 FLOPs per MAC); the
// operator count equals the formula (patch convolution, linear layers, attention's two products).
TEST(Vit, ForwardFlopsMatchTheModelCard) {
  for (auto [name, gmacs] : std::vector<std::pair<const char*, double>>{{"vit-s", 4.6}, {"vit-ti", 1.3}}) {
    auto m = make_model(name, 3, 224, 224, 1000);
    const double counted = *count_forward_flops(*m, 3, 224, 224);
    EXPECT_NEAR(counted, vit_forward_flops(vit_preset(name, 3, 224, 224, 1000)), 1e-9 * counted) << name;
    EXPECT_NEAR(counted / 2e9, gmacs, 0.05) << name;
  }
  auto small = make_model("vit-ti", 1, 28, 28, 10);
  EXPECT_NEAR(*count_forward_flops(*small, 1, 28, 28), vit_forward_flops(vit_preset("vit-ti", 1, 28, 28, 10)), 1.0);
}

TEST(Vit, OutputShapeAndPatchSize) {
  EXPECT_EQ(vit_patch_size(28, 28), 4);
  EXPECT_EQ(vit_patch_size(63, 200), 4);
  EXPECT_EQ(vit_patch_size(64, 64), 16);
  torch::NoGradGuard ng;
  for (auto [c, h, classes] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 28, 10}, {3, 32, 10}, {3, 64, 7}}) {
    auto m = make_model("vit-ti", c, h, h, classes);
    m->set_training(false);
    EXPECT_EQ(m->forward(torch::randn({2, c, h, h})).sizes(), (std::vector<int64_t>{2, classes})) << h;
  }
  // a side that is not a multiple of the patch: the error names the size and the fix
  const std::string msg = test::what_of([] { make_model("vit-s", 3, 100, 100, 10); });
  EXPECT_NE(msg.find("100 x 100"), std::string::npos) << msg;
  EXPECT_NE(msg.find("multiples of 16"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--image-size 96"), std::string::npos) << msg;
  try {
    make_model("vit-ti", 1, 30, 30, 10);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kModel);
  }
  EXPECT_EQ(model_task("vit-s"), "classification");
}

// SDPA (LibTorch >= 2.0) and the written-out softmax(QK^T/sqrt(d))V agree, for queries and keys
// of different lengths; every position sees every position (not causal).
TEST(Vit, TheTwoAttentionPathsAgree) {
  torch::manual_seed(2);
  auto q = torch::randn({2, 3, 7, 8}), k = torch::randn({2, 3, 5, 8}), v = torch::randn({2, 3, 5, 8});
  auto fast = bidirectional_attention(q, k, v), math = bidirectional_attention_math(q, k, v);
  ASSERT_EQ(fast.sizes(), (std::vector<int64_t>{2, 3, 7, 8}));
  EXPECT_TRUE(torch::allclose(fast, math, 1e-5, 1e-5)) << (fast - math).abs().max().item<double>();
  // by hand: a zero query weighs every key alike, so its output is the mean of the values
  auto zero_q = torch::zeros({2, 3, 1, 8});
  EXPECT_TRUE(torch::allclose(bidirectional_attention(zero_q, k, v), v.mean(2, true), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(bidirectional_attention_math(zero_q, k, v), v.mean(2, true), 1e-5, 1e-6));
  EXPECT_FALSE(bidirectional_attention_backend(q, k, v).empty());
}

// timm's init_weights: linear weights std 0.02 and biases 0, the position embedding std 0.02,
// the class token std 1e-6, LayerNorms 1 and 0.
TEST(Vit, InitialisationIsTimms) {
  torch::manual_seed(5);
  auto m = make_model("vit-s", 3, 224, 224, 1000);
  int linears = 0;
  for (auto& p : m->parameters()) {
    const auto n = p.numel();
    if (p.dim() == 2 && n >= 384 * 384) {  // qkv, proj, fc1, fc2, head
      EXPECT_NEAR(p.std().item<double>(), 0.02, 0.001);
      ++linears;
    }
  }
  EXPECT_EQ(linears, 12 * 4 + 1);
  auto params = m->parameters();
  // LibTorch's order: the module's own parameters (cls_token, pos_embed), then its submodules'
  // (patch_embed weight and bias, blocks.0.norm1 weight and bias, blocks.0.qkv weight and bias, ...)
  const auto& cls = params[0];
  const auto& pos = params[1];
  ASSERT_EQ(cls.sizes(), (std::vector<int64_t>{1, 1, 384}));
  ASSERT_EQ(pos.sizes(), (std::vector<int64_t>{1, 197, 384}));
  EXPECT_LT(cls.abs().max().item<double>(), 1e-5);
  EXPECT_NEAR(pos.std().item<double>(), 0.02, 0.001);
  EXPECT_EQ(params[4].sizes(), (std::vector<int64_t>{384}));  // blocks.0.norm1.weight
  EXPECT_TRUE(torch::equal(params[4], torch::ones({384})));
  EXPECT_TRUE(torch::equal(params[7], torch::zeros({1152})));  // blocks.0.qkv.bias
}

TEST(Vit, FitsCheckModelFitsAndRefusesOtherClasses) {
  auto m = make_model("vit-ti", 3, 32, 32, 10);
  auto x = torch::randn({3, 3, 32, 32});
  EXPECT_NO_THROW(check_model_fits(*m, x, 10, true, "model 'vit-ti'"));
  const std::string msg = test::what_of([&] { check_model_fits(*m, x, 100, true, "model 'vit-ti'"); });
  EXPECT_NE(msg.find("model 'vit-ti'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("100 classes"), std::string::npos) << msg;
}

TEST(Vit, CheckpointReloadsToIdenticalOutputs) {
  torch::manual_seed(1);
  auto a = make_model("vit-ti", 1, 28, 28, 10);
  const std::string p = ::testing::TempDir() + "vit_ti.pt";
  a->save(p);
  torch::manual_seed(2);
  auto b = make_model("vit-ti", 1, 28, 28, 10);
  auto x = torch::randn({3, 1, 28, 28});
  torch::NoGradGuard ng;
  a->set_training(false);
  b->set_training(false);
  EXPECT_FALSE(torch::equal(a->forward(x), b->forward(x)));
  b->load(p);
  EXPECT_TRUE(torch::equal(a->forward(x), b->forward(x)));
  // another data shape (32 px: 65 tokens, not 50) does not fit the checkpoint
  auto other = make_model("vit-ti", 1, 32, 32, 10);
  try {
    other->load(p);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCheckpoint);
    EXPECT_NE(std::string(e.what()).find("pos_embed"), std::string::npos) << e.what();
  }
}

TEST(Vit, LearnsBandedImages) {
  torch::manual_seed(4);
  auto m = make_vit("small", small_vit(4));
  torch::optim::AdamW opt(m->parameters(), torch::optim::AdamWOptions(1e-3));
  auto [x, y] = band_images(64);
  double first = 0, last = 0;
  for (int i = 0; i < 100; ++i) {
    opt.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(m->forward(x), y);
    loss.backward();
    opt.step();
    (i == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_NEAR(first, std::log(4.0), 0.3);  // chance level at initialisation
  EXPECT_LT(last, first / 4) << first << " -> " << last;
}

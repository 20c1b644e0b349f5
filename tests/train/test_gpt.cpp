// The built-in GPT models: causality, the two attention paths, GPT-2's parameter count and the
// PaLM FLOP formula, the loss at initialisation, and a model that learns.
#include <gtest/gtest.h>

#include <cmath>

#include "train/task_loss.h"
#include "trainscope/error.h"
#include "workload/gpt.h"
#include "workload/model.h"

using namespace trainscope;

namespace {

GptShape tiny(int64_t vocab = 64) { return {2, 32, 4, 16, vocab}; }

}  // namespace

TEST(Gpt, NoFutureTokenLeaks) {
  torch::manual_seed(1);
  auto m = make_gpt("tiny", tiny());
  m->set_training(false);
  torch::NoGradGuard ng;
  auto x = torch::randint(0, 64, {2, 16}, torch::kLong);
  auto a = m->forward(x);
  EXPECT_EQ(a.sizes(), (std::vector<int64_t>{2, 16, 64}));
  for (int64_t t : {0, 5, 14}) {
    auto changed = x.clone();
    changed.index_put_({torch::indexing::Slice(), t + 1}, (x.index({torch::indexing::Slice(), t + 1}) + 1) % 64);
    auto b = m->forward(changed);
    // positions <= t see the same tokens: the same logits; position t + 1 sees the change
    EXPECT_TRUE(torch::allclose(a.narrow(1, 0, t + 1), b.narrow(1, 0, t + 1), 1e-5, 1e-6)) << "t=" << t;
    EXPECT_FALSE(torch::allclose(a.narrow(1, t + 1, 1), b.narrow(1, t + 1, 1), 1e-5, 1e-6)) << "t=" << t;
  }
}

TEST(Gpt, TheTwoAttentionPathsAgree) {
  torch::manual_seed(2);
  auto q = torch::randn({2, 3, 7, 8}), k = torch::randn({2, 3, 7, 8}), v = torch::randn({2, 3, 7, 8});
  auto fast = causal_attention(q, k, v), math = causal_attention_math(q, k, v);
  EXPECT_TRUE(torch::allclose(fast, math, 1e-5, 1e-5)) << (fast - math).abs().max().item<double>();
  // by hand for the first position: it attends to itself only
  EXPECT_TRUE(torch::allclose(math.select(2, 0), v.select(2, 0), 1e-6, 1e-6));
  EXPECT_FALSE(attention_backend(q, k, v).empty());
}

TEST(Gpt, Gpt2ParameterCountIsTheReleasedModels) {
  // GPT-2 small at vocab 50257: 124,439,808 parameters (wte 38.6 M + wpe 0.79 M + 12 blocks of
  // 7,087,872 + ln_f 1,536); the FLOP count leaves out the position embedding (1024 x 768).
  const GptShape s = gpt_preset("gpt2", 50257);
  EXPECT_EQ(gpt_flop_parameters(s) + s.context * s.d_model, 124439808);
  EXPECT_DOUBLE_EQ(gpt_train_flops_per_token(s, 1024),
                   6.0 * 123653376 + 12.0 * 12 * 768 * 1024);
  const GptShape mini = gpt_preset("gpt-mini", 256);
  auto m = make_gpt("gpt-mini", mini);
  EXPECT_EQ(m->parameter_count(), gpt_flop_parameters(mini) + mini.context * mini.d_model);
}

TEST(Gpt, LossAtInitialisationIsAboutLnV) {
  torch::manual_seed(3);
  const int64_t V = 256;
  auto m = make_gpt("tiny", tiny(V));
  torch::NoGradGuard ng;
  auto x = torch::randint(0, V, {8, 16}, torch::kLong), y = torch::randint(0, V, {8, 16}, torch::kLong);
  const double loss = task_loss(m->forward(x), y).item<double>();
  EXPECT_NEAR(loss, std::log(static_cast<double>(V)), 0.1);
}

TEST(Gpt, LearnsARepeatingSequence) {
  torch::manual_seed(4);
  auto m = make_gpt("tiny", tiny(16));
  torch::optim::AdamW opt(m->parameters(), torch::optim::AdamWOptions(3e-3));
  auto seq = torch::arange(17, torch::kLong).remainder(5);  // 0 1 2 3 4 0 1 ...
  auto x = seq.narrow(0, 0, 16).unsqueeze(0).repeat({4, 1}), y = seq.narrow(0, 1, 16).unsqueeze(0).repeat({4, 1});
  double first = 0, last = 0;
  for (int i = 0; i < 60; ++i) {
    opt.zero_grad();
    auto loss = task_loss(m->forward(x), y);
    loss.backward();
    opt.step();
    (i == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, first / 4) << first << " -> " << last;
}

TEST(Gpt, ModelFactoryTakesTokenShapesAndRefusesImages) {
  auto m = make_model("gpt-mini", 1, 1, 64, 256);  // T 64 within the context of 256
  EXPECT_EQ(m->parameter_count(), gpt_flop_parameters(lm_model_shape("gpt-mini", 64, 256)) + 256 * 384);
  EXPECT_EQ(lm_model_shape("gpt2", 1024, 50257).vocab, 50304);  // padded to a multiple of 64
  EXPECT_EQ(lm_model_shape("gpt-mini", 512, 256).context, 512);  // the context grows to the windows
  EXPECT_EQ(model_task("gpt2"), "causal_lm");
  EXPECT_EQ(model_task("mlp"), "classification");
  try {
    make_model("gpt-mini", 1, 28, 28, 10);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--data-format text"), std::string::npos) << e.what();
  }
  try {
    make_gpt("odd", {2, 30, 4, 16, 64});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not divisible"), std::string::npos) << e.what();
  }
}

TEST(Gpt, CheckModelFitsTakesTokenWindows) {
  auto m = make_model("gpt-mini", 1, 1, 32, 256);
  auto x = torch::zeros({3, 32}, torch::kLong);
  EXPECT_NO_THROW(check_model_fits(*m, x, 256, true, "model 'gpt-mini'"));
  auto img = make_model("mlp", 1, 1, 32, 256);
  EXPECT_THROW(check_model_fits(*img, x, 256, true, "model 'mlp'"), Error);
}

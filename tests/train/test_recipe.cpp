// The training recipe (docs/language-models.md#the-training-recipe): gradient accumulation, the
// learning-rate schedule, and time to a target validation loss, on an image model and a language
// model.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "train/lr_schedule.h"
#include "train/optimizer.h"
#include "train/trainer.h"
#include "train_helpers.h"
#include "trainscope/dataset.h"
#include "trainscope/error.h"

using namespace trainscope;
using test::synthetic_workload;

namespace {

RunSpec spec(const std::string& model, int64_t batch) {
  RunSpec s;
  s.run_id = "t";
  s.device = "cpu";
  s.model = model;
  s.batch_size = batch;
  s.train.epochs = 1;
  s.train.warmup_steps = 1;
  s.train.min_time_s = 0;
  s.train.nan_check_interval = 1;
  s.origin = std::chrono::steady_clock::now();
  return s;
}

// A byte-token workload from a generated text (windows of 16 tokens), and a one-block gpt-mini.
Workload text_workload() {
  const std::string dir = ::testing::TempDir() + "recipe_text/";
  std::filesystem::create_directories(dir);
  std::string text;
  for (int i = 0; i < 6000; ++i) text.push_back(static_cast<char>('a' + (i * 7 + i / 13) % 26));
  std::ofstream(dir + "t.txt", std::ios::binary) << text;
  DataConfig d;
  d.format = "text";
  d.path = dir + "t.txt";
  d.seq_len = 16;
  d.test_fraction = 0.1;
  d.eval_windows = 0;
  return make_workload(load_datasets(d, 5));
}

RunSpec lm_spec(int64_t batch) {
  RunSpec s = spec("gpt-mini", batch);
  s.train.lm_layers = 1;
  s.train.lm_width = 32;
  s.train.lm_heads = 2;
  return s;
}

// Trains `steps` optimizer steps with SGD (whose update scales with the gradient: a missing 1/N
// would show, where Adam's normalisation would hide it) and returns the record.
RunRecord train_steps(RunSpec s, const Workload& w, int64_t accum, int64_t steps) {
  s.train.optimizer = "sgd";
  s.train.learning_rate = 0.05;
  s.train.grad_accum = accum;
  s.train.max_steps = steps;
  TrainHooks hooks;
  return train_run(s, w, hooks);
}

void expect_same_training(const RunRecord& one, const RunRecord& accumulated) {
  ASSERT_EQ(one.status, RunStatus::kOk) << one.failure_reason;
  ASSERT_EQ(accumulated.status, RunStatus::kOk) << accumulated.failure_reason;
  EXPECT_EQ(one.steps_completed, accumulated.steps_completed);
  ASSERT_EQ(one.loss_checks.size(), accumulated.loss_checks.size());
  for (size_t i = 0; i < one.loss_checks.size(); ++i)  // every step's batch loss, from the same weights
    EXPECT_NEAR(one.loss_checks[i].loss, accumulated.loss_checks[i].loss, 1e-4 * std::fabs(one.loss_checks[i].loss))
        << "step " << i + 1;
  ASSERT_TRUE(one.epochs.back().test_loss && accumulated.epochs.back().test_loss);
  EXPECT_NEAR(*one.epochs.back().test_loss, *accumulated.epochs.back().test_loss, 1e-4 * *one.epochs.back().test_loss);
  EXPECT_EQ(one.epochs.back().samples, accumulated.epochs.back().samples);  // every micro-batch's samples count
}

}  // namespace

TEST(LrSchedule, WarmUpThenCosineToTheMinimumAsNanoGpt) {
  const LrSchedule s{.lr = 6e-4, .lr_min = 6e-5, .warmup_steps = 10, .decay_steps = 110};
  EXPECT_TRUE(s.varies());
  EXPECT_DOUBLE_EQ(s.at(0), 6e-4 * 1 / 11);     // warm-up start: (0 + 1) / (warmup + 1)
  EXPECT_DOUBLE_EQ(s.at(9), 6e-4 * 10 / 11);    // warm-up's last step
  EXPECT_DOUBLE_EQ(s.at(10), 6e-4);             // warm-up end: the peak, the cosine's start
  EXPECT_NEAR(s.at(60), (6e-4 + 6e-5) / 2, 1e-15);  // mid-decay: cos(pi/2) = 0, halfway
  EXPECT_NEAR(s.at(35), 6e-5 + 0.5 * (1 + std::cos(M_PI * 0.25)) * (6e-4 - 6e-5), 1e-15);
  EXPECT_DOUBLE_EQ(s.at(110), 6e-5);            // after the decay: the minimum
  EXPECT_DOUBLE_EQ(s.at(100000), 6e-5);
  for (int64_t i = 11; i < 110; ++i) EXPECT_LT(s.at(i), s.at(i - 1)) << i;  // falls monotonically
  const LrSchedule constant{.lr = 1e-3};
  EXPECT_FALSE(constant.varies());
  EXPECT_DOUBLE_EQ(constant.at(0), 1e-3);
  EXPECT_DOUBLE_EQ(constant.at(12345), 1e-3);
  const LrSchedule warm_only{.lr = 1e-3, .warmup_steps = 4};
  EXPECT_DOUBLE_EQ(warm_only.at(4), 1e-3);
  EXPECT_DOUBLE_EQ(warm_only.at(1000), 1e-3);  // no decay
  EXPECT_NE(s.describe().find("cosine"), std::string::npos) << s.describe();
}

// A rate set through set_learning_rate (a device tensor for the capturable optimizers) gives the
// update of the same rate given as the config's host scalar.
TEST(LrSchedule, ARateSetOnTheOptimizerEqualsTheSameConstantRate) {
  struct Case {
    std::string optimizer;
    bool capturable;
    double weight_decay;
  };
  for (const Case& c : {Case{"adam", true, 0.1}, Case{"adam", false, 0.0}, Case{"sgd", true, 0.0}, Case{"sgd", false, 0.0}}) {
    SCOPED_TRACE(c.optimizer + (c.capturable ? " capturable" : " loop"));
    torch::manual_seed(3);
    auto p0 = torch::randn({4, 3});
    auto g = torch::randn({4, 3});
    TrainConfig fixed;
    fixed.optimizer = c.optimizer;
    fixed.learning_rate = 0.01;
    fixed.weight_decay = c.weight_decay;
    TrainConfig moved = fixed;
    moved.learning_rate = 1.0;  // replaced by set_learning_rate before every step
    auto a = p0.clone().requires_grad_(true), b = p0.clone().requires_grad_(true);
    auto oa = make_optimizer(fixed, {a}, torch::kCPU, c.capturable);
    auto ob = make_optimizer(moved, {b}, torch::kCPU, c.capturable);
    for (int step = 0; step < 3; ++step) {
      a.mutable_grad() = g.clone();
      b.mutable_grad() = g.clone();
      ob->set_learning_rate(0.01);
      oa->step();
      ob->step();
    }
    EXPECT_TRUE(torch::allclose(a, b, 1e-6, 1e-7)) << (a - b).abs().max().item<double>();
    EXPECT_FALSE(torch::allclose(a, p0));  // it moved
  }
}

// Each step's learning rate is recorded with its loss (nan_check_interval 1: every step).
TEST(LrSchedule, EveryStepRecordsTheScheduledRate) {
  auto w = synthetic_workload(512, 64, 8);
  RunSpec s = spec("mlp", 32);
  s.train.learning_rate = 0.01;
  s.train.lr_warmup_steps = 3;
  s.train.lr_decay_steps = 10;
  s.train.lr_min = 0.001;
  TrainHooks hooks;
  const RunRecord r = train_run(s, w, hooks);
  ASSERT_EQ(r.status, RunStatus::kOk) << r.failure_reason;
  const LrSchedule expected = LrSchedule::of(s.train);
  ASSERT_EQ(r.loss_checks.size(), 16u);
  for (const auto& c : r.loss_checks) {
    ASSERT_TRUE(c.learning_rate);
    EXPECT_DOUBLE_EQ(*c.learning_rate, expected.at(c.step - 1)) << "step " << c.step;
  }
  EXPECT_DOUBLE_EQ(*r.loss_checks.back().learning_rate, 0.001);
  EXPECT_EQ(r.lr_schedule, expected.describe());
}

TEST(GradAccum, MicroBatchesEqualOneBatchOnAnImageModel) {
  auto w = synthetic_workload(512, 64, 8);
  const RunRecord one = train_steps(spec("mlp", 32), w, 1, 4);
  const RunRecord four = train_steps(spec("mlp", 8), w, 4, 4);
  expect_same_training(one, four);
  EXPECT_EQ(four.grad_accum, 4);
  EXPECT_EQ(four.batch_size, 8);
  EXPECT_EQ(four.epochs.back().samples, 4 * 32);
}

TEST(GradAccum, MicroBatchesEqualOneBatchOnALanguageModel) {
  const Workload w = text_workload();
  const RunRecord one = train_steps(lm_spec(8), w, 1, 3);
  const RunRecord two = train_steps(lm_spec(4), w, 2, 3);
  expect_same_training(one, two);
  ASSERT_TRUE(two.language_model);
  EXPECT_EQ(two.language_model->seq_len, 16);
}

// An epoch whose last batch is short: the micro-batches' weights follow their sizes, so the mean
// loss is still the batch's (44 samples at 4 x 8: the last step holds 12, micro-batches of 8 and 4).
TEST(GradAccum, AShortLastBatchStillEqualsOneBatch) {
  auto w = synthetic_workload(44, 16, 8);
  expect_same_training(train_steps(spec("mlp", 32), w, 1, 0), train_steps(spec("mlp", 8), w, 4, 0));
}

TEST(TargetLoss, AReachableTargetEndsTheRunWithTimeAndTokens) {
  const Workload w = text_workload();
  RunSpec s = lm_spec(4);
  s.train.target_loss = 100;  // above ln(256): the first evaluation reaches it
  s.train.eval_every_steps = 2;
  TrainHooks hooks;
  const RunRecord r = train_run(s, w, hooks);
  ASSERT_EQ(r.status, RunStatus::kOk) << r.failure_reason;
  ASSERT_TRUE(r.language_model);
  const auto& l = *r.language_model;
  ASSERT_TRUE(l.target_loss_reached && *l.target_loss_reached);
  EXPECT_EQ(*l.steps_to_target_loss, 2);
  EXPECT_EQ(*l.tokens_to_target_loss, 2 * 4 * 16);
  EXPECT_GT(*l.time_to_target_loss_s, 0);
  EXPECT_EQ(r.steps_completed, 2);
  EXPECT_EQ(r.stop_reason, "target_loss");
  EXPECT_LT(*l.best_val_loss, 100);
}

TEST(TargetLoss, AMissedTargetSaysSoAndKeepsTheBestLoss) {
  const Workload w = text_workload();
  RunSpec s = lm_spec(4);
  s.train.target_loss = 0.001;
  s.train.max_steps = 3;
  TrainHooks hooks;
  const RunRecord r = train_run(s, w, hooks);
  ASSERT_EQ(r.status, RunStatus::kOk) << r.failure_reason;
  const auto& l = *r.language_model;
  EXPECT_FALSE(*l.target_loss_reached);
  EXPECT_FALSE(l.time_to_target_loss_s);
  ASSERT_TRUE(l.best_val_loss);
  bool noted = false;
  for (const auto& n : r.notes) noted |= n.find("target validation loss") != std::string::npos;
  EXPECT_TRUE(noted);
}

// The graphs variant captures one micro-batch's forward and backward: with --grad-accum > 1 the
// run trains eagerly and says why (before any capture is tried), and the schedule still applies.
TEST(GradAccum, GraphsFallBackToEagerNamingGradAccum) {
  auto w = synthetic_workload(256, 64, 8);
  RunSpec s = spec("mlp", 8);
  s.variant = "graphs";
  s.train.force_graph_capture = true;
  s.train.grad_accum = 2;
  s.train.lr_warmup_steps = 4;
  TrainHooks hooks;
  const RunRecord r = train_run(s, w, hooks);
  ASSERT_EQ(r.status, RunStatus::kOk) << r.failure_reason;
  EXPECT_NE(r.variant_note.find("graphs fell back to eager: --grad-accum 2 > 1"), std::string::npos) << r.variant_note;
  EXPECT_EQ(r.steps_completed, 16);
  ASSERT_FALSE(r.loss_checks.empty());
  EXPECT_DOUBLE_EQ(*r.loss_checks.front().learning_rate, 1e-3 / 5);  // warm-up: lr x 1 / (4 + 1)
}

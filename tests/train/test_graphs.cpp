// Capturable optimizers (train/optimizer.h) and the captured training step (train/graph_step.h).
// The CPU tests run everywhere; the GPU tests need a CUDA build of trainscope and a CUDA device
// and are skipped with a message otherwise (bench/gpu/build_and_run.sh stage `graphs` runs them).
#include <gtest/gtest.h>

#include <torch/script.h>

#include <cmath>
#include <limits>
#include <iostream>
#include <string>
#include <vector>

#include "torch_test_helpers.h"
#include "train/graph_step.h"
#include "train/step_sums.h"
#include "train/optimizer.h"
#include "trainscope/error.h"
#include "workload/model.h"

using namespace trainscope;

namespace {

// The plain forward-and-loss of model m (graph_step.h StepForward): its logits and their loss.
StepForward plain_step(Model& m) {
  return [&m](const torch::Tensor& x, const torch::Tensor& y) { return loss_of_logits(m.forward(x), y); };
}

struct Batch {
  torch::Tensor x, y;
};

std::vector<Batch> make_batches(int n, int64_t b, const torch::Device& device) {
  torch::manual_seed(7);
  std::vector<Batch> out;
  for (int i = 0; i < n; ++i)
    out.push_back({torch::randn({b, 1, 8, 8}).to(device), torch::randint(0, 10, {b}, torch::kLong).to(device)});
  return out;
}

std::unique_ptr<Model> seeded_model(const std::string& name, const torch::Device& device) {
  torch::manual_seed(1);
  auto m = make_model(name, 1, 8, 8, 10);
  m->to(device);
  m->set_training(true);
  return m;
}

TrainConfig config(const std::string& optimizer, double lr, double momentum = 0.9) {
  TrainConfig cfg;
  cfg.optimizer = optimizer;
  cfg.learning_rate = lr;
  cfg.momentum = momentum;
  cfg.optimizer_impl = "loop";
  return cfg;
}

void eager_steps(Model& m, StepOptimizer& opt, const std::vector<Batch>& batches) {
  for (const auto& b : batches) {
    opt.zero_grad();
    torch::nn::functional::cross_entropy(m.forward(b.x), b.y).backward();
    opt.step();
  }
}

std::vector<torch::Tensor> snapshot(Model& m) {
  std::vector<torch::Tensor> out;
  for (auto& p : m.parameters()) out.push_back(p.detach().cpu().clone());
  return out;
}

double max_abs_diff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, (a[i] - b[i]).abs().max().item<double>());
  return d;
}

// ||a - b|| / ||a - before|| over all parameters: how far b is from a, relative to how far
// training moved a.
double relative_distance(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b,
                         const std::vector<torch::Tensor>& before) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]).pow(2).sum().item<double>();
    den += (a[i] - before[i]).pow(2).sum().item<double>();
  }
  return std::sqrt(num / den);
}

// A smooth network (tanh, no ReLU or max-pool kinks) for the optimizer comparisons: with
// ReLU, a pre-activation that is 0 in one run and 1e-9 in the other (float32 rounding of the
// same sum in another order) gives that weight a zero gradient on one side and an Adam update
// of about lr / 10 on the other, so two correct Adams drift apart by ~lr per step on a few
// elements; the comparison would test rounding, not the update rule.
torch::nn::Sequential smooth_net(const std::string& kind) {
  torch::manual_seed(1);
  namespace nn = torch::nn;
  if (kind == "mlp") return nn::Sequential(nn::Flatten(), nn::Linear(64, 32), nn::Tanh(), nn::Linear(32, 10));
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 4, 3)), nn::Tanh(), nn::Flatten(), nn::Linear(4 * 6 * 6, 10));
}

std::vector<torch::Tensor> snapshot(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  for (auto& p : params) out.push_back(p.detach().cpu().clone());
  return out;
}

// Trains twin networks from the same initial weights on the same 20 batches, one with
// LibTorch's optimizer, one with the capturable one, and returns {max |difference|, max
// |movement|} over all parameter elements.
std::pair<double, double> twin_difference(const std::string& kind, const TrainConfig& cfg) {
  auto batches = make_batches(20, 16, torch::kCPU);
  auto a = smooth_net(kind);
  auto b = smooth_net(kind);
  auto before = snapshot(a->parameters());
  auto ref = make_optimizer(cfg, a->parameters(), torch::kCPU);
  auto cap = make_optimizer(cfg, b->parameters(), torch::kCPU, /*capturable=*/true);
  EXPECT_FALSE(ref->capturable()) << ref->implementation();
  EXPECT_TRUE(cap->capturable()) << cap->implementation();
  for (auto [net, opt] : {std::pair{a, ref.get()}, std::pair{b, cap.get()}})
    for (const auto& batch : batches) {
      opt->zero_grad();
      torch::nn::functional::cross_entropy(net->forward(batch.x), batch.y).backward();
      opt->step();
    }
  auto pa = snapshot(a->parameters());
  return {max_abs_diff(pa, snapshot(b->parameters())), max_abs_diff(pa, before)};
}

using trainscope::test::gpu_available;
using trainscope::test::kNeedsGpu;

}  // namespace

// Tolerance: float32 arithmetic in a different order (bias corrections from a float32 step
// tensor instead of double host scalars) differs by a few ulp per step; after 20 steps of
// lr 1e-2 (parameters move by ~0.1) every parameter element agrees to 1e-5.
TEST(CapturableOptimizers, AdamMatchesTorchAdamAfter20Steps) {
  for (const char* model : {"mlp", "cnn"}) {
    auto [diff, moved] = twin_difference(model, config("adam", 1e-2));
    std::cout << model << ": max |capturable - torch::optim::Adam| " << diff << ", moved " << moved << "\n";
    EXPECT_LT(diff, 1e-5) << model;
    EXPECT_GT(moved, 1e-2) << model << ": the parameters must have moved for the comparison to mean anything";
  }
}

TEST(CapturableOptimizers, SgdMatchesTorchSgdAfter20Steps) {
  for (double momentum : {0.9, 0.0}) {
    auto [diff, moved] = twin_difference("cnn", config("sgd", 5e-2, momentum));
    std::cout << "momentum " << momentum << ": max |capturable - torch::optim::SGD| " << diff << ", moved " << moved
              << "\n";
    EXPECT_LT(diff, 1e-5) << "momentum " << momentum;
    EXPECT_GT(moved, 1e-3) << "momentum " << momentum;
  }
}

TEST(CapturableOptimizers, ZeroGradSetsGradientsToNone) {
  for (const char* opt_name : {"adam", "sgd"}) {
    auto m = seeded_model("mlp", torch::kCPU);
    auto opt = make_optimizer(config(opt_name, 1e-3), m->parameters(), torch::kCPU, true);
    eager_steps(*m, *opt, make_batches(1, 4, torch::kCPU));
    for (auto& p : m->parameters()) ASSERT_TRUE(p.grad().defined());
    opt->zero_grad();
    for (auto& p : m->parameters()) EXPECT_FALSE(p.grad().defined()) << opt_name;
  }
}

TEST(CapturableOptimizers, DefaultsAndErrorsUnchanged) {
  auto m = seeded_model("mlp", torch::kCPU);
  TrainConfig cfg;  // adam, auto
  EXPECT_FALSE(make_optimizer(cfg, m->parameters(), torch::kCPU)->capturable());
  EXPECT_EQ(make_optimizer(cfg, m->parameters(), torch::kCPU)->implementation(), "torch::optim::Adam (per-parameter loop)");
  cfg.optimizer_impl = "fused";
  EXPECT_THROW(make_optimizer(cfg, m->parameters(), torch::kCPU, true), Error);
  cfg.optimizer = "sgd";
  EXPECT_THROW(make_optimizer(cfg, m->parameters(), torch::kCPU, true), Error);
}

// On the CPU (or in a build without CUDA) nothing is captured and nothing trains: the reason
// says why and the caller goes on eagerly.
// The per-step sums the eager loop and the captured graph share, against hand values.
TEST(StepSums, AddTheBatchLossSumAndTheCorrectCount) {
  auto sums = make_step_sums(torch::kCPU);
  auto logits = torch::tensor({{2.0f, 1.0f, 0.0f}, {0.0f, 3.0f, 1.0f}, {1.0f, 0.0f, 5.0f}, {4.0f, 0.0f, 0.0f}});
  auto y = torch::tensor({0, 2, 2, 1}, torch::kLong);  // argmax 0, 1, 2, 0: rows 0 and 2 correct
  add_step_sums(sums, torch::tensor(0.5f), logits, y);
  add_step_sums(sums, torch::tensor(0.25f), logits.narrow(0, 0, 1), y.narrow(0, 0, 1));  // B = 1, correct
  EXPECT_EQ(sums.scalar_type(), torch::kDouble);
  EXPECT_DOUBLE_EQ(sums[0].item<double>(), 4 * 0.5 + 1 * 0.25);
  EXPECT_DOUBLE_EQ(sums[1].item<double>(), 3.0);
}

TEST(StepSums, TheFusedKernelDoesNotApplyToCpuTensors) {
  auto sums = make_step_sums(torch::kCPU);
  auto logits = torch::randn({4, 3});
  EXPECT_FALSE(add_step_sums_fused(sums, torch::tensor(0.5f), logits, torch::zeros({4}, torch::kLong)));
  EXPECT_EQ(sums.abs().sum().item<double>(), 0.0);  // untouched: add_step_sums takes the ATen path
}

// The fused kernel (step_sums_kernel.h) against the ATen sums for each logits dtype, with 1000
// rows (4 blocks), ties (values rounded to halves), a NaN row (torch.argmax: NaN is the
// maximum) and a column-major view (strided rows).
TEST(StepSums, TheFusedGpuKernelMatchesTheAtenSumsForEachLogitsType) {
  if (!gpu_available()) GTEST_SKIP() << kNeedsGpu;
  torch::manual_seed(7);
  const auto cuda = torch::Device(torch::kCUDA, 0);
  constexpr int64_t kRows = 1000, kClasses = 10;
  for (auto dtype : {torch::kFloat, torch::kDouble, torch::kBFloat16, torch::kHalf})
    for (bool column_major : {false, true}) {
      auto base = (torch::randn({kRows, kClasses}, torch::kDouble) * 2).round() / 2;
      base[3][5] = std::numeric_limits<double>::quiet_NaN();
      auto logits = (column_major ? base.t().contiguous().t() : base).to(cuda, dtype);
      auto y = torch::randint(kClasses, {kRows}, torch::kLong).to(cuda);
      y[3] = 5;
      auto loss = torch::tensor(0.75f).to(cuda);
      auto fused = make_step_sums(cuda), aten = make_step_sums(cuda);
      for (int step = 0; step < 2; ++step) {
        ASSERT_TRUE(add_step_sums_fused(fused, loss, logits, y)) << dtype << " column-major " << column_major;
        add_step_sums_aten(aten, loss, logits, y);
      }
      auto f = fused.cpu(), a = aten.cpu();
      EXPECT_DOUBLE_EQ(f[0].item<double>(), a[0].item<double>()) << dtype;
      EXPECT_DOUBLE_EQ(f[0].item<double>(), 2 * kRows * 0.75) << dtype;
      EXPECT_EQ(f[1].item<double>(), a[1].item<double>()) << dtype << " column-major " << column_major;
    }
  // by hand: the first of equal maxima wins, a NaN beats every number
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto logits = torch::tensor({1.0f, 1.0f, 0.0f, 0.0f, nan, 5.0f}).view({2, 3}).to(cuda);
  auto sums = make_step_sums(cuda);
  auto loss = torch::tensor(1.0f).to(cuda);
  ASSERT_TRUE(add_step_sums_fused(sums, loss, logits, torch::tensor({0, 1}, torch::kLong).to(cuda)));
  ASSERT_TRUE(add_step_sums_fused(sums, loss, logits, torch::tensor({1, 2}, torch::kLong).to(cuda)));
  EXPECT_EQ(sums[1].item<double>(), 2.0);
}

TEST(GraphStep, CpuFallsBackWithAReasonAndTrainsNothing) {
  auto m = seeded_model("mlp", torch::kCPU);
  auto opt = make_optimizer(config("adam", 1e-3), m->parameters(), torch::kCPU, true);
  auto before = snapshot(*m);
  auto b = make_batches(1, 4, torch::kCPU).front();
  auto out = capture_train_step(*m, *opt, plain_step(*m), b.x, b.y, torch::kCPU, 3);
  EXPECT_EQ(out.step, nullptr);
  EXPECT_EQ(out.warmup_steps_run, 0);
#ifdef TRAINSCOPE_WITH_CUDA
  EXPECT_NE(out.fallback_reason.find("CUDA device"), std::string::npos) << out.fallback_reason;
#else
  EXPECT_EQ(out.fallback_reason, kNoCudaBuildReason);
#endif
  EXPECT_EQ(max_abs_diff(before, snapshot(*m)), 0.0);
}

// Relative distance between the parameters after the eager path (3 steps on the first batch,
// then one step on each of the other 20) and after the graph path (capture with 3 warm-up
// steps on the first batch, then 20 replays), from the same initial weights.
// `eager_capturable`: the eager path uses the capturable optimizer too (run eagerly).
static double gpu_graph_vs_eager(const std::string& model, const TrainConfig& cfg, bool eager_capturable) {
  const torch::Device dev("cuda:0");
  auto batches = make_batches(21, 32, dev);
  std::vector<Batch> eager_batches(3, batches.front());
  eager_batches.insert(eager_batches.end(), batches.begin() + 1, batches.end());
  auto a = seeded_model(model, dev);
  auto before = snapshot(*a);
  auto ref = make_optimizer(cfg, a->parameters(), dev, eager_capturable);
  eager_steps(*a, *ref, eager_batches);
  auto g = seeded_model(model, dev);
  auto opt = make_optimizer(cfg, g->parameters(), dev, /*capturable=*/true);
  auto out = capture_train_step(*g, *opt, plain_step(*g), batches.front().x, batches.front().y, dev, 3);
  EXPECT_NE(out.step, nullptr) << out.fallback_reason;
  if (!out.step) return 1.0;
  EXPECT_EQ(out.warmup_steps_run, 3);
  for (size_t i = 1; i < batches.size(); ++i) {
    out.step->static_x().copy_(batches[i].x);
    out.step->static_y().copy_(batches[i].y);
    out.step->replay();
  }
  torch::cuda::synchronize();
  EXPECT_TRUE(std::isfinite(out.step->loss().item<double>()));
  EXPECT_EQ(out.step->logits().size(0), 32);
  const double rel = relative_distance(snapshot(*a), snapshot(*g), before);
  std::cout << model << ": eager " << ref->implementation() << " vs graph " << opt->implementation()
            << ": relative distance " << rel << "\n";
  return rel;
}

// The graph path gives the parameters of the eager path on the same batches: the fused Adam
// kernel, trainscope's tensor-op Adam (--optimizer-impl loop) and SGD (eagerly LibTorch's).
// Tolerance: the distance between the two results is below 1% of how far training moved the
// parameters (the same kernels run in both; a frozen Adam bias correction or an optimizer step
// missing from the graph would be tens of percent).
TEST(GraphStep, GpuReplayMatchesEagerPath) {
  if (!gpu_available()) GTEST_SKIP() << kNeedsGpu;
  struct Case {
    const char* optimizer;
    const char* impl;
    bool eager_capturable;
  };
  for (const char* model : {"mlp", "cnn"})
    for (const Case& c : {Case{"adam", "auto", false}, Case{"adam", "loop", true}, Case{"sgd", "auto", false}}) {
      auto cfg = config(c.optimizer, 1e-3);
      cfg.optimizer_impl = c.impl;
      EXPECT_LT(gpu_graph_vs_eager(model, cfg, c.eager_capturable), 1e-2) << model << " " << c.optimizer << " " << c.impl;
    }
}

// A step captured with a resident set gathers its own batches: after capture, replays that only
// receive indices train the model as eager steps on the gathered batches do, and the graph's
// summed loss and correct count equal the eager steps' (of the replays, not the warm-up).
TEST(GraphStep, GpuResidentGatherReplayMatchesEagerAndSumsItsMetrics) {
  if (!gpu_available()) GTEST_SKIP() << kNeedsGpu;
  const torch::Device dev("cuda:0");
  torch::manual_seed(3);
  auto data_x = torch::randn({256, 1, 8, 8}).to(dev);
  auto data_y = torch::randint(0, 10, {256}, torch::kLong).to(dev);
  std::vector<torch::Tensor> idx;
  for (int i = 0; i < 11; ++i) idx.push_back(torch::randperm(256, torch::kLong).narrow(0, 0, 32).to(dev));
  auto cfg = config("sgd", 1e-2);
  auto a = seeded_model("mlp", dev);
  auto before = snapshot(*a);
  auto ref = make_optimizer(cfg, a->parameters(), dev, /*capturable=*/true);
  std::vector<Batch> warm(3, Batch{data_x.index_select(0, idx[0]), data_y.index_select(0, idx[0])});
  eager_steps(*a, *ref, warm);
  double loss_sum = 0;
  int64_t correct = 0;
  for (size_t i = 0; i < idx.size(); ++i) {  // the capture's own step replays batch 0 too
    auto x = data_x.index_select(0, idx[i]), y = data_y.index_select(0, idx[i]);
    ref->zero_grad();
    auto logits = a->forward(x);
    auto loss = torch::nn::functional::cross_entropy(logits, y);
    loss_sum += loss.item<double>() * 32;
    correct += logits.argmax(1).eq(y).sum().item<int64_t>();
    loss.backward();
    ref->step();
  }
  auto g = seeded_model("mlp", dev);
  auto opt = make_optimizer(cfg, g->parameters(), dev, /*capturable=*/true);
  ResidentSet set{data_x, data_y, idx[0]};
  auto out = capture_train_step(*g, *opt, plain_step(*g), warm[0].x, warm[0].y, dev, 3, &set);
  ASSERT_NE(out.step, nullptr) << out.fallback_reason;
  ASSERT_NE(out.step->static_index(), nullptr);
  for (size_t i = 0; i < idx.size(); ++i) {
    out.step->static_index()->copy_(idx[i]);
    out.step->replay();
  }
  auto sums = make_step_sums(dev);
  out.step->drain_sums(sums);
  EXPECT_NEAR(sums[0].item<double>(), loss_sum, 1e-3 * loss_sum);
  EXPECT_NEAR(sums[1].item<double>(), static_cast<double>(correct), 1);  // an argmax tie may fall either way
  const auto first = sums.cpu();
  out.step->drain_sums(sums);  // drained: adds nothing the second time
  EXPECT_TRUE(torch::equal(sums.cpu(), first));
  EXPECT_LT(relative_distance(snapshot(*a), snapshot(*g), before), 1e-2);
}

// A forward pass with a host synchronisation (.item(), as a TorchScript model may have) cannot
// be captured: the capture ends cleanly, the reason is returned, and eager training goes on.
TEST(GraphStep, GpuHostSyncInForwardFallsBackCleanly) {
  if (!gpu_available()) GTEST_SKIP() << kNeedsGpu;
  const torch::Device dev("cuda:0");
  auto m = seeded_model("mlp", dev);
  auto opt = make_optimizer(config("adam", 1e-3), m->parameters(), dev, true);
  auto syncing = [&](const torch::Tensor& x, const torch::Tensor& y) {
    return loss_of_logits(m->forward(x) * (x.sum().item<float>() > 0 ? 1.0 : 1.0), y);
  };
  auto b = make_batches(2, 16, dev);
  auto out = capture_train_step(*m, *opt, syncing, b[0].x, b[0].y, dev, 3);
  EXPECT_EQ(out.step, nullptr);
  EXPECT_EQ(out.warmup_steps_run, 3);
  EXPECT_NE(out.fallback_reason.find("capture failed"), std::string::npos) << out.fallback_reason;
  std::cout << "fallback reason: " << out.fallback_reason << "\n";
  for (auto& p : m->parameters()) EXPECT_FALSE(p.grad().defined());
  auto before = snapshot(*m);
  eager_steps(*m, *opt, {b[1]});  // the device and the allocator still work
  torch::cuda::synchronize();
  EXPECT_GT(max_abs_diff(before, snapshot(*m)), 0.0);
}

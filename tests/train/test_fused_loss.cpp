// The fused linear cross-entropy (workload/fused_lm_loss.h) against the unfused path: the loss and
// the gradients of the hidden states and the weight, in float32 and under bfloat16 autocast, with
// a row count that is not a multiple of the chunk; the peak of the CPU memory it allocates; a
// built-in GPT's fused loss against its logits' loss; and the step the trainer builds with it.
#include <gtest/gtest.h>

#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "train/compat.h"
#include "train/lm_task.h"
#include "train/task_loss.h"
#include "trainscope/config.h"
#include "trainscope/error.h"
#include "workload/fused_lm_loss.h"
#include "workload/gpt.h"

using namespace trainscope;

namespace {

struct Grads {
  torch::Tensor loss, hidden, weight;
};

// Loss and gradients of `loss_of` on fresh leaf copies of h and w.
template <class F>
Grads run(F&& loss_of, const torch::Tensor& h, const torch::Tensor& w) {
  auto hl = h.detach().clone().requires_grad_(true), wl = w.detach().clone().requires_grad_(true);
  auto loss = loss_of(hl, wl);
  loss.backward();
  return {loss.detach(), hl.grad(), wl.grad()};
}

Grads full(const torch::Tensor& h, const torch::Tensor& w, const torch::Tensor& t) {
  return run([&](const torch::Tensor& hl, const torch::Tensor& wl) { return task_loss(at::linear(hl, wl).to(at::kFloat), t); },
             h, w);
}

Grads fused(const torch::Tensor& h, const torch::Tensor& w, const torch::Tensor& t, int64_t chunk) {
  return run([&](const torch::Tensor& hl, const torch::Tensor& wl) { return linear_cross_entropy(hl, wl, t, chunk); }, h,
             w);
}

double max_rel(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max()).item<double>();
}

// bf16 autocast on the CPU for its lifetime, as the bf16 variant sets it (train/variant_exec.h).
struct CpuBf16Autocast {
  CpuBf16Autocast() {
    compat::set_autocast_dtype(false, at::kBFloat16);
    compat::set_autocast_enabled(false, true);
  }
  ~CpuBf16Autocast() {
    compat::set_autocast_enabled(false, false);
    at::autocast::clear_cache();
  }
};

}  // namespace

// 37 rows in chunks of 8: four full chunks and one of 5.
TEST(FusedLoss, EqualsTheFullLossAndItsGradientsInFloat32) {
  torch::manual_seed(11);
  auto h = torch::randn({37, 16}), w = torch::randn({50, 16}) * 0.5;
  auto t = torch::randint(0, 50, {37}, torch::kLong);
  const auto a = full(h, w, t), b = fused(h, w, t, 8);
  EXPECT_NEAR(b.loss.item<double>(), a.loss.item<double>(), 1e-5);
  EXPECT_EQ(b.loss.scalar_type(), at::kFloat);
  EXPECT_LT(max_rel(b.hidden, a.hidden), 1e-5);
  EXPECT_LT(max_rel(b.weight, a.weight), 1e-5);
  // one chunk holding every row gives the same
  const auto c = fused(h, w, t, 4096);
  EXPECT_LT(max_rel(c.weight, b.weight), 1e-5);
}

// Under autocast both paths run the matrix products in bfloat16 and the log-softmax in float32;
// they differ by the rounding of the per-chunk gradient sums (bfloat16 has an 8-bit mantissa).
TEST(FusedLoss, EqualsTheFullLossUnderBfloat16Autocast) {
  torch::manual_seed(12);
  auto h = torch::randn({45, 32}), w = torch::randn({64, 32}) * 0.3;
  auto t = torch::randint(0, 64, {45}, torch::kLong);
  CpuBf16Autocast autocast;
  const auto a = full(h, w, t), b = fused(h, w, t, 16);
  EXPECT_NEAR(b.loss.item<double>(), a.loss.item<double>(), 1e-2 * a.loss.item<double>());
  EXPECT_EQ(b.hidden.scalar_type(), at::kFloat);  // the gradients come back in the inputs' dtypes
  EXPECT_EQ(b.weight.scalar_type(), at::kFloat);
  EXPECT_LT(max_rel(b.hidden, a.hidden), 2e-2);
  EXPECT_LT(max_rel(b.weight, a.weight), 2e-2);
}

// The bfloat16 products are not float32's: the test above compares two bfloat16 computations.
TEST(FusedLoss, RunsItsProductsInAutocastsDtype) {
  torch::manual_seed(12);
  auto h = torch::randn({45, 32}), w = torch::randn({64, 32}) * 0.3;
  auto t = torch::randint(0, 64, {45}, torch::kLong);
  const auto fp32 = fused(h, w, t, 16);
  CpuBf16Autocast autocast;
  const auto bf16 = fused(h, w, t, 16);
  EXPECT_GT(max_rel(bf16.weight, fp32.weight), 1e-4);
}

TEST(FusedLoss, RefusesShapesThatDoNotFit) {
  auto h = torch::randn({4, 8}), w = torch::randn({10, 6});
  auto t = torch::zeros({4}, torch::kLong);
  try {
    linear_cross_entropy(h, w, t);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kModel);
    EXPECT_NE(std::string(e.what()).find("weight [10, 6]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("lm_loss = full"), std::string::npos) << e.what();
  }
  EXPECT_THROW(linear_cross_entropy(h, torch::randn({10, 8}), t, 0), Error);
  EXPECT_THROW(linear_cross_entropy(h, torch::randn({10, 8}), t.to(at::kInt)), Error);
}

// Without gradients recorded the loss is the same and nothing is saved for a backward pass.
TEST(FusedLoss, WithoutGradientsGivesTheSameLoss) {
  torch::manual_seed(13);
  auto h = torch::randn({20, 8}), w = torch::randn({30, 8}, torch::requires_grad());
  auto t = torch::randint(0, 30, {20}, torch::kLong);
  const double with = linear_cross_entropy(h, w, t, 6).item<double>();
  torch::NoGradGuard ng;
  auto loss = linear_cross_entropy(h, w, t, 6);
  EXPECT_FALSE(loss.requires_grad());
  EXPECT_DOUBLE_EQ(loss.item<double>(), with);
}

namespace {

// The CPU allocator's bytes in use and their peak: while installed it stands in for LibTorch's
// CPU allocator (c10::SetCPUAllocator) and passes every call on to the one it replaced. Its blocks'
// context is their address (raw_allocate asserts it), their size is kept in a table. Both
// allocate() signatures are declared, LibTorch 1.13's const one and 2.x's, so either overrides;
// copy_data is 2.x's pure virtual.
class CountingAllocator final : public at::Allocator {
 public:
  static CountingAllocator& instance() {
    static auto* a = new CountingAllocator(c10::GetCPUAllocator());
    return *a;
  }
  void install(bool on) { c10::SetCPUAllocator(on ? this : base_, /*priority=*/255); }
  at::DataPtr allocate(size_t n) const { return const_cast<CountingAllocator*>(this)->counted(n); }
  at::DataPtr allocate(size_t n) { return counted(n); }
  at::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }
  void reset_peak() { peak_ = now_.load(); }
  int64_t peak() const { return peak_.load(); }
  int64_t now() const { return now_.load(); }

 private:
  explicit CountingAllocator(at::Allocator* base) : base_(base) {}
  at::DataPtr counted(size_t n) {
    auto inner = base_->allocate(n);
    void* p = inner.get();
    if (!p) return inner;
    const int64_t now = now_ += static_cast<int64_t>(n);
    int64_t seen = peak_.load();
    while (now > seen && !peak_.compare_exchange_weak(seen, now)) {
    }
    std::lock_guard<std::mutex> lock(mu_);
    blocks_.emplace(p, std::make_pair(std::move(inner), static_cast<int64_t>(n)));
    return {p, p, &release, at::Device(at::kCPU)};
  }
  static void release(void* p) {
    auto& a = instance();
    std::lock_guard<std::mutex> lock(a.mu_);
    auto it = a.blocks_.find(p);
    a.now_ -= it->second.second;
    a.blocks_.erase(it);  // frees it through the replaced allocator's deleter
  }
  at::Allocator* base_;
  std::atomic<int64_t> now_{0}, peak_{0};
  std::mutex mu_;
  std::unordered_map<void*, std::pair<at::DataPtr, int64_t>> blocks_;
};

// The peak of CPU bytes allocated, above those held before, while `f` runs.
template <class F>
int64_t peak_bytes(F&& f) {
  auto& a = CountingAllocator::instance();
  a.install(true);
  const int64_t before = a.now();
  a.reset_peak();
  f();
  a.install(false);
  return a.peak() - before;
}

}  // namespace

// A forward and backward pass of 2048 rows over a vocabulary of 4096: the full path holds the
// float32 logits (32 MiB), their log-softmax and its gradient; the fused one a chunk's logits
// (512 rows, 8 MiB) and the gradients of the hidden states and the weight (1.5 MiB).
TEST(FusedLoss, PeakMemoryIsBelowTheFullLogits) {
  torch::manual_seed(14);
  const int64_t N = 2048, V = 4096, d = 64;
  auto h = torch::randn({N, d}), w = torch::randn({V, d}) * 0.1;
  auto t = torch::randint(0, V, {N}, torch::kLong);
  const int64_t logits_bytes = N * V * 4;
  const int64_t full_peak = peak_bytes([&] { full(h, w, t); });
  const int64_t fused_peak = peak_bytes([&] { fused(h, w, t, 512); });
  EXPECT_GE(full_peak, logits_bytes);  // the counter sees the allocations
  EXPECT_LT(fused_peak, logits_bytes / 2) << fused_peak << " vs full " << full_peak;
  EXPECT_LT(fused_peak * 4, full_peak) << fused_peak << " vs full " << full_peak;
}

namespace {

GptShape tiny(int64_t vocab) { return {2, 32, 4, 16, vocab}; }

// Two GPTs with the same weights (same seed).
std::pair<std::unique_ptr<Model>, std::unique_ptr<Model>> twins(int64_t vocab) {
  torch::manual_seed(21);
  auto a = make_gpt("tiny", tiny(vocab));
  torch::manual_seed(21);
  auto b = make_gpt("tiny", tiny(vocab));
  return {std::move(a), std::move(b)};
}

// The largest relative difference between the two models' gradients, parameter by parameter.
double grad_distance(Model& a, Model& b) {
  auto pa = a.parameters(), pb = b.parameters();
  double worst = 0;
  for (size_t i = 0; i < pa.size(); ++i)
    worst = std::max(worst, max_rel(pb[i].grad(), pa[i].grad()));
  return worst;
}

}  // namespace

// B 3 x T 15 = 45 rows: the model's loss through the fused path and through its logits, and the
// gradients of every parameter (the tied embedding gets the projection's and the lookup's).
TEST(FusedLoss, GptLossAndEveryGradientEqualTheLogitsPath) {
  auto [a, b] = twins(96);
  auto x = torch::randint(0, 96, {3, 15}, torch::kLong), y = torch::randint(0, 96, {3, 15}, torch::kLong);
  auto la = task_loss(a->forward(x), y);
  la.backward();
  auto lb = gpt_fused_loss(*b, x, y);
  lb.backward();
  EXPECT_NEAR(lb.item<double>(), la.item<double>(), 1e-5);
  EXPECT_LT(grad_distance(*a, *b), 1e-4);
}

TEST(FusedLoss, GptLossUnderBfloat16AutocastEqualsTheLogitsPath) {
  auto [a, b] = twins(96);
  auto x = torch::randint(0, 96, {3, 15}, torch::kLong), y = torch::randint(0, 96, {3, 15}, torch::kLong);
  CpuBf16Autocast autocast;
  auto la = task_loss(a->forward(x).to(at::kFloat), y);
  la.backward();
  auto lb = gpt_fused_loss(*b, x, y);
  lb.backward();
  EXPECT_NEAR(lb.item<double>(), la.item<double>(), 1e-2 * la.item<double>());
  EXPECT_LT(grad_distance(*a, *b), 5e-2);
}

// The trainer's step (lm_task.h make_step_forward): by default fused for a built-in GPT on the CPU,
// with no logits, and full on CUDA; full with train.lm_loss = full, fused on CUDA with fused; the
// image models' step is always the full one.
TEST(FusedLoss, TheTrainersStepFusesABuiltInGptUnlessAskedForTheFullLoss) {
  auto [a, b] = twins(64);
  auto x = torch::randint(0, 64, {2, 16}, torch::kLong), y = torch::randint(0, 64, {2, 16}, torch::kLong);
  const torch::Device cpu("cpu"), cuda("cuda:0");
  TrainConfig cfg;
  EXPECT_EQ(cfg.lm_loss, "auto");
  EXPECT_EQ(resolved_lm_loss(cfg, cpu), "fused");
  EXPECT_EQ(resolved_lm_loss(cfg, cuda), "full");
  EXPECT_FALSE(fuses_lm_loss(*a, cfg, cuda));
  const auto fused_step = make_step_forward(*a, at::MemoryFormat::Contiguous, cfg, cpu)(x, y);
  EXPECT_FALSE(fused_step.logits.defined());
  cfg.lm_loss = "fused";
  EXPECT_TRUE(fuses_lm_loss(*a, cfg, cuda));
  cfg.lm_loss = "full";
  EXPECT_FALSE(fuses_lm_loss(*b, cfg, cpu));
  const auto full_step = make_step_forward(*b, at::MemoryFormat::Contiguous, cfg, cpu)(x, y);
  ASSERT_TRUE(full_step.logits.defined());
  EXPECT_EQ(full_step.logits.sizes(), (std::vector<int64_t>{2, 16, 64}));
  EXPECT_NEAR(fused_step.loss.item<double>(), full_step.loss.item<double>(), 1e-5);
  auto mlp = make_model("mlp", 1, 4, 4, 3);
  EXPECT_FALSE(fuses_lm_loss(*mlp, TrainConfig{}, cpu));
  EXPECT_THROW(gpt_fused_loss(*mlp, x, y), Error);
}

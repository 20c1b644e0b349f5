// The generation scenarios (src/infer/generate.h) driven against a fake Decoder: a deterministic
// table-driven model on the CPU that records the calls it gets, so the tests check what each
// scenario asks of a decoder, and what it makes of it, without a real model.
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/InferenceMode.h>

#include <cmath>
#include <set>

#include "infer/generate.h"
#include "trainscope/error.h"
#include "trainscope/inference.h"
#include "workload/gpt.h"

namespace trainscope {
namespace {

// Logits of row r: one-hot at (last appended token + 1) % vocab, so greedy decoding counts up.
// Records reset() and append() shapes; throws CPU out-of-memory for batches >= oom_batch.
class FakeDecoder : public Decoder {
 public:
  explicit FakeDecoder(int64_t context = 64, int64_t vocab = 16) : context_(context), vocab_(vocab) {}
  void reset(int64_t batch, int64_t max_len) override {
    if (batch < 1 || max_len > context_) throw_error(ErrorKind::kModel, "fake: bad reset");
    if (batch >= oom_batch) throw c10::Error(c10::SourceLocation{__func__, __FILE__, static_cast<uint32_t>(__LINE__)}, "DefaultCPUAllocator: can't allocate memory: you tried to allocate");
    resets.emplace_back(batch, max_len);
    batch_ = batch, max_len_ = max_len, length_ = 0;
  }
  torch::Tensor append(const torch::Tensor& tokens) override {
    EXPECT_EQ(tokens.dim(), 2);
    EXPECT_EQ(tokens.size(0), batch_);
    EXPECT_TRUE(tokens.is_contiguous());
    appends.push_back(tokens.size(1));
    length_ += tokens.size(1);
    if (length_ > max_len_) throw_error(ErrorKind::kModel, "fake: past max_len");
    auto last = tokens.select(1, tokens.size(1) - 1);
    return torch::one_hot((last + 1).remainder(vocab_), vocab_).to(torch::kFloat);
  }
  int64_t length() const override { return length_; }
  int64_t context() const override { return context_; }
  int64_t vocab() const override { return vocab_; }
  torch::Device device() const override { return torch::kCPU; }
  std::string execution() const override { return "eager"; }

  std::vector<std::pair<int64_t, int64_t>> resets;
  std::vector<int64_t> appends;
  int64_t oom_batch = 1 << 30;

 private:
  int64_t context_, vocab_, batch_ = 0, max_len_ = 0, length_ = 0;
};

torch::Tensor text() { return torch::arange(0, 100, torch::kLong); }

GenerationOptions only_tests() {
  GenerationOptions o;
  o.pp = {8};
  o.tg = {5};
  o.repetitions = 3;
  o.sweep = false;
  return o;
}

TEST(Generate, PpIsOneAppendAndTgOneTokenPerAppend) {
  FakeDecoder d;
  auto g = measure_generation(d, text(), only_tests());
  ASSERT_EQ(g.tests.size(), 2u);
  EXPECT_EQ(g.tests[0].test, "pp8");
  EXPECT_EQ(g.tests[1].test, "tg5");
  for (const auto& t : g.tests) {
    EXPECT_EQ(t.repetitions, 3);
    EXPECT_EQ(t.samples_ns.size(), 3u);
    EXPECT_TRUE(t.tokens_per_s_mean && *t.tokens_per_s_mean > 0);
    EXPECT_TRUE(t.tokens_per_s_stddev);
  }
  // pp: warm-up + 3 repetitions, each one append of 8; tg: 4 x 5 appends of 1 token.
  std::vector<int64_t> want(4, 8);
  want.insert(want.end(), 20, 1);
  EXPECT_EQ(d.appends, want);
  ASSERT_EQ(d.resets.size(), 8u);
  EXPECT_EQ(d.resets[0], (std::pair<int64_t, int64_t>{1, 8}));
  EXPECT_EQ(d.resets[4], (std::pair<int64_t, int64_t>{1, 5}));
  EXPECT_EQ(g.decoding, "greedy (argmax)");
  EXPECT_EQ(g.execution, "eager");
  ASSERT_TRUE(g.prefill_energy && g.decode_energy);
  EXPECT_NE(g.prefill_energy->absent_reason.find("telemetry is off"), std::string::npos);
}

TEST(Generate, DepthIsPrefilledUntimedBeforeEachRepetition) {
  FakeDecoder d;
  auto o = only_tests();
  o.tg = {};
  o.depth = 16;
  o.batch = 2;
  auto g = measure_generation(d, text(), o);
  ASSERT_EQ(g.tests.size(), 1u);
  EXPECT_EQ(g.tests[0].test, "pp8 @ d16");
  EXPECT_EQ(g.tests[0].batch, 2);
  EXPECT_EQ(d.appends, (std::vector<int64_t>{16, 8, 16, 8, 16, 8, 16, 8}));
  EXPECT_EQ(d.resets[0], (std::pair<int64_t, int64_t>{2, 24}));
}

TEST(Generate, BadInputsNameTheFlag) {
  FakeDecoder d(32);
  auto expect_bad = [&](GenerationOptions o, const std::string& flag) {
    try {
      measure_generation(d, text(), o);
      ADD_FAILURE() << "accepted " << flag;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(flag), std::string::npos) << e.what();
    }
  };
  auto o = only_tests();
  o.pp = {40};  // longer than the context of 32
  expect_bad(o, "--pp 40");
  o = only_tests();
  o.tg = {20}, o.depth = 16;
  expect_bad(o, "context of 32");
  o = only_tests();
  o.batch = 0;
  expect_bad(o, "--gen-batch 0");
  o = only_tests();
  o.sweep_batches = {1, 0};
  expect_bad(o, "--gen-batches 0");
  o = only_tests();
  o.server_rates = {1};
  o.prompt_len = 30, o.output_len = 8;
  expect_bad(o, "--prompt-len 30");
  o = only_tests();
  o.repetitions = 0;
  expect_bad(o, "--repetitions 0");
  EXPECT_TRUE(d.appends.empty()) << "checked before anything ran";
  EXPECT_THROW(measure_generation(d, torch::Tensor(), only_tests()), Error);
}

TEST(Generate, SweepStopsAtOutOfMemoryAsAResult) {
  FakeDecoder d;
  d.oom_batch = 8;
  auto o = only_tests();
  o.pp = {}, o.tg = {};
  o.sweep = true;
  o.sweep_prompt = 4, o.sweep_gen = 4;
  o.sweep_min_gain_pct = -1e9;  // any change counts as a gain: only memory stops it
  auto g = measure_generation(d, text(), o);
  ASSERT_TRUE(g.decode_sweep);
  const auto& s = *g.decode_sweep;
  ASSERT_EQ(s.points.size(), 4u);  // 1, 2, 4, 8
  EXPECT_EQ(s.points[3].batch, 8);
  EXPECT_EQ(s.points[3].error_kind, "out_of_memory");
  EXPECT_FALSE(s.points[3].tokens_per_s);
  EXPECT_EQ(s.stop_kind, "memory");
  EXPECT_TRUE(s.saturation_batch);
  EXPECT_TRUE(s.best_tokens_per_s);
}

TEST(Generate, SweepOverGivenBatches) {
  FakeDecoder d;
  auto o = only_tests();
  o.pp = {}, o.tg = {};
  o.sweep = true;
  o.sweep_batches = {1, 3};
  o.sweep_prompt = 4, o.sweep_gen = 6;
  auto g = measure_generation(d, text(), o);
  ASSERT_EQ(g.decode_sweep->points.size(), 2u);
  EXPECT_EQ(g.decode_sweep->points[1].batch, 3);
  EXPECT_EQ(g.decode_sweep->stop_kind, "list");
  // warm-up: prompt + min(6, 8) steps; timed: prompt + 6 steps, per batch
  std::vector<int64_t> want = {4, 1, 1, 1, 1, 1, 1, 4, 1, 1, 1, 1, 1, 1};
  want.insert(want.end(), want.begin(), want.end());
  EXPECT_EQ(d.appends, want);
}

TEST(Generate, ServerServesEveryRequestWithItsTokens) {
  FakeDecoder d;
  auto o = only_tests();
  o.pp = {}, o.tg = {};
  o.server_rates = {200, 400};
  o.prompt_len = 6, o.output_len = 4;
  o.min_requests = 10, o.server_budget_s = 0.01;
  auto g = measure_generation(d, text(), o);
  ASSERT_TRUE(g.server);
  ASSERT_EQ(g.server->runs.size(), 2u);
  for (const auto& r : g.server->runs) {
    EXPECT_EQ(r.requests_issued, 10);
    EXPECT_EQ(r.requests_served, 10);
    EXPECT_EQ(r.output_tokens, 40);
    EXPECT_EQ(r.tpot.queries, 10);
    EXPECT_EQ(r.itl.queries, 30);
    EXPECT_LE(*r.ttft.p50_ms, *r.e2e.p50_ms);
    EXPECT_LE(*r.goodput_per_s, *r.request_throughput_per_s + 1e-12);
  }
  // each request: reset, prompt of 6, then 3 single-token steps
  EXPECT_EQ(d.resets.size(), 20u);
  EXPECT_EQ(d.appends.size(), 80u);
  EXPECT_NE(g.server->worker.find("batch 1"), std::string::npos);
}

TEST(Generate, GreedyIsArgmaxAndSamplingIsSeeded) {
  auto logits = torch::tensor({{0.f, 3.f, 1.f}, {5.f, 0.f, 1.f}});
  auto gen = at::detail::createCPUGenerator(1);
  EXPECT_TRUE(torch::equal(select_tokens(logits, {}, gen), torch::tensor({{1}, {0}}, torch::kLong)));
  SamplingOptions top1{1.0, 1, 7};
  EXPECT_TRUE(torch::equal(select_tokens(logits, top1, gen), torch::tensor({{1}, {0}}, torch::kLong)));
  SamplingOptions hot{5.0, 0, 7};
  auto big = torch::zeros({1, 50});
  auto a = at::detail::createCPUGenerator(3), b = at::detail::createCPUGenerator(3);
  std::vector<int64_t> x, y;
  for (int i = 0; i < 20; ++i) {
    x.push_back(select_tokens(big, hot, a).item<int64_t>());
    y.push_back(select_tokens(big, hot, b).item<int64_t>());
  }
  EXPECT_EQ(x, y);
  EXPECT_GT(std::set<int64_t>(x.begin(), x.end()).size(), 1u);
}

TEST(Generate, TextTokensWrapAndGiveRowsTheirOwnSpan) {
  auto t = text_tokens(torch::arange(0, 10, torch::kLong), 8, 2, 3, torch::kCPU);
  EXPECT_TRUE(torch::equal(t, torch::tensor({{8, 9, 0}, {1, 2, 3}}, torch::kLong)));
}

TEST(Generate, PoissonArrivalsHaveTheRatesMeanAndDispersion) {
  const double rate = 4;
  auto t = poisson_arrivals(rate, 20000, 11);
  std::vector<double> gaps;
  for (size_t i = 0; i < t.size(); ++i) gaps.push_back(t[i] - (i ? t[i - 1] : 0));
  double m = 0, v = 0;
  for (double g : gaps) m += g;
  m /= static_cast<double>(gaps.size());
  for (double g : gaps) v += (g - m) * (g - m);
  v /= static_cast<double>(gaps.size() - 1);
  EXPECT_NEAR(m, 1 / rate, 0.01 / rate * 2);           // exponential: mean 1/rate
  EXPECT_NEAR(std::sqrt(v) / m, 1.0, 0.03);            // coefficient of variation 1
  // counts per unit time: Poisson, so variance / mean (the index of dispersion) is near 1
  std::vector<int> per_s(static_cast<size_t>(t.back()) + 1, 0);
  for (double a : t) ++per_s[static_cast<size_t>(a)];
  per_s.pop_back();
  double cm = 0, cv = 0;
  for (int c : per_s) cm += c;
  cm /= static_cast<double>(per_s.size());
  for (int c : per_s) cv += (c - cm) * (c - cm);
  cv /= static_cast<double>(per_s.size() - 1);
  EXPECT_NEAR(cm, rate, 0.1);
  EXPECT_NEAR(cv / cm, 1.0, 0.1);
}

// The real cached GPT decoder, greedy through the server scenario, emits what the recomputing
// decoder emits (the scenario drives both the same way).
TEST(Generate, CachedGptServesTheTokensOfRecomputation) {
  torch::manual_seed(0);
  GptShape s{1, 32, 2, 32, 64};
  auto model = make_gpt("gpt-mini", s);
  auto cached = make_gpt_decoder(*model, torch::kFloat);
  auto ref = make_recompute_decoder(*model, 32, 64, torch::kCPU);
  auto gen = at::detail::createCPUGenerator(0);
  auto prompt = text_tokens(torch::arange(3, 60, torch::kLong), 0, 1, 8, torch::kCPU);
  c10::InferenceMode im;
  auto run = [&](Decoder& d) {
    d.reset(1, 16);
    std::vector<int64_t> out;
    auto next = select_tokens(d.append(prompt), {}, gen);
    for (int i = 0; i < 8; ++i) {
      out.push_back(next.item<int64_t>());
      next = select_tokens(d.append(next), {}, gen);
    }
    return out;
  };
  EXPECT_EQ(run(*cached), run(*ref));
}

}  // namespace
}  // namespace trainscope

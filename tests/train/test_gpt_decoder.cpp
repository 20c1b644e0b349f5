// The built-in GPT's cached decoder (src/workload/gpt_decoder.cpp) against decoding by
// recomputation (src/workload/recompute_decoder.cpp), and the graph-replayed decoder
// (src/infer/graph_decoder.h) against eager decoding.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "infer/graph_decoder.h"
#include "test_helpers.h"
#include "torch_test_helpers.h"
#include "train/tiny_gpt.h"
#include "trainscope/error.h"
#include "workload/gpt.h"

using namespace trainscope;

namespace {

using trainscope::test::error_of;
using trainscope::test::gpu_available;
using trainscope::test::ids;
using trainscope::test::kNeedsGpu;
using trainscope::test::tiny_gpt;

// Greedy decoding of `steps` tokens after `prompt`: the chosen ids and the logits of each step.
std::pair<std::vector<int64_t>, std::vector<torch::Tensor>> greedy(Decoder& d, const torch::Tensor& prompt,
                                                                    int64_t steps) {
  d.reset(prompt.size(0), prompt.size(1) + steps);
  std::vector<int64_t> out;
  std::vector<torch::Tensor> logits{d.append(prompt)};
  for (int64_t s = 0; s < steps; ++s) {
    auto next = logits.back().argmax(-1).view({prompt.size(0), 1});
    out.push_back(next[0][0].item<int64_t>());
    if (s + 1 < steps) logits.push_back(d.append(next));
  }
  return {out, logits};
}

}  // namespace

// The cache changes the cost, never the result: every step's logits equal those of running the
// whole sequence again, and greedy decoding picks the same tokens.
TEST(GptDecoder, CachedDecodingEqualsRecomputation) {
  auto model = tiny_gpt();
  auto reference = make_recompute_decoder(*model, 40, 61, torch::kCPU);
  auto [want_ids, want_logits] = greedy(*reference, ids({5, 17, 3, 42, 8, 8, 1}), 12);
  auto cached = make_gpt_decoder(*model, torch::kFloat);
  auto [got_ids, got_logits] = greedy(*cached, ids({5, 17, 3, 42, 8, 8, 1}), 12);
  EXPECT_EQ(got_ids, want_ids);
  ASSERT_EQ(got_logits.size(), want_logits.size());
  for (size_t i = 0; i < got_logits.size(); ++i)
    EXPECT_TRUE(torch::allclose(got_logits[i], want_logits[i], 1e-4, 1e-5)) << "step " << i;
  EXPECT_EQ(cached->length(), 7 + 11);
  EXPECT_EQ(cached->execution(), "eager");
}

// A prompt appended in pieces (the shifted causal mask for T > 1 after cached tokens) gives the
// logits of the prompt appended at once.
TEST(GptDecoder, PromptInPiecesEqualsPromptAtOnce) {
  auto model = tiny_gpt();
  auto d = make_gpt_decoder(*model, torch::kFloat);
  d->reset(1, 20);
  auto whole = d->append(ids({9, 2, 33, 4, 7, 60, 12}));
  d->reset(1, 20);
  d->append(ids({9, 2, 33}));
  auto pieces = d->append(ids({4, 7, 60, 12}));
  EXPECT_TRUE(torch::allclose(pieces, whole, 1e-4, 1e-5));
}

// The capture-safe step (a device-tensor position, attention over the whole cache masked to the
// positions written) gives the eager step's logits and advances the position.
TEST(GptDecoder, StaticStepEqualsTheEagerStep) {
  auto model = tiny_gpt();
  auto eager = make_gpt_decoder(*model, torch::kFloat);
  eager->reset(2, 30);
  auto prompt = ids({1, 2, 3, 4, 5, 6, 7, 8}, 2);
  eager->append(prompt);
  auto model2 = tiny_gpt();
  auto fixed = make_gpt_decoder(*model2, torch::kFloat);
  fixed->reset(2, 30);
  fixed->append(prompt);
  auto position = torch::full({1}, fixed->length(), torch::kLong);
  auto tok = ids({11, 12}, 2);
  for (int s = 0; s < 5; ++s) {
    auto want = eager->append(tok);
    auto got = fixed->step_static(tok, position);
    fixed->advanced(1);
    EXPECT_TRUE(torch::allclose(got, want, 1e-4, 1e-5)) << "step " << s;
    EXPECT_EQ(position.item<int64_t>(), 4 + s + 1);
    tok = want.argmax(-1).view({2, 1});
  }
  EXPECT_EQ(fixed->length(), eager->length());
}

// Rows of a batch are decoded independently: each row's logits equal those of that row alone.
TEST(GptDecoder, BatchRowsEqualEachRowAlone) {
  auto model = tiny_gpt();
  auto d = make_gpt_decoder(*model, torch::kFloat);
  auto [both_ids, both_logits] = greedy(*d, ids({3, 1, 4, 1, 5, 9, 2, 6}, 2), 4);
  auto [row1_ids, row1_logits] = greedy(*d, ids({5, 9, 2, 6}), 4);
  for (size_t i = 0; i < both_logits.size(); ++i)
    EXPECT_TRUE(torch::allclose(both_logits[i][1], row1_logits[i][0], 1e-4, 1e-5)) << "step " << i;
}

// The cache is allocated once and reused by smaller resets; a larger one allocates anew.
TEST(GptDecoder, CacheIsAllocatedOnlyWhenItMustGrow) {
  auto model = tiny_gpt();
  auto d = make_gpt_decoder(*model, torch::kFloat);
  d->reset(2, 30);
  const auto g = d->cache_generation();
  d->reset(1, 10);
  EXPECT_EQ(d->cache_generation(), g);
  d->reset(4, 10);
  EXPECT_GT(d->cache_generation(), g);
}

// Bad input: clear errors naming the sizes and the fix.
TEST(GptDecoder, BadSizesAreModelErrorsNamingTheFix) {
  auto model = tiny_gpt();
  auto d = make_gpt_decoder(*model, torch::kFloat);
  auto before_reset = error_of([&] { d->append(ids({1})); });
  EXPECT_EQ(before_reset.first, ErrorKind::kModel);
  EXPECT_NE(before_reset.second.find("reset"), std::string::npos) << before_reset.second;
  auto zero_batch = error_of([&] { d->reset(0, 10); });
  EXPECT_EQ(zero_batch.first, ErrorKind::kModel);
  auto too_long = error_of([&] { d->reset(1, 41); });
  EXPECT_EQ(too_long.first, ErrorKind::kModel);
  EXPECT_NE(too_long.second.find("context of 40"), std::string::npos) << too_long.second;
  d->reset(1, 4);
  d->append(ids({1, 2, 3}));
  auto past_end = error_of([&] { d->append(ids({4, 5})); });
  EXPECT_EQ(past_end.first, ErrorKind::kModel);
  auto wrong_batch = error_of([&] { d->append(ids({4, 5}, 2)); });
  EXPECT_EQ(wrong_batch.first, ErrorKind::kModel);
  auto image_model = make_model("mlp", 1, 28, 28, 10);
  auto not_gpt = error_of([&] { make_gpt_decoder(*image_model, torch::kFloat); });
  EXPECT_EQ(not_gpt.first, ErrorKind::kModel);
  EXPECT_NE(not_gpt.second.find("mlp"), std::string::npos) << not_gpt.second;
}

// Graphs asked for on the CPU: the eager decoder, saying why graphs did not apply.
TEST(GraphDecoder, OnTheCpuDecodesEagerlyAndSaysWhy) {
  auto model = tiny_gpt();
  auto d = with_cuda_graphs(make_gpt_decoder(*model, torch::kFloat), /*cuda_graphs=*/true);
  EXPECT_EQ(d->execution(), "eager (cuda graphs not applicable on cpu)");
  auto reference = make_recompute_decoder(*model, 40, 61, torch::kCPU);
  EXPECT_EQ(greedy(*d, ids({7, 7, 3}), 6).first, greedy(*reference, ids({7, 7, 3}), 6).first);
}

// On a GPU: graph-replayed decoding emits the tokens of eager decoding (fp32), for two batch
// sizes and across resets of another length (one graph per batch size serves every position).
TEST(GraphDecoder, ReplayedDecodingEmitsTheEagerTokensOnTheGpu) {
  if (!gpu_available()) GTEST_SKIP() << kNeedsGpu;
  auto model = tiny_gpt();
  model->to(torch::Device("cuda:0"));
  auto eager = make_gpt_decoder(*model, torch::kFloat);
  auto model2 = tiny_gpt();
  model2->to(torch::Device("cuda:0"));
  auto graphed = with_cuda_graphs(make_gpt_decoder(*model2, torch::kFloat), true);
  for (auto prompt : {ids({5, 17, 3, 42}), ids({1, 2, 3, 4, 5, 6}, 2), ids({9, 9, 9, 9, 9, 1, 2})}) {
    prompt = prompt.to(torch::Device("cuda:0"));
    auto [want, want_logits] = greedy(*eager, prompt, 20);
    auto [got, got_logits] = greedy(*graphed, prompt, 20);
    EXPECT_EQ(got, want);
    for (size_t i = 0; i < got_logits.size(); ++i)
      EXPECT_TRUE(torch::allclose(got_logits[i], want_logits[i], 1e-3, 1e-4)) << "step " << i;
  }
  EXPECT_EQ(graphed->execution(), "cuda_graph_replay");
}

// On a GPU the decoder's MLP runs as one cuBLASLt product with GELU in its epilogue: its logits
// still equal those of the model's own forward pass over the whole sequence (fp32).
TEST(GptDecoder, CachedDecodingEqualsRecomputationOnTheGpu) {
  if (!gpu_available()) GTEST_SKIP() << kNeedsGpu;
  const torch::Device gpu("cuda:0");
  auto model = tiny_gpt();
  model->to(gpu);
  auto reference = make_recompute_decoder(*model, 40, 61, gpu);
  auto prompt = ids({5, 17, 3, 42, 8, 8, 1}).to(gpu);
  auto [want_ids, want_logits] = greedy(*reference, prompt, 12);
  auto cached = make_gpt_decoder(*model, torch::kFloat);
  auto [got_ids, got_logits] = greedy(*cached, prompt, 12);
  EXPECT_EQ(got_ids, want_ids);
  for (size_t i = 0; i < got_logits.size(); ++i)
    EXPECT_TRUE(torch::allclose(got_logits[i], want_logits[i], 1e-3, 1e-4)) << "step " << i;
}

// The built-in GPT's slot decoder (src/workload/gpt_slot_decoder.cpp, continuous batching): rows
// at their own positions give the logits of decoding each sequence alone with the cached decoder
// (src/workload/gpt_decoder.cpp), whichever slots a step names; bad calls are model errors.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <vector>

#include "test_helpers.h"
#include "torch_test_helpers.h"
#include "train/tiny_gpt.h"
#include "trainscope/error.h"
#include "workload/decoder.h"
#include "workload/gpt.h"

using namespace trainscope;

namespace {

using trainscope::test::error_of;
using trainscope::test::gpu_available;
using trainscope::test::ids;
using trainscope::test::kNeedsGpu;
using trainscope::test::tiny_gpt;

// The logits of the last token of `seq` decoded alone: the prompt `seq[0, p)` in one append,
// then one token per append (as the server's fcfs worker feeds a request).
torch::Tensor alone(Decoder& d, const std::vector<int64_t>& seq, size_t p) {
  d.reset(1, static_cast<int64_t>(seq.size()));
  auto prompt = std::vector<int64_t>(seq.begin(), seq.begin() + static_cast<std::ptrdiff_t>(p));
  auto logits = d.append(ids(prompt).to(d.device()));
  for (size_t i = p; i < seq.size(); ++i) logits = d.append(ids({seq[i]}).to(d.device()));
  return logits;
}

// Three requests of different prompt lengths decoded through steps that name the slots in
// every pattern the scheduler makes: two of three, all three (slots 0..n-1: the view path), and
// slots 1 and 2 without 0 (gathered); each row's logits equal its sequence decoded alone.
void check_rows_equal_alone(const torch::Device& dev, double atol) {
  auto model = tiny_gpt();
  model->to(dev);
  auto slots = make_gpt_slot_decoder(*model, torch::kFloat);
  auto single = make_gpt_decoder(*model, torch::kFloat);
  slots->reset_slots(3, 40);
  std::map<int64_t, std::vector<int64_t>> seq = {{0, {5, 17, 3, 42, 8}}, {1, {9, 2}}, {2, {1, 2, 3, 4, 5, 6, 7, 8, 9}}};
  std::map<int64_t, size_t> prompt_len;
  auto prefill = [&](int64_t s) {
    prompt_len[s] = seq[s].size();
    auto got = slots->prefill(s, ids(seq[s]).to(dev)).cpu();
    EXPECT_TRUE(torch::allclose(got, alone(*single, seq[s], prompt_len[s]).cpu(), 1e-4, atol)) << "prefill " << s;
  };
  prefill(0);
  prefill(2);
  const std::vector<std::vector<int64_t>> plan = {{0, 2}, {0, 2}, {0, 1, 2}, {1, 2}, {1, 2}, {0, 1, 2}};
  int64_t token = 11;
  for (size_t k = 0; k < plan.size(); ++k) {
    if (k == 2) prefill(1);  // slot 1 joins mid-way, its prompt at positions 0..
    std::vector<int64_t> toks;
    for (int64_t s : plan[k]) {
      const int64_t t = token++ % 61;
      toks.push_back(t);
      seq[s].push_back(t);
    }
    auto out = slots->step(plan[k], torch::tensor(toks, torch::kLong).view({-1, 1}).to(dev)).cpu();
    ASSERT_EQ(out.size(0), static_cast<int64_t>(plan[k].size()));
    for (size_t i = 0; i < plan[k].size(); ++i) {
      const int64_t s = plan[k][i];
      EXPECT_EQ(slots->slot_length(s), static_cast<int64_t>(seq[s].size()));
      auto want = alone(*single, seq[s], prompt_len[s]).cpu();
      EXPECT_TRUE(torch::allclose(out[static_cast<int64_t>(i)], want[0], 1e-4, atol))
          << "step " << k << " slot " << s << ": max difference "
          << (out[static_cast<int64_t>(i)] - want[0]).abs().max().item<float>();
    }
  }
}

}  // namespace

TEST(GptSlotDecoder, RowsAtTheirOwnPositionsGiveTheLogitsOfDecodingAlone) {
  check_rows_equal_alone(torch::kCPU, 1e-5);
}

// A prefill starts its slot anew: the next request in a freed slot sees none of the old one.
TEST(GptSlotDecoder, PrefillStartsTheSlotAnew) {
  auto model = tiny_gpt();
  auto slots = make_gpt_slot_decoder(*model, torch::kFloat);
  auto single = make_gpt_decoder(*model, torch::kFloat);
  slots->reset_slots(2, 40);
  slots->prefill(0, ids({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  slots->step({0}, ids({11}).view({1, 1}));
  auto first = slots->prefill(0, ids({30, 31}));
  EXPECT_EQ(slots->slot_length(0), 2);
  EXPECT_TRUE(torch::allclose(first, alone(*single, {30, 31}, 2), 1e-4, 1e-5));
  auto next = slots->step({0}, ids({32}).view({1, 1}));
  EXPECT_TRUE(torch::allclose(next, alone(*single, {30, 31, 32}, 2), 1e-4, 1e-5));
  EXPECT_EQ(slots->execution(), "eager");
  EXPECT_EQ(slots->slots(), 2);
}

TEST(GptSlotDecoder, BadCallsAreModelErrorsNamingTheFix) {
  auto model = tiny_gpt();
  auto d = make_gpt_slot_decoder(*model, torch::kFloat);
  auto expect = [](const std::pair<ErrorKind, std::string>& got, const std::string& text) {
    EXPECT_EQ(got.first, ErrorKind::kModel) << got.second;
    EXPECT_NE(got.second.find(text), std::string::npos) << got.second;
  };
  expect(error_of([&] { d->reset_slots(0, 10); }), "slots must be at least 1");
  expect(error_of([&] { d->reset_slots(2, 41); }), "context of 40");
  d->reset_slots(2, 6);
  expect(error_of([&] { d->prefill(2, ids({1})); }), "slot 2 does not exist");
  expect(error_of([&] { d->prefill(0, ids({1, 2, 3, 4, 5, 6, 7})); }), "a prompt of 7 tokens");
  expect(error_of([&] { d->step({1}, ids({1}).view({1, 1})); }), "slot 1 holds no prompt");
  d->prefill(0, ids({1, 2, 3, 4, 5}));
  d->prefill(1, ids({1}));
  expect(error_of([&] { d->step({1, 1}, ids({1, 2}).view({2, 1})); }), "named twice");
  expect(error_of([&] { d->step({0, 1}, ids({1}).view({1, 1})); }), "step input must be int64 token ids [2, 1]");
  expect(error_of([&] { d->step({}, ids({1}).view({1, 1})); }), "at least one slot");
  d->step({0}, ids({6}).view({1, 1}));
  expect(error_of([&] { d->step({0}, ids({7}).view({1, 1})); }), "holds 6 tokens");
  auto image_model = make_model("mlp", 1, 28, 28, 10);
  expect(error_of([&] { make_gpt_slot_decoder(*image_model, torch::kFloat); }), "not a built-in GPT");
}

// On a GPU: the same equality (fp32), the view and the gathered paths on the device.
TEST(GptSlotDecoder, RowsAtTheirOwnPositionsGiveTheLogitsOfDecodingAloneOnTheGpu) {
  if (!gpu_available()) GTEST_SKIP() << kNeedsGpu;
  check_rows_equal_alone(torch::Device("cuda:0"), 1e-4);
}

// decode_attention's CPU path for small products (src/workload/gpt_decode_ops.cpp): below 400
// multiply-adds per product (S x head_dim) it sums element-wise products on the calling thread
// instead of LibTorch 1.13's bmm, which opens a parallel region per product (tg at depth 0 on 2
// threads ran 15x slower on a loaded machine). Same result as the batched products, with and
// without the additive mask; and decoding from an empty cache one token at a time (tg at depth 0)
// equals recomputation.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

#include "workload/gpt.h"
#include "workload/gpt_decode_ops.h"

using namespace trainscope;

namespace {

// softmax(q K^T * scale + bias) V through matmul (the batched products), the definition.
torch::Tensor reference(const torch::Tensor& q, const torch::Tensor& K, const torch::Tensor& V,
                        const torch::Tensor* bias) {
  const int64_t B = q.size(0), H = q.size(1), hd = q.size(3);
  auto s = torch::matmul(q.reshape({B * H, 1, hd}), K.flatten(0, 1).transpose(1, 2)) / std::sqrt(double(hd));
  if (bias) s = s + *bias;
  return torch::matmul(torch::softmax(s, -1), V.flatten(0, 1)).view({B, H, 1, hd});
}

}  // namespace

TEST(GptDecodeSmall, SmallAndLargeProductsEqualTheBatchedProducts) {
  torch::manual_seed(5);
  for (int64_t hd : {8, 64})
    for (int64_t S : {1, 2, 6, 7, 49, 50, 51}) {  // both sides of 400 / hd
      auto q = torch::randn({2, 3, 1, hd}), K = torch::randn({2, 3, S, hd}), V = torch::randn({2, 3, S, hd});
      auto got = gpt_decode::decode_attention(q, K, V, nullptr);
      EXPECT_TRUE(torch::allclose(got, reference(q, K, V, nullptr), 1e-5, 1e-5)) << "hd " << hd << " S " << S;
      // the mask: only the first position attends (every other gets -inf)
      auto bias = torch::full({1, 1, S}, -std::numeric_limits<float>::infinity());
      bias.index_put_({0, 0, 0}, 0.0);
      got = gpt_decode::decode_attention(q, K, V, &bias);
      EXPECT_TRUE(torch::allclose(got, V.narrow(2, 0, 1), 1e-5, 1e-5)) << "masked, hd " << hd << " S " << S;
    }
}

TEST(GptDecodeSmall, DecodingFromAnEmptyCacheOneTokenAtATimeEqualsRecomputation) {
  torch::manual_seed(3);
  auto model = make_gpt("gpt-tiny", GptShape{2, 32, 4, 40, 61});
  model->set_training(false);
  auto reference = make_recompute_decoder(*model, 40, 61, torch::kCPU);
  auto cached = make_gpt_decoder(*model, torch::kFloat);
  const std::vector<int64_t> tokens = {5, 17, 3, 42, 8, 8, 1, 30, 2, 59};
  reference->reset(1, 10);
  cached->reset(1, 10);
  for (int64_t t : tokens) {  // tg at depth 0: the first append is one token into an empty cache
    auto x = torch::tensor({t}, torch::kLong).view({1, 1});
    EXPECT_TRUE(torch::allclose(cached->append(x), reference->append(x), 1e-4, 1e-4)) << "at " << cached->length();
  }
}

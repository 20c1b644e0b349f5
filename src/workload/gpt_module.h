// The GPT-2 modules themselves (workload/gpt.h describes the architecture): a block and the
// whole network, shared by training (gpt.cpp) and cached decoding (gpt_decoder.cpp). Internal to
// the workload layer.
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <string>

#include "workload/fused_lm_loss.h"
#include "workload/gpt.h"

namespace trainscope::gpt_detail {

namespace nn = torch::nn;

struct BlockImpl : nn::Module {
  BlockImpl(int64_t d, int64_t heads) : heads_(heads) {
    ln_1 = register_module("ln_1", nn::LayerNorm(nn::LayerNormOptions({d})));
    c_attn = register_module("c_attn", nn::Linear(d, 3 * d));
    attn_proj = register_module("attn_proj", nn::Linear(d, d));
    ln_2 = register_module("ln_2", nn::LayerNorm(nn::LayerNormOptions({d})));
    c_fc = register_module("c_fc", nn::Linear(d, 4 * d));
    mlp_proj = register_module("mlp_proj", nn::Linear(4 * d, d));
  }
  torch::Tensor forward(torch::Tensor x) {
    const int64_t B = x.size(0), T = x.size(1), C = x.size(2);
    auto qkv = linear(c_attn, ln_1(x)).split(C, 2);
    auto heads = [&](const torch::Tensor& t) { return t.view({B, T, heads_, C / heads_}).transpose(1, 2); };
    auto y = causal_attention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2])).transpose(1, 2).reshape({B, T, C});
    x = x + linear(attn_proj, y);
    return x + linear(mlp_proj, linear_gelu(ln_2(x), c_fc->weight, c_fc->bias));
  }
  // at::linear, not the module's forward: the C++ frontend's Linear (torch::nn::functional::linear)
  // computes a 3-D input as matmul followed by an in-place bias add, two kernels where at::linear
  // folds B x T into one matrix product with the bias in its epilogue (addmm), as Python's
  // nn.Linear does; on the H200 the separate adds were about 13 % of a GPT-2 step (bench/RESULTS.md).
  static torch::Tensor linear(const nn::Linear& l, const torch::Tensor& x) { return at::linear(x, l->weight, l->bias); }
  int64_t heads_;
  nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  nn::Linear c_attn{nullptr}, attn_proj{nullptr}, c_fc{nullptr}, mlp_proj{nullptr};
};
TORCH_MODULE(Block);

struct GptImpl : nn::Module {
  explicit GptImpl(const GptShape& s) : context_(s.context) {
    wte = register_module("wte", nn::Embedding(s.vocab, s.d_model));
    wpe = register_module("wpe", nn::Embedding(s.context, s.d_model));
    blocks = register_module("blocks", nn::ModuleList());
    for (int64_t i = 0; i < s.layers; ++i) blocks->push_back(Block(s.d_model, s.heads));
    ln_f = register_module("ln_f", nn::LayerNorm(nn::LayerNormOptions({s.d_model})));
    init_weights(s.layers);
  }
  // GPT-2's initialisation (header): N(0, 0.02), residual projections scaled by 1/sqrt(2L).
  void init_weights(int64_t layers) {
    torch::NoGradGuard ng;
    const double resid_std = 0.02 / std::sqrt(2.0 * static_cast<double>(layers));
    for (auto& p : named_parameters()) {
      const auto& key = p.key();
      auto& t = p.value();
      if (key.find("ln_") != std::string::npos) continue;  // LayerNorm keeps weight 1, bias 0
      if (t.dim() == 1) t.zero_();
      else if (key.find("proj.weight") != std::string::npos) t.normal_(0.0, resid_std);
      else t.normal_(0.0, 0.02);
    }
  }
  torch::Tensor forward(torch::Tensor idx) { return head(blocks_out(idx)); }
  // The last block's output [B, T, d] for token ids idx [B, T].
  torch::Tensor blocks_out(const torch::Tensor& idx) {
    const int64_t T = idx.size(1);
    TORCH_CHECK(T <= context_, "sequence of ", T, " tokens is longer than the model's context of ", context_);
    auto pos = torch::arange(T, torch::TensorOptions().dtype(torch::kLong).device(idx.device()));
    auto x = wte(idx) + wpe(pos);
    for (auto& b : *blocks) x = b->as<Block>()->forward(x);
    return x;
  }
  // Logits of hidden states x [..., d]: the final LayerNorm and the tied output projection.
  torch::Tensor head(const torch::Tensor& x) { return torch::linear(ln_f(x), wte->weight); }
  // The mean cross-entropy of forward(idx) against targets [B, T] without the logits: the final
  // LayerNorm, then the tied projection and the loss in chunks (workload/fused_lm_loss.h).
  torch::Tensor fused_loss(const torch::Tensor& idx, const torch::Tensor& targets) {
    return linear_cross_entropy(ln_f(blocks_out(idx)).flatten(0, -2), wte->weight, targets.flatten());
  }
  Block block(size_t i) { return Block(blocks->ptr<BlockImpl>(i)); }
  int64_t context_;
  nn::Embedding wte{nullptr}, wpe{nullptr};
  nn::ModuleList blocks{nullptr};
  nn::LayerNorm ln_f{nullptr};
};
TORCH_MODULE(Gpt);

}  // namespace trainscope::gpt_detail

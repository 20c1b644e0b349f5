// The pieces of the built-in GPT's cached decoding that both of its decoders share: the
// whole-sequence decoder (gpt_decoder.cpp, workload/decoder.h's CapturableDecoder) and the
// slot decoder of continuous batching (gpt_slot_decoder.cpp, SlotDecoder). Internal to the
// workload layer.
//
// Shapes: q, k, v [B, H, T or S, hd]; x [B, T, C] (C = H x hd); a mask or bias as each function
// says. The computations are BlockImpl::forward's (workload/gpt_module.h) with the attention
// over the cache given, so a cached decoder computes what the training model computes.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <vector>

#include "workload/gpt_module.h"

namespace trainscope {
class Model;  // workload/model.h
}

namespace trainscope::gpt_decode {

/// The GPT module of built-in GPT `model`, in eval mode with its weights converted in place to
/// `dtype`. Throws Error(kModel) for a model that is not a built-in GPT (a TorchScript language
/// model decodes by recomputation) or a dtype other than kFloat, kBFloat16, kHalf.
gpt_detail::Gpt gpt_for_decoding(Model& model, torch::ScalarType dtype);

/// The shapes a cached decoder reads from its model's weights: the vocabulary and the width C (the
/// token embedding's [vocab, C]), the weights' dtype, the number of blocks and their heads H (1 for
/// a model without blocks).
struct ModelShape {
  int64_t vocab = 0, d_model = 0, layers = 0, heads = 1;
  torch::ScalarType dtype = torch::kFloat;
};
ModelShape model_shape(gpt_detail::Gpt& m);

/// Throws Error(kModel) unless rows >= 1 and 1 <= max_len <= context: the cache a decoder's reset
/// asks for (rows of up to max_len tokens each). `unit` and `rows_are` name the rows in the
/// message: "row" and "the batch" (the whole-sequence decoder), "slot" and "the slots".
void check_cache_size(int64_t rows, int64_t max_len, int64_t context, const char* unit, const char* rows_are);

/// The key/value cache of every block: one tensor [2 (keys, values), rows, H, len, C / H] each, in
/// the model's dtype on `device`, zero-filled (positions not yet written are masked out and must
/// hold finite values: a masked NaN would still poison the weighted sum).
std::vector<torch::Tensor> kv_cache(const ModelShape& shape, int64_t rows, int64_t len, torch::Device device);

/// Logits [B, vocab] (float32) of the last position of x [B, T, C].
torch::Tensor last_logits(gpt_detail::Gpt& m, const torch::Tensor& x);

/// softmax(q k^T / sqrt(hd) + mask) v with `mask` (bool, true = attend; broadcast to
/// [B, H, T, S]) or none: SDPA where LibTorch has it, its definition otherwise.
torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const std::optional<torch::Tensor>& mask);

/// Attention of one query per row (decoding: q [B, H, 1, hd]) over S cached keys and values
/// (K, V [B, H, S, hd]) with an additive `bias` (broadcast to [B x H, 1, S]: 0 to attend, -inf
/// not) or none: softmax(q K^T / sqrt(hd) + bias) V as two batched matrix products. Not SDPA: its
/// fused kernels tile queries in blocks of 32 to 128, so one query wastes most of each tile, and
/// on float32 the memory-efficient kernel runs without tensor cores (on the H200, graph-replayed
/// fp32 decoding of GPT-2 was slower than eager through SDPA over the whole cache;
/// bench/RESULTS.md). On the CPU, products of fewer than 400 multiply-adds (S x hd < 400: the
/// first tokens after an empty cache) are element-wise products reduced on the calling thread
/// instead: LibTorch 1.13's bmm opens a parallel region for each such product, which a loaded
/// machine makes wait a scheduler slice per product (gpt_decode_ops.cpp).
torch::Tensor decode_attention(const torch::Tensor& q, const torch::Tensor& K, const torch::Tensor& V,
                               const torch::Tensor* bias);

/// The MLP's first layer and its GELU (tanh approximation): on CUDA one cuBLASLt matrix product
/// with the bias and GELU in its epilogue (at::_addmm_activation; PyTorch's CUDA path applies the
/// tanh approximation, as GPT-2 does, also where it cannot use the epilogue); elsewhere linear then
/// gelu(tanh), because the CPU path of _addmm_activation applies the exact (erf) GELU.
torch::Tensor fc_gelu(const torch::nn::Linear& fc, const torch::Tensor& x);

/// One block on the new tokens x [B, T, C]: the computation of BlockImpl::forward with attention
/// given: attend(q, kv) takes the queries [B, H, T, hd] and the new keys and values as one view
/// kv [2, B, H, T, hd] of the QKV product (so the cache takes both in one copy) and returns
/// [B, H, T, hd].
template <class Attend>
torch::Tensor block_step(gpt_detail::BlockImpl& b, torch::Tensor x, Attend&& attend) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2), H = b.heads_;
  auto qkv = gpt_detail::BlockImpl::linear(b.c_attn, b.ln_1(x));  // [B, T, 3C]: q | k | v
  auto q = qkv.narrow(2, 0, C).view({B, T, H, C / H}).transpose(1, 2);
  auto kv = qkv.narrow(2, C, 2 * C).view({B, T, 2, H, C / H}).permute({2, 0, 3, 1, 4});
  auto y = attend(q, kv).transpose(1, 2).reshape({B, T, C});
  x = x + gpt_detail::BlockImpl::linear(b.attn_proj, y);
  return x + gpt_detail::BlockImpl::linear(b.mlp_proj, fc_gelu(b.c_fc, b.ln_2(x)));
}

/// Every block of `m` in turn on the new tokens x [B, T, C] (block_step), block l's attention
/// given by attend(l, q, kv) (block_step's q and kv); returns x after the last block.
template <class Attend>
torch::Tensor blocks_step(gpt_detail::Gpt& m, torch::Tensor x, Attend&& attend) {
  const auto layers = static_cast<int64_t>(m->blocks->size());
  for (int64_t l = 0; l < layers; ++l)
    x = block_step(*m->block(static_cast<size_t>(l)), x,
                   [&](const torch::Tensor& q, const torch::Tensor& kv) { return attend(l, q, kv); });
  return x;
}

}  // namespace trainscope::gpt_decode

// The built-in GPT's slot decoder (workload/decoder.h's SlotDecoder; continuous batching).
//
// Cache: per layer, keys and values as one tensor [2, capacity_slots, heads, capacity_len,
// head_dim] in the model's dtype, zero-filled when allocated (gpt_decode_ops.h's kv_cache), as
// gpt_decoder.cpp's. Each slot keeps its own length on the host. Positions of a slot beyond its
// length hold zeros or an earlier request's finite keys and values; they are masked out.
//
// prefill(slot, [1, P]): causal attention over the P prompt tokens themselves (as training and
// as gpt_decoder.cpp's first append), their keys and values written to positions 0..P-1 of the
// slot.
// step(slots, [n, 1]): row i is at position p_i = slot_length(slots[i]). Its key and value go to
// (slots[i], p_i) of the cache in one indexed write; the n rows then attend over positions
// 0..max(p) of their slots (a view when the slots are 0..n-1, else gathered) with the additive
// bias "0 where position <= p_i, else -inf" per row, through decode_attention (one query per row,
// two batched matrix products; gpt_decode_ops.h). A row therefore sees exactly the positions a
// batch-1 decoder of its own sequence sees, so its logits are those of decoding it alone up to
// rounding.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>

#include "trainscope/error.h"
#include "workload/decoder.h"
#include "workload/gpt_decode_ops.h"
#include "workload/gpt_module.h"

namespace trainscope {

namespace {

using gpt_detail::Gpt;
using torch::indexing::TensorIndex;

class GptSlotDecoder final : public SlotDecoder {
 public:
  GptSlotDecoder(Gpt m, torch::Device device)
      : m_(std::move(m)), shape_(gpt_decode::model_shape(m_)), device_(device) {}

  void reset_slots(int64_t slots, int64_t max_len) override {
    gpt_decode::check_cache_size(slots, max_len, context(), "slot", "the slots");
    if (slots > cap_slots_ || max_len > cap_len_) allocate(std::max(slots, cap_slots_), std::max(max_len, cap_len_));
    len_.assign(static_cast<size_t>(slots), 0);
    max_len_ = max_len;
  }

  torch::Tensor prefill(int64_t slot, const torch::Tensor& tokens) override {
    check_slot(slot);
    check_tokens(tokens, 1, "prefill");
    const int64_t P = tokens.size(1);
    if (P > max_len_)
      throw_error(ErrorKind::kModel, fmt::format("a prompt of {} tokens exceeds the {} per slot reset_slots() made "
                                                 "room for; reset with a larger max_len",
                                                 P, max_len_));
    torch::NoGradGuard ng;
    auto x = gpt_decode::blocks_step(m_, m_->wte(tokens) + m_->wpe(torch::arange(P, long_on_device())),
                                     [&](int64_t l, const torch::Tensor& q, const torch::Tensor& kv) {
                                       kv_[l].narrow(1, slot, 1).narrow(3, 0, P).copy_(kv);
                                       return causal_attention(q, kv[0], kv[1]);
                                     });
    len_[static_cast<size_t>(slot)] = P;
    return gpt_decode::last_logits(m_, x);
  }

  torch::Tensor step(const std::vector<int64_t>& slots, const torch::Tensor& tokens) override {
    const int64_t n = static_cast<int64_t>(slots.size());
    check_step(slots);
    check_tokens(tokens, n, "step");
    torch::NoGradGuard ng;
    std::vector<int64_t> pos_host;
    for (int64_t s : slots) pos_host.push_back(len_[static_cast<size_t>(s)]);
    const int64_t S = *std::max_element(pos_host.begin(), pos_host.end()) + 1;
    auto pos = torch::tensor(pos_host, torch::kLong).to(device_);
    auto idx = torch::tensor(slots, torch::kLong).to(device_);
    const std::array<TensorIndex, 2> at_rows{TensorIndex(idx), TensorIndex(pos)};  // (slot, position) of each row
    const bool leading = contiguous_from_zero(slots);
    auto x = m_->wte(tokens) + m_->wpe(pos).view({n, 1, shape_.d_model});
    auto bias = row_bias(pos, n, S);
    x = gpt_decode::blocks_step(m_, x, [&](int64_t l, const torch::Tensor& q, const torch::Tensor& kv) {
      // [cap, L, 2, H, hd] view: (slot, position) index adjacent dims
      kv_[l].permute({1, 3, 0, 2, 4}).index_put_(at_rows, kv.squeeze(3).transpose(0, 1));
      auto c = kv_[l].narrow(3, 0, S);
      c = leading ? c.narrow(1, 0, n) : c.index_select(1, idx);
      return gpt_decode::decode_attention(q, c[0], c[1], &bias);
    });
    for (int64_t s : slots) ++len_[static_cast<size_t>(s)];
    return gpt_decode::last_logits(m_, x);
  }

  int64_t slot_length(int64_t slot) const override {
    check_slot(slot);
    return len_[static_cast<size_t>(slot)];
  }
  int64_t slots() const override { return static_cast<int64_t>(len_.size()); }
  int64_t context() const override { return m_->context_; }
  int64_t vocab() const override { return shape_.vocab; }
  torch::Device device() const override { return device_; }
  std::string execution() const override { return "eager"; }

 private:
  void allocate(int64_t slots, int64_t len) {
    kv_.clear();  // the old cache goes back before the new one is made
    kv_ = gpt_decode::kv_cache(shape_, slots, len, device_);
    cap_slots_ = slots;
    cap_len_ = len;
  }

  torch::TensorOptions long_on_device() const { return torch::TensorOptions().dtype(torch::kLong).device(device_); }

  static bool contiguous_from_zero(const std::vector<int64_t>& slots) {
    for (size_t i = 0; i < slots.size(); ++i)
      if (slots[i] != static_cast<int64_t>(i)) return false;
    return true;
  }

  // Additive bias [n x heads, 1, S]: row i (every head) 0 at positions <= pos[i], -inf after.
  torch::Tensor row_bias(const torch::Tensor& pos, int64_t n, int64_t S) const {
    auto later = torch::arange(S, long_on_device()).view({1, S}).gt(pos.view({n, 1}));  // [n, S]
    auto bias = torch::zeros({n, S}, torch::TensorOptions().dtype(shape_.dtype).device(device_))
                    .masked_fill_(later, -std::numeric_limits<float>::infinity());
    return bias.view({n, 1, 1, S}).expand({n, shape_.heads, 1, S}).reshape({n * shape_.heads, 1, S});
  }

  void check_slot(int64_t slot) const {
    if (slot < 0 || slot >= slots())
      throw_error(ErrorKind::kModel, fmt::format("slot {} does not exist: reset_slots() made {} slot(s) (0..{}); call "
                                                 "reset_slots() with more slots",
                                                 slot, slots(), slots() - 1));
  }

  void check_step(const std::vector<int64_t>& slots) const {
    if (slots.empty()) throw_error(ErrorKind::kModel, "step() needs at least one slot");
    std::vector<int64_t> seen;
    for (int64_t s : slots) {
      check_slot(s);
      const int64_t len = len_[static_cast<size_t>(s)];
      if (len == 0) throw_error(ErrorKind::kModel, fmt::format("slot {} holds no prompt: prefill() it before step()", s));
      if (len + 1 > max_len_)
        throw_error(ErrorKind::kModel, fmt::format("slot {} holds {} tokens, the {} reset_slots() made room for; reset "
                                                   "with a larger max_len",
                                                   s, len, max_len_));
      if (std::find(seen.begin(), seen.end(), s) != seen.end())
        throw_error(ErrorKind::kModel, fmt::format("slot {} is named twice in one step(); name each slot once", s));
      seen.push_back(s);
    }
  }

  void check_tokens(const torch::Tensor& tokens, int64_t rows, const char* what) const {
    const bool prefill = std::string(what) == "prefill";
    if (tokens.dim() != 2 || tokens.size(0) != rows || tokens.size(1) < 1 || (!prefill && tokens.size(1) != 1) ||
        tokens.scalar_type() != torch::kLong)
      throw_error(ErrorKind::kModel,
                  fmt::format("{} input must be int64 token ids [{}, {}]; got {} of dtype {}", what, rows,
                              prefill ? "P >= 1" : "1", fmt::join(tokens.sizes().vec(), "x"),
                              std::string(c10::toString(tokens.scalar_type()))));
  }

  Gpt m_;
  gpt_decode::ModelShape shape_;
  torch::Device device_;
  std::vector<torch::Tensor> kv_;  // per layer [2 (keys, values), cap_slots_, heads, cap_len_, head_dim]
  std::vector<int64_t> len_;       // tokens held per slot
  int64_t cap_slots_ = 0, cap_len_ = 0, max_len_ = 0;
};

}  // namespace

std::unique_ptr<SlotDecoder> make_gpt_slot_decoder(Model& model, torch::ScalarType dtype) {
  Gpt m = gpt_decode::gpt_for_decoding(model, dtype);
  return std::make_unique<GptSlotDecoder>(m, m->wte->weight.device());
}

}  // namespace trainscope

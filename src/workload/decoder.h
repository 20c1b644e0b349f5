// Autoregressive decoding of a causal language model with a key/value cache: the interface the
// generation scenarios (`trainscope infer` on a language model) drive, so they never see how a
// model caches. A built-in GPT gives one (make_decoder, workload/gpt.h).
//
// The cache holds, for every layer, the keys and values of the tokens appended so far: appending
// T tokens costs the forward pass of those T tokens only (attention reads the cached positions),
// so decoding one token after a prompt of P costs one position, not P + 1 (Pope et al. 2022,
// "Efficiently Scaling Transformer Inference", section 2; as transformers' past_key_values and
// llama.cpp's KV cache). The cache is allocated once per reset() for the longest sequence.
//
// Shapes: tokens int64 [B, T] on the decoder's device; logits float32 [B, vocab] of the last
// appended position of each row. All rows share one length (batches are decoded in lockstep).
//
// Errors: reset() with batch < 1 or a length beyond context(), and append() past reset()'s
// max_len or with another batch size, throw Error(kModel) naming the sizes and the fix.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace trainscope {

class Model;  // workload/model.h

class Decoder {
 public:
  virtual ~Decoder() = default;

  /// Empties the cache and makes room for `batch` rows of up to `max_len` tokens (prompt and
  /// generated together); memory is allocated only when it grows beyond what was held.
  virtual void reset(int64_t batch, int64_t max_len) = 0;

  /// Appends tokens [B, T] (T >= 1) after the cached ones and returns the logits [B, vocab]
  /// (float32) of the last of them: T > 1 is a prefill, T = 1 one decoding step.
  virtual torch::Tensor append(const torch::Tensor& tokens) = 0;

  /// Tokens held per row (0 after reset()).
  virtual int64_t length() const = 0;
  /// The longest sequence the model accepts (its position embedding).
  virtual int64_t context() const = 0;
  /// Output width (logits per position).
  virtual int64_t vocab() const = 0;
  /// The device the decoder runs on (tokens must be there).
  virtual torch::Device device() const = 0;
  /// How decoding steps run: "eager", or "cuda_graph" when one-token steps replay a captured
  /// CUDA graph.
  virtual std::string execution() const = 0;
};

/// A decoder whose one-token step has fixed shapes and reads no host value, so it can be captured
/// once as a CUDA graph and replayed at every position (infer/graph_decoder.h wraps it). The
/// built-in GPT's decoder is one.
class CapturableDecoder : public Decoder {
 public:
  /// One decoding step of tokens [B, 1] (B = reset()'s batch) at the position held in
  /// `position` (int64 [1] on the decoder's device: the tokens cached so far): writes that
  /// position of the cache, attends over the whole cache masked to positions <= it (the cache's
  /// capacity, not length(), sets the shapes), adds 1 to `position` in place and returns logits
  /// [B, vocab] (float32). length() is not changed: call advanced() for the steps that ran.
  /// The caller keeps `position` < the capacity reset() made.
  virtual torch::Tensor step_static(const torch::Tensor& tokens, const torch::Tensor& position) = 0;

  /// Tells the decoder that `steps` step_static() calls (or their graph replays) ran: length()
  /// grows by `steps`.
  virtual void advanced(int64_t steps) = 0;

  /// Counts the cache's allocations: it changes exactly when reset() had to allocate a larger
  /// cache, which invalidates graphs captured over the old one.
  virtual int64_t cache_generation() const = 0;
};

/// A decoder whose rows ("slots") hold sequences of their own lengths: the key/value cache of a
/// server that schedules at the iteration level (continuous batching: Orca, Yu et al., OSDI 2022;
/// vLLM, TGI and llama.cpp's server). A request takes a free slot and its prompt is prefilled
/// alone; from then on it decodes one token per step() together with the other slots named, each
/// at its own position (its own length), attending only to its own cached positions. A finished
/// request is simply no longer named, and the next prefill of its slot starts the slot anew.
///
/// Shapes: prefill tokens int64 [1, P] -> logits float32 [1, vocab] of the last prompt position;
/// step tokens int64 [n, 1] for n distinct prefilled slots -> logits float32 [n, vocab], row i for
/// slots[i]. The cache is allocated once per reset_slots() for `slots` rows of `max_len` tokens.
///
/// Errors: reset_slots() with slots < 1 or a length beyond context(), a slot out of range, a
/// step on a slot not prefilled or named twice, a slot past max_len, tokens of another shape or
/// type: Error(kModel) naming the sizes and the fix.
class SlotDecoder {
 public:
  virtual ~SlotDecoder() = default;

  /// Frees every slot and makes room for `slots` rows of up to `max_len` tokens each (prompt and
  /// generated together); memory is allocated only when it grows beyond what was held.
  virtual void reset_slots(int64_t slots, int64_t max_len) = 0;
  /// Starts `slot` anew with the prompt tokens [1, P] (P >= 1) in one forward pass and returns
  /// the logits [1, vocab] (float32) of its last position; slot_length(slot) becomes P.
  virtual torch::Tensor prefill(int64_t slot, const torch::Tensor& tokens) = 0;
  /// One decoding step of the slots named: tokens [n, 1] appended, row i to slots[i] at position
  /// slot_length(slots[i]); returns logits [n, vocab] (float32); each slot's length grows by 1.
  virtual torch::Tensor step(const std::vector<int64_t>& slots, const torch::Tensor& tokens) = 0;

  /// Tokens held by `slot` (0 after reset_slots()).
  virtual int64_t slot_length(int64_t slot) const = 0;
  /// Slots made by the last reset_slots() (0 before).
  virtual int64_t slots() const = 0;
  virtual int64_t context() const = 0;
  virtual int64_t vocab() const = 0;
  virtual torch::Device device() const = 0;
  /// How steps run ("eager").
  virtual std::string execution() const = 0;
};

/// The slot decoder of a built-in GPT `model` (made by make_gpt or make_model, already on its
/// device), computing in `dtype` (kFloat, kBFloat16 or kHalf; the weights converted in place, as
/// make_gpt_decoder does, workload/gpt.h). Eager: no CUDA graph (a step's shapes change with the
/// slots named and their longest length). Throws Error(kModel) for a model that is not a built-in
/// GPT or another dtype.
std::unique_ptr<SlotDecoder> make_gpt_slot_decoder(Model& model, torch::ScalarType dtype);

/// A decoder for any causal LM `model` whose forward maps token ids [B, T] to logits [B, T, V]
/// (a user's TorchScript module): no cache, every append() runs the whole sequence again
/// (execution() "eager, no cache (recomputes the sequence)"). `context` bounds the length. Also
/// the reference that tests hold a cached decoder to. The model must stay alive and on its device.
std::unique_ptr<Decoder> make_recompute_decoder(Model& model, int64_t context, int64_t vocab,
                                                const torch::Device& device);

}  // namespace trainscope

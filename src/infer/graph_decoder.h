// Decoding steps replayed as CUDA graphs (Decoder, workload/decoder.h).
//
// Batch-1 decoding in eager mode is launch-bound: a GPT-2 step is about 150 kernels of a few
// microseconds each, while its arithmetic takes tens of microseconds on an H200. Captured once as a
// CUDA graph (one per batch size), a step is one launch. The graph is captured over
// CapturableDecoder::step_static, whose position is a device tensor, so one graph serves every
// position; the cache is allocated for the model's whole context so its shape never changes.
// Prompts (append of T > 1 tokens) run eagerly. The logits append() returns are a copy, never the
// graph's output buffer (which the next replay overwrites).
#pragma once

#include <memory>

#include "workload/decoder.h"

namespace trainscope {

/// With `cuda_graphs` on a CUDA device (CUDA builds): a Decoder whose one-token appends replay a
/// graph captured on the first one-token append of each batch size (after warm-up steps that
/// leave the cache as they found it); a capture that fails leaves that batch size eager and
/// execution() says why ("eager (cuda graph capture failed for batch B: reason)"). Otherwise
/// `inner` itself, unchanged (execution() then says "eager", or "eager (cuda graphs not
/// applicable on cpu)" when graphs were asked for on a CPU).
std::unique_ptr<Decoder> with_cuda_graphs(std::unique_ptr<CapturableDecoder> inner, bool cuda_graphs);

}  // namespace trainscope

// Sizes of the streaming pipeline's work units and its default queue bound
// (docs/input-pipeline.md#workers-queue-and-pinned-buffers).
#pragma once

#include <algorithm>
#include <cstdint>

namespace trainscope {

/// Samples a worker takes at a time: a batch is filled by several workers in chunks of this size.
inline constexpr int64_t kStreamChunk = 8;

/// The default queue bound: enough batches in flight that every worker has a chunk, twice over,
/// and at least 2: max(2, ceil(2 x workers x kStreamChunk / batch_size)).
inline int64_t default_prefetch_batches(int64_t workers, int64_t batch_size) {
  const int64_t b = std::max<int64_t>(batch_size, 1);
  return std::max<int64_t>(2, (2 * workers * kStreamChunk + b - 1) / b);
}

}  // namespace trainscope

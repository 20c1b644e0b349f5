// Where the trainer gets its training batches (docs/input-pipeline.md): the in-memory data set
// (one gather per batch) or the streaming image-folder pipeline (trainscope/input_pipeline.h).
// The data phase of a step is the trainer's call of next().
#pragma once

#include <torch/torch.h>

#include <memory>
#include <utility>

#include "train/trainer.h"
#include "trainscope/record_sections.h"

namespace trainscope {

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  /// Starts epoch `epoch` (1-based) whose sample order is perm[0..n) (indices into the training set).
  virtual void begin_epoch(int64_t epoch, const int64_t* perm, int64_t n) = 0;
  /// Step s's batch: the samples idx[0..m) = perm[s*B ..] as host tensors x (m' x C x H x W
  /// float32, normalised) and y (m' int64 labels), pinned when the source was made pinned. m' = m
  /// unless bad images were skipped (--on-bad-image skip). The memory stays valid until
  /// `staging` later next() calls. Throws Error(kDataFormat) naming a bad image.
  virtual std::pair<torch::Tensor, torch::Tensor> next(int64_t s, const int64_t* idx, int64_t m) = 0;
  /// The record's input_pipeline section, measured since the source was made.
  virtual InputPipelineSection section() const = 0;
};

/// The stream when w.data.stream is set, else the in-memory gather. `staging`: buffers the
/// trainer rotates through (a buffer is reused only after its host-to-device copy finished);
/// seed: the run's seed (per-sample transform seeds, sample_seed()).
std::unique_ptr<BatchSource> make_batch_source(const Workload& w, int64_t batch_size, bool pinned, int staging,
                                               uint64_t seed);

}  // namespace trainscope

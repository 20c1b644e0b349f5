// The ranks' agreement on the step after which a data-parallel run stops early: a signal
// (SIGINT/SIGTERM) or a rank's time budget is a local event that each rank sees at its own
// moment, yet every rank must leave the step loop after the same step or a peer waits in an
// all-reduce nobody joins. Each rank's wish rides on the step's last gradient bucket as two
// extra elements (no extra collective; grad_sync.h); the world-summed pair is read back and a
// nonzero element stops every rank after the same step (docs/distributed.md#faults).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "train/device.h"

namespace trainscope {
namespace dist {

/// One rank's reasons to stop after the current step; also the agreed reasons after the vote.
struct StopWish {
  bool signal = false;  ///< SIGINT/SIGTERM seen (on this rank; agreed: on some rank)
  bool budget = false;  ///< the time budget spent (on this rank; agreed: on some rank)
  bool any() const { return signal || budget; }
  /// Adds `o`'s reasons to these.
  StopWish& operator|=(const StopWish& o) {
    signal = signal || o.signal;
    budget = budget || o.budget;
    return *this;
  }
};

class StopVote {
 public:
  /// Elements appended to the last bucket: [signal, budget], each 1 or 0 on a rank.
  static constexpr int64_t kElements = 2;

  /// `delay`: steps between a step's vote and its reading. 0 on the CPU (the host already
  /// waited for the all-reduce); on a GPU the host queues work ahead of the device, so the
  /// summed vote of step s is copied to pinned memory and read at step s + delay, blocking
  /// only until step s's copy is done. Every rank reads at the same step, so they agree.
  /// Throws std::invalid_argument for delay < 0.
  StopVote(const torch::Device& dev, int64_t delay);
  /// The delayed reading with a given clock (tests: a scripted PhaseClock of >= delay + 1
  /// slots) and host buffers in ordinary memory; delay is kept as given.
  StopVote(std::unique_ptr<PhaseClock> clock, int64_t delay);

  /// Writes this rank's wish into `slot` (the kElements-element tail of the last bucket,
  /// before its all-reduce is launched).
  static void cast(const StopWish& wish, torch::Tensor slot);

  /// After global step `step`'s all-reduce: `summed` is that tail summed over the ranks (any
  /// scaling > 0 keeps its meaning). Returns the agreed reasons to stop after this step: from
  /// step `step` itself on the CPU, from step `step - delay` on a GPU (none before).
  StopWish read(int64_t step, const torch::Tensor& summed);

  /// Waits for and reads every vote not yet read (the last `delay` steps; at an epoch's end,
  /// where the device is synchronised anyway): the union of their reasons. Nothing on the CPU.
  StopWish drain();

  int64_t delay() const { return delay_; }

 private:
  static StopWish decode(const torch::Tensor& host_pair);
  void make_ring(bool pinned);

  int64_t delay_;
  std::unique_ptr<PhaseClock> clock_;  // GPU: one mark per ring slot, after the copy
  std::vector<torch::Tensor> host_;    // GPU: pinned float pairs, one per ring slot
  std::vector<int64_t> step_of_;       // per ring slot: the step whose vote it holds, -1 none
};

}  // namespace dist
}  // namespace trainscope

// Data-parallel training inside one run (the trainer's only contact with src/dist/):
// rank 0's initial weights, the rank's shard of every epoch, and gradients all-reduced in
// buckets while backward still runs (as PyTorch's c10d::Reducer does: a post-hook on each
// parameter's gradient accumulator marks it ready; a full bucket is launched at once, in
// bucket order on every rank; after backward() the rank waits for all of them and divides by
// the world size).
#pragma once

#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "dist/comm_timer.h"
#include "dist/stop_vote.h"
#include "trainscope/run_record.h"
#include "workload/model.h"

namespace trainscope {
namespace dist {

class Context;

class RunSync {
 public:
  /// nullptr in a single-process run. Otherwise broadcasts rank 0's parameters to every rank
  /// (buffers start identical: every rank builds the model from the same seed), splits the
  /// parameters into buckets of at most DistConfig::bucket_mb (reverse registration order, one
  /// dtype and device per bucket) and installs the hooks. `rec` receives the rank's
  /// communication figures (distributed.ranks[0]) when this object is destroyed, also when the
  /// run fails. Throws Error(kDistributed) when an earlier run broke the process group.
  static std::unique_ptr<RunSync> attach(Model& model, const torch::Device& dev, int64_t warmup_steps,
                                         RunRecord& rec);
  RunSync(Context& c, std::vector<torch::Tensor> params, const torch::Device& dev, int64_t warmup_steps,
          RunRecord& rec);
  ~RunSync();
  RunSync(const RunSync&) = delete;
  RunSync& operator=(const RunSync&) = delete;

  /// Samples per rank per epoch of a training set of n: ceil(n / world size) (DistributedSampler
  /// with drop_last=false: the last ranks repeat the first samples of the permutation).
  /// Records the shard size in the run record (and a note when the ranks repeat samples).
  int64_t shard_size(int64_t n);
  /// This rank's part of an epoch's permutation `perm` (int64, n): perm padded to
  /// world x shard_size(n), then every world-th element from index rank. The ranks' step-s
  /// batches together are the single-process step-s batch of world x the batch size.
  torch::Tensor shard(const torch::Tensor& perm) const;

  /// Before loss.backward() of global step `step`: heartbeat and the bucket state reset.
  /// `wish`: this rank's reasons to stop early (a signal, its time budget), sent with the
  /// step's last bucket (stop_vote.h).
  void before_backward(int64_t step, const StopWish& wish = {});
  /// After loss.backward(): launches unlaunched buckets (parameters without a gradient count
  /// as zeros), waits for every all-reduce and leaves the world-averaged gradients in .grad().
  /// A failed or timed-out collective throws Error(kDistributed) naming the failed rank.
  void after_backward();
  /// After after_backward(): what the ranks agreed (every rank gets the same answer at the same
  /// step): stop after this step when any() (stop_vote.h; on a GPU the vote of
  /// kVoteDelaySteps steps earlier).
  StopWish agreed_stop() const { return agreed_; }
  /// At an epoch's end: adds the votes still in flight (StopVote::drain) to agreed_stop() and
  /// returns it. Every rank calls it at the same step.
  StopWish drain_stop_votes();
  /// Steps between a vote and its reading on a GPU: the host may queue this far ahead.
  static constexpr int64_t kVoteDelaySteps = 2;

  /// Called from a gradient-accumulator post-hook: parameter i's gradient is complete.
  void ready(size_t i);
  /// --grad-accum: true around the backward of a micro-batch that is not the step's last, whose
  /// gradients are a partial sum: ready() then launches nothing (one all-reduce per optimizer
  /// step, after the last micro-batch's backward, as DDP's no_sync()).
  void accumulating(bool on) { accumulating_ = on; }

 private:
  struct Bucket;
  void launch(Bucket& b);
  void launch_in_order();
  void inject_fault(int64_t step);
  void wait_all();
  torch::Tensor vote_slot() const;  ///< the stop vote's elements: the last bucket's tail
  int64_t per_rank(int64_t n) const;

  Context& c_;
  std::vector<torch::Tensor> params_;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;  // kept alive: they hold the hooks
  std::vector<std::unique_ptr<Bucket>> buckets_;
  std::vector<size_t> bucket_of_;
  size_t next_ = 0;
  std::atomic<bool> accumulating_{false};
  std::mutex mu_;
  int64_t step_ = 0, warmup_ = 0;
  RunRecord& rec_;
  std::chrono::steady_clock::time_point t0_;
  double comm_ms_ = 0, overlap_ms_ = 0, wait_ms_ = 0;
  int64_t timed_steps_ = 0, comm_steps_ = 0;
  std::unique_ptr<StopVote> vote_;  // null when there is no bucket (a model without parameters)
  int64_t vote_at_ = 0;             // offset of the vote's elements in the last bucket
  StopWish wish_, agreed_;
  std::unique_ptr<CommTimer> device_timer_;  // NCCL ranks: comm/overlap from device events
};

}  // namespace dist
}  // namespace trainscope

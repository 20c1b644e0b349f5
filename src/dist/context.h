// The process's place in a data-parallel job: the store every rank shares and the process
// group (Gloo on CPU ranks, NCCL on GPU ranks) its collectives run on. One per process,
// created by `trainscope run` before the matrix (setup_rank) and used by every run of it.
#pragma once

#include <chrono>
#include <exception>
#include <memory>
#include <string>

#include "dist/compat_c10d.h"
#include "dist/env.h"
#include "dist/rank.h"
#include "trainscope/config.h"
#include "trainscope/run_record.h"

namespace trainscope {
namespace dist {

class Context {
 public:
  /// Connects to the store (a client of the launcher's or torchrun's agent store, or rank 0's
  /// server under Slurm/plain env). Throws Error(kInvalidArgument) naming MASTER_ADDR/PORT when
  /// it cannot be reached within cfg.timeout_s.
  Context(DistEnv env, const DistConfig& cfg);
  /// Creates the process group: backend "gloo" (CPU) or "nccl" (GPU, CUDA builds). Throws
  /// Error(kDevice) when the backend is not compiled in.
  void connect(const std::string& backend);

  const DistEnv& env() const { return env_; }
  int rank() const { return static_cast<int>(env_.rank); }
  int world() const { return static_cast<int>(env_.world_size); }
  const std::string& backend() const { return backend_; }
  const DistConfig& config() const { return cfg_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  c10::intrusive_ptr<compat::CommBackend> group() const { return pg_; }

  /// Rank 0 publishes `value` under `key`; every other rank returns rank 0's value (waits up to
  /// the timeout, then throws Error(kDistributed) naming rank 0).
  std::string from_rank0(const std::string& key, const std::string& value);
  /// Every rank's `text` under `key`; rank 0 compares them and every rank throws
  /// Error(kInvalidArgument) naming the first rank and key that differ from rank 0's.
  /// `text` is a JSON object (the matrix settings).
  void check_same(const std::string& key, const std::string& json_text);

  /// Every rank's `mine` under `key` (through the store: no collective, any backend); true when
  /// any rank's is true. Every rank must call it with the same keys in the same order. Throws
  /// Error(kDistributed) naming the missing rank when one does not answer within the timeout.
  bool any_rank(const std::string& key, bool mine);
  /// Where this rank is (at most one store write per second): shown when another rank fails.
  void heartbeat(int64_t step, const char* phase, bool force = false);
  /// A message naming the rank that failed (its exit status from the launcher, or the rank whose
  /// heartbeat is oldest) and what it was doing, after `what` (the collective's error).
  std::string explain_failure(const std::string& what);
  /// After a peer failure the group is unusable: later runs fail at once with `why`.
  void mark_broken(const std::string& why) { broken_ = why; }
  const std::string& broken() const { return broken_; }

  /// Gathers the rank summaries of run `run_id` on rank 0 (each other rank sends its own and
  /// gets only its own back). A rank whose summary does not arrive within the timeout is listed
  /// with status "missing" and the failure explanation.
  std::vector<RankSummary> gather(const std::string& run_id, const RankSummary& mine);

  /// The history database rank 0 looks for a one-process baseline in (scaling efficiency).
  std::string history_db;

  /// Shuts the process group down (compat::shutdown_group); the context is unusable after.
  void close();

  /// Store access for trainscope's own keys (all under "trainscope/").
  c10d::Store& store() { return *store_; }

 private:
  bool key_ready(const std::string& key, std::chrono::milliseconds within);
  std::string rank_state(int r);

  DistEnv env_;
  DistConfig cfg_;
  std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<compat::CommBackend> pg_;
  std::string backend_;
  std::string broken_;
  std::chrono::steady_clock::time_point last_beat_{};
};

/// This process's context, or nullptr in a single-process run.
Context* current();

/// The first line of error_without_backtrace(ex) (train/error_text.h): the reason quoted in
/// rendezvous errors.
std::string error_first_line(const std::exception& ex);

}  // namespace dist
}  // namespace trainscope

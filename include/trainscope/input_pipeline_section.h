// The input-pipeline section of a run record (trainscope/record_sections.h): how the run's
// training batches were made (docs/input-pipeline.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/fields.h"  // Better, kLiteral, JsonText, OptD, OptI

namespace trainscope {

/// How a run got its training batches (docs/input-pipeline.md): "memory" (decoded once, one
/// gather per batch) or "stream" (worker threads read, decode and transform each epoch).
/// Stream figures are over the whole run (all epochs, warm-up included). Sources: per-worker
/// wall time around each batch (busy), CLOCK_THREAD_CPUTIME_ID (loader CPU), getrusage(2)
/// RUSAGE_SELF minus the loader's CPU (the rest of the process: the trainer's threads,
/// telemetry). CPU percentages: 100 = one core busy for the whole training time.
struct InputPipelineSection {
  std::string mode;                    // "memory" | "stream"
  std::string cache_reason;            // why (data.cache_data, the budget)
  OptI decoded_bytes, budget_bytes;    // folder: float32 train+test sets decoded; data.cache_budget_gib
  OptI workers;                        // stream: decode threads
  std::string workers_reason;          // how the number was chosen
  OptI cores;                          // online logical CPUs
  OptI intra_op_threads;               // the trainer's
  std::string augment;                 // stream: the training transform
  OptI prefetch_batches;               // stream: the queue's bound (finished batches waiting)
  OptI queue_max_depth;                // stream: the most finished batches ever waiting (<= prefetch_batches)
  OptD queue_depth_mean;               // stream: over the samples below
  std::vector<double> queue_depth_t_s; // stream: sample times (s since the stream started), one per batch taken
  std::vector<int64_t> queue_depth;    // stream: finished batches waiting at those times
  OptI images_decoded, bad_images, changed_files;
  std::vector<std::string> problems;   // "path: what" of bad or changed files (first 20)
  OptD wall_s;                         // stream: since the stream started
  OptD worker_busy_s;                  // stream: summed over workers
  OptD worker_busy_pct;                // stream: mean worker's busy_s / wall_s
  OptD decode_per_s_per_worker;        // stream: images / busy second, mean over workers
  OptD data_wait_s;                    // stream: the trainer's total wait for batches
  OptD loader_cpu_pct;                 // stream: the workers' CPU, 100 = one core
  OptD trainer_cpu_pct;                // the rest of the process' CPU over the same time, 100 = one core
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("mode", s.mode, Better::kNone);
    v("cache_reason", s.cache_reason, Better::kNone);
    v("decoded_bytes", s.decoded_bytes, Better::kNone);
    v("budget_bytes", s.budget_bytes, Better::kNone);
    v("workers", s.workers, Better::kNone);
    v("workers_reason", s.workers_reason, Better::kNone);
    v("cores", s.cores, Better::kNone);
    v("intra_op_threads", s.intra_op_threads, Better::kNone);
    v("augment", s.augment, Better::kNone);
    v("prefetch_batches", s.prefetch_batches, Better::kNone);
    v("queue_max_depth", s.queue_max_depth, Better::kNone);
    v("queue_depth_mean", s.queue_depth_mean, Better::kNone);
    v("queue_depth_t_s", s.queue_depth_t_s, Better::kNone);
    v("queue_depth", s.queue_depth, Better::kNone);
    v("images_decoded", s.images_decoded, Better::kNone);
    v("bad_images", s.bad_images, Better::kLower);
    v("changed_files", s.changed_files, Better::kNone);
    v("problems", s.problems, Better::kNone);
    v("wall_s", s.wall_s, Better::kNone);
    v("worker_busy_s", s.worker_busy_s, Better::kNone);
    v("worker_busy_pct", s.worker_busy_pct, Better::kNone);
    v("decode_per_s_per_worker", s.decode_per_s_per_worker, Better::kHigher);
    v("data_wait_s", s.data_wait_s, Better::kLower);
    v("loader_cpu_pct", s.loader_cpu_pct, Better::kNone);
    v("trainer_cpu_pct", s.trainer_cpu_pct, Better::kNone);
  }
};

}  // namespace trainscope

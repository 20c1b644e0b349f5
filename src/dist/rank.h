// What `trainscope run` and the matrix call into src/dist/ for (no c10d headers here, so
// the CLI and the runner compile without them).
#pragma once

#include "trainscope/config.h"
#include "trainscope/run_record.h"

namespace trainscope {
namespace dist {

/// Sets up a rank from the environment (dist/env.h), when one is present: store, settings check
/// against rank 0, the shared run folder name, this rank's device (cuda:LOCAL_RANK on GPU runs)
/// and folder (rank 0: the run folder; rank N: <run folder>/ranks/rankN), then the process group.
/// Returns false (and changes nothing) in a single-process run. Bad input throws Error naming
/// the setting: mixed CPU/GPU devices, more local ranks than GPUs, settings unlike rank 0's.
bool setup_rank(MatrixConfig& m);

/// After a run of a distributed matrix (src/matrix/train_cell.cpp): this rank's summary goes to rank 0, whose
/// record gets every rank's and the imbalance/communication figures (record_sections.h).
void finish_run_record(RunRecord& rec);

/// Why a distributed matrix may not use run folder `name` under m.out_dir (it already holds
/// results: distributed runs cannot be resumed), or "". Checked by rank 0 and, before any rank
/// starts, by the `--nproc-per-node` launcher.
std::string run_folder_refusal(const MatrixConfig& m, const std::string& name);

/// Before each cell of a matrix: true when `mine` (this rank's matrix was interrupted) or any
/// other rank's is true, so that every rank stops before the same cell (a signal can reach one
/// rank after the last step the ranks voted on; docs/distributed.md#stopping-together). Every
/// rank calls it once per cell, in the same order. Returns `mine` in a single-process run or
/// once the group is broken; a rank that does not answer within the timeout breaks the group
/// (the next run then fails at once, naming it). Never throws.
bool any_rank_stops(bool mine);

/// A decision every rank must share although it rests on this rank's measurements (the batch
/// sweep's next size): in a data-parallel run every rank returns rank 0's `text`; in a
/// single-process run, `text`. Every rank calls it in the same order. Throws Error(kDistributed)
/// naming rank 0 when it does not publish within the timeout.
std::string rank0_decides(const std::string& text);

/// This process's rank in a data-parallel run, -1 in a single-process run.
int current_rank();

/// Ends this rank's process group and store connection (before the process exits: see
/// compat::shutdown_group). Nothing in a single-process run.
void shut_down();

}  // namespace dist
}  // namespace trainscope

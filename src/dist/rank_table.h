// The console's per-rank table of a data-parallel run (docs/distributed.md#what-is-measured).
// No LibTorch (trainscope_core).
#pragma once

#include <string>

#include "trainscope/run_record.h"

namespace trainscope {
namespace dist {

/// One line per rank (samples/s, step and phase ms, communication ms, its GPU's power and
/// utilisation, status) and a line of imbalance ratios and the exposed communication share;
/// "" when the run has no distributed section. Absent figures print as "—".
std::string format_rank_table(const RunRecord& r);

/// Whether `candidate` (a finished run from the history) can be the scaling baseline of the
/// data-parallel run `run`: one process (world size 1), status ok with a steady samples/s, and
/// the same model, per-rank batch size, variant, data set, device kind (cpu or GPU) and, on the
/// CPU, intra-op threads (the launcher splits the cores between CPU ranks, so the baseline is
/// one process with a rank's threads; 0 = not recorded, not compared). The host is compared by
/// the caller (the history row's provenance).
bool is_scaling_baseline(const RunRecord& candidate, const RunRecord& run);

}  // namespace dist
}  // namespace trainscope

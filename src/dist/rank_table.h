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
/// the same model, per-rank batch size, variant, data set and device kind (cpu or GPU).
bool is_scaling_baseline(const RunRecord& candidate, const RunRecord& run);

}  // namespace dist
}  // namespace trainscope

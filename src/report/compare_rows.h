// The one verdict rule of a comparison (trainscope/compare.h), shared by the run metrics
// (src/report/compare.cpp) and the generation metrics (src/report/compare_generation.cpp).
#pragma once

#include <string>

#include "trainscope/compare.h"

namespace trainscope::report_detail {

/// From row.a and row.b (both measured): the delta of the medians, noise (within_noise), the
/// single-repeat mark, and regression / improvement beyond res.threshold_pct in res's direction;
/// sets res.regressed on a regression. A baseline median of 0 leaves the row without a delta.
void judge_row(CompareRow& row, CompareResult& res);

/// gen_tokens_per_s, tpot_p99_ms, ttft_p99_ms: metrics of a language model's generation, read
/// from inference.json (trainscope/generation_section.h), not from a run record.
bool is_generation_metric(const std::string& metric);

}  // namespace trainscope::report_detail

// The tests' oracle: the analysis with every event in memory, as before it was bounded
// (reference_analysis.cpp says what changed).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "trace/events.h"
#include "trainscope/trace_analysis.h"

namespace trainscope::trace::reference {

/// Sorted, disjoint [start, end) ranges in ns (the plugin's range_utils.py operations,
/// reference_ranges.cpp).
using Ranges = std::vector<std::pair<int64_t, int64_t>>;
Ranges merge_ranges(Ranges r);                            // sorts and joins overlapping ranges
Ranges intersect_ranges(const Ranges& a, const Ranges& b);  // both merged
Ranges subtract_ranges(const Ranges& a, const Ranges& b);   // both merged: a minus b
int64_t ranges_sum(const Ranges& r);
/// The ranges of merged `r` that overlap [start, end), clipped to it.
Ranges clip_ranges(const Ranges& r, int64_t start, int64_t end);

/// analyze_trace as it was: the same figures, from all events held at once.
TraceAnalysis analyze_in_memory(const std::string& path, const AnalyzeOptions& options);

}  // namespace trainscope::trace::reference

// Small statistics helpers shared by the trainer, inference and report.
#pragma once

#include <optional>
#include <vector>

namespace trainscope {

/// Exact percentile of `values` (any order; copied and sorted) by linear interpolation between
/// closest ranks: rank = p/100 * (n-1), the "linear" / type-7 method of Hyndman & Fan (1996),
/// NumPy's default. p in [0, 100]. Empty input returns nullopt.
std::optional<double> percentile(std::vector<double> values, double p);

/// Percentiles for several p at once on an already sorted vector.
double percentile_sorted(const std::vector<double>& sorted, double p);

std::optional<double> mean(const std::vector<double>& values);
std::optional<double> median(std::vector<double> values);

/// Length of the union of [start, end) intervals (ns); overlapping intervals count once, so a
/// busy fraction computed from it is <= 100 % by construction
/// (docs/design.md#busy-time-is-a-union).
long long union_length(std::vector<std::pair<long long, long long>> intervals);

}  // namespace trainscope

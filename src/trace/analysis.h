// The parts of analyze_trace (include/trainscope/trace_analysis.h), each on an EventStore.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "trace/events.h"
#include "trainscope/trace_analysis.h"

namespace trainscope::trace {

/// The plugin's role ranges, merged, for the seven categories before Other (Category order).
using RoleRanges = std::array<Ranges, kCategoryCount - 1>;

/// Per name index: true for a communication kernel (name contains "nccl", any case).
std::vector<bool> communication_names(const EventStore& store);
RoleRanges role_ranges(const EventStore& store, const std::vector<bool>& comm);

/// The steps with their device-side spans (no categories yet); notes get what was assumed.
std::vector<Step> find_steps(const EventStore& store, std::vector<std::string>& notes);
/// Fills each step's category_ns by the plugin's priority rule.
void break_down(std::vector<Step>& steps, const RoleRanges& roles);
std::optional<CommOverlap> comm_overlap(const std::vector<Step>& steps, const RoleRanges& roles);

std::vector<OperatorRow> operator_rows(const EventStore& store);  // all, unsorted
std::vector<KernelRow> kernel_rows(const EventStore& store);      // all, unsorted
std::vector<StreamIdle> stream_idle(const EventStore& store, int64_t consecutive_kernel_delay_ns);

}  // namespace trainscope::trace

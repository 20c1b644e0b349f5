// The profiled window of `trainscope measure` (include/trainscope/measure.h, docs/measure.md#a-profiled-window):
// the hook's torch.profiler traces in <run>/profile/, read by the trace layer's analyze_trace.
#pragma once

#include <nlohmann/json.hpp>

#include "trainscope/measure.h"

namespace trainscope::measure {

/// The folder of the run folder the hook writes its traces into.
inline constexpr const char* kProfileDir = "profile";

/// Analyses every trace in <run>/profile/ into r.profile and writes profile/analysis.json and
/// profile/analysis.md (trace::render_json/render_markdown). A missing or unreadable trace is a
/// note in r.notes, never an error: the measurement stands without it.
void ingest_profile(MeasureResult& r, const MeasureConfig& c);

/// measure.json's "profile": the window, the traces, and per trace the steps' profiler-plugin
/// categories (ms, summed over the steps) and the mean step.
nlohmann::json profile_json(const MeasureResult& r, const MeasureConfig& c);

/// The record's profile section from the analyses (backend "torch.profiler"; operator table,
/// window, the categories as step_breakdown.trace_categories_ms per step); absent without one.
std::optional<ProfileSection> profile_section(const MeasureResult& r, const MeasureConfig& c);

}  // namespace trainscope::measure

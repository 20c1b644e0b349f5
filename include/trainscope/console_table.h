// Console summary of a matrix: one row per run, grouped by model and batch size so that the
// devices of one workload sit side by side, with each GPU's training speed-up over the CPU.
#pragma once

#include <string>
#include <vector>

#include "trainscope/run_record.h"

namespace trainscope {

/// Speed-up: the report's (trainscope/report.h analyze, DeviceComparison::speedup) = median
/// steady samples/s of the device / median steady samples/s of "cpu" for the same (model,
/// batch size); absent when either side has no successful run.
std::string format_matrix_table(const std::vector<RunRecord>& runs);

/// One line on a streamed run's input pipeline (record_sections.h InputPipelineSection: workers,
/// decode rate, busy share, queue depth, the trainer's wait, loader and trainer CPU); "" for a run
/// that was not streamed. Defined in src/results/input_pipeline_text.cpp.
std::string format_input_pipeline(const RunRecord& r);

}  // namespace trainscope

// Typed sections of a run record, one header each: telemetry (headline + per-device summary,
// telemetry_section.h), operator profile (op table, totals, step breakdown, GPU activity, profiler
// overhead; profile_section.h), inference results (single-stream, offline, server, max-QPS search,
// per-scenario telemetry; inference_section.h), the input pipeline (input_pipeline_section.h),
// data-parallel ranks (distributed_section.h), and the metric registry derived from them
// (run_metrics.h). This header includes them all.
//
// Shapes and units
// * Units are in field names (_s, _ms, _us, _ns, _bytes, _w, _j, _pct, _c, _mhz, _per_s).
// * A value that was not measured is std::nullopt (null in results.json, an empty CSV cell),
//   never 0.
// * Every struct lists its fields ONCE, in `fields(s, v)`: v(name, member, Better) for each
//   field in results.json order. That one list drives JSON write and read
//   (src/results/record_json.h), the CSV headline columns (trainscope/run_record.h csv_header)
//   and run_metrics() (trainscope/run_metrics.h). Adding a field there adds it everywhere.
// * Opaque, source-specific details (e.g. NVML driver versions) are kept as JSON text
//   (JsonText): no consumer reads a measurement from them.
#pragma once

#include "trainscope/distributed_section.h"
#include "trainscope/fields.h"  // Better, kLiteral, JsonText, OptD, OptI
#include "trainscope/inference_section.h"
#include "trainscope/input_pipeline_section.h"
#include "trainscope/profile_section.h"
#include "trainscope/run_metrics.h"
#include "trainscope/telemetry_section.h"

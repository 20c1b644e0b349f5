// The console/report lines of a run's input pipeline (trainscope/console_table.h).
#include <fmt/format.h>

#include "common/text.h"
#include "trainscope/console_table.h"

namespace trainscope {

namespace {

std::string opt(const std::optional<double>& v, const char* unit, int digits = 0) {
  return v ? fmt::format("{:.{}f}{}", *v, digits, unit) : "—";
}

}  // namespace

std::string format_input_pipeline(const RunRecord& r) {
  if (!r.input_pipeline || r.input_pipeline->mode != "stream") return "";
  const auto& p = *r.input_pipeline;
  std::string s = fmt::format(
      "{}: streamed, {} ({}), {} images/s per worker, workers busy {}, queue mean {} of {} (max {}), "
      "trainer waited {}; CPU: loader {}, trainer {} (100 % = one core)",
      r.run_id, count_of(p.workers.value_or(0), "worker"), p.workers_reason, opt(p.decode_per_s_per_worker, ""),
      opt(p.worker_busy_pct, " %"), opt(p.queue_depth_mean, "", 1), p.prefetch_batches.value_or(0),
      p.queue_max_depth.value_or(0), p.data_wait_s ? format_duration(*p.data_wait_s) : "—", opt(p.loader_cpu_pct, " %"),
      opt(p.trainer_cpu_pct, " %"));
  if (p.bad_images.value_or(0) > 0) s += fmt::format("; {} skipped", count_of(*p.bad_images, "bad image"));
  if (p.changed_files.value_or(0) > 0)
    s += fmt::format("; {} changed during the run", count_of(*p.changed_files, "file"));
  return s;
}

}  // namespace trainscope

// --batch-sizes auto (trainscope/batch_sweep.h): the matrix's cells of a batch sweep, each batch
// size's point from its runs, agreed by every rank of a data-parallel job.
#include <fmt/format.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "dist/rank.h"
#include "matrix/matrix.h"
#include "trainscope/batch_sweep.h"
#include "trainscope/error.h"
#include "trainscope/stats.h"

namespace trainscope::matrix_detail {

namespace {

// One batch size of a sweep: the median steady samples/s of its ok runs (res.runs from `first`).
BatchSweepPoint sweep_point(int64_t batch, const std::vector<RunRecord>& runs, size_t first) {
  BatchSweepPoint p;
  p.batch_size = batch;
  std::vector<double> sps;
  for (size_t i = first; i < runs.size(); ++i) {
    const RunRecord& r = runs[i];
    if (r.status == RunStatus::kOk && r.steady_samples_per_s) sps.push_back(*r.steady_samples_per_s);
    if (r.status == RunStatus::kOk && !r.steady_samples_per_s && p.failure.empty()) {
      p.too_few_steps = true;
      p.failure = fmt::format("only {} step(s), all inside the warm-up", r.steps_completed);
    }
    if (r.status != RunStatus::kFailed) continue;
    p.out_of_memory = p.out_of_memory || r.error_kind == to_string(ErrorKind::kOutOfMemory);
    if (p.failure.empty()) p.failure = r.failure_reason;
  }
  if (!sps.empty()) p.samples_per_s = median(sps);
  return p;
}

// The sweep point every rank of a data-parallel run acts on: rank 0's (each rank measured its
// own samples/s; ranks that chose different next batch sizes would run different cells).
BatchSweepPoint rank0_point(const BatchSweepPoint& mine) {
  const nlohmann::json j = {{"b", mine.batch_size}, {"sps", mine.samples_per_s ? nlohmann::json(*mine.samples_per_s) : nullptr},
                            {"oom", mine.out_of_memory}, {"failure", mine.failure}, {"few", mine.too_few_steps}};
  const auto r = nlohmann::json::parse(dist::rank0_decides(j.dump()));
  BatchSweepPoint p;
  p.batch_size = r.at("b").get<int64_t>();
  if (!r.at("sps").is_null()) p.samples_per_s = r.at("sps").get<double>();
  p.out_of_memory = r.at("oom").get<bool>();
  p.failure = r.at("failure").get<std::string>();
  p.too_few_steps = r.at("few").get<bool>();
  return p;
}

}  // namespace

// --batch-sizes auto (trainscope/batch_sweep.h): per model and device, the batch doubles from the
// smallest batch size until the sweep rule stops it; every batch runs all repeats.
void Matrix::run_sweeps(const std::vector<std::string>& model_names, ProgressBar& progress) {
  const BatchSweepRule rule{cfg_.batch_sweep.min_gain_pct, cfg_.batch_sweep.max_batch, workload_->data.train.count};
  const int64_t start = *std::min_element(cfg_.batch_sizes.begin(), cfg_.batch_sizes.end());
  for (size_t mi = 0; mi < cfg_.models.size(); ++mi)
    for (const auto& dev : devices_) {
      auto sweep = run_batch_sweep(start, rule, [&](int64_t b) {
        const size_t first = res_.runs.size();
        for (int64_t rep = 0; rep < cfg_.repeats && !stop_before_cell(); ++rep)
          for (const auto& variant : device_variants(dev)) run_cell(dev, cfg_.models[mi], model_names[mi], b, rep, variant, progress);
        return stop_before_cell() ? BatchSweepPoint{} : rank0_point(sweep_point(b, res_.runs, first));
      });
      if (res_.interrupted) return;
      notice(fmt::format("batch sweep of {} on {}: saturation point batch {}; stopped because {}", cfg_.models[mi], dev,
                         sweep.last.saturation_batch ? std::to_string(*sweep.last.saturation_batch) : "none",
                         sweep.last.stop_reason));
    }
}

}  // namespace trainscope::matrix_detail

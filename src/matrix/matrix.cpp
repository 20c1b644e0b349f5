// The matrix in four stages: inputs and run folder, telemetry, one cell at a time, and the merge
// of each finished run into the reporters' records and the telemetry file (matrix/matrix.h).
#include <fmt/format.h>

#include <unistd.h>

#include "dist/rank.h"
#include "matrix/matrix.h"
#include "train/device.h"
#include "train/min_time.h"
#include "train/variant_exec.h"
#include "workload/model_names.h"
#include "trainscope/error.h"
#include "trainscope/variants.h"

namespace trainscope {

namespace matrix_detail {

std::string run_id_of(const std::string& dev, const std::string& id_name, int64_t batch, int64_t rep,
                      const std::string& variant) {
  return fmt::format("{}-{}-b{}-r{}{}", dev == "cpu" ? "cpu" : dev.substr(0, 4) + dev.substr(5), id_name, batch, rep,
                     variant_run_id_suffix(variant));
}

MatrixResult Matrix::run() {
  check_inputs();
  prepare_run_folder();
  start_telemetry();  // a bad telemetry setting is bad input (exit 2); an absent source is a notice
  // From here on the inputs are valid: an error stops the matrix with the finished runs kept.
  if (rescue_) {
    std::lock_guard<std::mutex> lock(rescue_->mu);
    rescue_->salvage = [this](const std::string& why) { return salvage_live_run(why); };
  }
  try {
    report([&](Reporter& r) { r.start(res_.provenance, res_.run_dir, planned_); });
    run_cells();
    if (sampler_) sampler_->stop();
    write_telemetry();
    report([&](Reporter& r) { r.finish(res_.runs); });
  } catch (const Error& e) {
    stop_with(e.kind() == ErrorKind::kIo ? MatrixAbort::kIo : MatrixAbort::kInternal, e.what());
  } catch (const std::exception& e) {
    stop_with(MatrixAbort::kInternal, e.what());
  }
  return std::move(res_);
}

// An I/O or internal error: the reporters still get finish() with the runs measured so far (a
// second failure there is only a notice), and the caller sees why the matrix stopped.
void Matrix::stop_with(MatrixAbort kind, const std::string& reason) {
  res_.abort = kind;
  res_.abort_reason = reason;
  if (sampler_) sampler_->stop();
  for (auto* r : reporters_) {
    try {
      r->finish(res_.runs);
    } catch (const std::exception& e) {
      notice(fmt::format("after the matrix stopped: {}", e.what()));
    }
  }
}

// --seq-lens (docs/language-models.md#sequence-length-as-a-matrix-dimension): the language-model
// data cut into windows of each length in turn, the cells of each after it; the run ids and model
// labels name the length ("cpu-gpt-mini-t256-b8-r0"). Without it, the one --seq-len.
void Matrix::run_cells() {
  ProgressBar progress(cfg_.progress);
  const auto model_names = run_id_model_names(cfg_.models);  // one per list entry, unique
  if (cfg_.data.seq_lens.empty() || !workload_->data.train.is_tokens()) return run_cells_at(model_names, progress);
  for (int64_t t : cfg_.data.seq_lens) {
    if (t != workload_->data.train.width) {
      cfg_.data.seq_len = t;
      workload_.emplace(make_workload(load_datasets(cfg_.data, cfg_.train.seed)));
    }
    std::vector<std::string> names;
    for (const auto& n : model_names) names.push_back(fmt::format("{}-t{}", n, t));
    run_cells_at(names, progress);
    if (res_.interrupted) return;
  }
}

void Matrix::run_cells_at(const std::vector<std::string>& model_names, ProgressBar& progress) {
  if (cfg_.batch_sweep.enabled) return run_sweeps(model_names, progress);
  for (int64_t rep = 0; rep < cfg_.repeats; ++rep)
    for (size_t mi = 0; mi < cfg_.models.size(); ++mi)
      for (int64_t b : cfg_.batch_sizes)
        for (const auto& dev : devices_)
          for (const auto& variant : device_variants(dev)) {
            if (stop_before_cell()) return;
            run_cell(dev, cfg_.models[mi], model_names[mi], b, rep, variant, progress);
          }
}

// Whether the matrix stops before its next cell. A rank of a data-parallel job asks every rank
// (dist::Context::any_rank): a signal that reached one rank after the last step the ranks voted
// on (during evaluation, inference or the gather) must stop all of them before the next cell,
// or the others would wait for it in the next run's broadcast (docs/distributed.md#stopping-together).
bool Matrix::stop_before_cell() {
  if (dist::any_rank_stops(res_.interrupted)) res_.interrupted = true;
  return res_.interrupted;
}

void Matrix::run_cell(const std::string& dev, const std::string& model, const std::string& id_name, int64_t batch,
                      int64_t rep, const std::string& variant, ProgressBar& progress) {
  RunSpec spec;
  spec.run_id = run_id_of(dev, id_name, batch, rep, variant);
  if (auto it = done_.find(spec.run_id); it != done_.end()) {
    res_.runs.push_back(it->second);
    report([&](Reporter& r) { r.run_skipped(res_.runs.back()); });
    return;
  }
  spec.device = dev;
  spec.model = model;
  spec.batch_size = batch;
  spec.repeat = rep;
  spec.train = cfg_.train;
  spec.origin = origin_;
  // Saved under a temporary name and renamed when the run is ok (the atomic-write convention of
  // trainscope/fs.h): a killed process never leaves a truncated checkpoint under the final name.
  spec.checkpoint_path = res_.run_dir + "/checkpoints/" + spec.run_id + ".pt.tmp." + std::to_string(::getpid());
  RunRecord rec;
  rec.run_id = spec.run_id;
  rec.device = dev;
  rec.model = model;
  rec.batch_size = batch;
  rec.repeat = rep;
  rec.device_name = device_display_name(dev, res_.provenance.cpu_model);
  spec.variant = rec.variant = variant;
  const Variant v = parse_variant(variant, "--variants");
  rec.variant_note = variant_not_applicable(v, dev, model_has_4d_[model], dist::current_rank() >= 0);
  if (!rec.variant_note.empty()) {  // recorded, not run: not an error (docs/variants.md#applicability)
    rec.status = RunStatus::kNotApplicable;
    fill_run_settings(rec, cfg_.train, *workload_);
    notice(fmt::format("{}: {}", spec.run_id, rec.variant_note));
    merge_run(std::move(rec));
    return;
  }
  report([&](Reporter& r) { r.run_started(rec); });
  focus_telemetry(dev);
  VariantThreads threads(v.threads);  // threadsN: this run's intra-op threads (train and inference)
  if (!threads.warning.empty()) {
    rec.notes.push_back(threads.warning);
    warning(fmt::format("{}: {}", spec.run_id, threads.warning));
  }
  const int64_t requested = spec.train.epochs;
  const double epoch_headline_s = fit_min_time(spec);
  train_cell(spec, rec, progress);
  progress.end();
  if (spec.train.epochs > requested)
    restate_requested_epochs(rec, requested, workload_->data.train.count,
                             effective_min_time_s(cfg_.train, cfg_.telemetry), epoch_headline_s);
  merge_run(std::move(rec));
  if (!io_stop_.empty()) throw_error(ErrorKind::kIo, io_stop_);
}

// A finished run joins the matrix's records; the telemetry sampled so far is made durable first,
// so a run listed in results.json always has its samples in telemetry.csv.gz.
void Matrix::merge_run(RunRecord rec) {
  if (rec.device_name.empty()) rec.device_name = device_display_name(rec.device, res_.provenance.cpu_model);
  if (rec.end_ns == 0) rec.end_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - origin_).count();
  rec.clock_origin_unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::system_clock::now().time_since_epoch() - (Clock::now() - origin_)).count();  // wall time of the clock's zero
  if (rec.status == RunStatus::kFailed) res_.any_failed = true;
  if (rec.status == RunStatus::kInterrupted) res_.interrupted = true;
  // Ctrl-C after the last step (during inference): this run is complete and kept, the
  // matrix stops here.
  if (stop_ && stop_->load()) res_.interrupted = true;
  res_.runs.push_back(std::move(rec));
  write_telemetry();
  report([&](Reporter& r) { r.run_finished(res_.runs.back()); });
}

}  // namespace matrix_detail

MatrixResult run_matrix(const MatrixConfig& cfg, const std::vector<Reporter*>& reporters,
                        const std::atomic<bool>* stop_requested, MatrixRescue* rescue) {
  return matrix_detail::Matrix(cfg, reporters, stop_requested, rescue).run();
}

}  // namespace trainscope

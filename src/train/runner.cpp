#include "trainscope/runner.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <ctime>
#include <filesystem>
#include <thread>

#include "train/compat.h"
#include "train/device.h"
#include "train/trainer.h"
#include "trainscope/dataset.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"

namespace trainscope {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::vector<std::pair<std::string, std::string>> list_devices() {
  auto host = collect_host_provenance();
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& d : visible_devices()) out.emplace_back(d, device_display_name(d, host.cpu_model));
  return out;
}

Provenance collect_provenance(const std::string& command_line, uint64_t seed) {
  Provenance p = collect_host_provenance();
  add_torch_provenance(p);
  p.command_line = command_line;
  p.seed = seed;
  p.intra_op_threads = at::get_num_threads();
  return p;
}

namespace {

std::string timestamp_folder() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

std::string model_slug(const std::string& m) {
  if (!is_torchscript_path(m)) return m;
  return fs::path(m).stem().string();
}

void write_results(const MatrixResult& res) {
  write_file_atomic(res.run_dir + "/results.json", results_json(res.provenance, res.runs));
  write_file_atomic(res.run_dir + "/results.csv", results_csv(res.provenance, res.runs));
}

}  // namespace

MatrixResult run_matrix(const MatrixConfig& cfg_in, MatrixObserver* obs, const std::atomic<bool>* stop_requested) {
  MatrixConfig cfg = cfg_in;
  validate(cfg);
  const auto origin = Clock::now();
  int64_t threads = cfg.train.threads > 0 ? cfg.train.threads : static_cast<int64_t>(std::thread::hardware_concurrency());
  at::set_num_threads(static_cast<int>(std::max<int64_t>(threads, 1)));

  std::string notice;
  auto devices = resolve_devices(cfg.devices, &notice);
  if (!notice.empty() && obs) obs->on_notice(notice);

  // Data first: a bad path or corrupt file stops us before any training.
  auto workload = make_workload(load_datasets(cfg.data, cfg.train.seed));
  const auto& tr = workload.data.train;
  if (tr.count < 1) throw_error(ErrorKind::kDataFormat, "the training set is empty");

  // Models: build each once on the CPU to reject unknown names and shape mismatches early.
  for (const auto& m : cfg.models) {
    auto model = make_model(m, tr.channels, tr.height, tr.width, tr.num_classes);
    try {
      torch::NoGradGuard ng;
      model->set_training(false);
      auto out = model->forward(workload.train_x.narrow(0, 0, 1));
      if (out.dim() != 2 || out.size(1) != tr.num_classes)
        throw_error(ErrorKind::kModel, fmt::format("model '{}' returns shape {} for one sample; expected [1, {}] logits "
                                                   "for the {} classes of the data set",
                                                   m, fmt::join(out.sizes().vec(), "x"), tr.num_classes, tr.num_classes));
    } catch (const c10::Error& e) {
      throw_error(ErrorKind::kModel, fmt::format("model '{}' cannot take inputs of shape 1x{}x{}x{}: {}", m, tr.channels,
                                                 tr.height, tr.width, e.what_without_backtrace()));
    }
  }

  MatrixResult res;
  res.run_dir = (fs::path(cfg.out_dir) / (cfg.run_name.empty() ? timestamp_folder() : cfg.run_name)).string();
  ensure_writable_dir(res.run_dir);
  ensure_writable_dir(res.run_dir + "/checkpoints");
  res.provenance = collect_provenance(cfg.command_line, cfg.train.seed);
  size_t planned = devices.size() * cfg.models.size() * cfg.batch_sizes.size() * static_cast<size_t>(cfg.repeats);
  if (obs) obs->on_matrix_start(res.run_dir, res.provenance, planned);
  write_results(res);

  ProgressBar progress(cfg.progress);
  for (int64_t rep = 0; rep < cfg.repeats && !res.interrupted; ++rep)
    for (const auto& model : cfg.models)
      for (int64_t b : cfg.batch_sizes)
        for (const auto& dev : devices) {
          if (res.interrupted) break;
          RunSpec spec;
          spec.run_id = fmt::format("{}-{}-b{}-r{}", dev == "cpu" ? "cpu" : dev.substr(0, 4) + dev.substr(5),
                                    model_slug(model), b, rep);
          spec.device = dev;
          spec.model = model;
          spec.batch_size = b;
          spec.repeat = rep;
          spec.train = cfg.train;
          spec.origin = origin;
          std::string ckpt_rel = "checkpoints/" + spec.run_id + ".pt";
          spec.checkpoint_path = res.run_dir + "/" + ckpt_rel;
          RunRecord rec;
          rec.run_id = spec.run_id;
          rec.device = dev;
          rec.model = model;
          rec.batch_size = b;
          rec.repeat = rep;
          rec.device_name = device_display_name(dev, res.provenance.cpu_model);
          if (obs) obs->on_run_start(rec);
          TrainHooks hooks;
          hooks.progress = &progress;
          hooks.stop_requested = stop_requested;
          try {
            train_run(spec, workload, hooks, &rec);
            if (rec.status == RunStatus::kOk) rec.checkpoint_path = ckpt_rel;
          } catch (const Error& e) {
            rec.status = e.kind() == ErrorKind::kInterrupted ? RunStatus::kInterrupted : RunStatus::kFailed;
            rec.error_kind = std::string(to_string(e.kind()));
            rec.failure_reason = e.what();
          } catch (const c10::Error& e) {
            rec.status = RunStatus::kFailed;
            if (compat::is_out_of_memory(e)) {
              auto ms = device_memory_stats(torch::Device(dev));
              rec.error_kind = "out_of_memory";
              rec.failure_reason = fmt::format(
                  "{} ran out of memory at batch size {} (peak allocated {:.2f} GiB of {:.2f} GiB); use a smaller batch",
                  dev, b, ms.peak_allocated_bytes.value_or(0) / 1073741824.0, ms.total_bytes.value_or(0) / 1073741824.0);
              release_device_cache(torch::Device(dev));
            } else {
              rec.error_kind = "libtorch";
              rec.failure_reason = e.what_without_backtrace();
            }
          } catch (const std::bad_alloc&) {
            rec.status = RunStatus::kFailed;
            rec.error_kind = "out_of_memory";
            rec.failure_reason = fmt::format("host memory exhausted at batch size {}", b);
          } catch (const std::exception& e) {
            rec.status = RunStatus::kFailed;
            rec.error_kind = "internal";
            rec.failure_reason = e.what();
          }
          progress.end();
          if (rec.device_name.empty()) rec.device_name = device_display_name(dev, res.provenance.cpu_model);
          if (rec.end_ns == 0) rec.end_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - origin).count();
          if (rec.status == RunStatus::kFailed) res.any_failed = true;
          if (rec.status == RunStatus::kInterrupted) res.interrupted = true;
          res.runs.push_back(rec);
          write_results(res);
          if (obs) obs->on_run_end(res.runs.back());
        }
  return res;
}

}  // namespace trainscope

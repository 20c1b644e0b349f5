// TensorBoardReporter (trainscope/tensorboard.h): a run's record and telemetry as TensorBoard
// scalars, encoded by src/tboard/tfevents.h.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "tboard/tfevents.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/tensorboard.h"

namespace trainscope {

namespace {

namespace fs = std::filesystem;

// Adds points to the scalar list with the run's wall-clock origin.
struct Points {
  std::vector<TensorBoardScalar>& out;
  int64_t origin_unix_ns;
  void add(const std::string& tag, int64_t step, int64_t t_ns, const std::optional<double>& v) const {
    if (!v || !std::isfinite(*v)) return;
    out.push_back({tag, step, static_cast<double>(origin_unix_ns + t_ns) * 1e-9, *v});
  }
};

// The wall-clock origin of the record's times; records without one are placed as if they ended now.
int64_t origin_unix_ns(const RunRecord& r) {
  if (r.clock_origin_unix_ns != 0) return r.clock_origin_unix_ns;
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(now).count() - r.end_ns;
}

void epoch_points(const RunRecord& r, const Points& p) {
  int64_t steps = 0;
  for (const auto& e : r.epochs) {
    steps += e.steps;
    p.add("epoch/train_loss", steps, e.end_ns, e.train_loss);
    p.add("epoch/train_accuracy_pct", steps, e.end_ns, e.train_accuracy_pct);
    p.add("epoch/test_accuracy_pct", steps, e.end_ns, e.test_accuracy_pct);
    p.add("epoch/test_loss", steps, e.end_ns, e.test_loss);
    p.add("epoch/samples_per_s", steps, e.end_ns, e.samples_per_s);
    p.add("epoch/time_s", steps, e.end_ns, e.epoch_time_s);
    p.add("epoch/energy_j", steps, e.end_ns, e.energy_j);
  }
}

void run_points(const RunRecord& r, const Points& p) {
  const int64_t step = r.steps_completed, t = r.end_ns;
  p.add("run/steady_samples_per_s", step, t, r.steady_samples_per_s);
  p.add("run/test_accuracy_pct", step, t, r.test_accuracy_pct);
  p.add("run/train_time_s", step, t, r.train_time_s);
  if (const auto& lm = r.language_model) {  // docs/language-models.md
    p.add("run/steady_tokens_per_s", step, t, lm->steady_tokens_per_s);
    p.add("run/val_loss", step, t, lm->val_loss);
    p.add("run/val_perplexity", step, t, lm->val_perplexity);
    p.add("run/val_bits_per_byte", step, t, lm->val_bits_per_byte);
    p.add("run/time_to_target_loss_s", step, t, lm->time_to_target_loss_s);
  }
  if (!r.phases) return;
  PhaseBreakdown ph = *r.phases;
  PhaseBreakdown::fields(ph, [&](const char* name, const auto& v, Better, auto&&...) {
    if constexpr (std::is_same_v<std::decay_t<decltype(v)>, double>) p.add(fmt::format("phases/{}", name), step, t, v);
  });
}

bool is_energy_counter(const std::string& metric) {
  return metric == "energy_j" || metric == "package_energy_j" || metric == "dram_energy_j";
}

// The telemetry devices and metrics written (trainscope/tensorboard.h).
bool tensorboard_metric(const std::string& device, const std::string& metric) {
  static const std::set<std::string> kDevice = {"util_pct", "sm_activity_pct", "power_w", "temp_c", "package_power_w"};
  if (device == "process") return metric == "cpu_pct";
  if (device != "cpu" && device.rfind("gpu", 0) != 0) return false;
  return kDevice.count(metric) > 0 || is_energy_counter(metric);
}

void telemetry_points(const RunRecord& r, const std::vector<CounterSeries>& telemetry, const Points& p) {
  const std::string run_dev = r.telemetry ? r.telemetry->headline.device : "";
  for (const auto& s : telemetry) {
    if (s.device != run_dev && s.device != "cpu" && s.device != "process") continue;
    if (!tensorboard_metric(s.device, s.metric)) continue;
    const std::string tag = fmt::format("telemetry/{}/{}", s.device, s.metric);
    std::optional<double> first;
    for (const auto& [t, v] : s.points) {
      if (t < r.start_ns || t > r.end_ns) continue;
      double value = v;
      if (is_energy_counter(s.metric)) {  // joules since the run's first reading
        if (!first) first = v;
        value = v - *first;
      }
      p.add(tag, (t - r.start_ns) / 1000000, t, value);
    }
  }
}

}  // namespace

std::vector<TensorBoardScalar> tensorboard_scalars(const RunRecord& r, const std::vector<CounterSeries>& telemetry) {
  std::vector<TensorBoardScalar> out;
  const Points p{out, origin_unix_ns(r)};
  for (const auto& c : r.loss_checks) {
    p.add("train/loss", c.step, c.t_ns, c.loss);
    p.add("train/learning_rate", c.step, c.t_ns, c.learning_rate);  // src/train/lr_schedule.h
  }
  epoch_points(r, p);
  run_points(r, p);
  telemetry_points(r, telemetry, p);
  return out;
}

std::string write_tensorboard_events(const std::string& dir, const std::vector<TensorBoardScalar>& scalars,
                                     const std::string& host) {
  // One event per (step, wall time): the scalars measured together share it.
  std::map<std::pair<int64_t, double>, std::vector<tboard::ScalarValue>> events;
  for (const auto& s : scalars) events[{s.step, s.wall_time_s}].push_back({s.tag, static_cast<float>(s.value)});
  const double now_s =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::string body = tboard::tfrecord(tboard::file_version_event(now_s));
  for (const auto& [key, values] : events) body += tboard::tfrecord(tboard::summary_event(key.second, key.first, values));
  ensure_writable_dir(dir);
  // A run measured again (--resume after a failure) replaces its earlier event files.
  for (const auto& f : fs::directory_iterator(dir))
    if (f.path().filename().string().rfind("events.out.tfevents.", 0) == 0) fs::remove(f.path());
  const std::string path =
      dir + "/" + tboard::event_file_name(static_cast<int64_t>(now_s), host, static_cast<int64_t>(::getpid()));
  write_file_atomic(path, body);
  return path;
}

void TensorBoardReporter::start(const Provenance& p, const std::string& run_dir, size_t /*planned_runs*/) {
  run_dir_ = run_dir;
  host_ = p.host;
  const fs::path run_folder = fs::path(run_dir).lexically_normal();
  root_ = dir_.empty() ? (run_folder / "tensorboard").string()
                       : (fs::absolute(dir_).lexically_normal() / run_folder.filename()).string();
}

void TensorBoardReporter::run_finished(const RunRecord& r) {
  if (r.status == RunStatus::kNotApplicable) return;  // measured nothing: no event file, no fake 0
  try {
    std::string why;
    auto series = read_telemetry_series(run_dir_, 0, &why, tensorboard_metric);
    write_tensorboard_events(run_folder(r.run_id), tensorboard_scalars(r, series), host_);
  } catch (const std::exception& e) {
    if (notices_) notices_->notice(fmt::format("TensorBoard events of {} not written: {}", r.run_id, e.what()));
  }
}

}  // namespace trainscope

// The matrix's telemetry: one sampler on the matrix clock, its focus on the run's GPU, each run's
// telemetry section (its headline window, energy per epoch and to the target), telemetry.csv.gz.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/text.h"
#include "matrix/matrix.h"
#include "train/device.h"
#include "trainscope/error.h"

namespace trainscope::matrix_detail {

namespace {

// The device's energy over a run's training up to end_ns (the epochs' training intervals; an
// evaluation every N steps inside that span is included). Absent when a part has no energy reading.
std::optional<double> energy_until(const TelemetrySampler& sampler, const std::string& tdev, const RunRecord& rec,
                                   int64_t end_ns) {
  double joules = 0;
  for (const auto& e : rec.epochs) {
    if (e.start_ns >= end_ns) break;
    const auto es = sampler.summarize(e.start_ns, std::min(e.end_ns, end_ns));
    const auto* d = es.device(tdev);
    if (!d || !d->energy || !d->energy->energy_j) return std::nullopt;
    joules += *d->energy->energy_j;
  }
  return joules;
}

// --target-accuracy and --target-loss: the device's energy over the training that reached the target.
void energy_to_target(const TelemetrySampler& sampler, const std::string& tdev, RunRecord& rec) {
  if (tdev.empty()) return;
  if (auto& t = rec.time_to_accuracy; t && t->reached) t->energy_j = energy_until(sampler, tdev, rec, t->end_ns);
  if (auto& l = rec.language_model; l && l->target_loss_reached.value_or(false) && l->target_loss_end_ns)
    l->energy_to_target_loss_j = energy_until(sampler, tdev, rec, *l->target_loss_end_ns);
}

}  // namespace

// Telemetry: one sampler for the whole matrix, on the matrix clock; a source that fails to probe
// is listed as unavailable, and a sampler that cannot start at all never stops training.
void Matrix::start_telemetry() {
  if (!cfg_.telemetry.enabled) return;
  try {
    TelemetryOptions to;
    to.interval_s = cfg_.telemetry.interval_s;
    to.slow_interval_s = cfg_.telemetry.slow_interval_s;
    to.pcie_interval_s = cfg_.telemetry.pcie_interval_s;
    to.nvml_library = cfg_.telemetry.nvml_library;
    to.proc_root = cfg_.telemetry.proc_root;
    to.sys_root = cfg_.telemetry.sys_root;
    sampler_ = std::make_unique<TelemetrySampler>(to, origin_);
    sampler_->set_run_devices(std::vector<std::string>{});  // no run yet: no GPU's slow fields
    sampler_->start();
    telemetry_gpus_ = sampler_->gpus();
    for (const auto& src : sampler_->sources())
      if (!src.available) notice(fmt::format("telemetry source '{}' unavailable: {}", src.name, src.reason));
    for (const auto& src : sampler_->sources())
      if (auto d = nlohmann::json::parse(src.details.text, nullptr, false); src.name == "nvml" && d.is_object()) {
        if (d.contains("driver_version") && d["driver_version"].is_string())
          res_.provenance.gpu_driver = d["driver_version"].get<std::string>();
        if (d.contains("nvml_version") && d["nvml_version"].is_string())
          res_.provenance.nvml_version = d["nvml_version"].get<std::string>();
      }
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInvalidArgument) throw;
    telemetry_failed(e.what());
  } catch (const std::exception& e) {  // std::thread's std::system_error, a source's bad_alloc
    telemetry_failed(e.what());
  }
}

// The sampler could not start: training goes on without telemetry, and each run says why.
void Matrix::telemetry_failed(const std::string& why) {
  notice(fmt::format("telemetry disabled: {}", why));
  sampler_failure_ = why;
  sampler_.reset();
}

// "cuda:0 (gpu0): util 0 %, power 85 W; cpu util 12 %" over the last 5 s; "" without telemetry.
std::string Matrix::recent_telemetry(const std::string& dev) {
  if (!sampler_) return "";
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - origin_).count();
  const auto s = sampler_->summarize(now - int64_t{5000000000}, now);  // the last 5 s
  auto mean = [&](const std::string& d, const char* m) {
    const MetricStats* x = s.metric(d, m);
    return x && x->mean ? fmt::format("{:.0f}", *x->mean) : std::string("—");
  };
  std::string out;
  const std::string tdev = telemetry_device(dev, res_.provenance, telemetry_gpus_);
  if (!tdev.empty() && tdev != "cpu")
    out = fmt::format("{} ({}): util {} %, power {} W; ", dev, tdev, mean(tdev, "util_pct"), mean(tdev, "power_w"));
  return out + fmt::format("cpu util {} %", mean("cpu", "util_pct"));
}

// NVML's slow fields for the run's GPU only (TelemetrySampler::set_run_devices, docs/telemetry.md
// "Slow fields only for the run's GPU"); dev "" (between runs) or "cpu": for no GPU.
void Matrix::focus_telemetry(const std::string& dev) {
  if (sampler_) trainscope::focus_telemetry(*sampler_, dev, res_.provenance, telemetry_gpus_);
}

void Matrix::fill_run_telemetry(const std::string& dev, RunRecord& rec) {
  auto& sampler = sampler_;
  auto& res = res_;
  auto& telemetry_gpus = telemetry_gpus_;
  if (sampler && !rec.epochs.empty()) {
    std::string tdev = telemetry_device(dev, res.provenance, telemetry_gpus);
    int64_t samples = 0;
    for (const auto& e : rec.epochs) samples += e.samples;
    for (auto& e : rec.epochs) {
      if (tdev.empty()) break;
      const auto es = sampler->summarize(e.start_ns, e.end_ns, e.samples);
      if (const auto* d = es.device(tdev); d && d->energy) e.energy_j = d->energy->energy_j;
    }
    rec.telemetry = sampler->run_section(rec.epochs.front().start_ns, rec.epochs.back().end_ns, samples, tdev);
    energy_to_target(*sampler, tdev, rec);
    // The headline figures come from the headline window only (docs/profiling.md#measurement-protocol);
    // the whole run stays in the summary.
    // A headline window too short for kMinStatsSamples telemetry samples keeps the whole run's
    // figures, and says so (window "run" plus a note), rather than means of one or two readings.
    const auto& mw = rec.measurement;
    bool from_headline = false;
    if (mw.headline_end_ns > mw.headline_start_ns) {
      auto h = sampler->run_section(mw.headline_start_ns, mw.headline_end_ns, mw.headline_samples, tdev).headline;
      from_headline = h.stats_samples_min.value_or(0) >= kMinStatsSamples;
      if (from_headline)
        rec.telemetry->headline = std::move(h);
      else
        rec.notes.push_back(fmt::format(
            "telemetry headline covers the whole run: the headline window ({:.2f} s) held {}, fewer than {}; train "
            "longer (--max-steps, --epochs) or sample faster (--telemetry-interval)",
            static_cast<double>(mw.headline_end_ns - mw.headline_start_ns) * 1e-9,
            count_of(h.stats_samples_min.value_or(0), "telemetry sample"), kMinStatsSamples));
    }
    rec.telemetry->headline.window = from_headline ? "headline" : "run";
    if (const MetricStats* cpu = rec.telemetry->summary.metric("sampler", "cpu_pct"); cpu && cpu->mean)
      rec.measurement.sampler_cpu_pct_mean = cpu->mean;
    else  // sampler/cpu_pct needs two polls inside the run (the first sets the baseline)
      rec.notes.push_back(
          "the telemetry sampler's own CPU time was not measured: fewer than two of its polls fell inside the run "
          "(a run shorter than --telemetry-interval, or a machine so busy that the sampler, which yields to "
          "training, was not scheduled)");
    rec.measurement.sampler_scheduling = sampler->thread_scheduling();
    if (auto note = steal_note(rec.telemetry->headline); !note.empty()) rec.notes.push_back(note);
    if (tdev.empty() && dev != "cpu")
      rec.notes.push_back("GPU telemetry absent: NVML did not report a GPU with this device's PCI bus id");
  }
}

// telemetry.csv.gz: the earlier sessions' rows (--resume) plus every sample of this session,
// rewritten atomically after each run, so a SIGKILL keeps what was sampled for finished runs.
void Matrix::write_telemetry() {
  if (sampler_) sampler_->write_samples_csv_gz(res_.run_dir + "/telemetry.csv.gz", kept_telemetry_);
}

}  // namespace trainscope::matrix_detail

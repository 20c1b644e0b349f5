// The headline of a run's telemetry (trainscope/telemetry.h telemetry_headline): means and
// peaks of the run's device and of the host, from a TelemetrySummary.
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "common/text.h"
#include "trainscope/telemetry.h"

namespace trainscope {

namespace {

OptD stat(const TelemetrySummary& s, const std::string& device, const std::string& metric, OptD MetricStats::*which) {
  const MetricStats* m = s.metric(device, metric);
  return m ? m->*which : std::nullopt;
}

// The run device's per-metric means and maxima (GPU: NVML fields; CPU: RAPL package power).
void device_figures(const TelemetrySummary& s, const std::string& dev, TelemetryHeadline& h) {
  struct Pair {
    const char* metric;
    OptD TelemetryHeadline::*mean;
    OptD TelemetryHeadline::*max;
  };
  using H = TelemetryHeadline;
  static const Pair kPairs[] = {
      {"util_pct", &H::util_pct_mean, &H::util_pct_max},
      {"sm_activity_pct", &H::sm_activity_pct_mean, &H::sm_activity_pct_max},
      {"sm_occupancy_pct", &H::sm_occupancy_pct_mean, &H::sm_occupancy_pct_max},
      {"tensor_activity_pct", &H::tensor_activity_pct_mean, &H::tensor_activity_pct_max},
      {"mem_util_pct", &H::mem_util_pct_mean, &H::mem_util_pct_max},
      {"power_w", &H::power_w_mean, &H::power_w_max},
      {"power_avg_w", &H::power_avg_w_mean, &H::power_avg_w_max},
      {"power_instant_w", &H::power_instant_w_mean, &H::power_instant_w_max},
      {"temp_c", &H::temp_c_mean, &H::temp_c_max},
      {"sm_clock_mhz", &H::sm_clock_mhz_mean, &H::sm_clock_mhz_max},
      {"package_power_w", &H::package_power_w_mean, &H::package_power_w_max}};
  for (const auto& p : kPairs) {
    h.*p.mean = stat(s, dev, p.metric, &MetricStats::mean);
    h.*p.max = stat(s, dev, p.metric, &MetricStats::max);
    if (const MetricStats* m = s.metric(dev, p.metric); m && m->count > 0)
      h.stats_samples_min = std::min(h.stats_samples_min.value_or(m->count), m->count);
  }
  if (h.stats_samples_min) h.stats_too_few_samples = too_few_samples(*h.stats_samples_min);
  h.mem_used_bytes_max = stat(s, dev, "mem_used_bytes", &MetricStats::max);
  h.process_mem_bytes_max = stat(s, dev, "process_mem_bytes", &MetricStats::max);
  if (auto m = stat(s, dev, "clocks_event_reasons_mask", &MetricStats::max)) h.clocks_event_reasons_mask_max = static_cast<int64_t>(*m);
  if (const auto* d = s.device(dev); d && d->energy) {
    h.energy_j = d->energy->energy_j;
    h.joules_per_sample = d->energy->joules_per_sample;
    h.energy_method = d->energy->energy_method;
    h.energy_short_window = d->energy->short_window;
    if (d->energy->counter_energy_j) h.energy_power_integration_j = d->energy->power_integration_energy_j;
    h.energy_sources_diff_pct = d->energy->sources_diff_pct;
  }
}

}  // namespace

TelemetryHeadline telemetry_headline(const TelemetrySummary& s, const std::string& device,
                                     const std::vector<GpuInfo>& gpus) {
  TelemetryHeadline h;
  h.device = device;
  if (!device.empty()) device_figures(s, device, h);
  for (const auto& g : gpus)
    if ("gpu" + std::to_string(g.nvml_index) == device) h.power_limit_w = g.power_limit_w;
  h.cpu_util_pct_mean = stat(s, "cpu", "util_pct", &MetricStats::mean);
  h.cpu_util_pct_max = stat(s, "cpu", "util_pct", &MetricStats::max);
  h.cpu_steal_pct_mean = stat(s, "cpu", "steal_pct", &MetricStats::mean);
  h.process_cpu_pct_mean = stat(s, "process", "cpu_pct", &MetricStats::mean);
  h.process_rss_bytes_max = stat(s, "process", "rss_bytes", &MetricStats::max);
  h.host_mem_used_bytes_max = stat(s, "cpu", "mem_used_bytes", &MetricStats::max);
  h.cpu_temp_c_max = stat(s, "cpu", "temp_c", &MetricStats::max);
  return h;
}

std::optional<double> stolen_share_pct(const TelemetryHeadline& h) {
  if (!h.cpu_steal_pct_mean || !h.cpu_util_pct_mean) return std::nullopt;
  const double demanded = *h.cpu_util_pct_mean + *h.cpu_steal_pct_mean;
  return demanded > 0 ? std::optional<double>(100.0 * *h.cpu_steal_pct_mean / demanded) : std::nullopt;
}

std::string steal_note(const TelemetryHeadline& h) {
  const auto share = stolen_share_pct(h);
  if (!share || *share <= kStealNotePct) return "";
  return fmt::format(
      "the hypervisor gave other guests {} % of the time this virtual machine's CPUs had work during the {} (steal "
      "time, /proc/stat): samples/s may be lower than on an uncontended host and varies with their load",
      format_number(*share), h.window == "headline" ? "headline window" : "run");
}

ScenarioTelemetry scenario_telemetry(const TelemetrySummary& s, const std::string& device) {
  ScenarioTelemetry out;
  out.device = device;
  out.window_s = s.duration_s;
  const DeviceTelemetry* d = s.device(device);
  if (!d) {
    out.absent_reason = "telemetry has no readings for '" + device + "' in this window";
    return out;
  }
  const TelemetryHeadline h = telemetry_headline(s, device, {});
  out.power_w_mean = h.power_w_mean;
  out.package_power_w_mean = h.package_power_w_mean;
  out.energy_j = h.energy_j;
  out.joules_per_sample = h.joules_per_sample;
  out.energy_method = h.energy_method;
  out.short_window = h.energy_short_window;
  out.energy_power_integration_j = h.energy_power_integration_j;
  out.energy_sources_diff_pct = h.energy_sources_diff_pct;
  out.stats_samples_min = h.stats_samples_min;
  out.stats_too_few_samples = h.stats_too_few_samples;
  if (!d->energy) out.absent_reason = "'" + device + "' has neither an energy counter nor a power reading here";
  return out;
}

TelemetrySection TelemetrySampler::run_section(int64_t t0_ns, int64_t t1_ns, int64_t samples_processed,
                                               const std::string& device) const {
  TelemetrySection out;
  out.summary = summarize(t0_ns, t1_ns, samples_processed);
  out.headline = telemetry_headline(out.summary, device, gpus());
  return out;
}

}  // namespace trainscope

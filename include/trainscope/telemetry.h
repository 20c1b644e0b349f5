// Hardware telemetry: a sampler thread that watches GPUs (NVML, loaded with dlopen), the CPU
// and this process (/proc), CPU energy (RAPL powercap) and temperatures (hwmon, thermal zones),
// on the run's clock.
//
// Shapes and units
// * A sample is (t_ns, device, metric, value). t_ns is steady_clock nanoseconds since the
//   origin given to the sampler (docs/design.md#one-clock).
// * device: "cpu" (whole machine), "cpu<N>" (logical CPU N as numbered in /proc/stat),
//   "process" (this process), "gpu<N>" (NVML index N; map to CUDA through GpuInfo::pci_bus_id),
//   "hwmon:<chip>:<label>" and "thermal:<type>" (individual temperature sensors).
// * metric names end in their unit: _pct (0..100), _w, _j, _c (degrees Celsius), _bytes,
//   _mhz, _bytes_per_s, _count, _mask (a bit set, no unit). The full list with ranges is
//   telemetry_fields() and docs/telemetry.md#fields-and-units.
// * A value that could not be measured is never stored: "not supported", sentinel values
//   (0xFFFFFFFF, ~0ULL, NVML_VALUE_NOT_AVAILABLE), non-finite and out-of-range readings are
//   dropped and counted per field with the reason.
// * Energy counters (*energy_j) are cumulative joules, monotonic: NVML's total-energy counter
//   converted from mJ, RAPL's counter with wrap-around undone via max_energy_range_uj.
//
// Errors
// * Options out of range throw trainscope::Error(kInvalidArgument) from the constructor.
// * A source that cannot be used (no library, no files, EACCES) is not an error: sources()
//   lists it as unavailable with the reason, and sampling goes on with the others.
// * write_samples_csv_gz throws trainscope::Error(kIo).
//
// Thread safety: every const member may be called from any thread while sampling runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/record_sections.h"

namespace trainscope {

struct TelemetryOptions {
  double interval_s = 0.1;  // sampling period; 0.001 .. 1.0 (1..1000 Hz), else kInvalidArgument
  std::string proc_root = "/proc", sys_root = "/sys";
  std::string nvml_library = "libnvidia-ml.so.1";  // dlopen name or path; "" disables NVML
  bool enable_nvml = true, enable_proc = true, enable_rapl = true, enable_hwmon = true;
  // Period of the slow fields: NVML's ones that take milliseconds per call (energy counter, PCIe
  // throughput, process list, GPM metrics; the others take microseconds) and proc's CPU frequency
  // (a file per CPU, the part of a proc poll that grows with the host). Never faster than
  // interval_s. Per-call figures: bench/RESULTS.md, "Figures the code's choices rest on".
  double slow_interval_s = 1.0;
  // Period of NVML's PCIe throughput, the slowest field (two calls that wait in the driver; each
  // reading is a snapshot of the link of about one call's length, not an average). Whether
  // reading it every second costs a launch-bound run is not known, so it is read less often by
  // default at little loss. Never faster than slow_interval_s; a GPU that becomes a run's GPU
  // gets it at once.
  double pcie_interval_s = 10.0;
  // The pids whose GPU memory in NVML's running-process list is the "process_mem_bytes" metric
  // (summed per GPU); called on the sampler's thread at each slow poll. Empty (default): this
  // process. `measure` gives its program's process tree (docs/measure.md).
  std::function<std::vector<int>()> gpu_process_pids;
};

struct CounterSeries {
  std::string device;  // "cpu", "gpu0" (NVML index), ...
  std::string metric;  // with unit, e.g. "power_w"
  std::vector<std::pair<int64_t, double>> points;  // (ns since origin, value)
};

/// The samples of <run_dir>/telemetry.csv.gz (or telemetry.csv) as one series per (device,
/// metric), in time order, those `keep(device, metric)` picks (every one when `keep` is empty),
/// each thinned to at most `max_points` by keeping each time bucket's min and max so peaks
/// survive (max_points 0, or below 8: every point). Malformed lines are skipped. A missing or
/// unreadable file, or one with no sample kept: empty, with the reason in *why.
std::vector<CounterSeries> read_telemetry_series(
    const std::string& run_dir, size_t max_points, std::string* why,
    const std::function<bool(const std::string& device, const std::string& metric)>& keep);

struct GpuInfo {
  int nvml_index = -1;
  std::string name, uuid, pci_bus_id;  // pci_bus_id as NVML gives it: "00000000:01:00.0"
  std::optional<uint64_t> memory_total_bytes;
  std::optional<double> power_limit_w;  // enforced power limit
};

/// One reading of one poll (monitor, Prometheus).
struct TelemetryReading {
  std::string device, metric;
  double value = 0;
};

/// Everything one poll of all sources returned, at one time.
struct TelemetrySnapshot {
  int64_t t_ns = 0;
  std::vector<TelemetryReading> readings;
  /// Value of (device, metric) in this snapshot, if it was measured.
  std::optional<double> get(const std::string& device, const std::string& metric) const;
};

/// Static description of a metric (the catalogue behind validation, docs and /metrics).
struct TelemetryField {
  const char* metric;  // e.g. "power_w"
  double min, max;     // valid range; readings outside are dropped as "out_of_range"
  const char* help;    // one line, for Prometheus HELP and docs
  bool slow = false;   // read once per slow_interval_s, not every poll (docs/telemetry.md#fields-and-units)
};
/// Headline of `device` in `s`: the mean and max of each headline metric of that device, its
/// energy, the power limit of the GPU whose NVML index the name carries ("gpu<N>"), and the
/// host-wide figures ("cpu", "process"). Missing readings stay std::nullopt.
TelemetryHeadline telemetry_headline(const TelemetrySummary& s, const std::string& device,
                                     const std::vector<GpuInfo>& gpus);

/// The share, in percent, of the time a virtual machine's CPUs had work that its hypervisor gave
/// to other guests: steal / (busy + steal), from the headline's means of the machine-wide
/// cpu_steal_pct and cpu_util_pct (both shares of all CPU time, idle included; an idle vCPU
/// accrues no steal, so steal alone understates what a busy one lost). nullopt without both.
std::optional<double> stolen_share_pct(const TelemetryHeadline& h);

/// The run note for a headline whose stolen_share_pct exceeds kStealNotePct, else "" (no
/// steal reading, bare metal, or at or below the threshold). h.window names the window.
std::string steal_note(const TelemetryHeadline& h);

/// The scenario telemetry of `device` in `s` (an inference scenario's window): the figures of
/// telemetry_headline(s, device) that ScenarioTelemetry keeps (power, energy from both sources
/// and their difference, the fewest-samples mark), or absent_reason when `device` has no
/// readings or no energy source in the window.
ScenarioTelemetry scenario_telemetry(const TelemetrySummary& s, const std::string& device);

/// All metrics any source can produce (per-device prefixes such as "core" are not repeated).
const std::vector<TelemetryField>& telemetry_fields();

class TelemetrySampler {
 public:
  // origin: the run's clock zero; all sample times are steady_clock ns since origin.
  TelemetrySampler(const TelemetryOptions&, std::chrono::steady_clock::time_point origin);
  ~TelemetrySampler();  // stops the thread
  TelemetrySampler(const TelemetrySampler&) = delete;
  TelemetrySampler& operator=(const TelemetrySampler&) = delete;

  void probe();  // probes the sources once (start() calls it); idempotent
  void start();  // probes sources (once) and starts the thread
  void stop();   // idempotent; the samples stay available
  /// The sampling thread's scheduling as the kernel reports it once the thread started:
  /// "SCHED_BATCH, nice +10" (its wake-ups never preempt training; a tenth of a core's share
  /// under contention), else the policy and nice value the kernel granted; "" before start().
  /// docs/telemetry.md#cost-to-the-workload.
  std::string thread_scheduling() const;

  /// Polls every source now (on the caller's thread), stores and returns the result.
  /// Used by `monitor` without a thread; safe to call while the thread runs.
  TelemetrySnapshot sample_now();
  /// sample_now() that also reads the run GPUs' energy counters (set_run_devices) when the slow
  /// fields are not due: the edge of a window then has a counter reading of its own rather than
  /// one up to slow_interval_s away (docs/telemetry.md#energy). The call spins for milliseconds on
  /// the caller's thread, so `trainscope run` calls it at the headline window's start and after
  /// the last step, outside both windows.
  TelemetrySnapshot read_energy_now();

  std::vector<GpuInfo> gpus() const;
  /// The telemetry devices ("gpu0", "cpu"; run_section's names) the current run uses. NVML's
  /// slow fields (total energy, PCIe throughput, process memory, GPM SM activity) are then read
  /// only for the GPUs listed; the others keep their fast fields (power, utilisation, memory,
  /// temperature, clocks). An empty list: no GPU's slow fields (between runs, on a CPU run).
  /// nullopt: every GPU's (the default; `monitor`). Why: a slow poll holds a core for
  /// milliseconds every slow interval, which an all-core CPU run may wait for (a possible cost,
  /// not a measured one). Takes effect at the next poll
  /// (sample_now() to read a new run GPU's slow fields at once); callable before start().
  void set_run_devices(std::optional<std::vector<std::string>> devices);
  /// The sources as probed; reason is "" when available. NVML details carry driver/NVML
  /// versions and lost GPUs. While sampling runs, details are refreshed once per slow interval
  /// (at most slow_interval_s old); stop() refreshes them after the last poll.
  std::vector<TelemetrySourceInfo> sources() const;
  /// Summary of [t0_ns, t1_ns] (trainscope/record_sections.h TelemetrySummary): per device and
  /// metric count, dropped readings with reasons, mean, p50, p95, max, update_period_s; per
  /// device the energy (energy_method "counter" or "power_integration", counter_update_period_s,
  /// short_window, joules_per_sample when samples_processed > 0).
  /// Percentiles are nearest-rank. update_period_s is the mean time between changes of the
  /// reading (a sensor polled faster than it updates repeats itself), null with < 2 changes.
  /// energy is absent for a device with neither an energy counter nor a power reading.
  TelemetrySummary summarize(int64_t t0_ns, int64_t t1_ns, int64_t samples_processed = 0) const;
  /// The run record's telemetry section: summarize() plus the headline of `device` (the run's
  /// telemetry device, "" when none matched), including its NVML power limit.
  TelemetrySection run_section(int64_t t0_ns, int64_t t1_ns, int64_t samples_processed,
                               const std::string& device) const;
  std::vector<CounterSeries> series() const;  // for trace counter tracks and charts
  /// Every sample so far as CSV text: "t_ns,device,metric,value" header, rows by time.
  std::string samples_csv() const;
  /// samples_csv() gzipped, written atomically (trainscope/fs.h); throws Error(kIo) on failure.
  /// `earlier` (the CSV text of an earlier session's file, header included; `run --resume`)
  /// comes first, and this sampler's rows follow it without a second header.
  void write_samples_csv_gz(const std::string& path, const std::string& earlier = "") const;

  /// Nanoseconds since origin, now.
  int64_t now_ns() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainscope

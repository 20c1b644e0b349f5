// TelemetrySampler: owns the sources, the sampling thread and the sample store.
// Locking: poll_mu_ serialises polls (sources are not thread-safe); data_mu_ guards the
// store and the cached source descriptions; stop_mu_ + cv_ wake the thread on stop().
// Readers (summarize, series, ...) only take data_mu_, so a slow NVML call never blocks them.
#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "telemetry/source.h"
#include "common/text.h"
#include "trainscope/error.h"
#include "trainscope/settings.h"
#include "trainscope/fs.h"
#include "trainscope/telemetry.h"

namespace trainscope {

using telemetry::SampleBatch;
using telemetry::TelemetrySource;

namespace {

struct FieldStore {
  std::vector<int64_t> t;
  std::vector<double> v;
  std::vector<int64_t> change_t;  // times at which the reading differed from the previous one
  std::vector<std::pair<int64_t, std::string>> drops;
};

using FieldKey = std::pair<std::string, std::string>;  // (device, metric)

double percentile_nearest_rank(std::vector<double>& sorted, double p) {
  size_t n = sorted.size();
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(n)));
  return sorted[std::clamp<size_t>(rank, 1, n) - 1];
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Value of a piecewise-linear series at t (clamped to its ends).
double interpolate(const FieldStore& f, int64_t t) {
  auto it = std::lower_bound(f.t.begin(), f.t.end(), t);
  if (it == f.t.begin()) return f.v.front();
  if (it == f.t.end()) return f.v.back();
  size_t i = static_cast<size_t>(it - f.t.begin());
  if (f.t[i] == t) return f.v[i];
  double w = static_cast<double>(t - f.t[i - 1]) / static_cast<double>(f.t[i] - f.t[i - 1]);
  return f.v[i - 1] + w * (f.v[i] - f.v[i - 1]);
}

std::optional<double> mean_update_period_s(const std::vector<int64_t>& change_t, int64_t t0, int64_t t1) {
  auto b = std::lower_bound(change_t.begin(), change_t.end(), t0);
  auto e = std::upper_bound(change_t.begin(), change_t.end(), t1);
  if (e - b < 2) return std::nullopt;
  return static_cast<double>(*(e - 1) - *b) * 1e-9 / static_cast<double>(e - b - 1);
}


// Energy from the cumulative counters (NVML total energy, RAPL package + DRAM) of one device
// over [t0, t1]: the counters' values interpolated at the window's ends, summed.
struct CounterEnergy {
  double j = 0, period_s = 0;  // period_s: the largest of the counters' update and polling periods
  bool short_window = false;
  std::map<std::string, double> parts;
};
std::optional<CounterEnergy> counter_energy(const std::map<std::string, const FieldStore*>& fields, int64_t t0, int64_t t1) {
  CounterEnergy c;
  bool ok = false;
  for (const auto& [metric, f] : fields) {
    if (!ends_with(metric, "energy_j")) continue;
    auto b = std::lower_bound(f->t.begin(), f->t.end(), t0);
    auto en = std::upper_bound(f->t.begin(), f->t.end(), t1);
    bool covers = !f->t.empty() && f->t.front() <= t0 && f->t.back() >= t1;
    if (!covers && en - b < 2) continue;  // too few readings to attribute anything
    int64_t a = covers ? t0 : *b, z = covers ? t1 : *(en - 1);
    double j = interpolate(*f, z) - interpolate(*f, a);
    if (j < 0) continue;  // counter reset (driver reload): not usable
    // A counter's effective resolution is the larger of its update and polling periods, from the
    // readings in the window and the one on each side of it: a GPU's counter is read only while
    // a run uses that GPU (set_run_devices), and the gaps between its runs are not its period.
    const auto lo = b == f->t.begin() ? b : b - 1, hi = en == f->t.end() ? en : en + 1;
    const auto n = hi - lo;
    double poll_s = n >= 2 ? static_cast<double>(*(hi - 1) - *lo) * 1e-9 / static_cast<double>(n - 1) : 0;
    double upd_s = mean_update_period_s(f->change_t, *lo, *(hi - 1)).value_or(poll_s);
    c.period_s = std::max({c.period_s, poll_s, upd_s});
    c.parts[metric] = j;
    c.j += j;
    ok = true;
    if (!covers) c.short_window = true;
  }
  if (!ok) return std::nullopt;
  c.short_window = c.short_window || static_cast<double>(t1 - t0) * 1e-9 < c.period_s;
  return c;
}

// Energy by integrating one device's power readings over [t0, t1] ∩ [first, last reading]:
// trapezoid rule over the readings, with the series interpolated linearly at the ends.
struct PowerEnergy {
  std::string field;
  double j = 0, covered_s = 0, period_s = 0;
  bool short_window = false;
};
std::optional<PowerEnergy> power_energy(const std::map<std::string, const FieldStore*>& fields, int64_t t0, int64_t t1) {
  PowerEnergy e;
  const FieldStore* p = nullptr;
  for (const char* m : {"power_instant_w", "power_w"})
    if (auto it = fields.find(m); it != fields.end() && it->second->t.size() >= 2) {
      p = it->second;
      e.field = m;
      break;
    }
  if (!p) return std::nullopt;
  int64_t a = std::max(t0, p->t.front()), z = std::min(t1, p->t.back());
  if (z <= a) return std::nullopt;
  std::vector<std::pair<int64_t, double>> pts{{a, interpolate(*p, a)}};
  for (size_t i = 0; i < p->t.size(); ++i)
    if (p->t[i] > a && p->t[i] < z) pts.emplace_back(p->t[i], p->v[i]);
  pts.emplace_back(z, interpolate(*p, z));
  for (size_t i = 1; i < pts.size(); ++i)
    e.j += 0.5 * (pts[i].second + pts[i - 1].second) * static_cast<double>(pts[i].first - pts[i - 1].first) * 1e-9;
  double poll_s = static_cast<double>(p->t.back() - p->t.front()) * 1e-9 / static_cast<double>(p->t.size() - 1);
  e.period_s = std::max(poll_s, mean_update_period_s(p->change_t, p->t.front(), p->t.back()).value_or(poll_s));
  e.covered_s = static_cast<double>(z - a) * 1e-9;
  e.short_window = static_cast<double>(t1 - t0) * 1e-9 < e.period_s || (z - a) < (t1 - t0);
  return e;
}

// Energy of one device over [t0, t1] (docs/telemetry.md#energy): both sources where both
// exist, energy_j from the counter first, and their difference.
std::optional<EnergySummary> energy_for(const std::map<std::string, const FieldStore*>& fields, int64_t t0, int64_t t1,
                                        int64_t samples_processed) {
  auto c = counter_energy(fields, t0, t1);
  auto p = power_energy(fields, t0, t1);
  if (!c && !p) return std::nullopt;
  EnergySummary e;
  if (p) {
    e.power_integration_energy_j = p->j;
    e.power_field = p->field;
    e.covered_s = p->covered_s;
  }
  if (c) {
    e.counter_energy_j = c->j;
    e.components_j = c->parts;
  }
  e.energy_j = c ? c->j : p->j;
  e.energy_method = c ? "counter" : "power_integration";
  e.counter_update_period_s = c ? c->period_s : p->period_s;
  e.short_window = c ? c->short_window : p->short_window;
  if (c && p) {
    e.sources_diff_j = c->j - p->j;
    if (c->j != 0) e.sources_diff_pct = 100.0 * *e.sources_diff_j / c->j;
  }
  if (samples_processed > 0) e.joules_per_sample = *e.energy_j / static_cast<double>(samples_processed);
  return e;
}

// The sampler yields to training without starving. SCHED_BATCH (sched(7)): its wake-ups never
// preempt a running training thread; nice +10: under contention it gets about a tenth of a
// core's share, far more than its polls use. (SCHED_IDLE, tried first, starved it: on a 2-core
// machine running two trainings no second poll came within a run of half a second.) Returns the
// policy and nice value the kernel reports for the thread afterwards, e.g. "SCHED_BATCH, nice +10".
std::string yield_cores_to_training() {
  const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
  sched_param none{};
  (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &none);
  (void)setpriority(PRIO_PROCESS, tid, 10);
  const int policy = sched_getscheduler(0);  // 0: this thread, the kernel's view
  std::string out = policy == SCHED_BATCH   ? "SCHED_BATCH"
                    : policy == SCHED_OTHER ? "SCHED_OTHER"
                                            : fmt::format("policy {}", policy);
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, tid);
  return errno == 0 ? fmt::format("{}, nice {:+d}", out, nice) : out;
}

}  // namespace

struct TelemetrySampler::Impl {
  TelemetryOptions opt;
  std::chrono::steady_clock::time_point origin;
  std::vector<std::unique_ptr<TelemetrySource>> sources;  // available ones only

  std::mutex poll_mu;
  bool probed = false;
  std::optional<std::set<std::string>> run_devices;  // poll_mu; set_run_devices()

  mutable std::mutex data_mu;
  std::map<FieldKey, FieldStore> store;
  std::vector<TelemetrySourceInfo> sources_info;
  std::vector<GpuInfo> gpus;

  std::mutex stop_mu;
  std::condition_variable cv;
  bool stop_requested = false;
  std::thread thread;
  std::atomic<bool> running{false};
  std::string scheduling;  // the thread's policy as the kernel reports it; "" until it started (data_mu)

  int64_t now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - origin).count();
  }
  // The slow fields' period (NVML energy/PCIe/processes/GPM, proc CPU frequency), and
  // the period of refreshing the sources' descriptions; never shorter than one poll.
  int64_t slow_interval_ns() const { return static_cast<int64_t>(std::max(opt.slow_interval_s, opt.interval_s) * 1e9); }
  // NVML's PCIe throughput: never more often than the other slow fields.
  int64_t pcie_interval_ns() const {
    return std::max(slow_interval_ns(), static_cast<int64_t>(opt.pcie_interval_s * 1e9));
  }
  std::optional<int64_t> last_described_ns;  // poll_mu

  // Source descriptions: probe results plus live fields_supported and details.
  struct Probe {
    std::string name;
    bool available;
    std::string reason;
    TelemetrySource* source;
  };
  std::vector<Probe> probes;

  std::vector<TelemetrySourceInfo> describe_sources() const {
    std::vector<TelemetrySourceInfo> out;
    for (const auto& p : probes) {
      TelemetrySourceInfo j;
      j.name = p.name;
      j.available = p.available;
      j.reason = p.reason;
      if (p.source) j.fields_supported = p.source->fields_supported();
      j.details.text = p.source ? p.source->details().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) : "{}";
      out.push_back(std::move(j));
    }
    return out;
  }

  void probe() {
    std::lock_guard poll_lock(poll_mu);
    if (probed) return;
    probed = true;
    const int64_t slow_ns = slow_interval_ns();
    // why_off: the reason a disabled source is listed with ("" = enabled)
    auto consider = [&](const char* name, const std::string& why_off, auto make) {
      if (!why_off.empty()) {
        probes.push_back({name, false, "disabled: " + why_off, nullptr});
        return;
      }
      std::unique_ptr<TelemetrySource> s = make();
      telemetry::SourceProbe r = s->probe();
      if (!r.available) {
        probes.push_back({name, false, r.reason, nullptr});
        return;
      }
      probes.push_back({name, true, r.reason, s.get()});
      sources.push_back(std::move(s));
    };
    auto off = [](bool enabled, const char* why) { return enabled ? std::string() : std::string(why); };
    consider("nvml",
             !opt.enable_nvml            ? "enable_nvml = false"
             : opt.nvml_library.empty() ? "the NVML library name is empty (TelemetryOptions::nvml_library; "
                                           "--nvml-library '' or telemetry.nvml_library = \"\" in trainscope run)"
                                         : "",
             [&] {
               return telemetry::make_nvml_source(opt.nvml_library, slow_ns, pcie_interval_ns(), opt.gpu_process_pids);
             });
    consider("proc", off(opt.enable_proc, "enable_proc = false"),
             [&] { return telemetry::make_proc_source(opt.proc_root, opt.sys_root, {}, slow_ns); });
    consider("rapl", off(opt.enable_rapl, "enable_rapl = false"), [&] { return telemetry::make_rapl_source(opt.sys_root, {}); });
    consider("hwmon", off(opt.enable_hwmon, "enable_hwmon = false"),
             [&] { return telemetry::make_hwmon_source(opt.sys_root, {}); });
    for (const auto& s : sources) s->set_run_devices(run_devices);
    std::vector<GpuInfo> g;
    for (const auto& s : sources) {
      auto more = s->gpus();
      g.insert(g.end(), more.begin(), more.end());
    }
    auto desc = describe_sources();
    std::lock_guard data_lock(data_mu);
    gpus = std::move(g);
    sources_info = std::move(desc);
  }

  // After the last poll: what the sources noted since the last refresh (stop()).
  void refresh_descriptions() {
    std::lock_guard poll_lock(poll_mu);
    if (!probed) return;
    auto desc = describe_sources();
    std::lock_guard data_lock(data_mu);
    sources_info = std::move(desc);
  }

  // A source notes what changed (a lost GPU, a field found unsupported) with the drop that
  // reports it, once: descriptions are refreshed at that poll, so each run's record has them.
  static bool notes_changed(const std::vector<SampleBatch>& batches) {
    for (const auto& b : batches)
      for (const auto& d : b.drops)
        if (d.reason == telemetry::drop_reason::kGpuLost || d.reason == telemetry::drop_reason::kNotSupported) return true;
    return false;
  }

  // describe_always: sample_now() (monitor, tests) sees every change at once; the sampling
  // thread refreshes descriptions once per slow interval.
  TelemetrySnapshot poll(bool describe_always) {
    std::lock_guard poll_lock(poll_mu);
    std::vector<SampleBatch> batches;
    for (auto& s : sources) {
      SampleBatch b;
      b.t_ns = now_ns();  // per source: a slow NVML poll must not shift the others' times
      s->sample(b.t_ns, b);
      batches.push_back(std::move(b));
    }
    // Descriptions (a JSON dump per source) change only when a source notes something, such
    // as a lost GPU: refreshed once per slow interval, not on every poll.
    const int64_t t = now_ns();
    std::optional<std::vector<TelemetrySourceInfo>> desc;
    if (describe_always || notes_changed(batches) || !last_described_ns || t - *last_described_ns >= slow_interval_ns()) {
      desc = describe_sources();
      last_described_ns = t;
    }
    TelemetrySnapshot snap;
    snap.t_ns = batches.empty() ? t : batches.front().t_ns;
    std::lock_guard data_lock(data_mu);
    for (auto& b : batches) {
      for (auto& r : b.values) {
        FieldStore& f = store[{r.device, r.metric}];
        if (!f.t.empty() && b.t_ns < f.t.back()) continue;  // cannot happen with one clock; keeps t sorted
        if (f.v.empty() || f.v.back() != r.value) f.change_t.push_back(b.t_ns);
        f.t.push_back(b.t_ns);
        f.v.push_back(r.value);
        snap.readings.push_back(r);
      }
      for (auto& d : b.drops) store[{d.device, d.metric}].drops.emplace_back(b.t_ns, d.reason);
    }
    if (desc) sources_info = std::move(*desc);
    return snap;
  }

  // The sampling thread's own cost (docs/telemetry.md#cost-to-the-workload): after each poll,
  // its CPU time since the previous poll over the wall time between them, as metric
  // sampler/cpu_pct (100 = one core busy), so it flows through summaries and the CSV.
  void record_self_cost(int64_t& last_wall_ns, int64_t& last_cpu_ns) {
    timespec ts{};
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return;
    const int64_t cpu = static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec, wall = now_ns();
    if (last_wall_ns >= 0 && wall > last_wall_ns) {
      const double pct = 100.0 * static_cast<double>(cpu - last_cpu_ns) / static_cast<double>(wall - last_wall_ns);
      std::lock_guard data_lock(data_mu);
      FieldStore& f = store[{"sampler", "cpu_pct"}];
      if (f.t.empty() || wall >= f.t.back()) {
        if (f.v.empty() || f.v.back() != pct) f.change_t.push_back(wall);
        f.t.push_back(wall);
        f.v.push_back(pct);
      }
    }
    last_wall_ns = wall;
    last_cpu_ns = cpu;
  }

  void run() {
    {
      auto how = yield_cores_to_training();
      std::lock_guard data_lock(data_mu);
      scheduling = std::move(how);
    }
    auto period = std::chrono::nanoseconds(static_cast<int64_t>(opt.interval_s * 1e9));
    auto next = std::chrono::steady_clock::now();
    int64_t last_wall = -1, last_cpu = 0;  // the first poll only sets the baseline (it is not periodic)
    for (;;) {
      {
        std::unique_lock lk(stop_mu);
        if (cv.wait_until(lk, next, [&] { return stop_requested; })) break;
      }
      poll(false);
      record_self_cost(last_wall, last_cpu);
      next += period;
      auto now = std::chrono::steady_clock::now();
      if (next < now) next = now + period;  // fell behind (slow source): skip, do not burst
    }
  }
};

TelemetrySampler::TelemetrySampler(const TelemetryOptions& opt, std::chrono::steady_clock::time_point origin)
    : impl_(std::make_unique<Impl>()) {
  // The ranges of the settings table, the ones `run` and `infer` check: one message for both.
  for (auto [key, value] : {std::pair{"telemetry.interval_s", opt.interval_s},
                            std::pair{"telemetry.slow_interval_s", opt.slow_interval_s},
                            std::pair{"telemetry.pcie_interval_s", opt.pcie_interval_s}}) {
    const Setting& s = setting(key);
    check_setting_value(s, value, s.long_flag());
  }
  impl_->opt = opt;
  impl_->origin = origin;
}

TelemetrySampler::~TelemetrySampler() { stop(); }

std::string TelemetrySampler::thread_scheduling() const {
  std::lock_guard lk(impl_->data_mu);
  return impl_->scheduling;
}

void TelemetrySampler::probe() { impl_->probe(); }

void TelemetrySampler::start() {
  impl_->probe();
  if (impl_->running.exchange(true)) return;
  {
    std::lock_guard lk(impl_->stop_mu);
    impl_->stop_requested = false;
  }
  impl_->thread = std::thread([this] { impl_->run(); });
}

void TelemetrySampler::stop() {
  if (!impl_->running.exchange(false)) return;
  {
    std::lock_guard lk(impl_->stop_mu);
    impl_->stop_requested = true;
  }
  impl_->cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->refresh_descriptions();
}

TelemetrySnapshot TelemetrySampler::sample_now() {
  impl_->probe();
  return impl_->poll(true);
}


TelemetrySnapshot TelemetrySampler::read_energy_now() {
  impl_->probe();
  {
    std::lock_guard poll_lock(impl_->poll_mu);
    for (const auto& s : impl_->sources) s->read_energy_at_next_poll();
  }
  return sample_now();
}

void TelemetrySampler::set_run_devices(std::optional<std::vector<std::string>> devices) {
  std::lock_guard poll_lock(impl_->poll_mu);
  impl_->run_devices.reset();
  if (devices) impl_->run_devices.emplace(devices->begin(), devices->end());
  for (const auto& s : impl_->sources) s->set_run_devices(impl_->run_devices);
}

std::vector<GpuInfo> TelemetrySampler::gpus() const {
  std::lock_guard lk(impl_->data_mu);
  return impl_->gpus;
}

std::vector<TelemetrySourceInfo> TelemetrySampler::sources() const {
  std::lock_guard lk(impl_->data_mu);
  return impl_->sources_info;
}

int64_t TelemetrySampler::now_ns() const { return impl_->now_ns(); }

namespace {

// Statistics of one stored field over [t0_ns, t1_ns].
MetricStats field_stats(const FieldStore& f, int64_t t0_ns, int64_t t1_ns) {
  auto b = std::lower_bound(f.t.begin(), f.t.end(), t0_ns);
  auto e = std::upper_bound(f.t.begin(), f.t.end(), t1_ns);
  std::vector<double> vals(f.v.begin() + (b - f.t.begin()), f.v.begin() + (e - f.t.begin()));
  MetricStats s;
  s.count = static_cast<int64_t>(vals.size());
  s.too_few_samples = too_few_samples(s.count);
  for (const auto& [t, why] : f.drops)
    if (t >= t0_ns && t <= t1_ns) {
      ++s.dropped;
      ++s.drop_reasons[why];
    }
  if (!vals.empty()) {
    double sum = 0;
    for (double v : vals) sum += v;
    std::sort(vals.begin(), vals.end());
    s.mean = sum / static_cast<double>(vals.size());
    s.p50 = percentile_nearest_rank(vals, 50);
    s.p95 = percentile_nearest_rank(vals, 95);
    s.max = vals.back();
  }
  s.update_period_s = mean_update_period_s(f.change_t, t0_ns, t1_ns);
  return s;
}

}  // namespace

TelemetrySummary TelemetrySampler::summarize(int64_t t0_ns, int64_t t1_ns, int64_t samples_processed) const {
  if (t1_ns < t0_ns)
    throw_error(ErrorKind::kInvalidArgument, fmt::format("summarize: window end {} ns is before its start {} ns", t1_ns, t0_ns));
  std::lock_guard lk(impl_->data_mu);
  TelemetrySummary out;
  out.t0_ns = t0_ns;
  out.t1_ns = t1_ns;
  out.duration_s = static_cast<double>(t1_ns - t0_ns) * 1e-9;
  out.sources = impl_->sources_info;
  std::map<std::string, std::map<std::string, const FieldStore*>> by_device;
  for (const auto& [key, f] : impl_->store) by_device[key.first][key.second] = &f;
  for (const auto& [device, fields] : by_device) {
    DeviceTelemetry& d = out.devices[device];
    for (const auto& [metric, f] : fields) d.metrics[metric] = field_stats(*f, t0_ns, t1_ns);
    d.energy = energy_for(fields, t0_ns, t1_ns, samples_processed);
  }
  return out;
}

std::vector<CounterSeries> TelemetrySampler::series() const {
  std::lock_guard lk(impl_->data_mu);
  std::vector<CounterSeries> out;
  for (const auto& [key, f] : impl_->store) {
    if (f.t.empty()) continue;
    CounterSeries s{key.first, key.second, {}};
    s.points.reserve(f.t.size());
    for (size_t i = 0; i < f.t.size(); ++i) s.points.emplace_back(f.t[i], f.v[i]);
    out.push_back(std::move(s));
  }
  return out;
}

std::string TelemetrySampler::samples_csv() const {
  struct Row {
    int64_t t;
    const std::string* device;
    const std::string* metric;
    double v;
  };
  std::string text = "t_ns,device,metric,value\n";
  std::lock_guard lk(impl_->data_mu);
  std::vector<Row> rows;
  for (const auto& [key, f] : impl_->store)
    for (size_t i = 0; i < f.t.size(); ++i) rows.push_back({f.t[i], &key.first, &key.second, f.v[i]});
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.t < b.t; });
  // Device names may hold spaces or commas (hwmon labels): quoted per RFC 4180.
  for (const auto& r : rows) text += fmt::format("{},{},{},{:.17g}\n", r.t, csv_field(*r.device), *r.metric, r.v);
  return text;
}

void TelemetrySampler::write_samples_csv_gz(const std::string& path, const std::string& earlier) const {
  std::string rows = samples_csv();
  if (!earlier.empty()) {
    auto body = rows.find('\n');  // skip this sampler's header line
    rows = earlier + (body == std::string::npos ? std::string() : rows.substr(body + 1));
  }
  write_file_atomic(path, gzip_compress(rows));
}

}  // namespace trainscope

// Telemetry cost: CPU time per sample per source (thread CPU time around one poll), and
// wall time, over N polls. Usage: telemetry_cost [polls=200] [nvml_library] [proc_root] [sys_root]
// (exit 2 for a bad polls value or TELEMETRY_COST_SECONDS). Each source with slow fields also gets
// slow_vs_fast_polls: the median CPU and wall time of the polls that read them and of the rest.
// Prints one JSON object. Last, "sampler": the whole TelemetrySampler at 10 Hz for SECONDS (env
// TELEMETRY_COST_SECONDS, default 3) as a run sees it: the mean of its own metric
// sampler/cpu_pct (thread CPU time per wall second, 100 = one core; docs/telemetry.md).
// Sources with slow fields (NVML: energy, PCIe, processes, GPM; proc: CPU frequency) read them
// once per 10 polls here (slow_fields_every_polls), as at 10 Hz with the 1 s default; proc is
// also measured reading every field on every poll (slow_fields_every_polls 0).
#include <fmt/core.h>
#include <time.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "telemetry/source.h"
#include "trainscope/stats.h"
#include "trainscope/telemetry.h"

using namespace trainscope::telemetry;

namespace {
double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct PollCost {
  bool slow;  // this poll read the slow fields (by the source's own clock rule, SlowFieldClock)
  double cpu_us, wall_us;
};

// The median CPU and wall microseconds of the polls that read the slow fields and of the rest:
// whether a slow call (NVML's PCIe throughput takes ~20 ms of wall time) also holds a core, which
// would delay every intra-op thread of an all-core CPU run. Slow polls are the ones the source's
// SlowFieldClock made due (mirrored here with the same times), not the ones that returned more
// values: a source's value count also varies with what changed since the last poll.
nlohmann::json split_slow_polls(const std::vector<PollCost>& each) {
  std::vector<double> sc, sw, fc, fw;
  for (const auto& p : each) {
    (p.slow ? sc : fc).push_back(p.cpu_us);
    (p.slow ? sw : fw).push_back(p.wall_us);
  }
  auto med = [](std::vector<double> v) { return trainscope::median(std::move(v)).value_or(NAN); };
  return {{"slow_polls", sc.size()}, {"slow_cpu_us_median", med(sc)}, {"slow_wall_us_median", med(sw)},
          {"fast_polls", fc.size()}, {"fast_cpu_us_median", med(fc)}, {"fast_wall_us_median", med(fw)}};
}

nlohmann::json measure(TelemetrySource& s, int polls, int64_t slow_every_ns) {
  auto probe = s.probe();
  nlohmann::json j = {{"source", s.name()}, {"available", probe.available}, {"reason", probe.reason}};
  if (!probe.available) return j;
  // t advances by 1 ms per poll so a source with slow fields reads them once per slow_every_ns.
  int64_t t = 0;
  SampleBatch warm;
  s.sample(t, warm);
  SlowFieldClock mirror(slow_every_ns);  // which polls the source reads its slow fields on
  mirror.due(t);
  double cpu0 = thread_cpu_s();
  auto w0 = std::chrono::steady_clock::now();
  size_t values = 0;
  std::vector<PollCost> each;  // per poll: whether it read the slow fields, and what it cost
  each.reserve(static_cast<size_t>(polls));  // (the per-poll clocks add ~1 µs to cpu_us_per_poll)
  for (int i = 0; i < polls; ++i) {
    SampleBatch b;
    t += 1'000'000;
    const double c0 = thread_cpu_s();
    const auto p0 = std::chrono::steady_clock::now();
    s.sample(t, b);
    const double cpu_us = (thread_cpu_s() - c0) * 1e6;
    const double wall_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - p0).count();
    each.push_back({mirror.due(t), cpu_us, wall_us});
    values += b.values.size();
  }
  double cpu = thread_cpu_s() - cpu0;
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  j["polls"] = polls;
  j["cpu_us_per_poll"] = cpu / polls * 1e6;
  j["wall_us_per_poll"] = wall / polls * 1e6;
  j["values_per_poll"] = static_cast<double>(values) / polls;
  if (slow_every_ns > 0) j["slow_vs_fast_polls"] = split_slow_polls(each);
  j["slow_fields_every_polls"] = slow_every_ns / 1'000'000;  // t advances 1 ms per poll
  // At 10 Hz, the share of one core this source costs.
  j["core_share_at_10hz_pct"] = cpu / polls * 10 * 100;
  return j;
}
nlohmann::json measure_sampler(const std::string& nvml, const std::string& proc, const std::string& sys, double seconds) {
  trainscope::TelemetryOptions o;
  o.interval_s = 0.1;
  o.nvml_library = nvml;
  o.proc_root = proc;
  o.sys_root = sys;
  trainscope::TelemetrySampler s(o, std::chrono::steady_clock::now());
  s.start();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  s.stop();
  const auto sum = s.summarize(0, s.now_ns());
  const trainscope::MetricStats* cpu = sum.metric("sampler", "cpu_pct");
  nlohmann::json stats = nullptr;
  if (cpu) stats = {{"count", cpu->count}, {"mean", cpu->mean.value_or(NAN)}, {"max", cpu->max.value_or(NAN)}};
  return {{"interval_s", o.interval_s}, {"seconds", seconds}, {"cpu_pct", stats}};
}
}  // namespace

int main(int argc, char** argv) {
  int polls = 200;
  if (argc > 1) {
    char* end = nullptr;
    const long v = std::strtol(argv[1], &end, 10);
    if (end == argv[1] || *end != '\0' || v <= 0 || v > 1'000'000) {
      fmt::print(stderr, "telemetry_cost: polls '{}' is not a whole number from 1 to 1000000 (usage: telemetry_cost "
                         "[polls=200] [nvml_library] [proc_root] [sys_root])\n", argv[1]);
      return 2;
    }
    polls = static_cast<int>(v);
  }
  std::string nvml = argc > 2 ? argv[2] : "libnvidia-ml.so.1";
  std::string proc = argc > 3 ? argv[3] : "/proc";
  std::string sys = argc > 4 ? argv[4] : "/sys";
  const int64_t slow_ns = 10'000'000;  // t advances 1 ms per poll: slow fields every 10 polls
  nlohmann::json out = {{"benchmark", "telemetry_cost"}, {"polls", polls}, {"sources", nlohmann::json::array()}};
  // proc twice: every field on every poll, then as the sampler runs it (CPU frequency once per
  // slow interval).
  out["sources"].push_back(measure(*make_proc_source(proc, sys, {}, 0), polls, 0));
  out["sources"].push_back(measure(*make_proc_source(proc, sys, {}, slow_ns), polls, slow_ns));
  out["sources"].push_back(measure(*make_rapl_source(sys, {}), polls, 0));
  out["sources"].push_back(measure(*make_hwmon_source(sys, {}), polls, 0));
  out["sources"].push_back(measure(*make_nvml_source(nvml, slow_ns, slow_ns), polls, slow_ns));
  const char* secs = std::getenv("TELEMETRY_COST_SECONDS");
  double seconds = 3.0;
  if (secs) {
    char* end = nullptr;
    seconds = std::strtod(secs, &end);
    if (end == secs || *end != '\0' || !(seconds >= 0.5 && seconds <= 3600)) {
      fmt::print(stderr, "telemetry_cost: TELEMETRY_COST_SECONDS='{}' is not a number of seconds in [0.5, 3600] (the "
                         "sampler needs several 0.1 s polls)\n", secs);
      return 2;
    }
  }
  out["sampler"] = measure_sampler(nvml, proc, sys, seconds);
  fmt::print("{}\n", out.dump(2));
  return 0;
}

// Telemetry cost: CPU time per sample per source (thread CPU time around one poll), and
// wall time, over N polls. Usage: telemetry_cost [polls=200] [nvml_library] [proc_root] [sys_root]
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

#include "telemetry/source.h"
#include "trainscope/telemetry.h"

using namespace trainscope::telemetry;

namespace {
double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

nlohmann::json measure(TelemetrySource& s, int polls, int64_t slow_every_ns) {
  auto probe = s.probe();
  nlohmann::json j = {{"source", s.name()}, {"available", probe.available}, {"reason", probe.reason}};
  if (!probe.available) return j;
  // t advances by 1 ms per poll so a source with slow fields reads them once per slow_every_ns.
  int64_t t = 0;
  SampleBatch warm;
  s.sample(t, warm);
  double cpu0 = thread_cpu_s();
  auto w0 = std::chrono::steady_clock::now();
  size_t values = 0;
  for (int i = 0; i < polls; ++i) {
    SampleBatch b;
    t += 1'000'000;
    s.sample(t, b);
    values += b.values.size();
  }
  double cpu = thread_cpu_s() - cpu0;
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  j["polls"] = polls;
  j["cpu_us_per_poll"] = cpu / polls * 1e6;
  j["wall_us_per_poll"] = wall / polls * 1e6;
  j["values_per_poll"] = static_cast<double>(values) / polls;
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
  int polls = argc > 1 ? std::atoi(argv[1]) : 200;
  std::string nvml = argc > 2 ? argv[2] : "libnvidia-ml.so.1";
  std::string proc = argc > 3 ? argv[3] : "/proc";
  std::string sys = argc > 4 ? argv[4] : "/sys";
  if (polls <= 0) polls = 200;
  const int64_t slow_ns = 10'000'000;  // t advances 1 ms per poll: slow fields every 10 polls
  nlohmann::json out = {{"benchmark", "telemetry_cost"}, {"polls", polls}, {"sources", nlohmann::json::array()}};
  // proc twice: every field on every poll, then as the sampler runs it (CPU frequency once per
  // slow interval).
  out["sources"].push_back(measure(*make_proc_source(proc, sys, {}, 0), polls, 0));
  out["sources"].push_back(measure(*make_proc_source(proc, sys, {}, slow_ns), polls, slow_ns));
  out["sources"].push_back(measure(*make_rapl_source(sys, {}), polls, 0));
  out["sources"].push_back(measure(*make_hwmon_source(sys, {}), polls, 0));
  out["sources"].push_back(measure(*make_nvml_source(nvml, slow_ns), polls, slow_ns));
  const char* secs = std::getenv("TELEMETRY_COST_SECONDS");
  out["sampler"] = measure_sampler(nvml, proc, sys, secs ? std::atof(secs) : 3.0);
  fmt::print("{}\n", out.dump(2));
  return 0;
}

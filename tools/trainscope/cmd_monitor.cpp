// `trainscope monitor`: a live view of all CPUs and GPUs (like `nvidia-smi dmon`, CPU too),
// optionally serving the same readings at /metrics in the Prometheus text format.
#include <fmt/core.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <map>
#include <set>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "commands.h"
#include "settings_cli.h"
#include "common/text.h"
#include "interrupt.h"
#include "trainscope/error.h"
#include "trainscope/telemetry.h"
#include "telemetry/source.h"
#include "trainscope/telemetry_prometheus.h"

namespace trainscope::cli {
namespace {

struct MonitorConfig {
  double interval_s = 1.0;
  int count = 0;  // 0 = until interrupted
  std::string format = "table";
  std::string listen;
  TelemetryOptions telemetry;
  SettingOptions settings;  // the options shared with `run`
};

std::string cell(const std::optional<double>& v, int width, int precision) {
  if (!v) return fmt::format("{:>{}}", "-", width);
  return fmt::format("{:>{}.{}f}", *v, width, precision);
}

void print_table(const TelemetrySnapshot& s, const std::vector<GpuInfo>& gpus, bool header) {
  if (header) {
    fmt::print("{:>9} {:<6} {:>6} {:>6} {:>9} {:>9} {:>8} {:>8} {:>6} {:>7} {:>6} {:>6}\n", "#time_s", "dev", "util%",
               "mem%", "mem_MiB", "total_MiB", "power_W", "energy_J", "temp_C", "clk_MHz", "sm%", "tens%");
  }
  double t = static_cast<double>(s.t_ns) * 1e-9;
  auto mib = [](std::optional<double> b) { return b ? std::optional<double>(*b / 1048576.0) : std::nullopt; };
  auto pct = [&](const std::string& d, std::optional<double> used, std::optional<double> total) -> std::optional<double> {
    (void)d;
    if (used && total && *total > 0) return 100.0 * *used / *total;
    return std::nullopt;
  };
  std::optional<double> cpu_power = s.get("cpu", "package_power_w");
  if (auto d = s.get("cpu", "dram_power_w"); d && cpu_power) *cpu_power += *d;
  fmt::print("{:>9.2f} {:<6} {} {} {} {} {} {} {} {} {} {}\n", t, "cpu", cell(s.get("cpu", "util_pct"), 6, 1),
             cell(pct("cpu", s.get("cpu", "mem_used_bytes"), s.get("cpu", "mem_total_bytes")), 6, 1),
             cell(mib(s.get("cpu", "mem_used_bytes")), 9, 0), cell(mib(s.get("cpu", "mem_total_bytes")), 9, 0),
             cell(cpu_power, 8, 1), cell(s.get("cpu", "package_energy_j"), 8, 1), cell(s.get("cpu", "temp_c"), 6, 1),
             cell(s.get("cpu", "freq_mhz"), 7, 0), cell(std::nullopt, 6, 0), cell(std::nullopt, 6, 0));
  for (const auto& g : gpus) {
    std::string d = "gpu" + std::to_string(g.nvml_index);
    fmt::print("{:>9.2f} {:<6} {} {} {} {} {} {} {} {} {} {}\n", t, d, cell(s.get(d, "util_pct"), 6, 1),
               cell(s.get(d, "mem_util_pct"), 6, 1), cell(mib(s.get(d, "mem_used_bytes")), 9, 0),
               cell(mib(s.get(d, "mem_total_bytes")), 9, 0), cell(s.get(d, "power_w"), 8, 1),
               cell(s.get(d, "energy_j"), 8, 1), cell(s.get(d, "temp_c"), 6, 1), cell(s.get(d, "sm_clock_mhz"), 7, 0),
               cell(s.get(d, "sm_activity_pct"), 6, 1), cell(s.get(d, "tensor_activity_pct"), 6, 1));
  }
  // Per-core utilisation on one line (dmon has no CPU view; this is the compact one).
  std::string cores;
  for (int i = 0;; ++i) {
    auto u = s.get("cpu" + std::to_string(i), "util_pct");
    if (!u) break;
    cores += fmt::format(" {:.0f}", *u);
  }
  if (!cores.empty()) fmt::print("{:>9} {:<6} per-core util%:{}\n", "", "cpu*", cores);
  std::fflush(stdout);
}

// The table and /metrics show a slow field's latest reading (TelemetryField::slow: energy, PCIe,
// CPU frequency, GPM, read once per slow interval) between its reads: a field missing from one
// poll would leave a hole in the table and a stale series in Prometheus. A reading older than
// two slow intervals (a lost GPU's) is not carried, and a field read every poll is shown only
// as this poll read it, so a source that stops answering shows "-" at once. CSV and JSON
// output stay raw: what each poll read.
class LatestReadings {
 public:
  explicit LatestReadings(int64_t max_age_ns) : max_age_ns_(max_age_ns) {}
  TelemetrySnapshot update(const TelemetrySnapshot& snap) {
    TelemetrySnapshot out = snap;
    std::set<std::pair<std::string, std::string>> read;
    for (const auto& r : snap.readings) {
      read.insert({r.device, r.metric});
      const TelemetryField* f = telemetry::find_field(r.metric);
      if (f && f->slow) latest_[{r.device, r.metric}] = {r, snap.t_ns};
    }
    for (const auto& [key, v] : latest_)
      if (!read.count(key) && snap.t_ns - v.second <= max_age_ns_) out.readings.push_back(v.first);
    return out;
  }

 private:
  int64_t max_age_ns_;
  std::map<std::pair<std::string, std::string>, std::pair<TelemetryReading, int64_t>> latest_;
};

void run_monitor(const MonitorConfig& cfg, int& exit_status) {
  if (!(cfg.interval_s >= 0.001 && cfg.interval_s <= 3600))
    throw_error(ErrorKind::kInvalidArgument, fmt::format("--interval {} s is out of range: use 0.001 .. 3600", cfg.interval_s));
  if (cfg.count < 0) throw_error(ErrorKind::kInvalidArgument, "--count must be >= 0 (0 = until Ctrl-C)");
  TelemetryOptions topt = cfg.telemetry;
  topt.interval_s = std::min(cfg.interval_s, 1.0);  // no thread runs; the sampler only checks range
  topt.slow_interval_s = std::max(cfg.interval_s, 1.0);
  topt.pcie_interval_s = topt.slow_interval_s;  // watching a GPU: PCIe with the other slow fields
  TelemetrySampler sampler(topt, std::chrono::steady_clock::now());
  sampler.probe();
  auto gpus = sampler.gpus();
  bool quiet = cfg.format != "table";
  if (!quiet) {
    for (const auto& s : sampler.sources())
      if (!s.available) fmt::print(stderr, "# {}: unavailable: {}\n", s.name, s.reason);
  }
  std::mutex snap_mu;
  TelemetrySnapshot last;
  std::unique_ptr<MetricsServer> server;
  if (!cfg.listen.empty()) {
    auto [host, port] = parse_listen_address(cfg.listen);
    server = std::make_unique<MetricsServer>(host, port, [&] {
      std::lock_guard lk(snap_mu);
      return format_prometheus(last, gpus);
    });
    fmt::print(stderr, "# serving http://{}:{}/metrics\n", host, server->port());
    if (host.rfind("127.", 0) != 0)  // /metrics has no authentication
      fmt::print(stderr,
                 "trainscope: warning: --listen {}: /metrics is served beyond this host, without authentication, to "
                 "anyone who reaches port {}; use 127.0.0.1:{} to keep it on this host\n",
                 host, server->port(), server->port());
  }
  const auto& g_stop = install_interrupt_handler("\ntrainscope: interrupt received; stopping (Ctrl-C again to exit at once)\n");
  bool first = true;
  LatestReadings latest(static_cast<int64_t>(2 * topt.slow_interval_s * 1e9));
  auto next = std::chrono::steady_clock::now();
  for (int i = 0; (cfg.count == 0 || i < cfg.count) && !g_stop.load(); ++i) {
    if (i > 0) {
      next += std::chrono::nanoseconds(static_cast<int64_t>(cfg.interval_s * 1e9));
      while (!g_stop.load() && std::chrono::steady_clock::now() < next)
        std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(next - std::chrono::steady_clock::now(),
                                                                       std::chrono::milliseconds(100)));
      if (g_stop.load()) break;
    }
    TelemetrySnapshot snap = sampler.sample_now();
    TelemetrySnapshot shown = latest.update(snap);
    {
      std::lock_guard lk(snap_mu);
      last = shown;
    }
    if (cfg.format == "table") {
      print_table(shown, gpus, first || i % 20 == 0);
    } else if (cfg.format == "csv") {
      if (first) fmt::print("t_ns,device,metric,value\n");
      for (const auto& r : snap.readings) fmt::print("{},{},{},{}\n", snap.t_ns, csv_field(r.device), r.metric, r.value);
      std::fflush(stdout);
    } else {
      nlohmann::json j = {{"t_ns", snap.t_ns}, {"devices", nlohmann::json::object()}};
      for (const auto& r : snap.readings) j["devices"][r.device][r.metric] = r.value;
      fmt::print("{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      std::fflush(stdout);
    }
    first = false;
  }
  if (server) server->stop();
  exit_status = g_stop.load() ? kExitInterrupted : kExitOk;
}

}  // namespace

void add_monitor_command(CLI::App& app, int& exit_status) {
  auto cfg = std::make_shared<MonitorConfig>();
  CLI::App* cmd = app.add_subcommand("monitor", "Live view of CPU and GPU utilisation, memory, power, energy and temperature");
  cmd->add_option("--interval", cfg->interval_s, "Seconds between readings (0.001 .. 3600)")->capture_default_str();
  cmd->add_option("--count", cfg->count, "Number of readings; 0 = until Ctrl-C")->capture_default_str();
  cmd->add_option("--format", cfg->format, "Output: table, csv (long: t_ns,device,metric,value) or jsonl")
      ->check(CLI::IsMember({"table", "csv", "jsonl"}))
      ->capture_default_str();
  cmd->add_option("--listen", cfg->listen, "Serve Prometheus /metrics at HOST:PORT (e.g. 127.0.0.1:9400; loopback advised)");
  // Shared with `run` (trainscope/settings.h). --interval is not telemetry.interval_s: it is the
  // period of the printed readings (up to an hour), each one a single poll of the sources.
  for (const char* key : {"telemetry.nvml_library", "telemetry.proc_root", "telemetry.sys_root"})
    cfg->settings.add(cmd, key);
  cmd->callback([cfg, &exit_status] {
    MatrixConfig m;
    cfg->settings.check_given();
    cfg->settings.apply(m);
    cfg->telemetry.nvml_library = m.telemetry.nvml_library;
    cfg->telemetry.proc_root = m.telemetry.proc_root;
    cfg->telemetry.sys_root = m.telemetry.sys_root;
    run_monitor(*cfg, exit_status);
  });
}

}  // namespace trainscope::cli

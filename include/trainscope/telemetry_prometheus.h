// Prometheus text exposition (format 0.0.4) of a telemetry snapshot, and a tiny HTTP server
// that serves it at /metrics.
//
// Names follow Prometheus conventions (https://prometheus.io/docs/practices/naming/): base
// units, unit suffix, one family per quantity with labels for the device:
//   trainscope_gpu_power_watts{gpu="0",uuid="GPU-..",name="..."}   (from gpu0 power_w)
//   trainscope_gpu_utilization_ratio{...}                         (from gpu0 util_pct / 100)
//   trainscope_cpu_utilization_ratio{cpu="all"} / {cpu="3"}
//   trainscope_cpu_package_energy_joules_total                    (counter)
//   trainscope_process_resident_memory_bytes, trainscope_sensor_temperature_celsius{sensor=..}
// Conversions: _pct -> _ratio (/100), _w -> _watts, _j -> _joules_total (TYPE counter),
// _c -> _celsius, _mhz -> _hertz (*1e6), _bytes_per_s -> _bytes_per_second.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "trainscope/telemetry.h"

namespace trainscope {

/// The exposition text for one snapshot; every family has HELP and TYPE lines.
std::string format_prometheus(const TelemetrySnapshot& snapshot, const std::vector<GpuInfo>& gpus);

/// Serves GET /metrics (body from `render`, called per request on the server thread) with
/// Content-Type "text/plain; version=0.0.4"; other paths answer 404. Plain POSIX sockets,
/// one request per connection, every connection served at once (a slow client delays no other).
class MetricsServer {
 public:
  /// host: an IPv4 address ("127.0.0.1" by default: loopback only); port 0 picks a free port.
  /// Throws Error(kInvalidArgument) for a bad address and Error(kIo) when bind/listen fails.
  MetricsServer(const std::string& host, uint16_t port, std::function<std::string()> render);
  ~MetricsServer();  // stops
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;
  uint16_t port() const;  // the bound port
  void stop();            // idempotent

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Parses "HOST:PORT" (e.g. "127.0.0.1:9400"); throws Error(kInvalidArgument).
std::pair<std::string, uint16_t> parse_listen_address(const std::string& text);

}  // namespace trainscope

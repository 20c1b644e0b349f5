// Internal interface of the telemetry sources (docs/design.md#one-interface-per-hardware-source):
// one implementation per kind of hardware, each probed once; the sampler keeps those that probe
// successfully.
#pragma once

#include <cerrno>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/telemetry.h"

namespace trainscope::telemetry {

/// Why a reading was dropped: the values of the record's `drop_reasons` keys (docs/telemetry.md).
namespace drop_reason {
inline constexpr const char* kNotSupported = "not_supported";  // the device or driver lacks the field
inline constexpr const char* kSentinel = "sentinel";            // NVML's "not available" value
inline constexpr const char* kOutOfRange = "out_of_range";      // outside the catalogue's range
inline constexpr const char* kUnreadable = "unreadable";        // the file could not be read
inline constexpr const char* kParseError = "parse_error";       // the file's text did not parse
inline constexpr const char* kGpuLost = "gpu_lost";             // NVML_ERROR_GPU_IS_LOST
inline constexpr const char* kNvmlError = "nvml_error";         // any other NVML error code
inline constexpr const char* kNonFinite = "non_finite";         // NaN or infinity
}  // namespace drop_reason

/// What one poll of one source produced: valid readings and dropped ones with the reason
/// (drop_reason above).
struct SampleBatch {
  struct Drop {
    std::string device, metric, reason;
  };
  int64_t t_ns = 0;
  std::vector<TelemetryReading> values;
  std::vector<Drop> drops;

  /// Stores `value` unless it is non-finite or outside the metric's catalogue range, in which
  /// case it is counted as dropped.
  void add(std::string device, std::string metric, double value);
  void drop(std::string device, std::string metric, std::string reason);
};

/// When a source reads its slow fields: on the first poll, then on the poll that reaches each
/// nominal due time (first + k * period) less 5 % of the period, so a poll that wakes a few µs
/// early (a sampler at the slow period itself, `trainscope monitor`) still reads them and the
/// period stays regular. A poll that finds the schedule a whole period behind restarts it.
/// period_ns <= 0: every poll.
class SlowFieldClock {
 public:
  explicit SlowFieldClock(int64_t period_ns) : period_(period_ns) {}
  bool due(int64_t t_ns) {
    if (period_ <= 0) return true;
    if (next_ && t_ns < *next_ - period_ / 20) return false;
    next_ = (next_ && t_ns < *next_ + period_) ? *next_ + period_ : t_ns + period_;
    return true;
  }
  int64_t period_ns() const { return period_; }

 private:
  int64_t period_;
  std::optional<int64_t> next_;  // the next nominal due time
};

/// Result of reading a small text file. `error` is an errno value when `text` is empty.
struct FileRead {
  std::optional<std::string> text;
  int error = 0;
};
/// Reads whole small files; injectable so tests can simulate EACCES (tests run as root, and
/// root ignores chmod 000).
using FileReader = std::function<FileRead(const std::string& path)>;
FileRead read_text_file(const std::string& path);  // the real one
std::string errno_text(int error);                 // "EACCES (Permission denied)"

struct SourceProbe {
  bool available = false;
  std::string reason;  // why not, when unavailable; may note partial availability otherwise
  /// Unavailable: `what` is missing, followed by each of `causes` found on the way ("; ").
  static SourceProbe none(std::string what, const std::vector<std::string>& causes) {
    for (const auto& c : causes) what += "; " + c;
    return {false, std::move(what)};
  }
};

class TelemetrySource {
 public:
  virtual ~TelemetrySource() = default;
  virtual std::string name() const = 0;
  /// Called once, before any sample().
  virtual SourceProbe probe() = 0;
  /// Metrics this source can produce after probe() (device-independent names).
  virtual std::vector<std::string> fields_supported() const = 0;
  /// One poll. Never throws for hardware trouble: records drops instead. Calls are serialised.
  virtual void sample(int64_t t_ns, SampleBatch& out) = 0;
  virtual std::vector<GpuInfo> gpus() const { return {}; }
  /// The telemetry devices ("gpu0", "cpu") a run uses now (TelemetrySampler::set_run_devices);
  /// a source may skip its costly reads of the others. nullopt: every device (the default).
  virtual void set_run_devices(const std::optional<std::set<std::string>>& devices) { (void)devices; }
  /// Read the run devices' energy counters at the next poll even when the slow fields are not
  /// due (TelemetrySampler::read_energy_now): a window's edge then has a reading of its own.
  virtual void read_energy_at_next_poll() {}
  /// Source-specific facts (versions, lost devices, unavailable parts), JSON object.
  virtual nlohmann::json details() const { return nlohmann::json::object(); }
};

/// /proc and /sys. Utilisation and memory fields every poll; CPU frequency (a file per CPU,
/// the part of a poll that grows with the CPU count) on the first poll and then once per
/// slow_interval_ns of t_ns (0: every poll).
std::unique_ptr<TelemetrySource> make_proc_source(std::string proc_root, std::string sys_root, FileReader reader,
                                                  int64_t slow_interval_ns = 0);
std::unique_ptr<TelemetrySource> make_rapl_source(std::string sys_root, FileReader reader);
std::unique_ptr<TelemetrySource> make_hwmon_source(std::string sys_root, FileReader reader);
/// pcie_interval_ns: the period of PCIe throughput, the slowest field (at least slow_interval_ns).
/// `process_pids` (may be empty: this process) names the pids whose GPU memory is process_mem_bytes.
std::unique_ptr<TelemetrySource> make_nvml_source(std::string library, int64_t slow_interval_ns, int64_t pcie_interval_ns,
                                                  std::function<std::vector<int>()> process_pids = {});

/// Range of a catalogue metric (nullptr when unknown).
const TelemetryField* find_field(std::string_view metric);

}  // namespace trainscope::telemetry

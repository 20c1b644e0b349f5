// libFuzzer target: the /proc and sysfs sources (proc, RAPL powercap, hwmon/thermal) reading
// fuzzed file contents. The folders come from the fixture tree (tests/fixtures/telemetry); the
// injected FileReader answers every file from the input: the input is split at 0xFF bytes into
// chunks, a path gets chunk hash(path) % chunks, and a chunk starting with '!' is EACCES.
// Sources never throw: each probe and poll must either report or drop with a reason.
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "telemetry/source.h"

using namespace trainscope::telemetry;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> chunks(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0xFF) chunks.emplace_back();
    else chunks.back().push_back(static_cast<char>(data[i]));
  }
  size_t call = 0;
  FileReader reader = [&](const std::string& path) -> FileRead {
    // Vary the answer between polls too (counters that go backwards, files that vanish).
    const std::string& c = chunks[(std::hash<std::string>{}(path) + call++ / 64) % chunks.size()];
    if (!c.empty() && c[0] == '!') return {std::nullopt, EACCES};
    return {c, 0};
  };
  // TS_FIXTURES_DIR in the environment overrides the build's path (binaries run elsewhere).
  static const std::string root = std::string(std::getenv("TS_FIXTURES_DIR") ? std::getenv("TS_FIXTURES_DIR")
                                                                             : TS_FIXTURES_DIR) + "/telemetry";
  std::unique_ptr<TelemetrySource> sources[] = {
      make_proc_source(root + "/proc", root + "/sys", reader),
      make_rapl_source(root + "/sys", reader),
      make_hwmon_source(root + "/sys", reader),
  };
  for (auto& s : sources) {
    auto p = s->probe();
    if (!p.available) {
      if (p.reason.empty()) std::abort();
      continue;
    }
    (void)s->fields_supported();
    (void)s->details().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);  // as every writer does
    for (int64_t t = 1; t <= 3; ++t) {
      SampleBatch b;
      s->sample(t * 100'000'000, b);
      for (const auto& d : b.drops)
        if (d.reason.empty()) std::abort();
    }
  }
  return 0;
}

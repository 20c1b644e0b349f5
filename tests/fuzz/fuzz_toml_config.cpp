// libFuzzer target: TOML configuration loader (load_toml_config, then validate). The loader
// takes a path, so each input is written to a per-process file under /tmp first.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "trainscope/config.h"
#include "trainscope/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/ts_fuzz_toml_" + std::to_string(::getpid()) + ".toml";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  trainscope::MatrixConfig m;
  try {
    trainscope::load_toml_config(path, m);
    trainscope::validate(m);
  } catch (const trainscope::Error& e) {
    auto k = e.kind();
    if (k != trainscope::ErrorKind::kInvalidConfig && k != trainscope::ErrorKind::kInvalidArgument) std::abort();
  }
  return 0;
}

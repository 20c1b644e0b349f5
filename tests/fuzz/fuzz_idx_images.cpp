// libFuzzer target: IDX image parser (parse_idx_images). Any input either parses into a
// consistent RawImages or throws trainscope::Error(kDataFormat); nothing else is allowed.
#include <cstdlib>

#include "trainscope/dataset.h"
#include "trainscope/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto r = trainscope::parse_idx_images({data, size}, "fuzz-images");
    if (r.count <= 0 || static_cast<size_t>(r.count * r.sample_bytes()) != r.pixels.size()) std::abort();
  } catch (const trainscope::Error& e) {
    if (e.kind() != trainscope::ErrorKind::kDataFormat) std::abort();
  }
  return 0;
}

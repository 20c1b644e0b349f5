// libFuzzer target: image-folder decoding (decode_image: stb_image PNG/JPEG/BMP + resize).
// The first byte picks the output size and channels, the rest is the file.
#include <cstdlib>

#include "trainscope/dataset.h"
#include "trainscope/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  int64_t channels = (data[0] & 1) ? 3 : 1;
  int64_t side = 4 + (data[0] >> 1) % 29;  // 4..32
  try {
    auto px = trainscope::decode_image({data + 1, size - 1}, "fuzz.png", side, channels);
    if (px.size() != static_cast<size_t>(side * side * channels)) std::abort();
  } catch (const trainscope::Error& e) {
    if (e.kind() != trainscope::ErrorKind::kDataFormat) std::abort();
  }
  return 0;
}

#include <algorithm>
#include <random>

#include "trainscope/dataset.h"
#include "trainscope/error.h"

namespace trainscope {

RawImages make_synthetic(int64_t count, int64_t channels, int64_t size, int64_t classes, uint64_t seed) {
  TS_CHECK(count > 0 && channels > 0 && size > 0 && classes > 1, "synthetic data set parameters");
  RawImages r;
  r.count = count;
  r.channels = channels;
  r.height = size;
  r.width = size;
  r.pixels.resize(static_cast<size_t>(count * channels * size * size));
  r.labels.resize(static_cast<size_t>(count));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> cls(0, classes - 1);
  std::normal_distribution<float> noise(0.f, 30.f);
  // Each class lights up its own horizontal band of rows: learnable by any of the models.
  for (int64_t i = 0; i < count; ++i) {
    int64_t c = cls(rng);
    r.labels[static_cast<size_t>(i)] = c;
    int64_t band0 = c * size / classes, band1 = (c + 1) * size / classes;
    for (int64_t ch = 0; ch < channels; ++ch)
      for (int64_t y = 0; y < size; ++y)
        for (int64_t x = 0; x < size; ++x) {
          float base = (y >= band0 && y < std::max(band1, band0 + 1)) ? 200.f : 40.f;
          float v = std::clamp(base + noise(rng), 0.f, 255.f);
          r.pixels[static_cast<size_t>(((i * channels + ch) * size + y) * size + x)] = static_cast<uint8_t>(v);
        }
  }
  return r;
}

}  // namespace trainscope

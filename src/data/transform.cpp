// Seeded per-sample transforms of the streaming pipeline (trainscope/input_pipeline.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "trainscope/error.h"
#include "trainscope/input_pipeline.h"

namespace trainscope {

namespace {

// SplitMix64 (Steele, Lea, Flood 2014, "Fast splittable pseudorandom number generators").
uint64_t splitmix(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct Rng {
  uint64_t state;
  double uniform(double lo, double hi) {  // [lo, hi)
    return lo + (hi - lo) * static_cast<double>(splitmix(state) >> 11) * 0x1.0p-53;
  }
  int64_t below(int64_t n) { return n <= 1 ? 0 : static_cast<int64_t>(splitmix(state) % static_cast<uint64_t>(n)); }
};

// The source region that becomes the output, in source pixels (may extend outside the image).
struct Box {
  double x0, y0, w, h;
  bool flip = false;
};

// torchvision.transforms.RandomResizedCrop.get_params with scale (0.08, 1), ratio (3/4, 4/3).
Box random_resized_crop(int64_t W, int64_t H, Rng& rng) {
  const double area = static_cast<double>(W * H);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * rng.uniform(0.08, 1.0);
    const double ratio = std::exp(rng.uniform(std::log(3.0 / 4.0), std::log(4.0 / 3.0)));
    const auto w = static_cast<int64_t>(std::lround(std::sqrt(target * ratio)));
    const auto h = static_cast<int64_t>(std::lround(std::sqrt(target / ratio)));
    if (w > 0 && h > 0 && w <= W && h <= H) {
      const int64_t y = rng.below(H - h + 1), x = rng.below(W - w + 1);
      return {static_cast<double>(x), static_cast<double>(y), static_cast<double>(w), static_cast<double>(h)};
    }
  }
  // Fallback: the whole image's centre at the nearest allowed aspect ratio.
  const double in_ratio = static_cast<double>(W) / static_cast<double>(H);
  double w = static_cast<double>(W), h = static_cast<double>(H);
  if (in_ratio < 3.0 / 4.0) h = std::round(w / (3.0 / 4.0));
  else if (in_ratio > 4.0 / 3.0) w = std::round(h * (4.0 / 3.0));
  return {std::floor((static_cast<double>(W) - w) / 2), std::floor((static_cast<double>(H) - h) / 2), w, h};
}

// Resize to size x size, pad `pad` px, random size x size crop: in source pixels, an offset of
// (ox - pad) output pixels scaled by W/size.
Box pad_crop(int64_t W, int64_t H, int64_t size, Rng& rng) {
  constexpr int64_t pad = 4;
  const int64_t ox = rng.below(2 * pad + 1), oy = rng.below(2 * pad + 1);
  const double sx = static_cast<double>(W) / static_cast<double>(size), sy = static_cast<double>(H) / static_cast<double>(size);
  return {static_cast<double>(ox - pad) * sx, static_cast<double>(oy - pad) * sy, static_cast<double>(W), static_cast<double>(H)};
}

Box box_for(const DecodedImage& img, const TransformSpec& spec, Rng& rng) {
  const int64_t W = img.width, H = img.height;
  switch (spec.augment) {
    case Augment::kRandomResizedCrop: {
      Box b = random_resized_crop(W, H, rng);
      b.flip = rng.uniform(0, 1) < 0.5;
      return b;
    }
    case Augment::kPadCrop: {
      Box b = pad_crop(W, H, spec.size, rng);
      b.flip = rng.uniform(0, 1) < 0.5;
      return b;
    }
    case Augment::kEval: {
      const double s = static_cast<double>(std::min(W, H));
      return {std::floor((static_cast<double>(W) - s) / 2), std::floor((static_cast<double>(H) - s) / 2), s, s};
    }
    case Augment::kNone: break;
  }
  return {0, 0, static_cast<double>(W), static_cast<double>(H)};
}

// Bilinear taps of one output coordinate along an axis of n source pixels; inside = the output
// pixel's centre falls inside the image.
struct Tap {
  int64_t i0, i1;
  float w1;
  bool inside;
};

std::vector<Tap> taps(double start, double extent, int64_t out, int64_t n) {
  std::vector<Tap> t(static_cast<size_t>(out));
  const double step = extent / static_cast<double>(out);
  for (int64_t k = 0; k < out; ++k) {
    const double centre = start + (static_cast<double>(k) + 0.5) * step;
    const double f = std::clamp(centre - 0.5, 0.0, static_cast<double>(n - 1));
    const auto i0 = static_cast<int64_t>(f);
    t[static_cast<size_t>(k)] = {i0, std::min(i0 + 1, n - 1), static_cast<float>(f - static_cast<double>(i0)),
                                 centre >= 0 && centre < static_cast<double>(n)};
  }
  return t;
}

}  // namespace

Augment augment_from_string(const std::string& s) {
  if (s == "random-resized-crop") return Augment::kRandomResizedCrop;
  if (s == "pad-crop") return Augment::kPadCrop;
  if (s == "none") return Augment::kNone;
  throw_error(ErrorKind::kInvalidArgument,
              fmt::format("unknown augmentation '{}'; use random-resized-crop, pad-crop or none", s));
}

std::string to_string(Augment a) {
  switch (a) {
    case Augment::kRandomResizedCrop: return "random-resized-crop";
    case Augment::kPadCrop: return "pad-crop";
    case Augment::kNone: return "none";
    case Augment::kEval: return "eval";
  }
  return "?";
}

uint64_t sample_seed(uint64_t run_seed, int64_t epoch, int64_t index) {
  uint64_t s = run_seed;
  uint64_t a = splitmix(s) ^ static_cast<uint64_t>(epoch);
  uint64_t b = splitmix(a) ^ static_cast<uint64_t>(index);
  return splitmix(b);
}

void transform_sample(const DecodedImage& img, const TransformSpec& spec, uint64_t seed, float* out) {
  if (img.channels != spec.channels || img.width <= 0 || img.height <= 0)
    throw_error(ErrorKind::kInvalidArgument, fmt::format("transform_sample: a {}x{}x{} image for {} channels",
                                                         img.height, img.width, img.channels, spec.channels));
  Rng rng{seed};
  const Box box = box_for(img, spec, rng);
  const int64_t S = spec.size, C = spec.channels, W = img.width;
  const auto tx = taps(box.x0, box.w, S, img.width), ty = taps(box.y0, box.h, S, img.height);
  const uint8_t* px = img.pixels.data();
  for (int64_t c = 0; c < C; ++c) {
    const float mean = spec.mean.empty() ? 0.f : spec.mean[static_cast<size_t>(c)];
    const float scale = (spec.std.empty() ? 1.f : 1.f / spec.std[static_cast<size_t>(c)]) / 255.f;
    const float black = -mean * 255.f * scale;
    float* plane = out + c * S * S;
    for (int64_t y = 0; y < S; ++y) {
      const Tap& a = ty[static_cast<size_t>(y)];
      const uint8_t* r0 = px + a.i0 * W * C + c;
      const uint8_t* r1 = px + a.i1 * W * C + c;
      float* row = plane + y * S;
      for (int64_t x = 0; x < S; ++x) {
        const Tap& b = tx[static_cast<size_t>(x)];
        const int64_t ox = box.flip ? S - 1 - x : x;
        if (!a.inside || !b.inside) {
          row[ox] = black;
          continue;
        }
        const float top = static_cast<float>(r0[b.i0 * C]) + b.w1 * static_cast<float>(r0[b.i1 * C] - r0[b.i0 * C]);
        const float bot = static_cast<float>(r1[b.i0 * C]) + b.w1 * static_cast<float>(r1[b.i1 * C] - r1[b.i0 * C]);
        row[ox] = (top + a.w1 * (bot - top)) * scale - mean * 255.f * scale;
      }
    }
  }
}

}  // namespace trainscope

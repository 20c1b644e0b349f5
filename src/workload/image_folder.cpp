// Image-folder data sets: <root>/<class>/<image>; PNG/JPEG/BMP decoded with stb_image and
// resized with stb_image_resize (Debian libstb-dev).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "trainscope/dataset.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"

#define STBI_NO_STDIO
#define STBI_FAILURE_USERMSG
#define STBI_MAX_DIMENSIONS 16384
#include <stb_image.h>

namespace trainscope {

namespace fs = std::filesystem;

std::vector<uint8_t> decode_image(std::span<const uint8_t> bytes, const std::string& name, int64_t size,
                                  int64_t channels) {
  if (bytes.empty()) throw_error(ErrorKind::kDataFormat, fmt::format("{}: empty image file", name));
  if (bytes.size() > (size_t{1} << 31))
    throw_error(ErrorKind::kDataFormat, fmt::format("{}: image file larger than 2 GiB", name));
  // PNG: every chunk's declared length must fit in the file. stb_image grows its buffer to a
  // chunk's declared length before reading it, so a 100-byte file declaring a 1.4 GB chunk made
  // it allocate 2 GiB (found by fuzzing). PNG spec: 8-byte signature, then chunks of
  // length(4, big-endian) type(4) data(length) CRC(4).
  static const uint8_t kPngSig[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  if (bytes.size() >= 8 && std::equal(kPngSig, kPngSig + 8, bytes.begin())) {
    size_t off = 8;
    while (off + 8 <= bytes.size()) {
      uint64_t len = (uint64_t{bytes[off]} << 24) | (uint64_t{bytes[off + 1]} << 16) | (uint64_t{bytes[off + 2]} << 8) |
                     uint64_t{bytes[off + 3]};
      if (len > bytes.size() - off - 8)
        throw_error(ErrorKind::kDataFormat,
                    fmt::format("{}: at byte offset {}: PNG chunk declares {} bytes but only {} remain (truncated or "
                                "corrupt PNG)",
                                name, off, len, bytes.size() - off - 8));
      bool iend = std::equal(bytes.begin() + static_cast<long>(off) + 4, bytes.begin() + static_cast<long>(off) + 8,
                             "IEND");
      off += 8 + len + 4;
      if (iend) break;
    }
  }
  int w = 0, h = 0, n = 0;
  // Header first: refuse absurd dimensions before stb allocates for them (a 100-byte file can
  // declare a 16384 x 16384 image; found by fuzzing).
  if (stbi_info_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &n) &&
      static_cast<int64_t>(w) * h > int64_t{8192} * 8192)
    throw_error(ErrorKind::kDataFormat,
                fmt::format("{}: the image declares {}x{} pixels, more than the 8192x8192 trainscope decodes", name, w, h));
  stbi_uc* px = stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &n,
                                      static_cast<int>(channels));
  if (!px)
    throw_error(ErrorKind::kDataFormat,
                fmt::format("{}: cannot decode image ({}); only PNG, JPEG and BMP are supported", name,
                            stbi_failure_reason() ? stbi_failure_reason() : "unknown reason"));
  if (w <= 0 || h <= 0) {
    stbi_image_free(px);
    throw_error(ErrorKind::kDataFormat, fmt::format("{}: the image has {}x{} pixels", name, w, h));
  }
  // Bilinear resize to size x size, HWC (stb) -> CHW (LibTorch convention). Our own code:
  // stb_image_resize read out of bounds for some degenerate images (found by fuzzing).
  std::vector<uint8_t> out(static_cast<size_t>(size * size * channels));
  const int64_t W = w, H = h, C = channels;
  for (int64_t y = 0; y < size; ++y) {
    double fy = std::clamp((static_cast<double>(y) + 0.5) * static_cast<double>(H) / static_cast<double>(size) - 0.5, 0.0,
                           static_cast<double>(H - 1));
    int64_t y0 = static_cast<int64_t>(fy), y1 = std::min(y0 + 1, H - 1);
    double wy = fy - static_cast<double>(y0);
    for (int64_t x = 0; x < size; ++x) {
      double fx = std::clamp((static_cast<double>(x) + 0.5) * static_cast<double>(W) / static_cast<double>(size) - 0.5,
                             0.0, static_cast<double>(W - 1));
      int64_t x0 = static_cast<int64_t>(fx), x1 = std::min(x0 + 1, W - 1);
      double wx = fx - static_cast<double>(x0);
      for (int64_t c = 0; c < C; ++c) {
        auto at = [&](int64_t yy, int64_t xx) { return static_cast<double>(px[(yy * W + xx) * C + c]); };
        double v = (1 - wy) * ((1 - wx) * at(y0, x0) + wx * at(y0, x1)) + wy * ((1 - wx) * at(y1, x0) + wx * at(y1, x1));
        out[static_cast<size_t>(c * size * size + y * size + x)] = static_cast<uint8_t>(std::clamp(v + 0.5, 0.0, 255.0));
      }
    }
  }
  stbi_image_free(px);
  return out;
}

RawImages read_image_folder(const std::string& root, int64_t size, int64_t channels,
                            std::vector<std::string>* class_names) {
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    throw_error(ErrorKind::kIo, fmt::format("image folder '{}' does not exist or is not a folder", root));
  std::vector<std::string> classes;
  for (auto& e : fs::directory_iterator(root, ec))
    if (e.is_directory()) classes.push_back(e.path().filename().string());
  std::sort(classes.begin(), classes.end());
  if (classes.empty())
    throw_error(ErrorKind::kDataFormat,
                fmt::format("image folder '{}' has no class sub-folders; expected <root>/<class>/<image>.png", root));
  if (classes.size() > 100000)
    throw_error(ErrorKind::kDataFormat, fmt::format("image folder '{}' has {} classes (too many)", root, classes.size()));
  RawImages r;
  r.channels = channels;
  r.height = size;
  r.width = size;
  for (size_t ci = 0; ci < classes.size(); ++ci) {
    std::vector<fs::path> files;
    for (auto& e : fs::directory_iterator(fs::path(root) / classes[ci], ec)) {
      if (!e.is_regular_file()) continue;
      auto ext = e.path().extension().string();
      std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
      if (ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (auto& f : files) {
      auto bytes = read_file_bytes(f.string(), uint64_t{256} << 20);
      auto px = decode_image(bytes, f.string(), size, channels);
      r.pixels.insert(r.pixels.end(), px.begin(), px.end());
      r.labels.push_back(static_cast<int64_t>(ci));
      ++r.count;
    }
  }
  if (r.count == 0)
    throw_error(ErrorKind::kDataFormat,
                fmt::format("image folder '{}' holds no .png/.jpg/.jpeg/.bmp images in its class folders", root));
  if (class_names) *class_names = classes;
  return r;
}

}  // namespace trainscope

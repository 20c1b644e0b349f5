// Image-folder data sets: <root>/<class>/<image>; decoded by decode_pixels (src/data/decode.cpp:
// JPEG through libjpeg-turbo, PNG/BMP through stb_image) and resized here.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

#include "common/text.h"
#include "data/file_stat.h"

#include "trainscope/dataset.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/input_pipeline.h"

namespace trainscope {

namespace fs = std::filesystem;

std::vector<uint8_t> decode_image(std::span<const uint8_t> bytes, const std::string& name, int64_t size,
                                  int64_t channels) {
  const DecodedImage img = decode_pixels(bytes, name, channels);
  const uint8_t* px = img.pixels.data();
  const int w = static_cast<int>(img.width), h = static_cast<int>(img.height);
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
  return out;
}

namespace {

// Whether an entry is a folder (`folder`) or a regular file; an entry whose type cannot be read
// (a symbolic link to itself, "too many levels of symbolic links") is bad input naming it.
bool entry_is(const fs::directory_entry& e, bool folder, const std::string& root) {
  std::error_code ec;
  const bool is = folder ? e.is_directory(ec) : e.is_regular_file(ec);
  if (ec)
    throw_error(ErrorKind::kDataFormat, fmt::format("image folder '{}': cannot tell what '{}' is: {}; remove it or "
                                                    "make it a folder, an image or a link to one",
                                                    root, e.path().string(), ec.message()));
  return is;
}

}  // namespace

std::vector<ImageFile> index_image_folder(const std::string& root, std::vector<std::string>* class_names) {
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    throw_error(ErrorKind::kIo, fmt::format("image folder '{}' does not exist or is not a folder", root));
  std::vector<std::string> classes;
  for (auto& e : fs::directory_iterator(root, ec))
    if (entry_is(e, true, root)) classes.push_back(e.path().filename().string());
  std::sort(classes.begin(), classes.end());
  if (classes.empty())
    throw_error(ErrorKind::kDataFormat,
                fmt::format("image folder '{}' has no class sub-folders; expected <root>/<class>/<image>.png", root));
  if (classes.size() > 100000)
    throw_error(ErrorKind::kDataFormat, fmt::format("image folder '{}' has {} classes (too many)", root, classes.size()));
  std::vector<ImageFile> out;
  std::vector<std::string> empty;  // class folders without an image: refused, as torchvision's ImageFolder does
  for (size_t ci = 0; ci < classes.size(); ++ci) {
    std::vector<ImageFile> files;
    // Images in nested folders of a class belong to it (torchvision's ImageFolder walks them too).
    for (auto& e : fs::recursive_directory_iterator(fs::path(root) / classes[ci],
                                                    fs::directory_options::skip_permission_denied, ec)) {
      if (!entry_is(e, false, root)) continue;
      const auto ext = ascii_lower(e.path().extension().string());
      if (ext != ".png" && ext != ".jpg" && ext != ".jpeg" && ext != ".bmp") continue;
      struct stat st {};  // stat(2): the same clock as the stream's fstat of the open file
      if (::stat(e.path().c_str(), &st) != 0) st = {};
      files.push_back({e.path().string(), static_cast<int64_t>(ci), static_cast<int64_t>(st.st_size),
                       mtime_ns(st)});
    }
    std::sort(files.begin(), files.end(), [](const ImageFile& a, const ImageFile& b) { return a.path < b.path; });
    if (files.empty()) empty.push_back(classes[ci]);
    out.insert(out.end(), files.begin(), files.end());
  }
  if (out.empty())
    throw_error(ErrorKind::kDataFormat,
                fmt::format("image folder '{}' holds no .png/.jpg/.jpeg/.bmp images in its class folders", root));
  if (!empty.empty())
    throw_error(ErrorKind::kDataFormat,
                fmt::format("image folder '{}': class folder(s) {} hold no .png/.jpg/.jpeg/.bmp image, so the model "
                            "would get a class it never sees; add images or remove the folder(s)",
                            root, fmt::join(empty, ", ")));
  if (class_names) *class_names = classes;
  return out;
}

RawImages read_image_folder(const std::string& root, int64_t size, int64_t channels,
                            std::vector<std::string>* class_names) {
  const auto files = index_image_folder(root, class_names);
  RawImages r;
  r.channels = channels;
  r.height = size;
  r.width = size;
  for (const auto& f : files) {
    auto bytes = read_file_bytes(f.path, uint64_t{256} << 20);
    auto px = decode_image(bytes, f.path, size, channels);
    r.pixels.insert(r.pixels.end(), px.begin(), px.end());
    r.labels.push_back(f.label);
    ++r.count;
  }
  return r;
}

}  // namespace trainscope

// IDX format (MNIST family): big-endian header, see LeCun, Cortes, Burges,
// "THE MNIST DATABASE of handwritten digits", section "FILE FORMATS FOR THE MNIST DATABASE".
#include <fmt/format.h>

#include <algorithm>

#include "trainscope/dataset.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"

namespace trainscope {

namespace {

uint32_t be32(std::span<const uint8_t> b, size_t off) {
  return (uint32_t{b[off]} << 24) | (uint32_t{b[off + 1]} << 16) | (uint32_t{b[off + 2]} << 8) | uint32_t{b[off + 3]};
}

[[noreturn]] void bad(const std::string& name, size_t offset, const std::string& what) {
  throw_error(ErrorKind::kDataFormat, fmt::format("{}: at byte offset {}: {}", name, offset, what));
}

constexpr uint32_t kImagesMagic = 0x00000803;  // unsigned byte, 3 dimensions
constexpr uint32_t kLabelsMagic = 0x00000801;  // unsigned byte, 1 dimension
constexpr uint32_t kMaxSide = 4096;

}  // namespace

RawImages parse_idx_images(std::span<const uint8_t> bytes, const std::string& name) {
  if (bytes.size() < 4)
    bad(name, 0, fmt::format("file is {} bytes, shorter than the 16-byte IDX image header (truncated?)", bytes.size()));
  uint32_t magic = be32(bytes, 0);
  if (magic == kLabelsMagic)
    bad(name, 0, "this is an IDX label file (magic 0x00000801), expected an image file (magic 0x00000803); "
                 "check which file is given as images");
  if (magic != kImagesMagic)
    bad(name, 0, fmt::format("wrong magic number 0x{:08x}, expected 0x00000803 (IDX unsigned-byte images)", magic));
  if (bytes.size() < 16)
    bad(name, 0, fmt::format("file is {} bytes, shorter than the 16-byte IDX image header (truncated?)", bytes.size()));
  uint32_t n = be32(bytes, 4), rows = be32(bytes, 8), cols = be32(bytes, 12);
  if (n == 0) bad(name, 4, "the file declares zero images");
  if (rows == 0 || cols == 0 || rows > kMaxSide || cols > kMaxSide)
    bad(name, 8, fmt::format("implausible image size {}x{} (allowed 1..{})", rows, cols, kMaxSide));
  uint64_t need = uint64_t{n} * rows * cols;
  uint64_t have = bytes.size() - 16;
  if (need != have)
    bad(name, 16, fmt::format("header declares {} images of {}x{} = {} pixel bytes but the file holds {} ({})", n, rows,
                              cols, need, have, need > have ? "truncated" : "trailing bytes"));
  RawImages r;
  r.count = n;
  r.channels = 1;
  r.height = rows;
  r.width = cols;
  r.pixels.assign(bytes.begin() + 16, bytes.end());
  return r;
}

std::vector<int64_t> parse_idx_labels(std::span<const uint8_t> bytes, const std::string& name, int64_t max_classes) {
  if (bytes.size() < 4)
    bad(name, 0, fmt::format("file is {} bytes, shorter than the 8-byte IDX label header (truncated?)", bytes.size()));
  uint32_t magic = be32(bytes, 0);
  if (magic == kImagesMagic)
    bad(name, 0, "this is an IDX image file (magic 0x00000803), expected a label file (magic 0x00000801)");
  if (magic != kLabelsMagic)
    bad(name, 0, fmt::format("wrong magic number 0x{:08x}, expected 0x00000801 (IDX unsigned-byte labels)", magic));
  if (bytes.size() < 8)
    bad(name, 0, fmt::format("file is {} bytes, shorter than the 8-byte IDX label header (truncated?)", bytes.size()));
  uint32_t n = be32(bytes, 4);
  if (n == 0) bad(name, 4, "the file declares zero labels");
  uint64_t have = bytes.size() - 8;
  if (n != have)
    bad(name, 8, fmt::format("header declares {} labels but the file holds {} ({})", n, have,
                             n > have ? "truncated" : "trailing bytes"));
  std::vector<int64_t> labels(n);
  for (uint32_t i = 0; i < n; ++i) {
    uint8_t v = bytes[8 + i];
    if (v >= max_classes)
      bad(name, 8 + i, fmt::format("label {} of sample {} is out of range (must be < {})", v, i, max_classes));
    labels[i] = v;
  }
  return labels;
}

int64_t idx_classes(const std::vector<int64_t>& train_labels, const std::string& train_name,
                    const std::vector<int64_t>& test_labels, const std::string& test_name) {
  constexpr size_t kHeader = 8;  // IDX label header: magic, count
  int64_t k = 0;
  for (int64_t l : train_labels) {
    TS_CHECK(l >= 0, "IDX labels are unsigned bytes");
    k = std::max(k, l + 1);
  }
  std::vector<char> present(static_cast<size_t>(k), 0);
  for (int64_t l : train_labels) present[static_cast<size_t>(l)] = 1;
  const auto gap = static_cast<int64_t>(std::find(present.begin(), present.end(), 0) - present.begin());
  if (gap < k) {
    size_t i = 0;
    while (train_labels[i] <= gap) ++i;  // exists: some label is k - 1 > gap
    bad(train_name, kHeader + i,
        fmt::format("label {} of sample {} lies beyond class {}, which no sample has: labels must be the classes "
                    "0..K-1 (K = largest label + 1) with every class present, and these labels would make {} "
                    "classes of which {} are empty; correct the label (or the labels file)",
                    train_labels[i], i, gap, k, std::count(present.begin(), present.end(), 0)));
  }
  for (size_t i = 0; i < test_labels.size(); ++i)
    if (test_labels[i] >= k)
      bad(test_name, kHeader + i,
          fmt::format("label {} of test sample {} is not one of the classes 0..{} of the training labels ({}); "
                      "correct the label, or use the test files that belong to those training files",
                      test_labels[i], i, k - 1, train_name));
  return k;
}

RawImages read_idx(const std::string& images_path, const std::string& labels_path) {
  auto img = read_file_bytes(images_path, uint64_t{4} << 30);
  RawImages r = parse_idx_images(img, images_path);
  auto lab = read_file_bytes(labels_path, uint64_t{1} << 30);
  r.labels = parse_idx_labels(lab, labels_path, 256);
  if (static_cast<int64_t>(r.labels.size()) != r.count)
    throw_error(ErrorKind::kDataFormat,
                fmt::format("{} holds {} images but {} holds {} labels; the two files must belong together",
                            images_path, r.count, labels_path, r.labels.size()));
  return r;
}

}  // namespace trainscope

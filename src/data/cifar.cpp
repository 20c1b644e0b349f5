// CIFAR-10 binary version: each record is 1 label byte followed by 3072 pixel bytes
// (1024 red, 1024 green, 1024 blue, row-major 32x32). Krizhevsky (2009), data set page
// "Binary version".
#include <fmt/format.h>

#include "trainscope/dataset.h"
#include "trainscope/error.h"

namespace trainscope {

namespace {
constexpr size_t kRecord = 1 + 3 * 32 * 32;
constexpr int kClasses = 10;
}  // namespace

RawImages parse_cifar10_batch(std::span<const uint8_t> bytes, const std::string& name) {
  if (bytes.empty()) throw_error(ErrorKind::kDataFormat, fmt::format("{}: the file is empty (zero images)", name));
  if (bytes.size() % kRecord != 0)
    throw_error(ErrorKind::kDataFormat,
                fmt::format("{}: at byte offset {}: size {} is not a multiple of the 3073-byte CIFAR-10 record "
                            "(truncated, or not a CIFAR-10 binary batch; CIFAR-100 is not supported)",
                            name, bytes.size() / kRecord * kRecord, bytes.size()));
  RawImages r;
  r.count = static_cast<int64_t>(bytes.size() / kRecord);
  r.channels = 3;
  r.height = 32;
  r.width = 32;
  r.pixels.resize(static_cast<size_t>(r.count) * 3072);
  r.labels.resize(static_cast<size_t>(r.count));
  for (int64_t i = 0; i < r.count; ++i) {
    size_t off = static_cast<size_t>(i) * kRecord;
    uint8_t label = bytes[off];
    if (label >= kClasses)
      throw_error(ErrorKind::kDataFormat,
                  fmt::format("{}: at byte offset {}: label {} of record {} is out of range (CIFAR-10 labels are 0..9)",
                              name, off, label, i));
    r.labels[static_cast<size_t>(i)] = label;
    std::copy(bytes.begin() + off + 1, bytes.begin() + off + kRecord, r.pixels.begin() + i * 3072);
  }
  return r;
}

}  // namespace trainscope

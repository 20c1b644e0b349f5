// TensorBoard event files written by hand (docs/tensorboard.md#format): TFRecord framing around
// the three protobuf messages TensorBoard's scalar dashboard reads (Event, Summary,
// Summary.Value). No protobuf library: the encoder below writes the few fields used.
//
// Framing of each record (all little-endian):
//   uint64 length | uint32 masked_crc32c(the 8 length bytes) | data[length] | uint32 masked_crc32c(data)
// masked_crc32c(x) = ((c >> 15) | (c << 17)) + 0xa282ead8 with c = CRC-32C (Castagnoli, reflected
// polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF) of x.
// Messages (tensorboard/compat/proto/event.proto, summary.proto in tensorflow/tensorboard):
//   Event   { double wall_time = 1; int64 step = 2; oneof { string file_version = 3; Summary summary = 5; } }
//   Summary { repeated Value value = 1; }   Value { string tag = 1; oneof { float simple_value = 2; } }
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trainscope {
namespace tboard {

/// CRC-32C (Castagnoli) of `data`, continuing from `crc` (0 for a fresh checksum).
uint32_t crc32c(std::string_view data, uint32_t crc = 0);
/// TFRecord's masked CRC-32C: rotated right by 15 bits plus 0xa282ead8.
uint32_t masked_crc32c(std::string_view data);

/// One record: length, masked CRC of the length, `data`, masked CRC of `data`.
std::string tfrecord(std::string_view data);

/// One scalar of a summary: tag (e.g. "train/loss") and value (stored as float32).
struct ScalarValue {
  std::string tag;
  float value = 0;
};

/// An Event message (not framed) carrying file_version ("brain.Event:2" opens every file).
std::string file_version_event(double wall_time_s, std::string_view version = "brain.Event:2");
/// An Event message (not framed) carrying a Summary with one simple_value per scalar.
std::string summary_event(double wall_time_s, int64_t step, const std::vector<ScalarValue>& values);

/// "events.out.tfevents.<unix seconds>.<host>.<pid>.<n>": TensorBoard reads files whose name
/// holds "tfevents"; n counts the files this process named, so two files never share a name.
std::string event_file_name(int64_t unix_s, const std::string& host, int64_t pid);

}  // namespace tboard
}  // namespace trainscope

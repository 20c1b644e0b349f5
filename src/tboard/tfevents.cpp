// TFRecord framing and the Event/Summary encoding of src/tboard/tfevents.h.
#include "tboard/tfevents.h"

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <cstring>

namespace trainscope {
namespace tboard {

namespace {

// The byte-at-a-time table of the reflected Castagnoli polynomial.
const std::array<uint32_t, 256>& crc_table() {
  static const std::array<uint32_t, 256> t = [] {
    std::array<uint32_t, 256> out{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      out[i] = c;
    }
    return out;
  }();
  return t;
}

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// Protobuf base-128 varint (negative int64 values take 10 bytes, two's complement).
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// Field key: (field number << 3) | wire type (0 varint, 1 64-bit, 2 length-delimited, 5 32-bit).
void put_key(std::string& out, int field, int wire) { put_varint(out, static_cast<uint64_t>(field << 3 | wire)); }

void put_bytes(std::string& out, int field, std::string_view bytes) {
  put_key(out, field, 2);
  put_varint(out, bytes.size());
  out.append(bytes.data(), bytes.size());
}

void put_double(std::string& out, int field, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  put_key(out, field, 1);
  put_le(out, bits, 8);
}

void put_float(std::string& out, int field, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  put_key(out, field, 5);
  put_le(out, bits, 4);
}

// Event fields 1 (wall_time) and 2 (step).
std::string event_head(double wall_time_s, int64_t step) {
  std::string ev;
  put_double(ev, 1, wall_time_s);
  put_key(ev, 2, 0);
  put_varint(ev, static_cast<uint64_t>(step));
  return ev;
}

}  // namespace

uint32_t crc32c(std::string_view data, uint32_t crc) {
  const auto& t = crc_table();
  crc = ~crc;
  for (unsigned char b : data) crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

uint32_t masked_crc32c(std::string_view data) {
  const uint32_t c = crc32c(data);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string tfrecord(std::string_view data) {
  std::string len;
  put_le(len, data.size(), 8);
  std::string out = len;
  put_le(out, masked_crc32c(len), 4);
  out.append(data.data(), data.size());
  put_le(out, masked_crc32c(data), 4);
  return out;
}

std::string file_version_event(double wall_time_s, std::string_view version) {
  std::string ev = event_head(wall_time_s, 0);
  put_bytes(ev, 3, version);
  return ev;
}

std::string summary_event(double wall_time_s, int64_t step, const std::vector<ScalarValue>& values) {
  std::string summary;
  for (const auto& v : values) {
    std::string value;
    put_bytes(value, 1, v.tag);
    put_float(value, 2, v.value);
    put_bytes(summary, 1, value);
  }
  std::string ev = event_head(wall_time_s, step);
  put_bytes(ev, 5, summary);
  return ev;
}

std::string event_file_name(int64_t unix_s, const std::string& host, int64_t pid) {
  static std::atomic<int64_t> counter{0};
  std::string h = host.empty() ? "localhost" : host;
  for (char& c : h)
    if (c == '/' || c == '\\') c = '_';  // one file name, never a path
  return fmt::format("events.out.tfevents.{}.{}.{}.{}", unix_s, h, pid, counter++);
}

}  // namespace tboard
}  // namespace trainscope

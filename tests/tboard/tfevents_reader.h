// An independent reader of TensorBoard event files for the tests: its own bitwise CRC-32C, its
// own varint and wire-format decoding (nothing from src/tboard), so a bug in trainscope's
// encoder cannot hide behind the same bug in the reader. Format: src/tboard/tfevents.h.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tfevents_reader {

// CRC-32C, one bit at a time (reflected polynomial 0x82F63B78).
inline uint32_t crc32c_bitwise(std::string_view s) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char b : s) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return crc ^ 0xFFFFFFFFu;
}
inline uint32_t masked(std::string_view s) {
  uint32_t c = crc32c_bitwise(s);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

inline uint64_t le(std::string_view s, size_t at, int bytes) {
  if (at + static_cast<size_t>(bytes) > s.size()) throw std::runtime_error("truncated");
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + static_cast<size_t>(i)]);
  return v;
}

/// The records of a file; throws on a bad length or data CRC.
inline std::vector<std::string> records(const std::string& file) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < file.size()) {
    const uint64_t n = le(file, pos, 8);
    if (le(file, pos + 8, 4) != masked(std::string_view(file).substr(pos, 8))) throw std::runtime_error("length CRC");
    if (pos + 12 + n + 4 > file.size()) throw std::runtime_error("record runs past the end of the file");
    std::string data = file.substr(pos + 12, n);
    if (le(file, pos + 12 + n, 4) != masked(data)) throw std::runtime_error("data CRC");
    out.push_back(data);
    pos += 12 + n + 4;
  }
  return out;
}

struct Field {
  int number = 0, wire = 0;
  uint64_t number_value = 0;  // varint, fixed64 or fixed32 bits
  std::string bytes;          // wire type 2
};

inline uint64_t varint(std::string_view s, size_t& pos) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= s.size()) throw std::runtime_error("truncated varint");
    auto b = static_cast<unsigned char>(s[pos++]);
    v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) return v;
  }
  throw std::runtime_error("varint too long");
}

inline std::vector<Field> fields(std::string_view msg) {
  std::vector<Field> out;
  size_t pos = 0;
  while (pos < msg.size()) {
    uint64_t key = varint(msg, pos);
    Field f;
    f.number = static_cast<int>(key >> 3);
    f.wire = static_cast<int>(key & 7);
    if (f.wire == 0) f.number_value = varint(msg, pos);
    else if (f.wire == 1) f.number_value = le(msg, pos, 8), pos += 8;
    else if (f.wire == 5) f.number_value = le(msg, pos, 4), pos += 4;
    else if (f.wire == 2) {
      uint64_t n = varint(msg, pos);
      if (pos + n > msg.size()) throw std::runtime_error("length-delimited field runs past its message");
      f.bytes = std::string(msg.substr(pos, n));
      pos += n;
    } else throw std::runtime_error("unexpected wire type " + std::to_string(f.wire));
    out.push_back(f);
  }
  return out;
}

struct Event {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;
  std::vector<std::pair<std::string, float>> values;  // (tag, simple_value)
};

inline Event event(const std::string& data) {
  Event e;
  for (const auto& f : fields(data)) {
    if (f.number == 1 && f.wire == 1) std::memcpy(&e.wall_time, &f.number_value, 8);
    if (f.number == 2 && f.wire == 0) e.step = static_cast<int64_t>(f.number_value);
    if (f.number == 3 && f.wire == 2) e.file_version = f.bytes;
    if (f.number != 5 || f.wire != 2) continue;
    for (const auto& v : fields(f.bytes)) {  // Summary.value
      if (v.number != 1 || v.wire != 2) continue;
      std::string tag;
      float x = 0;
      for (const auto& g : fields(v.bytes)) {
        if (g.number == 1 && g.wire == 2) tag = g.bytes;
        if (g.number == 2 && g.wire == 5) {
          auto bits = static_cast<uint32_t>(g.number_value);
          std::memcpy(&x, &bits, 4);
        }
      }
      e.values.emplace_back(tag, x);
    }
  }
  return e;
}

/// A scalar as read back: step, wall time, value.
struct Point {
  int64_t step;
  double wall_time;
  float value;
};

/// Every event of a file, and its scalars by tag.
struct File {
  std::vector<Event> events;
  std::map<std::string, std::vector<Point>> scalars;
};

inline File read(const std::string& bytes) {
  File f;
  for (const auto& r : records(bytes)) {
    f.events.push_back(event(r));
    for (const auto& [tag, v] : f.events.back().values)
      f.scalars[tag].push_back({f.events.back().step, f.events.back().wall_time, v});
  }
  return f;
}

}  // namespace tfevents_reader

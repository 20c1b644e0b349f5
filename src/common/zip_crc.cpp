// The CRC-32 check of a zip file's members (common/zip_crc.h). Record layouts: PKWARE's
// APPNOTE.TXT, sections 4.3.7 (local file header), 4.3.12 (central directory header), 4.3.14-16
// (ZIP64 end of central directory record and locator, end of central directory record) and
// 4.5.3 (the ZIP64 extended information extra field).
#include "common/zip_crc.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "trainscope/error.h"

namespace trainscope {

namespace {

constexpr uint32_t kEocdSig = 0x06054b50, kZip64LocatorSig = 0x07064b50, kZip64EocdSig = 0x06064b50;
constexpr uint32_t kCentralSig = 0x02014b50, kLocalSig = 0x04034b50;
constexpr size_t kEocdSize = 22, kCentralSize = 46, kLocalSize = 30, kBuffer = size_t{1} << 20;

uint64_t le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

struct Member {
  std::string name;
  uint32_t crc = 0;
  uint16_t method = 0, flags = 0;
  uint64_t compressed = 0, offset = 0;
};

// The open file: positioned reads that name the file in their errors.
class ZipFile {
 public:
  ZipFile(const std::string& path, const std::string& fix) : path_(path), fix_(fix) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd_ < 0 || ::fstat(fd_, &st) != 0)
      throw_error(ErrorKind::kIo, fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~ZipFile() { ::close(fd_); }
  ZipFile(const ZipFile&) = delete;
  ZipFile& operator=(const ZipFile&) = delete;
  uint64_t size() const { return size_; }
  // Reads n bytes at `at`; fewer only at the end of the file.
  size_t read_at(uint64_t at, uint8_t* out, size_t n) const {
    size_t got = 0;
    while (got < n) {
      const ssize_t k = ::pread(fd_, out + got, n - got, static_cast<off_t>(at + got));
      if (k < 0 && errno == EINTR) continue;
      if (k < 0) throw_error(ErrorKind::kIo, fmt::format("cannot read '{}': {}", path_, std::strerror(errno)));
      if (k == 0) break;
      got += static_cast<size_t>(k);
    }
    return got;
  }
  // Exactly n bytes at `at`, or a data-format error saying what lies beyond the end.
  std::vector<uint8_t> read_exact(uint64_t at, size_t n, const std::string& what) const {
    std::vector<uint8_t> b(n);
    if (at > size_ || read_at(at, b.data(), n) != n) damaged(fmt::format("{} lies beyond the end of the file", what));
    return b;
  }
  [[noreturn]] void damaged(const std::string& why) const {
    throw_error(ErrorKind::kDataFormat, fmt::format("'{}' is a damaged zip file: {}; {}", path_, why, fix_));
  }

 private:
  std::string path_, fix_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// The end-of-central-directory record, searched backwards over the last 64 KiB + 22 bytes (its
// comment is at most 65535 bytes); -1 when there is none.
int64_t find_eocd(const ZipFile& f) {
  if (f.size() < kEocdSize) return -1;
  const uint64_t span = std::min<uint64_t>(f.size(), 65535 + kEocdSize);
  std::vector<uint8_t> tail(span);
  if (f.read_at(f.size() - span, tail.data(), span) != span) return -1;
  for (size_t i = span - kEocdSize + 1; i-- > 0;)
    if (le(&tail[i], 4) == kEocdSig) return static_cast<int64_t>(f.size() - span + i);
  return -1;
}

// The central directory's offset, size and entry count; ZIP64 values when the record says so.
struct CentralDir {
  uint64_t offset = 0, size = 0, entries = 0;
};

// The ZIP64 end-of-central-directory locator before the end record at `eocd` and the ZIP64
// record it points to (APPNOTE.TXT 4.3.14-15): the central directory's values from the ZIP64
// record. Any field of either that a writer cannot have written is damage.
CentralDir zip64_central_dir(const ZipFile& f, uint64_t eocd) {
  if (eocd < 20) f.damaged("the ZIP64 end-of-central-directory locator is missing");
  const auto loc = f.read_exact(eocd - 20, 20, "the ZIP64 end-of-central-directory locator");
  if (le(&loc[0], 4) != kZip64LocatorSig) f.damaged("the ZIP64 end-of-central-directory locator is missing or damaged");
  const uint64_t at = le(&loc[8], 8);
  if (le(&loc[4], 4) != 0 || le(&loc[16], 4) != 1 || at > eocd - 20 || eocd - 20 - at < 56)
    f.damaged("the ZIP64 end-of-central-directory locator is damaged (its disk numbers or record offset are impossible)");
  const auto z = f.read_exact(at, 56, "the ZIP64 end-of-central-directory record");
  if (le(&z[0], 4) != kZip64EocdSig) f.damaged("the ZIP64 end-of-central-directory record is missing or damaged");
  const CentralDir d{le(&z[48], 8), le(&z[40], 8), le(&z[32], 8)};
  if (d.offset > at || d.size != at - d.offset || le(&z[24], 8) != d.entries)
    f.damaged("the ZIP64 end-of-central-directory record is damaged (the central directory it describes does not "
              "end where the record starts)");
  return d;
}

// The end records: the end-of-central-directory record at `eocd` and, where the file has them
// (between the central directory's end and that record), the ZIP64 locator and record. A file
// cut short or with a damaged end record is named here, before the members are read.
CentralDir central_dir(const ZipFile& f, uint64_t eocd) {
  const auto e = f.read_exact(eocd, kEocdSize, "the end-of-central-directory record");
  const CentralDir d{le(&e[16], 4), le(&e[12], 4), le(&e[10], 2)};
  const bool saturated = d.offset == 0xFFFFFFFF || d.size == 0xFFFFFFFF || d.entries == 0xFFFF;
  if (!saturated && d.offset <= eocd && d.size == eocd - d.offset) return d;  // no ZIP64 records
  const CentralDir z = zip64_central_dir(f, eocd);
  if ((d.offset != 0xFFFFFFFF && d.offset != z.offset) || (d.size != 0xFFFFFFFF && d.size != z.size) ||
      (d.entries != 0xFFFF && d.entries != z.entries))
    f.damaged("the end-of-central-directory record and the ZIP64 record disagree on the central directory");
  return z;
}

// The 64-bit sizes and offset of a ZIP64 extra field, in place of the 32-bit values set to all ones.
void apply_zip64_extra(const uint8_t* extra, size_t len, uint64_t& usize, Member& m) {
  for (size_t i = 0; i + 4 <= len;) {
    const uint64_t id = le(extra + i, 2), n = le(extra + i + 2, 2);
    if (i + 4 + n > len) return;
    if (id == 0x0001) {
      const uint8_t* p = extra + i + 4;
      const uint8_t* end = p + n;
      for (uint64_t* v : {&usize, &m.compressed, &m.offset})
        if (*v == 0xFFFFFFFF && p + 8 <= end) *v = le(p, 8), p += 8;
      return;
    }
    i += 4 + n;
  }
}

std::vector<Member> read_members(const ZipFile& f, const CentralDir& d) {
  if (d.offset > f.size() || d.size > f.size() - d.offset) f.damaged("its central directory lies beyond the end of the file");
  const auto cd = f.read_exact(d.offset, d.size, "the central directory");
  std::vector<Member> out;
  size_t i = 0;
  for (uint64_t k = 0; k < d.entries; ++k) {
    if (i + kCentralSize > cd.size() || le(&cd[i], 4) != kCentralSig)
      f.damaged(fmt::format("entry {} of its central directory is malformed", k + 1));
    const uint8_t* h = &cd[i];
    const size_t name = le(h + 28, 2), extra = le(h + 30, 2), comment = le(h + 32, 2);
    if (i + kCentralSize + name + extra + comment > cd.size())
      f.damaged(fmt::format("entry {} of its central directory is malformed", k + 1));
    Member m;
    m.flags = static_cast<uint16_t>(le(h + 8, 2));
    m.method = static_cast<uint16_t>(le(h + 10, 2));
    m.crc = static_cast<uint32_t>(le(h + 16, 4));
    m.compressed = le(h + 20, 4);
    uint64_t usize = le(h + 24, 4);
    m.offset = le(h + 42, 4);
    m.name.assign(reinterpret_cast<const char*>(h + kCentralSize), name);
    apply_zip64_extra(h + kCentralSize + name, extra, usize, m);
    out.push_back(std::move(m));
    i += kCentralSize + name + extra + comment;
  }
  return out;
}

// CRC-32 of a member's bytes: stored bytes as they are, deflated ones as zlib inflates them.
class MemberCrc {
 public:
  explicit MemberCrc(bool deflated) : deflated_(deflated) {
    if (deflated_ && inflateInit2(&z_, -MAX_WBITS) != Z_OK) throw_error(ErrorKind::kInternal, "zlib inflateInit2 failed");
  }
  ~MemberCrc() {
    if (deflated_) inflateEnd(&z_);
  }
  MemberCrc(const MemberCrc&) = delete;
  MemberCrc& operator=(const MemberCrc&) = delete;
  // false when the deflate stream is corrupt
  bool add(const uint8_t* p, size_t n) {
    if (!deflated_) {
      crc_ = crc32_z(crc_, p, n);
      return true;
    }
    z_.next_in = const_cast<Bytef*>(p);
    z_.avail_in = static_cast<uInt>(n);
    while (z_.avail_in > 0) {
      z_.next_out = out_;
      z_.avail_out = sizeof out_;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      crc_ = crc32_z(crc_, out_, sizeof out_ - z_.avail_out);
      if (rc != Z_OK) return rc == Z_STREAM_END;  // a fresh output buffer and input left: no Z_BUF_ERROR
    }
    return true;
  }
  uint32_t crc() const { return static_cast<uint32_t>(crc_); }

 private:
  bool deflated_;
  z_stream z_{};
  uLong crc_ = crc32_z(0, nullptr, 0);
  Bytef out_[1 << 16];
};

// One member: its local header gives where its bytes start; they are read in kBuffer pieces.
void check_member(const ZipFile& f, const Member& m, std::vector<uint8_t>& buf, ZipCheck& res) {
  const auto h = f.read_exact(m.offset, kLocalSize, fmt::format("the local header of member '{}'", m.name));
  if (le(&h[0], 4) != kLocalSig) f.damaged(fmt::format("the local header of member '{}' is missing", m.name));
  const uint64_t start = m.offset + kLocalSize + le(&h[26], 2) + le(&h[28], 2);
  if (start > f.size() || m.compressed > f.size() - start)
    f.damaged(fmt::format("member '{}' lies beyond the end of the file (truncated)", m.name));
  MemberCrc crc(m.method == 8);
  for (uint64_t at = start, left = m.compressed; left > 0;) {
    const size_t n = f.read_at(at, buf.data(), static_cast<size_t>(std::min<uint64_t>(left, buf.size())));
    if (n == 0) f.damaged(fmt::format("member '{}' lies beyond the end of the file (truncated)", m.name));
    if (!crc.add(buf.data(), n)) f.damaged(fmt::format("member '{}' holds a corrupt deflate stream", m.name));
    at += n, left -= n;
  }
  if (crc.crc() != m.crc)
    f.damaged(fmt::format("member '{}' has CRC-32 {:08x} but its central directory records {:08x} (its bytes changed "
                          "after it was written)",
                          m.name, crc.crc(), m.crc));
  ++res.members;
  res.bytes += m.compressed;
}

}  // namespace

ZipCheck check_zip_crcs(const std::string& path, const std::string& fix) {
  const ZipFile f(path, fix);
  ZipCheck res;
  const int64_t eocd = find_eocd(f);
  if (eocd < 0) {
    // A zip begins with a member's local header: with that beginning and no end record, the
    // file was cut short (a zip ends with its central directory and end record).
    uint8_t head[4] = {};
    if (f.read_at(0, head, 4) == 4 && le(head, 4) == kLocalSig)
      f.damaged("its end-of-central-directory record is missing: the file is truncated");
    return res;
  }
  res.is_zip = true;
  auto members = read_members(f, central_dir(f, static_cast<uint64_t>(eocd)));
  std::sort(members.begin(), members.end(), [](const Member& a, const Member& b) { return a.offset < b.offset; });
  std::vector<uint8_t> buf(kBuffer);
  for (const auto& m : members) {
    // encrypted (flag bit 0) or compressed by another method: LibTorch cannot read it either
    if ((m.flags & 1) != 0 || (m.method != 0 && m.method != 8)) {
      ++res.skipped;
      continue;
    }
    check_member(f, m, buf, res);
  }
  return res;
}

}  // namespace trainscope

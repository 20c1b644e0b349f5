#include "trainscope/fs.h"

#include <fcntl.h>
#include <ftw.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "trainscope/error.h"

namespace trainscope {

namespace fs = std::filesystem;

std::string temporary_path(const std::string& path) { return path + ".tmp." + std::to_string(getpid()); }

void write_file_atomic(const std::string& path, const std::string& content) {
  std::string tmp = temporary_path(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw_error(ErrorKind::kIo, fmt::format("cannot create '{}': {}", tmp, std::strerror(errno)));
  size_t off = 0;
  while (off < content.size()) {
    ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw_error(ErrorKind::kIo, fmt::format("cannot write '{}': {} (the previous version, if any, is kept)", path,
                                              std::strerror(e)));
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw_error(ErrorKind::kIo, fmt::format("cannot write '{}': {}", path, std::strerror(e)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw_error(ErrorKind::kIo, fmt::format("cannot rename '{}' to '{}': {}", tmp, path, std::strerror(e)));
  }
}

namespace {

// `tmp` gets the bytes of `from` (from its start), is fsynced and renamed to `path`; on any
// failure `tmp` is removed and Error(kIo) names `path`.
void copy_to_file_atomic(int from, const std::string& tmp, const std::string& path) {
  auto fail = [&](int fd, int e) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw_error(ErrorKind::kIo, fmt::format("cannot write '{}': {} (the previous version, if any, is kept)", path,
                                            std::strerror(e)));
  };
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw_error(ErrorKind::kIo, fmt::format("cannot create '{}': {}", tmp, std::strerror(errno)));
  if (::lseek(from, 0, SEEK_SET) != 0) fail(fd, errno);
  std::vector<char> buf(size_t{1} << 20);
  for (;;) {
    ssize_t n = ::read(from, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(fd, errno);
    if (n == 0) break;
    for (ssize_t off = 0; off < n;) {
      ssize_t w = ::write(fd, buf.data() + off, static_cast<size_t>(n - off));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) fail(fd, errno);
      off += w;
    }
  }
  if (::fsync(fd) != 0) fail(fd, errno);
  if (::close(fd) != 0) fail(-1, errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw_error(ErrorKind::kIo, fmt::format("cannot rename '{}' to '{}': {}", tmp, path, std::strerror(e)));
  }
}

}  // namespace

void write_file_through_temporary(const std::string& path, const std::function<void(const std::string&)>& write) {
  const std::string tmp = temporary_path(path);
  // The library writes into memory (a memfd, which it opens by its /proc path), and the bytes
  // reach the disk through copy_to_file_atomic: a full disk is then an Error(kIo) here and never
  // meets the library's writer, which may not survive it (LibTorch's zip writer throws from a
  // destructor, and the process aborts). It costs the file's size in memory while it is copied.
  const int mem = ::memfd_create("trainscope-file", MFD_CLOEXEC);
  const std::string mem_path = "/proc/self/fd/" + std::to_string(mem);
  if (mem >= 0 && ::access(mem_path.c_str(), W_OK) == 0) {
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{mem};
    write(mem_path);  // its exception propagates; nothing is on the disk yet
    struct stat st {};
    if (::fstat(mem, &st) == 0 && st.st_size > 0) {
      copy_to_file_atomic(mem, tmp, path);
      return;
    }
    // Nothing arrived: the library writes a file of its own beside the path and renames it.
    // It writes again below, to the temporary name on the disk.
  } else if (mem >= 0) {
    ::close(mem);  // no /proc: the library writes the temporary file itself
  }
  write_file_through_disk_temporary(path, write);
}

void write_file_through_disk_temporary(const std::string& path, const std::function<void(const std::string&)>& write) {
  const std::string tmp = temporary_path(path);
  try {
    write(tmp);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT)
    throw_error(ErrorKind::kIo, fmt::format("cannot write '{}': nothing was written", path));
  if (fd < 0 || ::fsync(fd) != 0) {
    int e = errno;
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw_error(ErrorKind::kIo, fmt::format("cannot write '{}': {} (the previous version, if any, is kept)", path,
                                            std::strerror(e)));
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw_error(ErrorKind::kIo, fmt::format("cannot rename '{}' to '{}': {}", tmp, path, std::strerror(e)));
  }
}

void remove_stale_temporaries(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string n = e.path().filename().string();
    auto at = n.rfind(".tmp.");
    if (at != std::string::npos && at + 5 < n.size() && n.find_first_not_of("0123456789", at + 5) == std::string::npos)
      fs::remove(e.path(), ec);
  }
}

void ensure_writable_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw_error(ErrorKind::kIo, fmt::format("cannot create output folder '{}': {}; choose another with --out",
                                            dir, ec.message()));
  std::string probe = dir + "/.trainscope-write-probe";
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw_error(ErrorKind::kIo, fmt::format("output folder '{}' is not writable: {}; choose another with --out", dir,
                                            std::strerror(errno)));
  char block[4096] = {0};
  bool ok = ::write(fd, block, sizeof block) == static_cast<ssize_t>(sizeof block);
  int e = errno;
  ::close(fd);
  ::unlink(probe.c_str());
  if (!ok)
    throw_error(ErrorKind::kIo, fmt::format("output folder '{}' cannot take data: {}; free space or use --out", dir,
                                            std::strerror(e)));
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::vector<uint8_t> read_file_bytes(const std::string& path, uint64_t max_bytes) {
  std::vector<uint8_t> out;
  bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  if (!gz) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw_error(ErrorKind::kIo, fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      throw_error(ErrorKind::kIo, fmt::format("'{}' is not a regular file", path));
    }
    if (static_cast<uint64_t>(st.st_size) > max_bytes) {
      ::close(fd);
      throw_error(ErrorKind::kDataFormat,
                  fmt::format("'{}' is {} bytes, more than the limit of {} bytes", path, st.st_size, max_bytes));
    }
    out.resize(static_cast<size_t>(st.st_size));
    size_t off = 0;
    while (off < out.size()) {
      ssize_t n = ::read(fd, out.data() + off, out.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int e = errno;
        ::close(fd);
        throw_error(ErrorKind::kIo, fmt::format("cannot read '{}' at offset {}: {}", path, off,
                                                n == 0 ? "file shrank while reading" : std::strerror(e)));
      }
      off += static_cast<size_t>(n);
    }
    ::close(fd);
    return out;
  }
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw_error(ErrorKind::kIo, fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  gzbuffer(f, 1 << 17);
  std::vector<uint8_t> chunk(1 << 20);
  for (;;) {
    int n = gzread(f, chunk.data(), static_cast<unsigned>(chunk.size()));
    if (n < 0) {
      int errnum = 0;
      std::string msg = gzerror(f, &errnum);
      gzclose(f);
      // zlib's inflate checks the gzip trailer (RFC 1952 section 2.3.1: CRC-32 and length of the
      // data) and says "incorrect data check" / "incorrect length check" when it does not match.
      if (msg.find("incorrect data check") != std::string::npos || msg.find("incorrect length check") != std::string::npos)
        throw_error(ErrorKind::kDataFormat,
                    fmt::format("'{}' is corrupt: its gzip checksum (the CRC-32 and length of the data) does not match "
                                "the data ({}, after {} bytes decompressed); re-download it or give the uncompressed "
                                "file",
                                path, msg, out.size()));
      throw_error(ErrorKind::kDataFormat,
                  fmt::format("'{}' is not a valid gzip file (decompressed {} bytes before the error: {}); "
                              "re-download it or give the uncompressed file",
                              path, out.size(), msg));
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      gzclose(f);
      throw_error(ErrorKind::kDataFormat,
                  fmt::format("'{}' decompresses to more than the limit of {} bytes", path, max_bytes));
    }
    out.insert(out.end(), chunk.begin(), chunk.begin() + n);
  }
  // gzread on a truncated stream returns what it has and flags Z_BUF_ERROR at close.
  int rc = gzclose(f);
  if (rc == Z_BUF_ERROR)
    throw_error(ErrorKind::kDataFormat,
                fmt::format("'{}' is truncated: the gzip stream ends early after {} decompressed bytes", path,
                            out.size()));
  return out;
}

std::string gzip_compress(const std::string& content) {
  if (content.size() > 0xFFFFFFFFu) throw_error(ErrorKind::kInternal, "gzip_compress: input over 4 GiB");
  z_stream z{};
  // windowBits 15 + 16: a gzip header and trailer instead of zlib's (zlib manual, deflateInit2).
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw_error(ErrorKind::kInternal, "zlib deflateInit2 failed");
  std::string out(deflateBound(&z, static_cast<uLong>(content.size())) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(content.data()));
  z.avail_in = static_cast<uInt>(content.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  size_t n = z.total_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw_error(ErrorKind::kInternal, fmt::format("zlib deflate failed ({})", rc));
  out.resize(n);
  return out;
}

namespace {

thread_local uint64_t g_removed = 0;  // nftw's callback takes no context argument
thread_local std::string g_remove_failure;

int remove_entry(const char* path, const struct stat*, int type, struct FTW*) {
  const int rc = type == FTW_DP ? ::rmdir(path) : ::unlink(path);
  if (rc != 0 && errno != ENOENT) {
    g_remove_failure = fmt::format("cannot remove '{}': {}", path, std::strerror(errno));
    return 1;  // stops the walk
  }
  ++g_removed;
  return 0;
}

}  // namespace

uint64_t remove_tree(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return 0;  // nothing there
  g_removed = 0;
  g_remove_failure.clear();
  // FTW_DEPTH: a directory after its entries; FTW_PHYS: links are removed, never followed
  if (::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    throw_error(ErrorKind::kIo, g_remove_failure.empty() ? fmt::format("cannot remove '{}': {}", path, std::strerror(errno))
                                                       : g_remove_failure);
  return g_removed;
}

}  // namespace trainscope

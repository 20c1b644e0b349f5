// The temporary file of the trace analysis's sorters (spill.h): mkstemp in $TMPDIR or /tmp,
// unlinked at once; pwrite and pread at offsets.
#include "trace/spill.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "trainscope/error.h"

namespace trainscope::trace {

SpillFile::SpillFile() {
  const char* tmp = std::getenv("TMPDIR");
  dir_ = tmp && *tmp ? tmp : "/tmp";
  std::string name = dir_ + "/trainscope-analyze-XXXXXX";
  fd_ = mkstemp(name.data());
  if (fd_ < 0) fail("cannot create a temporary file");
  unlink(name.c_str());
}

SpillFile::~SpillFile() {
  if (fd_ >= 0) close(fd_);
}

void SpillFile::fail(const char* what) const {
  throw_error(ErrorKind::kIo,
              fmt::format("{}: {} ({}): analyze keeps the event records beyond its memory budget (--memory-mb) "
                          "there; free space in that folder, set TMPDIR to another, or raise --memory-mb",
                          dir_, what, std::strerror(errno)));
}

uint64_t SpillFile::append(const void* data, size_t bytes) {
  const uint64_t at = size_;
  const char* p = static_cast<const char*>(data);
  for (size_t done = 0; done < bytes;) {
    const ssize_t n = pwrite(fd_, p + done, bytes - done, static_cast<off_t>(at + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot write the temporary file");
    done += static_cast<size_t>(n);
  }
  size_ += bytes;
  return at;
}

void SpillFile::read(uint64_t offset, void* data, size_t bytes) const {
  char* p = static_cast<char*>(data);
  for (size_t done = 0; done < bytes;) {
    const ssize_t n = pread(fd_, p + done, bytes - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot read back the temporary file");
    done += static_cast<size_t>(n);
  }
}

}  // namespace trainscope::trace

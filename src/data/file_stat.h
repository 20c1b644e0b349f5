// A file's modification time as the image-folder index records it and the stream compares it.
#pragma once

#include <sys/stat.h>

#include <cstdint>

namespace trainscope {

/// Modification time in ns since the Unix epoch, from stat(2)'s st_mtim.
inline int64_t mtime_ns(const struct stat& st) { return int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec; }

}  // namespace trainscope

// The CRC-32 check of a zip file's members, for files another library reads without it: LibTorch
// builds its zip reader (miniz) with MINIZ_DISABLE_ZIP_READER_CRC32_CHECKS, so a `.pt` file
// (TorchScript module, trainscope checkpoint) with a damaged member loads silently.
#pragma once

#include <cstdint>
#include <string>

namespace trainscope {

/// What check_zip_crcs found.
struct ZipCheck {
  bool is_zip = false;     // an end-of-central-directory record was found
  int64_t members = 0;     // members whose CRC-32 was computed and matched
  int64_t skipped = 0;     // members it cannot check (encrypted, a compression other than stored/deflate)
  uint64_t bytes = 0;      // member bytes read (compressed sizes)
};

/// Computes the CRC-32 (zlib's crc32, the zip format's: APPNOTE.TXT 4.4.7) of every member of the
/// zip file `path` and compares it with the value its central directory records (ZIP64 records
/// included). The members are read once, in file order, through a 1 MiB buffer (the cost:
/// docs/workloads.md#model-files-are-checked-before-loading). A file without an end-of-central-directory record
/// that does not begin as a zip does (a local header) is not a zip: nothing is checked (is_zip
/// false) and the caller's reader decides.
/// Throws Error(kDataFormat) naming `path`, the member and `fix` when a member's CRC-32 differs,
/// when a member or the central directory lies beyond the end of the file, when the central
/// directory is malformed, when a file that begins as a zip has no end record (truncated), and
/// when the end records disagree: the central directory not ending where the end record (or the
/// ZIP64 record) starts, a damaged ZIP64 locator or record; Error(kIo) when the file cannot be
/// read.
ZipCheck check_zip_crcs(const std::string& path, const std::string& fix);

}  // namespace trainscope

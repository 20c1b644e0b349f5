// File helpers with trainscope's error policy: failures throw Error(kIo) naming the path.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace trainscope {

/// Writes `content` to `path` atomically: a temporary file in the same folder, fsync, rename.
/// A reader never sees a half-written file; a crash leaves the old file (or none).
void write_file_atomic(const std::string& path, const std::string& content);

/// The name write_file_atomic writes before its rename: PATH.tmp.<pid>. Writers that stream a
/// file themselves use it too, so remove_stale_temporaries finds their leftovers.
std::string temporary_path(const std::string& path);

/// For files another library writes by path (LibTorch checkpoints): `write` is
/// called with a path in memory (a memfd's /proc/self/fd/N) and writes the whole file there; where
/// /proc is missing, or the library wrote nothing there (a writer that writes a file of its own and
/// renames it), it is called again with temporary_path(path). The
/// bytes then go to temporary_path(path), which is fsynced and renamed to `path`, as
/// write_file_atomic does. A full
/// disk is thus Error(kIo) with no temporary left, never a failure inside the library's writer.
/// When `write` throws, the exception propagates. Holds the file's size in memory meanwhile.
void write_file_through_temporary(const std::string& path, const std::function<void(const std::string&)>& write);

/// For a library writer that may be called only once (Kineto's trace save: a second call throws
/// "Trace is already saved", and in PyTorch 2.11 it cannot open a /proc/self/fd path): `write` is
/// called once, with temporary_path(path) on the disk; that file is fsynced and renamed to `path`.
/// Errors: Error(kIo) when nothing was written, or fsync/rename fail (the temporary is removed);
/// `write`'s own exception propagates after the temporary is removed.
void write_file_through_disk_temporary(const std::string& path, const std::function<void(const std::string&)>& write);

/// Removes the NAME.tmp.<pid> leftovers of write_file_atomic calls that a killed process did not
/// finish, in `dir` (not recursive; a missing folder is no error). Call only while holding the
/// folder's writer lock (nobody else is writing).
void remove_stale_temporaries(const std::string& dir);

/// Creates `dir` and its parents; checks it is writable by creating and removing a probe file.
/// Throws Error(kIo) with the reason (e.g. "Permission denied", "No space left on device").
void ensure_writable_dir(const std::string& dir);

/// Reads a whole file (".gz" files are decompressed with zlib). `max_bytes` guards against
/// decompression bombs and absurd files; exceeding it throws Error(kDataFormat).
std::vector<uint8_t> read_file_bytes(const std::string& path, uint64_t max_bytes = (uint64_t{8} << 30));

bool file_exists(const std::string& path);

/// Removes `path` and, for a directory, everything under it (symbolic links themselves, never
/// what they point to); a path that does not exist is no error. Returns the number of entries
/// removed; an entry that cannot be removed throws Error(kIo) naming it. Use it instead of
/// std::filesystem::remove_all, which the PyTorch wheel's libtorch.so exports too: a binary
/// linked against it calls that copy, and it crashes (a null call) on any directory it must
/// recurse into (bench/RESULTS.md, "std::filesystem::remove_all from libtorch.so").
uint64_t remove_tree(const std::string& path);

/// `content` as one gzip member (zlib deflate, level 6, RFC 1952 wrapper), for write_file_atomic.
/// Throws Error(kInternal) if zlib fails.
std::string gzip_compress(const std::string& content);

}  // namespace trainscope

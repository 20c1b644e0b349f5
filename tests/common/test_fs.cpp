#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "trainscope/error.h"
#include "trainscope/fs.h"

using namespace trainscope;

TEST(Fs, AtomicWriteReplacesWholeFile) {
  std::string p = ::testing::TempDir() + "atomic.txt";
  write_file_atomic(p, "first version\n");
  write_file_atomic(p, "second\n");
  std::ifstream f(p);
  std::string s((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(s, "second\n");
  // no temporary files left behind
  for (auto& e : std::filesystem::directory_iterator(::testing::TempDir()))
    EXPECT_EQ(e.path().filename().string().find("atomic.txt.tmp"), std::string::npos);
}

TEST(Fs, UnwritableFolderIsIoError) {
  try {
    ensure_writable_dir("/proc/trainscope-cannot-exist/x");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find("--out"), std::string::npos);
  }
}

TEST(Fs, ReadsGzipAndDetectsTruncation) {
  std::string p = ::testing::TempDir() + "data.gz";
  std::string payload(100000, 'x');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>('a' + (i * 7919) % 26);
  gzFile g = gzopen(p.c_str(), "wb");
  gzwrite(g, payload.data(), static_cast<unsigned>(payload.size()));
  gzclose(g);
  auto bytes = read_file_bytes(p);
  ASSERT_EQ(bytes.size(), payload.size());
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), payload);
  // cut the compressed file in half
  auto sz = std::filesystem::file_size(p);
  std::filesystem::resize_file(p, sz / 2);
  EXPECT_THROW(read_file_bytes(p), Error);
}

TEST(Fs, MissingFileIsIoError) {
  try {
    read_file_bytes("/nonexistent/trainscope.bin");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/trainscope.bin"), std::string::npos);
  }
}

namespace {
std::string read_text(const std::string& p) {
  std::ifstream f(p);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}
}  // namespace

// A file another library writes by path (a LibTorch checkpoint, a Kineto trace) appears under
// its name only when complete: the writer sees the temporary name, never the final one.
TEST(Fs, WriteThroughTemporaryRenamesOnlyACompleteFile) {
  const std::string dir = ::testing::TempDir() + "through_tmp";
  trainscope::remove_tree(dir);
  std::filesystem::create_directories(dir);
  const std::string p = dir + "/model.pt";
  std::string seen;
  write_file_through_temporary(p, [&](const std::string& tmp) {
    seen = tmp;
    EXPECT_FALSE(std::filesystem::exists(p)) << "the final name appears only after the write";
    std::ofstream(tmp) << "weights v1";
  });
  // The writer writes into memory (a memfd's /proc path, include/trainscope/fs.h); without /proc,
  // into the temporary name.
  EXPECT_TRUE(seen == temporary_path(p) || seen.rfind("/proc/self/fd/", 0) == 0) << seen;
  EXPECT_NE(seen, p);
  EXPECT_EQ(read_text(p), "weights v1");
  EXPECT_FALSE(std::filesystem::exists(temporary_path(p)));
}

// A library that writes a file of its own beside the path and renames it (Kineto in PyTorch 2.x
// writes NAME.tmp, then renames it to NAME) cannot write under /proc/self/fd: it is given the
// temporary name on the disk, and the file lands complete under its own name.
TEST(Fs, WriteThroughTemporaryServesAWriterThatRenamesItsOwnTemporary) {
  const std::string dir = ::testing::TempDir() + "through_tmp_rename";
  trainscope::remove_tree(dir);
  std::filesystem::create_directories(dir);
  const std::string p = dir + "/trace.pt.trace.json";
  int calls = 0;
  write_file_through_temporary(p, [&](const std::string& name) {
    ++calls;
    const std::string own = name + ".tmp";
    std::ofstream f(own);
    if (!f) return;  // as Kineto does: it logs the failed open and writes nothing
    f << "{\"traceEvents\": []}";
    f.close();
    std::rename(own.c_str(), name.c_str());
  });
  EXPECT_EQ(read_text(p), "{\"traceEvents\": []}");
  EXPECT_FALSE(std::filesystem::exists(temporary_path(p)));
  EXPECT_FALSE(std::filesystem::exists(temporary_path(p) + ".tmp"));
  EXPECT_GE(calls, 1);
}

// A writer that fails halfway: the old file stays, the partial temporary is removed, the error
// propagates. A writer that writes nothing: Error(kIo) naming the file.
TEST(Fs, WriteThroughTemporaryKeepsTheOldFileWhenTheWriterFails) {
  const std::string dir = ::testing::TempDir() + "through_tmp_fail";
  trainscope::remove_tree(dir);
  std::filesystem::create_directories(dir);
  const std::string p = dir + "/model.pt";
  write_file_atomic(p, "weights v1");
  EXPECT_THROW(write_file_through_temporary(p,
                                            [&](const std::string& tmp) {
                                              std::ofstream(tmp) << "half";
                                              throw std::runtime_error("disk full");
                                            }),
               std::runtime_error);
  EXPECT_EQ(read_text(p), "weights v1");
  EXPECT_FALSE(std::filesystem::exists(temporary_path(p)));
  try {
    write_file_through_temporary(p, [](const std::string&) {});
    FAIL() << "expected Error(kIo)";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_text(p), "weights v1");
}

// A writer that may be called only once (Kineto's trace save) is called once, with the temporary
// on the disk, never with a /proc path; its file replaces the old one; its failure keeps the old.
TEST(Fs, WriteThroughDiskTemporaryCallsTheWriterOnceWithTheDiskTemporary) {
  const std::string dir = ::testing::TempDir() + "through_disk_tmp";
  trainscope::remove_tree(dir);
  std::filesystem::create_directories(dir);
  const std::string p = dir + "/trace.json";
  write_file_atomic(p, "old trace");
  std::vector<std::string> names;
  write_file_through_disk_temporary(p, [&](const std::string& name) {
    names.push_back(name);
    std::ofstream(name) << "new trace";
  });
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0], temporary_path(p));
  EXPECT_EQ(read_text(p), "new trace");
  EXPECT_FALSE(std::filesystem::exists(temporary_path(p)));
  EXPECT_THROW(write_file_through_disk_temporary(p,
                                                 [&](const std::string& tmp) {
                                                   std::ofstream(tmp) << "half";
                                                   throw std::runtime_error("Trace is already saved");
                                                 }),
               std::runtime_error);
  EXPECT_EQ(read_text(p), "new trace");
  EXPECT_FALSE(std::filesystem::exists(temporary_path(p)));
}

// remove_tree: a directory with files, a subdirectory and a link to a folder outside it goes;
// the link's target stays; a missing path is no error.
TEST(RemoveTree, RemovesTheTreeAndLinksButNotWhatTheyPointTo) {
  const std::string root = ::testing::TempDir() + "remove_tree_" + std::to_string(::getpid());
  const std::string outside = root + "_outside";
  trainscope::remove_tree(root);
  trainscope::remove_tree(outside);
  std::filesystem::create_directories(root + "/a/b");
  std::filesystem::create_directories(outside);
  std::ofstream(root + "/a/b/f.txt") << "x";
  std::ofstream(root + "/g.txt") << "y";
  std::ofstream(outside + "/keep.txt") << "z";
  std::filesystem::create_directory_symlink(outside, root + "/link");
  EXPECT_EQ(trainscope::remove_tree(root), 6u);  // f.txt, b, a, g.txt, link, root
  EXPECT_FALSE(std::filesystem::exists(root));
  EXPECT_TRUE(std::filesystem::exists(outside + "/keep.txt"));
  EXPECT_EQ(trainscope::remove_tree(root), 0u);
  trainscope::remove_tree(outside);
}

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

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

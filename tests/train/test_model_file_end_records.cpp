// A .pt file whose end records are damaged: cut short so that the end-of-central-
// directory record is gone, or with a flipped byte in the ZIP64 end-of-central-directory locator
// or record. LibTorch's reader then failed with its own message ("does not fit model ..."); the
// zip check (common/zip_crc.h) names the file as damaged and the fix before LibTorch reads it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../test_helpers.h"
#include "common/zip_crc.h"
#include "train/file_bytes.h"
#include "trainscope/error.h"
#include "workload/model.h"

using namespace trainscope;
namespace fs = std::filesystem;

namespace {

using trainscope::test::bytes_of;
using trainscope::test::write_bytes;

std::string scratch(const std::string& name) { return trainscope::test::scratch_path("ts_model_end_", name); }

uint32_t u32(const std::vector<char>& b, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(b[at + static_cast<size_t>(i)]);
  return v;
}

// The position of the end-of-central-directory record (APPNOTE.TXT 4.3.16): LibTorch writes no
// archive comment, so it is the file's last 22 bytes.
size_t eocd_of(const std::vector<char>& b) {
  EXPECT_GE(b.size(), 22u);
  EXPECT_EQ(u32(b, b.size() - 22), 0x06054b50u) << "no end record where LibTorch writes it";
  return b.size() - 22;
}

// An mlp checkpoint as trainscope run writes it (torch::save: a zip with ZIP64 end records).
std::string saved_checkpoint(const std::string& name) {
  const std::string pt = scratch(name);
  make_model("mlp", 1, 28, 28, 10)->save(pt);
  return pt;
}

std::string load_error(const std::string& pt) {
  auto m = make_model("mlp", 1, 28, 28, 10);
  return test::what_of([&] { m->load(pt); });
}

ErrorKind kind_of(const std::string& pt) {
  try {
    check_zip_crcs(pt, "fix");
  } catch (const Error& e) {
    return e.kind();
  }
  return ErrorKind::kInternal;
}

}  // namespace

TEST(ModelFileEndRecords, TheIntactCheckpointHasZip64EndRecordsAndLoads) {
  const std::string pt = saved_checkpoint("intact.pt");
  const auto b = bytes_of(pt);
  EXPECT_EQ(u32(b, eocd_of(b) - 20), 0x07064b50u) << "the ZIP64 locator before the end record";
  EXPECT_TRUE(check_zip_crcs(pt, "fix").is_zip);
  EXPECT_EQ(load_error(pt), "(no error)");
}

TEST(ModelFileEndRecords, ACheckpointCutShortIsTruncated) {
  for (size_t cut : {size_t{10}, size_t{200}, size_t{4096}}) {
    const std::string pt = saved_checkpoint("cut.pt");
    const auto b = bytes_of(pt);
    write_bytes(pt, std::vector<char>(b.begin(), b.end() - static_cast<long>(cut)));
    EXPECT_EQ(kind_of(pt), ErrorKind::kDataFormat) << cut;
    const std::string msg = load_error(pt);
    EXPECT_NE(msg.find("'" + pt + "' is a damaged zip file: its end-of-central-directory record is missing: the file "
                                  "is truncated"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("copy the checkpoint again"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("does not fit model"), std::string::npos) << msg;
  }
}

TEST(ModelFileEndRecords, AFlippedByteInTheZip64LocatorOrRecordIsDamage) {
  // locator (20 bytes before the end record): its signature, its record offset, its disk count;
  // the ZIP64 record (56 bytes before the locator): its signature and its central directory offset
  for (size_t back : {size_t{20}, size_t{20 - 8}, size_t{20 - 16}, size_t{76}, size_t{76 - 48}}) {
    const std::string pt = saved_checkpoint("flip.pt");
    auto b = bytes_of(pt);
    b[eocd_of(b) - back] ^= 0x10;
    write_bytes(pt, b);
    EXPECT_EQ(kind_of(pt), ErrorKind::kDataFormat) << back;
    const std::string msg = load_error(pt);
    EXPECT_NE(msg.find("'" + pt + "' is a damaged zip file: the ZIP64 end-of-central-directory"), std::string::npos)
        << back << ": " << msg;
    EXPECT_NE(msg.find("copy the checkpoint again"), std::string::npos) << msg;
  }
}

TEST(ModelFileEndRecords, AFileThatDoesNotBeginAsAZipIsStillLeftToItsReader) {
  const std::string text = scratch("text.pt");
  write_bytes(text, std::vector<char>(4096, 'x'));
  EXPECT_FALSE(check_zip_crcs(text, "fix").is_zip);
}

// A .pt model file (a TorchScript zip, a trainscope checkpoint) with a damaged member: LibTorch's
// zip reader checks no CRC and loaded it silently; the CRC-32 check (common/zip_crc.h) names the
// file and the member, and the intact file still loads.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../test_helpers.h"
#include "common/zip_crc.h"
#include "train/script_models.h"
#include "train/file_bytes.h"
#include "trainscope/error.h"
#include "workload/model.h"

using namespace trainscope;
namespace fs = std::filesystem;

namespace {

using trainscope::test::kind_of;

using trainscope::test::bytes_of;
using trainscope::test::write_bytes;

std::string scratch(const std::string& name) { return trainscope::test::scratch_path("ts_model_crc_", name); }

// Flips one byte inside the stored bytes of the first member whose name ends in `suffix` (a
// tensor's storage, "…/data/0"), found through its local header (APPNOTE.TXT 4.3.7); returns
// the member's name.
std::string flip_member_byte(const std::string& path, const std::string& suffix) {
  auto b = bytes_of(path);
  for (size_t i = 0; i + 30 < b.size(); ++i) {
    if (!(b[i] == 'P' && b[i + 1] == 'K' && b[i + 2] == 3 && b[i + 3] == 4)) continue;
    auto u16 = [&](size_t at) { return static_cast<size_t>(static_cast<uint8_t>(b[at]) | static_cast<uint8_t>(b[at + 1]) << 8); };
    const size_t name_len = u16(i + 26), extra_len = u16(i + 28);
    const std::string name(&b[i + 30], name_len);
    if (name.size() < suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    b[i + 30 + name_len + extra_len + 5] ^= 0x40;
    write_bytes(path, b);
    return name;
  }
  ADD_FAILURE() << "no member ending in " << suffix << " in " << path;
  return "";
}

}  // namespace

TEST(ModelFileCrc, ATorchScriptFileWithAFlippedByteIsADataFormatErrorNamingTheMember) {
  const std::string pt = scratch("linear.pt");
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  ts_test::script_linear(cu, "Linear", 784, 10).save(pt);
  EXPECT_NO_THROW(make_model(pt, 1, 28, 28, 10));  // the intact file loads
  const auto res = check_zip_crcs(pt, "fix");
  EXPECT_TRUE(res.is_zip);
  EXPECT_GE(res.members, 3);  // data.pkl, constants, the tensors' storages, version
  EXPECT_EQ(res.skipped, 0);

  const std::string member = flip_member_byte(pt, "/data/0");
  const std::string msg = test::what_of([&] { make_model(pt, 1, 28, 28, 10); });
  EXPECT_NE(msg.find("'" + pt + "' is a damaged zip file: member '" + member + "' has CRC-32 "), std::string::npos) << msg;
  EXPECT_NE(msg.find("save the model again"), std::string::npos) << msg;
  EXPECT_EQ(kind_of([&] { make_model(pt, 1, 28, 28, 10); }), ErrorKind::kDataFormat);
}

TEST(ModelFileCrc, ACheckpointWithAFlippedByteIsNotLoaded) {
  const std::string pt = scratch("mlp.pt");
  auto m = make_model("mlp", 1, 28, 28, 10);
  m->save(pt);
  auto fresh = make_model("mlp", 1, 28, 28, 10);
  EXPECT_NO_THROW(fresh->load(pt));  // the intact checkpoint loads
  const std::string member = flip_member_byte(pt, "/data/0");
  const std::string msg = test::what_of([&] { fresh->load(pt); });
  EXPECT_NE(msg.find("member '" + member + "' has CRC-32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("copy the checkpoint again"), std::string::npos) << msg;
}

TEST(ModelFileCrc, ATruncatedZipIsDamagedAndAFileThatIsNoZipIsLeftToTheReader) {
  const std::string pt = scratch("cut.pt");
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  ts_test::script_linear(cu, "Linear", 784, 10).save(pt);
  auto b = bytes_of(pt);
  // the central directory stays (the file's tail), a member's bytes are cut out of the middle
  std::vector<char> cut(b.begin(), b.begin() + static_cast<long>(b.size() / 2));
  cut.insert(cut.end(), b.end() - 2048, b.end());
  write_bytes(pt, cut);
  EXPECT_EQ(kind_of([&] { check_zip_crcs(pt, "fix"); }), ErrorKind::kDataFormat);

  const std::string text = scratch("not_a_zip.pt");
  write_bytes(text, std::vector<char>(100, 'x'));
  EXPECT_FALSE(check_zip_crcs(text, "fix").is_zip);
}

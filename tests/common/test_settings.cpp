// The settings table (trainscope/settings.h): complete, consistent with the config structs, and
// the source of validate()'s messages and docs/configuration.md.
#include <gtest/gtest.h>

#include "../test_helpers.h"

#include <fstream>
#include <set>
#include <sstream>

#include "trainscope/config.h"
#include "trainscope/error.h"
#include "trainscope/settings.h"

using namespace trainscope;

namespace {

using test::what_of;

// The address a row's field points at, as an offset into the MatrixConfig.
std::ptrdiff_t offset_of(const Setting& s, MatrixConfig& m) {
  const void* p = std::visit([](auto* member) -> const void* { return member; }, s.get(m));
  return static_cast<const char*>(p) - reinterpret_cast<const char*>(&m);
}

}  // namespace

TEST(Settings, EveryRowHasAKeyHelpAndItsOwnField) {
  MatrixConfig m;
  std::set<std::string> keys, flags;
  std::set<std::ptrdiff_t> offsets;
  for (const auto& s : settings()) {
    EXPECT_FALSE(s.key.empty());
    EXPECT_FALSE(s.help.empty()) << s.key;
    ASSERT_NE(s.field, nullptr) << s.key;
    EXPECT_TRUE(keys.insert(s.key).second) << "key listed twice: " << s.key;
    auto off = offset_of(s, m);
    EXPECT_GE(off, 0) << s.key;
    EXPECT_LT(off, static_cast<std::ptrdiff_t>(sizeof(MatrixConfig))) << s.key;
    EXPECT_TRUE(offsets.insert(off).second) << s.key << " shares its field with another row";
    for (const auto* f : {&s.flag, &s.off_flag})
      if (!f->empty()) EXPECT_TRUE(flags.insert(*f).second) << "flag used twice: " << *f;
    if (s.in_file) EXPECT_FALSE(s.hidden) << s.key << ": a TOML key must be documented";
  }
  // Every member of MatrixConfig but `resume` (set by --resume itself) has a row.
  EXPECT_EQ(settings().size(), 112u) << "a setting was added or removed: update this count and docs/configuration.md";
  EXPECT_EQ(setting("train.epochs").section(), "train");
  EXPECT_EQ(setting("train.epochs").name(), "epochs");
  EXPECT_EQ(setting("repeats").section(), "");
}


TEST(Settings, DefaultsAreTheConfigStructDefaults) {
  EXPECT_EQ(setting("train.epochs").default_text(), std::to_string(TrainConfig{}.epochs));
  EXPECT_EQ(setting("train.learning_rate").default_text(), "0.001");
  EXPECT_EQ(setting("train.optimizer").default_text(), "\"" + TrainConfig{}.optimizer + "\"");
  EXPECT_EQ(setting("batch_sizes").default_text(), "[64, 128]");
  EXPECT_EQ(setting("devices").default_text(), "[]");
  EXPECT_EQ(setting("profile.trace_max_bytes").default_text(), std::to_string(ProfileConfig{}.trace_max_bytes));
  EXPECT_EQ(setting("telemetry.enabled").default_text(), "true");
  EXPECT_EQ(setting("telemetry.interval_s").default_text(), "0.1");
  // value_text reads the field: a changed struct value shows, so the default is never a copy.
  MatrixConfig m;
  m.train.epochs = 7;
  m.inference.offline_batch_sizes = {2};
  EXPECT_EQ(setting("train.epochs").value_text(m), "7");
  EXPECT_EQ(setting("inference.offline_batch_sizes").value_text(m), "[2]");
  // Every default passes its own range.
  MatrixConfig d;
  for (const auto& s : settings()) EXPECT_NO_THROW(s.check(d)) << s.key;
  EXPECT_NO_THROW(validate(d));
}

TEST(Settings, RangeErrorsNameTheSettingFlagKeyValueAndRange) {
  MatrixConfig m;
  m.train.epochs = 0;
  auto msg = what_of([&] { validate(m); });
  EXPECT_NE(msg.find("epochs 0 is out of range; use 1..100000"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--epochs"), std::string::npos) << msg;
  EXPECT_NE(msg.find("TOML key train.epochs"), std::string::npos) << msg;
  MatrixConfig b;
  b.inference.single_stream_budget_s = 0;
  msg = what_of([&] { validate(b); });
  EXPECT_NE(msg.find("inference.single_stream_budget_s 0 is out of range; use (0, 3600] s"), std::string::npos) << msg;
  MatrixConfig c;
  c.train.optimizer_impl = "turbo";
  msg = what_of([&] { validate(c); });
  EXPECT_NE(msg.find("unknown optimizer implementation 'turbo'; use auto, fused or loop (--optimizer-impl; TOML key "
                     "train.optimizer_impl)"),
            std::string::npos)
      << msg;
  MatrixConfig t;
  t.telemetry.interval_s = 5;
  msg = what_of([&] { validate(t); });
  EXPECT_NE(msg.find("telemetry interval 5 is out of range; use [0.001, 1] s (1 .. 1000 Hz)"), std::string::npos) << msg;
  t.telemetry.enabled = false;  // not checked when telemetry is off
  EXPECT_NO_THROW(validate(t));
  // A flag given by another command names that flag (infer --budget) with the same range.
  msg = what_of([] { check_setting_value(setting("inference.single_stream_budget_s"), -1, "--budget"); });
  EXPECT_NE(msg.find("-1 is out of range; use (0, 3600] s (--budget; TOML key inference.single_stream_budget_s)"),
            std::string::npos)
      << msg;
}

TEST(Settings, RunNameMustBeOneSafeFolderName) {
  for (const char* bad : {"../escaped", "/abs/path", ".", "..", "a/b", "-x", ".hidden", "sp ace", "a\\b"}) {
    MatrixConfig m;
    m.run_name = bad;
    auto msg = what_of([&] { validate(m); });
    EXPECT_NE(msg.find(std::string("run folder name '") + bad + "' is not one safe folder name"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("--name"), std::string::npos) << msg;
  }
  for (const char* ok : {"", "study-h200", "r1", "a.b_c-2", "20261201-130000"}) {
    MatrixConfig m;
    m.run_name = ok;
    EXPECT_NO_THROW(validate(m)) << ok;
  }
  MatrixConfig resumed;  // --resume names an existing folder; its name is not checked again
  resumed.resume = true;
  resumed.run_name = "old name";
  EXPECT_NO_THROW(validate(resumed));
}

TEST(Settings, TomlKeysAndMatrixJsonComeFromTheTable) {
  // Every TOML key of the table loads from a file; every matrix.json key is a table row.
  MatrixConfig m;
  std::string json = matrix_config_to_json(m);
  for (const auto& s : settings()) {
    std::string quoted = "\"" + std::string(s.name()) + "\"";
    EXPECT_EQ(json.find(quoted) != std::string::npos, s.in_json) << s.key;
  }
  std::string path = ::testing::TempDir() + "every_key.toml";
  {
    std::ofstream f(path);
    std::string section = "";
    for (const auto& s : settings()) {
      if (!s.in_file) continue;
      if (s.section() != section) f << "[" << (section = std::string(s.section())) << "]\n";
      f << s.name() << " = " << s.default_text() << "\n";
    }
  }
  MatrixConfig loaded;
  ASSERT_NO_THROW(load_toml_config(path, loaded));
  EXPECT_EQ(matrix_config_to_json(loaded), json);
}

// docs/configuration.md holds the table `trainscope settings --markdown` prints; regenerate it
// with scripts/gen-docs.sh after changing a setting.
TEST(Settings, DocsConfigurationMdHoldsTheCurrentTable) {
  std::ifstream in(std::string(TS_FIXTURES_DIR) + "/../../docs/configuration.md");
  ASSERT_TRUE(in) << "docs/configuration.md not found next to tests/";
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  auto at = doc.find(std::string(kSettingsDocMarker) + "\n");
  ASSERT_NE(at, std::string::npos) << "docs/configuration.md lacks the marker line " << kSettingsDocMarker;
  std::string table = doc.substr(at + kSettingsDocMarker.size() + 1);
  EXPECT_EQ(table, "\n" + settings_markdown()) << "docs/configuration.md is stale: run scripts/gen-docs.sh";
}

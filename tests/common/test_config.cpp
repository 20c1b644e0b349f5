#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "trainscope/config.h"
#include "trainscope/error.h"

using namespace trainscope;

namespace {
std::string write_tmp(const std::string& name, const std::string& content) {
  std::string p = ::testing::TempDir() + name;
  std::ofstream(p) << content;
  return p;
}

ErrorKind kind_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  return ErrorKind::kInternal;
}
}  // namespace

TEST(Config, TomlOverridesDefaults) {
  MatrixConfig m;
  auto p = write_tmp("ok.toml", R"(
devices = ["cpu"]
models = ["cnn", "resnet18"]
batch_sizes = [32, 256]
repeats = 3
[data]
format = "synthetic"
synthetic_train = 100
[train]
optimizer = "sgd"
learning_rate = 0.05
epochs = 4
max_steps = 7
)");
  load_toml_config(p, m);
  EXPECT_EQ(m.devices, std::vector<std::string>{"cpu"});
  EXPECT_EQ(m.models, (std::vector<std::string>{"cnn", "resnet18"}));
  EXPECT_EQ(m.batch_sizes, (std::vector<int64_t>{32, 256}));
  EXPECT_EQ(m.repeats, 3);
  EXPECT_EQ(m.data.format, "synthetic");
  EXPECT_EQ(m.data.synthetic_train, 100);
  EXPECT_EQ(m.train.optimizer, "sgd");
  EXPECT_DOUBLE_EQ(m.train.learning_rate, 0.05);
  EXPECT_EQ(m.train.epochs, 4);
  EXPECT_EQ(m.train.max_steps, 7);
  EXPECT_NO_THROW(validate(m));
}

TEST(Config, UnknownKeyNamesFileAndKey) {
  MatrixConfig m;
  auto p = write_tmp("typo.toml", "batch_size = [64]\n");
  try {
    load_toml_config(p, m);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidConfig);
    EXPECT_NE(std::string(e.what()).find("batch_size"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos);
  }
}

TEST(Config, SyntaxErrorHasLine) {
  MatrixConfig m;
  auto p = write_tmp("syntax.toml", "models = [\"mlp\"\nrepeats = 2\n");
  try {
    load_toml_config(p, m);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidConfig);
    EXPECT_NE(std::string(e.what()).find("syntax"), std::string::npos);
  }
}

TEST(Config, WrongTypeIsConfigError) {
  MatrixConfig m;
  auto p = write_tmp("type.toml", "repeats = \"three\"\n");
  EXPECT_EQ(kind_of([&] { load_toml_config(p, m); }), ErrorKind::kInvalidConfig);
}

TEST(Config, ValidateRejectsBadValues) {
  auto bad = [](auto mutate) {
    MatrixConfig m;
    mutate(m);
    return kind_of([&] { validate(m); });
  };
  EXPECT_EQ(bad([](MatrixConfig& m) { m.batch_sizes = {0}; }), ErrorKind::kInvalidArgument);
  EXPECT_EQ(bad([](MatrixConfig& m) { m.batch_sizes = {-5}; }), ErrorKind::kInvalidArgument);
  EXPECT_EQ(bad([](MatrixConfig& m) { m.train.optimizer = "lamb"; }), ErrorKind::kInvalidArgument);
  EXPECT_EQ(bad([](MatrixConfig& m) { m.train.learning_rate = 0; }), ErrorKind::kInvalidArgument);
  EXPECT_EQ(bad([](MatrixConfig& m) { m.train.epochs = 0; }), ErrorKind::kInvalidArgument);
  EXPECT_EQ(bad([](MatrixConfig& m) { m.data.format = "parquet"; }), ErrorKind::kInvalidArgument);
  EXPECT_EQ(bad([](MatrixConfig& m) { m.models.clear(); }), ErrorKind::kInvalidArgument);
  MatrixConfig ok;
  EXPECT_NO_THROW(validate(ok));
}

TEST(Config, PaperPresetMatchesStudy) {
  MatrixConfig m;
  apply_preset("paper", m);
  EXPECT_EQ(m.train.epochs, 20);
  EXPECT_EQ(m.train.optimizer, "adam");
  EXPECT_EQ(m.batch_sizes, (std::vector<int64_t>{64, 128}));
  EXPECT_EQ(m.models.size(), 2u);
  EXPECT_EQ(kind_of([&] { apply_preset("fast", m); }), ErrorKind::kInvalidArgument);
}

TEST(Config, PresetInFileIsOverriddenByTheFilesOtherKeys) {
  MatrixConfig m;
  // "preset" sorts after "models": it must still not override them.
  auto p = write_tmp("preset_order.toml", "models = [\"mlp\"]\nbatch_sizes = [64]\npreset = \"paper\"\n");
  load_toml_config(p, m);
  EXPECT_EQ(m.models, std::vector<std::string>{"mlp"});
  EXPECT_EQ(m.batch_sizes, std::vector<int64_t>{64});
  EXPECT_EQ(m.train.epochs, 20);  // from the preset
}

// A valid TOML file that Debian's toml++ 3.3 parsed with undefined behaviour (toml++ issue #190;
// see src/common/toml_patched.h): a line-ending backslash in a multi-line string followed by a
// non-ASCII letter from U+00A1..U+0499 or U+FB26..U+FEFE. It must load, with the right value.
TEST(Config, NonAsciiAfterLineEndingBackslashLoads) {
  MatrixConfig m;
  auto p = write_tmp("line_end_backslash.toml", "[data]\npath = \"\"\"/data/\\\n    \xC3\xA9t\xC3\xA9/\xEF\xBB\xB7\"\"\"\n");
  ASSERT_NO_THROW(load_toml_config(p, m));
  EXPECT_EQ(m.data.path, "/data/\xC3\xA9t\xC3\xA9/\xEF\xBB\xB7");
}

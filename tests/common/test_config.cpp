#include <gtest/gtest.h>

#include "../test_helpers.h"

#include <cstdio>
#include <fstream>
#include <limits>

#include "trainscope/config.h"
#include "trainscope/error.h"

using namespace trainscope;

namespace {
using trainscope::test::kind_of;

std::string write_tmp(const std::string& name, const std::string& content) {
  std::string p = ::testing::TempDir() + name;
  std::ofstream(p) << content;
  return p;
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

// The training recipe's settings (docs/language-models.md#the-training-recipe): the decay ends
// after the warm-up at a rate not above the peak; micro-batches and sequence lengths are checked.
TEST(Config, ValidateChecksTheRecipeSettings) {
  auto message = [](auto mutate) {
    MatrixConfig m;
    mutate(m);
    try {
      validate(m);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message([](MatrixConfig& m) {
              m.train.lr_warmup_steps = 100;
              m.train.lr_decay_steps = 50;
            }).find("--lr-decay-steps"),
            std::string::npos);
  EXPECT_NE(message([](MatrixConfig& m) {
              m.train.lr_decay_steps = 50;
              m.train.lr_min = 1;
            }).find("--lr-min"),
            std::string::npos);
  EXPECT_NE(message([](MatrixConfig& m) { m.train.grad_accum = 0; }).find("--grad-accum"), std::string::npos);
  EXPECT_NE(message([](MatrixConfig& m) {
              m.data.format = "text";
              m.data.seq_lens = {256, 256};
            }).find("sequence length '256' is listed twice"),
            std::string::npos);
  EXPECT_NE(message([](MatrixConfig& m) {
              m.data.format = "text";
              m.data.seq_lens = {1};
            }).find("--seq-lens"),
            std::string::npos);
  EXPECT_EQ(message([](MatrixConfig& m) {
              m.train.lr_warmup_steps = 10;
              m.train.lr_decay_steps = 100;
              m.train.lr_min = 1e-4;
              m.train.grad_accum = 4;
            }),
            "");
  MatrixConfig image;
  image.train.target_loss = 2.5;  // a language-model setting on image data: a note, not an error
  EXPECT_NO_THROW(validate(image));
  bool noted = false;
  for (const auto& n : ignored_settings(image)) noted |= n.find("--target-loss") != std::string::npos;
  EXPECT_TRUE(noted);
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
// see src/config/toml_patched.h): a line-ending backslash in a multi-line string followed by a
// non-ASCII letter from U+00A1..U+0499 or U+FB26..U+FEFE. It must load, with the right value.
TEST(Config, NonAsciiAfterLineEndingBackslashLoads) {
  MatrixConfig m;
  auto p = write_tmp("line_end_backslash.toml", "[data]\npath = \"\"\"/data/\\\n    \xC3\xA9t\xC3\xA9/\xEF\xBB\xB7\"\"\"\n");
  ASSERT_NO_THROW(load_toml_config(p, m));
  EXPECT_EQ(m.data.path, "/data/\xC3\xA9t\xC3\xA9/\xEF\xBB\xB7");
}

namespace {
using test::what_of;
}  // namespace

// The sections every run flag maps to are settable from a file too (docs/configuration-guide.md).
TEST(Config, TelemetryProfileAndInferenceTablesLoad) {
  MatrixConfig m;
  auto p = write_tmp("sections.toml", R"(
[telemetry]
enabled = false
interval_s = 0.05
nvml_library = "/opt/nvidia/libnvidia-ml.so.1"
[profile]
active = 12
skip_first = 3
record_shapes = true
profile_memory = false
top_n = 4
[inference]
enabled = true
offline_batch_sizes = [1, 32]
server_qps = 250.0
server_target_p99_ms = 5
)");
  load_toml_config(p, m);
  EXPECT_FALSE(m.telemetry.enabled);
  EXPECT_DOUBLE_EQ(m.telemetry.interval_s, 0.05);
  EXPECT_EQ(m.telemetry.nvml_library, "/opt/nvidia/libnvidia-ml.so.1");
  EXPECT_EQ(m.profile.active, 12);
  EXPECT_EQ(m.profile.skip_first, 3);
  EXPECT_TRUE(m.profile.record_shapes);
  EXPECT_FALSE(m.profile.profile_memory);
  EXPECT_EQ(m.profile.top_n, 4);
  EXPECT_EQ(m.inference.offline_batch_sizes, (std::vector<int64_t>{1, 32}));
  EXPECT_DOUBLE_EQ(m.inference.server_qps, 250.0);
  EXPECT_DOUBLE_EQ(m.inference.server_target_p99_ms, 5.0);  // an integer is accepted for a number
  EXPECT_NO_THROW(validate(m));
}

TEST(Config, UnknownKeyInATableListsThatTablesKeys) {
  MatrixConfig m;
  auto msg = what_of([&] { load_toml_config(write_tmp("prof_typo.toml", "[profile]\nsteps = 10\n"), m); });
  EXPECT_NE(msg.find("unknown key 'profile.steps'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("active"), std::string::npos) << msg;   // the key the user meant
  EXPECT_EQ(msg.find("optimizer"), std::string::npos) << msg;  // not other tables' keys
  auto top = what_of([&] { load_toml_config(write_tmp("top_typo.toml", "model = [\"mlp\"]\n"), m); });
  EXPECT_NE(top.find("models"), std::string::npos) << top;
  EXPECT_NE(top.find("[inference]"), std::string::npos) << top;
  // A testing hook is not a file key.
  EXPECT_EQ(kind_of([&] { load_toml_config(write_tmp("hook.toml", "[train]\ninject_nan_at_step = 3\n"), m); }),
            ErrorKind::kInvalidConfig);
  // A table given as a value.
  auto tab = what_of([&] { load_toml_config(write_tmp("tab.toml", "profile = 5\n"), m); });
  EXPECT_NE(tab.find("'profile' must be a table"), std::string::npos) << tab;
}

TEST(Config, WrongTypeNamesTheExpectedType) {
  MatrixConfig m;
  auto msg = what_of([&] { load_toml_config(write_tmp("float_epochs.toml", "[train]\nepochs = 2.5\n"), m); });
  EXPECT_NE(msg.find("'train.epochs' must be an integer, not a float"), std::string::npos) << msg;
  // fuzz_toml_config: toml++ converted this float to int64 with undefined behaviour.
  auto huge = what_of([&] {
    load_toml_config(write_tmp("huge_float.toml", "[data]\nimage_size = 8888888888888888888881.2\n"), m);
  });
  EXPECT_NE(huge.find("'data.image_size' must be an integer, not a float"), std::string::npos) << huge;
  auto seed = what_of([&] { load_toml_config(write_tmp("neg_seed.toml", "[train]\nseed = -1\n"), m); });
  EXPECT_NE(seed.find("'train.seed' must be an integer >= 0"), std::string::npos) << seed;
  auto flag = what_of([&] { load_toml_config(write_tmp("str_bool.toml", "[profile]\nenabled = \"yes\"\n"), m); });
  EXPECT_NE(flag.find("must be true or false, not a string"), std::string::npos) << flag;
}

// matrix.json keeps every setting, so `run --resume` repeats the matrix exactly as it was asked for.
TEST(Config, MatrixJsonRoundTripsEverySetting) {
  MatrixConfig a;
  a.devices = {"cpu", "cuda:1"};
  a.models = {"resnet18"};
  a.batch_sizes = {32};
  a.repeats = 3;
  a.run_name = "r1";
  a.progress = false;
  a.data.format = "folder";
  a.data.image_size = 48;
  a.data.test_fraction = 0.25;
  a.train.seed = 7;
  a.train.inject_nan_at_step = 5;
  a.train.nan_check_interval = 3;
  a.telemetry.interval_s = 0.02;
  a.telemetry.sys_root = "/tmp/sys";
  a.profile.active = 9;
  a.profile.with_flops = true;
  a.profile.trace_max_bytes = 4096;
  a.inference.offline_batch_sizes = {8};
  a.inference.server_qps = 100;
  a.inference.min_queries = 50;
  a.inference.server_budget_s = 3;
  a.command_line = "trainscope run --models resnet18";
  auto text = matrix_config_to_json(a);
  MatrixConfig b = matrix_config_from_json(text, "matrix.json");
  EXPECT_EQ(matrix_config_to_json(b), text);
  EXPECT_EQ(b.profile.active, 9);
  EXPECT_TRUE(b.profile.with_flops);
  EXPECT_EQ(b.inference.offline_batch_sizes, std::vector<int64_t>{8});
  EXPECT_EQ(b.train.inject_nan_at_step, 5);
  EXPECT_EQ(b.telemetry.sys_root, "/tmp/sys");
  EXPECT_DOUBLE_EQ(b.inference.server_budget_s, 3);
  EXPECT_EQ(b.command_line, "trainscope run --models resnet18");
  EXPECT_TRUE(b.progress);  // a display setting of one invocation: not in matrix.json
  EXPECT_EQ(text.find("progress"), std::string::npos);
  // Missing keys keep their defaults; a wrong type names the field.
  MatrixConfig d = matrix_config_from_json(R"({"repeats": 2, "profile": {"active": 4}})", "m.json");
  EXPECT_EQ(d.repeats, 2);
  EXPECT_EQ(d.profile.active, 4);
  EXPECT_EQ(d.profile.warmup, MatrixConfig{}.profile.warmup);
  auto msg = what_of([] { matrix_config_from_json(R"({"train": {"epochs": "many"}})", "m.json"); });
  EXPECT_NE(msg.find("train.epochs"), std::string::npos) << msg;
  EXPECT_EQ(kind_of([] { matrix_config_from_json("[1, 2]", "m.json"); }), ErrorKind::kInvalidConfig);
  EXPECT_EQ(kind_of([] { matrix_config_from_json(R"({"profile": []})", "m.json"); }), ErrorKind::kInvalidConfig);
  // Floats and negatives where integers belong are errors, not casts (1e30 does not fit an int64).
  EXPECT_EQ(kind_of([] { matrix_config_from_json(R"({"data": {"image_size": 8.8e21}})", "m.json"); }),
            ErrorKind::kInvalidConfig);
  EXPECT_EQ(kind_of([] { matrix_config_from_json(R"({"train": {"seed": -1}})", "m.json"); }),
            ErrorKind::kInvalidConfig);
  EXPECT_EQ(kind_of([] { matrix_config_from_json(R"({"batch_sizes": [64, 1.5]})", "m.json"); }),
            ErrorKind::kInvalidConfig);
  EXPECT_EQ(kind_of([] { matrix_config_from_json(R"({"repeats": 18446744073709551615})", "m.json"); }),
            ErrorKind::kInvalidConfig);
  EXPECT_DOUBLE_EQ(matrix_config_from_json(R"({"train": {"learning_rate": 1}})", "m.json").train.learning_rate, 1.0);
}

TEST(Config, ValidateRejectsBadInferenceSettingsBeforeTraining) {
  auto bad = [](auto mutate) {
    MatrixConfig m;
    mutate(m);
    return kind_of([&] { validate(m); });
  };
  EXPECT_EQ(bad([](MatrixConfig& m) { m.inference.offline_batch_sizes = {0}; }), ErrorKind::kInvalidArgument);
  EXPECT_EQ(bad([](MatrixConfig& m) { m.inference.server_qps = -1; }), ErrorKind::kInvalidArgument);
  EXPECT_EQ(bad([](MatrixConfig& m) { m.inference.min_queries = 0; }), ErrorKind::kInvalidArgument);
  EXPECT_EQ(bad([](MatrixConfig& m) { m.inference.server_target_p99_ms = 0; }), ErrorKind::kInvalidArgument);
  // Not checked when inference is off.
  EXPECT_EQ(bad([](MatrixConfig& m) {
              m.inference.enabled = false;
              m.inference.offline_batch_sizes = {0};
            }),
            ErrorKind::kInternal);
}

// The configuration guide's example (moved there from README.md) is a real configuration: every
// key it shows exists.
TEST(Config, ReadmeExampleLoads) {
  std::ifstream in(std::string(TS_FIXTURES_DIR) + "/../../docs/configuration-guide.md");
  ASSERT_TRUE(in) << "docs/configuration-guide.md not found next to tests/";
  std::string line, block;
  bool inside = false, done = false;
  while (!done && std::getline(in, line)) {
    if (!inside && line == "```toml") inside = true;
    else if (inside && line == "```") done = true;
    else if (inside) block += line + "\n";
  }
  ASSERT_TRUE(done) << "no ```toml block in docs/configuration-guide.md";
  MatrixConfig m;
  ASSERT_NO_THROW(load_toml_config(write_tmp("readme.toml", block), m)) << block;
  EXPECT_NO_THROW(validate(m));
  EXPECT_EQ(m.train.epochs, 20);
  EXPECT_EQ(m.inference.offline_batch_sizes, (std::vector<int64_t>{1, 64, 256}));
}

TEST(Config, PresetFlagReplacesTheFilesPresetAndTheFilesKeysStillApply) {
  MatrixConfig m;
  auto p = write_tmp("preset_quick.toml", "preset = \"quick\"\nmodels = [\"cnn\"]\n");
  load_toml_config(p, m, "paper");
  EXPECT_EQ(m.preset, "paper");
  EXPECT_EQ(m.train.epochs, 20);                            // paper, not quick's 1
  EXPECT_EQ(m.train.max_steps, 0);                          // quick's 200 never applied
  EXPECT_EQ(m.models, std::vector<std::string>{"cnn"});     // the file's key over the preset
}

TEST(Config, ByteOrderMarkIsAccepted) {
  MatrixConfig m;
  ASSERT_NO_THROW(load_toml_config(write_tmp("bom.toml", "\xEF\xBB\xBFrepeats = 2\n"), m));
  EXPECT_EQ(m.repeats, 2);
}

TEST(Config, InferenceRatesThatCannotBeMeasuredAreRejected) {
  auto bad = [](auto mutate) {
    MatrixConfig m;
    mutate(m);
    return kind_of([&] { validate(m); });
  };
  EXPECT_EQ(bad([](MatrixConfig& m) { m.inference.server_qps = 1e-6; }), ErrorKind::kInvalidArgument);  // 2e8 s
  EXPECT_EQ(bad([](MatrixConfig& m) { m.inference.server_qps = std::numeric_limits<double>::infinity(); }),
            ErrorKind::kInvalidArgument);
  EXPECT_EQ(bad([](MatrixConfig& m) { m.inference.server_target_p99_ms = std::numeric_limits<double>::infinity(); }),
            ErrorKind::kInvalidArgument);
  EXPECT_EQ(bad([](MatrixConfig& m) { m.inference.offline_batch_sizes.clear(); }), ErrorKind::kInvalidArgument);
  EXPECT_EQ(bad([](MatrixConfig& m) { m.inference.server_qps = 50; }), ErrorKind::kInternal);  // fine: 4 s of arrivals
  // 200 queries at 5/s take 40 s, past the 30 s a rate may run: it could never be judged.
  EXPECT_EQ(bad([](MatrixConfig& m) { m.inference.server_qps = 5; }), ErrorKind::kInvalidArgument);
  EXPECT_EQ(bad([](MatrixConfig& m) {
              m.inference.server_qps = 5;
              m.inference.server_budget_s = 10;  // cap 50 s
            }),
            ErrorKind::kInternal);
  // Profile step counts whose schedule sum would overflow.
  EXPECT_EQ(bad([](MatrixConfig& m) { m.profile.active = std::numeric_limits<int64_t>::max(); }),
            ErrorKind::kInvalidArgument);
  MatrixConfig m;
  m.profile.trace_max_bytes = 10;
  auto msg = what_of([&] { validate(m); });
  EXPECT_NE(msg.find("profile.trace_max_bytes 10"), std::string::npos) << msg;
}

// A setting given a value that its condition makes meaningless is named, with the condition.
TEST(Config, IgnoredSettingsAreNamedWithTheirCondition) {
  MatrixConfig m;
  EXPECT_TRUE(ignored_settings(m).empty());  // defaults: nothing to say
  m.train.eval_every_steps = 5;              // without a target accuracy
  m.telemetry.enabled = false;
  m.telemetry.interval_s = 0.5;
  auto lines = ignored_settings(m);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("--eval-every-steps = 5 has no effect"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("train.target_accuracy_pct > 0"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("--telemetry-interval = 0.5"), std::string::npos) << lines[1];
  m.train.target_accuracy_pct = 80;  // now it applies
  EXPECT_EQ(ignored_settings(m).size(), 1u);
}


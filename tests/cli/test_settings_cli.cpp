// The command-line options generated from the settings table (tools/trainscope/settings_cli.h):
// every flag of `run` parses into its own MatrixConfig field, and `infer` checks a shared flag
// against the same range as `run`.
#include <gtest/gtest.h>

#include "settings_cli.h"
#include "trainscope/error.h"

using namespace trainscope;

namespace {

// A valid value for `s` other than its default, as it is typed on the command line, and the
// TOML literal the field must then hold.
std::pair<std::string, std::string> other_value(const Setting& s) {
  MatrixConfig d;
  return std::visit(
      [&](auto* member) -> std::pair<std::string, std::string> {
        using T = std::decay_t<decltype(*member)>;
        if constexpr (std::is_same_v<T, std::string>) {
          for (const auto& c : s.range.choices)
            if (c != *member && !c.empty()) return {c, "\"" + c + "\""};
          return {"other-value", "\"other-value\""};
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          return {"a,b", "[\"a\", \"b\"]"};
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          return {"3,5", "[3, 5]"};
        } else if constexpr (std::is_same_v<T, bool>) {
          return {"", *member ? "false" : "true"};
        } else {
          for (const auto& c : s.range.choices)
            if (c != s.default_text()) return {c, c};
          for (double v : {static_cast<double>(*member) + 1, static_cast<double>(*member) / 2, 0.5, 2.0})
            if (s.range.contains(v) && v != static_cast<double>(*member)) {
              std::string t = v == static_cast<int64_t>(v) ? std::to_string(static_cast<int64_t>(v)) : std::to_string(v);
              MatrixConfig probe;
              std::visit([&](auto* p) {
                using U = std::decay_t<decltype(*p)>;
                if constexpr (std::is_arithmetic_v<U>) *p = static_cast<U>(v);
              }, s.get(probe));
              return {t, s.value_text(probe)};
            }
          return {"", ""};
        }
      },
      s.get(d));
}

std::vector<std::string> all_texts(const MatrixConfig& m) {
  std::vector<std::string> out;
  for (const auto& s : settings()) out.push_back(s.value_text(m));
  return out;
}

}  // namespace

TEST(SettingsCli, EveryRunFlagParsesIntoItsOwnField) {
  size_t tested = 0;
  for (const auto& s : settings()) {
    if (s.flag.empty() && s.off_flag.empty()) continue;
    auto [typed, expected] = other_value(s);
    ASSERT_FALSE(expected.empty()) << s.key << ": no test value";
    bool is_bool = std::holds_alternative<bool*>(s.get(*std::make_unique<MatrixConfig>()));
    std::string flag = s.long_flag();
    if (is_bool) flag = expected == "true" ? s.flag : s.off_flag;
    if (is_bool && flag.empty()) continue;  // no flag to turn it that way
    CLI::App app;
    cli::SettingOptions opts;
    opts.add_all(&app);
    std::vector<std::string> args = {"prog", flag};
    if (!is_bool) args.push_back(typed);
    std::vector<const char*> argv;
    for (auto& a : args) argv.push_back(a.c_str());
    ASSERT_NO_THROW(app.parse(static_cast<int>(argv.size()), argv.data())) << s.key;
    EXPECT_TRUE(opts.given(s.key)) << s.key;
    MatrixConfig m;
    opts.apply(m);
    EXPECT_EQ(s.value_text(m), expected) << s.key << " from " << flag << " " << typed;
    // No other field moved.
    auto before = all_texts(MatrixConfig{}), after = all_texts(m);
    for (size_t i = 0; i < settings().size(); ++i)
      if (&settings()[i] != &s) EXPECT_EQ(after[i], before[i]) << flag << " also changed " << settings()[i].key;
    ++tested;
  }
  EXPECT_GE(tested, 35u);
}

TEST(SettingsCli, HelpShowsDefaultsAndRangesFromTheTable) {
  CLI::App app;
  cli::SettingOptions opts;
  opts.add_all(&app);
  std::string help = app.help();
  EXPECT_NE(help.find("epochs per run [1..100000; default 1]"), std::string::npos) << help;
  EXPECT_NE(help.find("telemetry sampling period [[0.001, 1] s (1 .. 1000 Hz); default 0.1]"), std::string::npos) << help;
  EXPECT_NE(help.find("--no-telemetry"), std::string::npos) << help;
  EXPECT_EQ(help.find("--inject-nan-at-step"), std::string::npos) << "a testing hook is not in --help";
}

// `infer --budget` is inference.single_stream_budget_s under another name: the same range as
// `run` (validate()) checks, in a message naming --budget.
TEST(SettingsCli, InferSharesTheRunRanges) {
  CLI::App app;
  cli::SettingOptions opts;
  opts.add(&app, "inference.single_stream_budget_s", "--budget", "seconds per scenario");
  opts.add(&app, "train.seed", "--seed");
  const char* argv[] = {"prog", "--budget", "4000"};
  app.parse(3, argv);
  std::string infer_msg, run_msg;
  try {
    opts.check_given();
  } catch (const Error& e) {
    infer_msg = e.what();
  }
  MatrixConfig m;
  m.inference.single_stream_budget_s = 4000;
  try {
    validate(m);
  } catch (const Error& e) {
    run_msg = e.what();
  }
  const std::string range = "use " + setting("inference.single_stream_budget_s").valid_text();
  EXPECT_NE(infer_msg.find("4000 is out of range; " + range + " (--budget"), std::string::npos) << infer_msg;
  EXPECT_NE(run_msg.find("4000 is out of range; " + range), std::string::npos) << run_msg;
  // A negative seed is a range error naming the flag, not a wrapped-around unsigned seed.
  CLI::App app2;
  cli::SettingOptions opts2;
  opts2.add(&app2, "train.seed", "--seed");
  const char* argv2[] = {"prog", "--seed", "-1"};
  app2.parse(3, argv2);
  MatrixConfig s;
  try {
    opts2.apply(s);
    FAIL() << "--seed -1 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("seed -1 is out of range; use >= 0 (--seed"), std::string::npos) << e.what();
  }
}

namespace {

// Parses `args` (after the program name) with every run option; the MatrixConfig they give.
MatrixConfig parsed(std::vector<std::string> args, cli::SettingOptions* keep = nullptr) {
  CLI::App app;
  cli::SettingOptions local;
  cli::SettingOptions& opts = keep ? *keep : local;
  opts.add_all(&app);
  opts.name_item("batch_sizes", "auto", 0);
  args.insert(args.begin(), "prog");
  std::vector<const char*> argv;
  for (auto& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  MatrixConfig m;
  opts.apply(m);
  return m;
}

std::string parse_error(std::vector<std::string> args) {
  try {
    parsed(std::move(args));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// Wrapper scripts append overrides: a flag given twice keeps its last value, lists included
// (docs/configuration.md), instead of adding the lists up or refusing a second single value.
TEST(SettingsCli, AFlagGivenTwiceKeepsItsLastValue) {
  EXPECT_EQ(parsed({"--batch-sizes", "64,128", "--batch-sizes", "64"}).batch_sizes, std::vector<int64_t>{64});
  EXPECT_EQ(parsed({"--batch-sizes", "64", "128", "--batch-sizes", "32,16"}).batch_sizes,
            (std::vector<int64_t>{32, 16}));
  EXPECT_EQ(parsed({"--models", "mlp,cnn", "--models", "cnn"}).models, std::vector<std::string>{"cnn"});
  EXPECT_EQ(parsed({"--epochs", "1", "--epochs", "3"}).train.epochs, 3);
  EXPECT_EQ(parsed({"--batch-sizes", "64", "128"}).batch_sizes, (std::vector<int64_t>{64, 128}));
  // A named item counts only in the list that is kept.
  cli::SettingOptions opts;
  EXPECT_EQ(parsed({"--batch-sizes", "auto", "--batch-sizes", "64"}, &opts).batch_sizes, std::vector<int64_t>{64});
  EXPECT_FALSE(opts.has_item("batch_sizes", "auto"));
  cli::SettingOptions opts2;
  EXPECT_EQ(parsed({"--batch-sizes", "32,auto"}, &opts2).batch_sizes, (std::vector<int64_t>{32, 0}));
  EXPECT_TRUE(opts2.has_item("batch_sizes", "auto"));
}

// "64,,128" and "64," were read as 64,128 and 64: an empty item is a typo, named with its flag.
TEST(SettingsCli, AnEmptyListItemIsAnErrorNamingTheFlag) {
  for (const char* bad : {"64,,128", "64,", ",64"}) {
    const std::string msg = parse_error({"--batch-sizes", bad});
    EXPECT_NE(msg.find("--batch-sizes '" + std::string(bad) + "' has an empty item"), std::string::npos) << msg;
  }
  EXPECT_NE(parse_error({"--models", "mlp,"}).find("--models 'mlp,' has an empty item"), std::string::npos);
  const std::string word = parse_error({"--batch-sizes", "64,big"});
  EXPECT_NE(word.find("--batch-sizes: 'big' in '64,big' is not a whole number"), std::string::npos) << word;
}

// The settings table: every setting of a run, once. Each row holds its TOML key, its command-line
// flag (if any), its help text, unit and valid values, and where it lives in a MatrixConfig;
// its default is read from the config structs (trainscope/config.h), never written twice.
//
// Generated from this table: the TOML loader and matrix.json (src/config/config.cpp), the
// options of `trainscope run` and the shared options of `infer` and `monitor`
// (tools/trainscope/settings_cli.cpp), the range checks of validate(), `trainscope settings`
// and docs/configuration.md (scripts/gen-docs.sh).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "trainscope/config.h"

namespace trainscope {

/// The member of a MatrixConfig a setting reads and writes.
using SettingField = std::variant<bool*, int64_t*, uint64_t*, double*, std::string*, std::vector<int64_t>*,
                                  std::vector<std::string>*>;

/// The values a setting accepts. Numbers (and each element of a number list): between `min` and
/// `max`, ends excluded where min_open / max_open. Strings and integers: one of `choices` when it
/// is not empty. folder_name: one path component of [A-Za-z0-9._-], not starting with '-' or '.'.
struct SettingRange {
  std::optional<double> min{}, max{};
  bool min_open = false, max_open = false;
  std::vector<std::string> choices{};
  bool folder_name = false;

  /// "1..1000", "(0, 10]", ">= 0", "adam or sgd", "" (anything of the type).
  std::string text() const;
  bool contains(double v) const;
};

/// One setting.
struct Setting {
  std::string key{};          // TOML key: "section.key", or "key" at the top level
  std::string flag{};         // CLI11 names of the `run` option ("-e,--epochs"); booleans: sets true; "" = none
  std::string off_flag{};     // booleans: the flag that sets false ("--no-telemetry"); "" = none
  std::string noun{};         // what error messages call it ("learning rate"); "" = the key
  std::string help{};         // one line, without default or range (those are generated)
  std::string unit{};         // "s", "ms", "bytes", "queries/s", ... or ""
  SettingRange range{};
  std::string note{};         // a special value, e.g. "0 = no limit" ("" = none)
  SettingField (*field)(MatrixConfig&) = nullptr;
  /// Checked by validate() only when this holds (nullptr: always), e.g. profile.* when profiling is on.
  bool (*applies)(const MatrixConfig&) = nullptr;
  std::string applies_text{}; // "profile.enabled", "data.format = folder", ... for the docs
  bool in_file = true;      // a TOML key (false: flag and matrix.json only, e.g. a testing hook)
  bool in_json = true;      // written to matrix.json (false: a display setting of one invocation)
  bool hidden = false;      // left out of --help and the docs (testing hooks)
  /// Strings and string lists: checks each value (throws Error(kInvalidArgument) naming `where`)
  /// where `choices` cannot express the valid values (e.g. variant combinations); nullptr = none.
  void (*check_item)(const std::string& value, std::string_view where) = nullptr;

  /// The last part of the key ("epochs") and its table ("train"; "" at the top level).
  std::string_view section() const;
  std::string_view name() const;
  /// The long flag without its short alias ("--epochs"), or the off flag, or "".
  std::string long_flag() const;
  /// How messages name it: "--epochs (TOML train.epochs)" or "TOML key profile.wait".
  std::string where() const;
  SettingField get(MatrixConfig& m) const { return field(m); }
  /// The value as a TOML literal ("0.001", "\"adam\"", "[64, 128]", "true").
  std::string value_text(const MatrixConfig& m) const;
  std::string default_text() const { return value_text(MatrixConfig{}); }
  /// The valid values with unit and note, as help and docs show them: "(0, 3600] s", "1..1000",
  /// ">= 0 (0 = all)", "adam or sgd"; "" when any value of the type is valid.
  std::string valid_text() const;
  /// Throws Error(kInvalidArgument) naming the setting, the value and the valid range when the
  /// value in `m` is outside `range` (whether or not `applies` holds).
  void check(const MatrixConfig& m) const;
};

/// Every setting, in documentation order (top level, [data], [train], [telemetry], [profile],
/// [inference]).
const std::vector<Setting>& settings();
/// The setting with this TOML key; Error(kInternal) when there is none (a bug in the caller).
const Setting& setting(std::string_view key);

/// Range check of one number as a flag other than the setting's own gives it (`infer --budget`):
/// Error(kInvalidArgument) naming `flag`, the value and the setting's range.
void check_setting_value(const Setting& s, double value, std::string_view flag);
/// The same for a string (`infer --server-batching bogus`): one of the setting's choices, a safe
/// folder name where it must be one, and its check_item; Error(kInvalidArgument) naming `flag`,
/// the value and the valid ones.
void check_setting_text(const Setting& s, const std::string& value, std::string_view flag);

/// The table as GitHub Markdown (docs/configuration.md below its marker) and as plain text.
std::string settings_markdown();
std::string settings_text();
/// The line of docs/configuration.md after which the generated table starts.
inline constexpr std::string_view kSettingsDocMarker = "<!-- generated by scripts/gen-docs.sh: do not edit below -->";

}  // namespace trainscope

// Command-line options generated from the settings table (trainscope/settings.h): `run` gets one
// option per setting with a flag; `infer` and `monitor` add the settings they share under their
// own flag names, so every command checks a value against the same range.
#pragma once

#include <CLI/CLI.hpp>

#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "trainscope/settings.h"

namespace trainscope::cli {

/// The setting behind an option some SettingOptions added (for `run` or under another name, as
/// `infer --budget` is inference.single_stream_budget_s); nullptr for any other option.
const Setting* setting_of_option(const CLI::Option* option);

class SettingOptions {
 public:
  /// One option (two for a boolean with an on and an off flag) per setting that has a flag,
  /// hidden settings in no help group. Help: the table's help, valid values and default.
  void add_all(CLI::App* app);
  /// The setting `key` as option `flag` (default: the table's flag) with `help` (default: the
  /// table's) followed by the valid values and, where `show_default`, the table's default (false
  /// where this command's default is another, e.g. `infer --data`: the checkpoint's data).
  void add(CLI::App* app, std::string_view key, const std::string& flag = "", const std::string& help = "",
           bool show_default = true);
  /// Whether the user gave the setting's flag (or off flag).
  bool given(std::string_view key) const;
  /// Copies every given value into `m` (flags override a file), except the settings in `except`.
  /// A negative value for an unsigned setting (--seed -1) is Error(kInvalidArgument).
  void apply(MatrixConfig& m, const std::vector<std::string_view>& except = {}) const;
  /// For commands without validate() (infer, monitor): every given number against its setting's
  /// range and every given string against its choices (check_setting_text),
  /// Error(kInvalidArgument) naming the flag as this command spells it.
  void check_given() const;
  /// The value given for a string setting ("" when not given).
  std::string text(std::string_view key) const;
  /// An integer list setting accepts `word` as an item, standing for `value` in the list
  /// (`--batch-sizes auto`); has_item tells whether the list given holds it.
  void name_item(std::string_view key, const std::string& word, int64_t value);
  bool has_item(std::string_view key, std::string_view word) const;

 private:
  // Lists (of numbers too) are staged as the words typed; apply() splits and converts them.
  using Value = std::variant<bool, int64_t, double, std::string, std::vector<std::string>>;
  struct Entry {
    const Setting* setting = nullptr;
    Value value;
    CLI::Option* on = nullptr;   // the option (for booleans: the flag that sets true)
    CLI::Option* off = nullptr;  // booleans: the flag that sets false
    std::string flag;            // the long flag, for messages
    std::map<std::string, int64_t, std::less<>> named;  // integer lists: words standing for a number
  };
  void add_entry(CLI::App* app, const Setting& s, const std::string& flag, const std::string& help, bool show_default);
  void apply_entry(const Entry& e, MatrixConfig& m) const;
  const Entry* find(std::string_view key) const;
  std::deque<Entry> entries_;  // a deque: CLI11 keeps pointers into each Entry's value
};

}  // namespace trainscope::cli

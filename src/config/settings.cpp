// The settings table's machinery (trainscope/settings.h): ranges and their text, the checks of a
// value against its row, a setting's value as TOML, the table itself (its rows are
// src/config/settings_rows.cpp).
#include "trainscope/settings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "config/settings_rows.h"
#include "trainscope/error.h"

namespace trainscope {

namespace {

// Whole numbers as integers ("1000000000", not "1e+09"), others as the shortest exact form.
std::string number_text(double v) {
  if (std::isfinite(v) && std::floor(v) == v && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string or_list(const std::vector<std::string>& v) {
  std::vector<std::string> shown;
  for (const auto& c : v) shown.push_back(c.empty() ? "\"\"" : c);
  if (shown.size() < 2) return fmt::format("{}", fmt::join(shown, ""));
  return fmt::format("{} or {}", fmt::join(shown.begin(), shown.end() - 1, ", "), shown.back());
}

// Every number a setting holds: one, or each element of a list. Strings and booleans: none.
std::vector<double> numbers_of(const SettingField& f) {
  std::vector<double> out;
  std::visit(
      [&](auto* p) {
        using T = std::decay_t<decltype(*p)>;
        if constexpr (std::is_same_v<T, std::vector<int64_t>>)
          for (auto v : *p) out.push_back(static_cast<double>(v));
        else if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
          out.push_back(static_cast<double>(*p));
      },
      f);
  return out;
}

bool is_safe_folder_name(const std::string& s) {
  if (s.empty()) return true;  // "" = a UTC timestamp
  if (s[0] == '.' || s[0] == '-' || s.size() > 255) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
  });
}

std::string label_of(const Setting& s) { return s.noun.empty() ? s.key : s.noun; }

[[noreturn]] void out_of_range(const Setting& s, const std::string& value, std::string_view where) {
  throw_error(ErrorKind::kInvalidArgument,
              fmt::format("{} {} is out of range; use {} ({})", label_of(s), value, s.valid_text(), where));
}

void check_choice(const Setting& s, const std::string& v, std::string_view where) {
  const auto& c = s.range.choices;
  if (c.empty() || std::find(c.begin(), c.end(), v) != c.end()) return;
  throw_error(ErrorKind::kInvalidArgument,
              fmt::format("unknown {} '{}'; use {} ({})", label_of(s), v, or_list(c), where));
}

void check_folder_name(const Setting& s, const std::string& v, std::string_view where) {
  if (!s.range.folder_name || is_safe_folder_name(v)) return;
  throw_error(ErrorKind::kInvalidArgument,
              fmt::format("{} '{}' is not one safe folder name: use letters, digits, '.', '_' and '-', not starting "
                          "with '.' or '-' (no '/', no '..'), e.g. study-h200 ({})",
                          label_of(s), v, where));
}

}  // namespace

std::string SettingRange::text() const {
  if (!choices.empty()) return or_list(choices);
  if (folder_name) return "one folder name of [A-Za-z0-9._-], not starting with '.' or '-'";
  if (min && max) {
    if (!min_open && !max_open && std::floor(*min) == *min && std::floor(*max) == *max)
      return fmt::format("{}..{}", number_text(*min), number_text(*max));
    return fmt::format("{}{}, {}{}", min_open ? "(" : "[", number_text(*min), number_text(*max), max_open ? ")" : "]");
  }
  if (min) return fmt::format("{} {}", min_open ? ">" : ">=", number_text(*min));
  if (max) return fmt::format("{} {}", max_open ? "<" : "<=", number_text(*max));
  return "";
}

bool SettingRange::contains(double v) const {
  if (std::isnan(v)) return false;
  if (min && !(min_open ? v > *min : v >= *min)) return false;
  if (max && !(max_open ? v < *max : v <= *max)) return false;
  return true;
}

std::string Setting::valid_text() const {
  std::string r = range.text();
  if (!unit.empty() && range.choices.empty() && !r.empty()) r += " " + unit;
  if (!note.empty()) r += r.empty() ? note : fmt::format(" ({})", note);
  return r;
}

std::string_view Setting::section() const {
  auto dot = key.find('.');
  return dot == std::string::npos ? std::string_view() : std::string_view(key).substr(0, dot);
}

std::string_view Setting::name() const {
  auto dot = key.find('.');
  return dot == std::string::npos ? std::string_view(key) : std::string_view(key).substr(dot + 1);
}

std::string Setting::long_flag() const {
  const std::string& f = flag.empty() ? off_flag : flag;
  auto comma = f.rfind(',');
  return comma == std::string::npos ? f : f.substr(comma + 1);
}

std::string Setting::where() const {
  std::string f = long_flag();
  if (!in_file) return f;
  if (f.empty()) return "TOML key " + key;
  return fmt::format("{}; TOML key {}", f, key);
}

std::string Setting::value_text(const MatrixConfig& m) const {
  auto& mm = const_cast<MatrixConfig&>(m);  // read only: field() serves readers and writers
  return std::visit(
      [](auto* p) -> std::string {
        using T = std::decay_t<decltype(*p)>;
        if constexpr (std::is_same_v<T, bool>) return *p ? "true" : "false";
        else if constexpr (std::is_same_v<T, std::string>) return quoted(*p);
        else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          std::vector<std::string> q;
          for (const auto& s : *p) q.push_back(quoted(s));
          return fmt::format("[{}]", fmt::join(q, ", "));
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) return fmt::format("[{}]", fmt::join(*p, ", "));
        else if constexpr (std::is_same_v<T, double>) return number_text(*p);
        else return fmt::format("{}", *p);
      },
      field(mm));
}

void Setting::check(const MatrixConfig& m) const {
  SettingField f = field(const_cast<MatrixConfig&>(m));
  std::string w = where();
  if (auto* s = std::get_if<std::string*>(&f)) {
    check_choice(*this, **s, w);
    check_folder_name(*this, **s, w);
    if (check_item) check_item(**s, w);
    return;
  }
  if (auto* list = std::get_if<std::vector<std::string>*>(&f); list && check_item)
    for (const auto& item : **list) check_item(item, w);
  for (double v : numbers_of(f)) {
    if (!range.choices.empty() &&
        std::find(range.choices.begin(), range.choices.end(), number_text(v)) == range.choices.end())
      throw_error(ErrorKind::kInvalidArgument,
                  fmt::format("{} {} is out of range; use {} ({})", label_of(*this), number_text(v),
                              or_list(range.choices), w));
    if (!range.contains(v)) out_of_range(*this, number_text(v), w);
  }
}

void check_setting_value(const Setting& s, double value, std::string_view flag) {
  std::string w = std::string(flag) + (s.in_file ? "; TOML key " + s.key : "");
  if (!s.range.contains(value)) out_of_range(s, number_text(value), w);
}

void check_setting_text(const Setting& s, const std::string& value, std::string_view flag) {
  std::string w = std::string(flag) + (s.in_file ? "; TOML key " + s.key : "");
  check_choice(s, value, w);
  check_folder_name(s, value, w);
  if (s.check_item) s.check_item(value, w);
}

const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = setting_rows();
  return table;
}

const Setting& setting(std::string_view key) {
  for (const auto& s : settings())
    if (s.key == key) return s;
  throw_error(ErrorKind::kInternal, fmt::format("no setting '{}' in the settings table (src/config/settings_rows.cpp)", key));
}

}  // namespace trainscope

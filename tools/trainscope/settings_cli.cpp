#include "settings_cli.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "trainscope/error.h"

namespace trainscope::cli {

namespace {

// The staging value of a setting's option: integers (unsigned ones too, so that a negative
// value gets a range message instead of CLI11's conversion error) as int64.
template <typename T>
auto staged_of(T*) {
  if constexpr (std::is_same_v<T, uint64_t>) return int64_t{0};
  else return T{};
}

std::string long_name(const std::string& flag) {
  auto comma = flag.rfind(',');
  return comma == std::string::npos ? flag : flag.substr(comma + 1);
}

// "[1..1000; default 1]", "[default \"adam\"]", "" (neither).
std::string help_suffix(const Setting& s, bool show_default) {
  std::string valid = s.valid_text();
  std::string d = show_default ? "default " + s.default_text() : "";
  if (valid.empty() && d.empty()) return "";
  if (valid.empty() || d.empty()) return fmt::format(" [{}{}]", valid, d);
  return fmt::format(" [{}; {}]", valid, d);
}

}  // namespace

void SettingOptions::add_all(CLI::App* app) {
  for (const auto& s : settings())
    if (!s.flag.empty() || !s.off_flag.empty()) add_entry(app, s, s.flag, s.help, true);
}

void SettingOptions::add(CLI::App* app, std::string_view key, const std::string& flag, const std::string& help,
                         bool show_default) {
  const Setting& s = setting(key);
  add_entry(app, s, flag.empty() ? s.flag : flag, help.empty() ? s.help : help, show_default);
}

namespace {
// Every option a SettingOptions added, with its setting: CLI11 keeps options alive as long as
// their app, and trainscope's apps live until the process exits.
std::map<const CLI::Option*, const Setting*>& option_settings() {
  static std::map<const CLI::Option*, const Setting*> m;
  return m;
}
}  // namespace

const Setting* setting_of_option(const CLI::Option* option) {
  const auto it = option_settings().find(option);
  return it == option_settings().end() ? nullptr : it->second;
}

void SettingOptions::add_entry(CLI::App* app, const Setting& s, const std::string& flag, const std::string& help,
                               bool show_default) {
  MatrixConfig defaults;
  Entry& e = entries_.emplace_back();
  e.setting = &s;
  std::visit([&](auto* member) { e.value = staged_of(member); }, s.get(defaults));
  if (std::holds_alternative<bool>(e.value)) {
    bool on_by_default = s.default_text() == "true";
    const char* dflt = on_by_default ? " (default: on)" : " (default: off)";
    if (!flag.empty()) e.on = app->add_flag(flag)->description("turn on: " + help + dflt);
    if (!s.off_flag.empty()) e.off = app->add_flag(s.off_flag)->description("turn off: " + help + dflt);
    e.flag = long_name(flag.empty() ? s.off_flag : flag);
  } else {
    e.on = std::visit([&](auto& v) { return app->add_option(flag, v, help + help_suffix(s, show_default)); }, e.value);
    if (std::holds_alternative<std::vector<int64_t>>(e.value) || std::holds_alternative<std::vector<std::string>>(e.value))
      e.on->delimiter(',');
    e.flag = long_name(flag);
  }
  for (auto* o : {e.on, e.off}) {
    if (o && s.hidden) o->group("");
    if (o) option_settings()[o] = &s;
  }
}

const SettingOptions::Entry* SettingOptions::find(std::string_view key) const {
  for (const auto& e : entries_)
    if (e.setting->key == key) return &e;
  return nullptr;
}

bool SettingOptions::given(std::string_view key) const {
  const Entry* e = find(key);
  return e && ((e->on && e->on->count() > 0) || (e->off && e->off->count() > 0));
}

std::string SettingOptions::text(std::string_view key) const {
  const Entry* e = find(key);
  if (!e || !given(key)) return "";
  const auto* s = std::get_if<std::string>(&e->value);
  return s ? *s : "";
}

void SettingOptions::apply_entry(const Entry& e, MatrixConfig& m) const {
  std::visit(
      [&](auto* member) {
        using T = std::decay_t<decltype(*member)>;
        if constexpr (std::is_same_v<T, bool>) {
          if (e.on && e.on->count() > 0) *member = true;
          if (e.off && e.off->count() > 0) *member = false;  // --no-profile wins over --profile
        } else if constexpr (std::is_same_v<T, uint64_t>) {
          int64_t v = std::get<int64_t>(e.value);
          if (v < 0) check_setting_value(*e.setting, static_cast<double>(v), e.flag);
          *member = static_cast<uint64_t>(v);
        } else {
          *member = std::get<T>(e.value);
        }
      },
      e.setting->get(m));
}

void SettingOptions::apply(MatrixConfig& m, const std::vector<std::string_view>& except) const {
  for (const auto& e : entries_)
    if (given(e.setting->key) && std::find(except.begin(), except.end(), e.setting->key) == except.end())
      apply_entry(e, m);
}

void SettingOptions::check_given() const {
  for (const auto& e : entries_) {
    if (!given(e.setting->key)) continue;
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>)
            check_setting_value(*e.setting, static_cast<double>(v), e.flag);
          else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
            for (auto x : v) check_setting_value(*e.setting, static_cast<double>(x), e.flag);
        },
        e.value);
  }
}

}  // namespace trainscope::cli

#include "settings_cli.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "trainscope/error.h"

namespace trainscope::cli {

namespace {

// The staging value of a setting's option: integers (unsigned ones too, so that a negative
// value gets a range message instead of CLI11's conversion error) as int64.
// Lists are staged as the words typed (split and converted by list_items), so that a repeated
// option replaces the earlier list and an empty item is an error instead of being dropped.
template <typename T>
auto staged_of(T*) {
  if constexpr (std::is_same_v<T, uint64_t>) return int64_t{0};
  else if constexpr (std::is_same_v<T, std::vector<int64_t>>) return std::vector<std::string>{};
  else return T{};
}

// The items of a list option as given: "64,128" or "64 128" (one occurrence: the last one).
// An empty item ("64,,128", "64,") is Error(kInvalidArgument) naming the flag.
std::vector<std::string> list_items(const std::vector<std::string>& words, const std::string& flag) {
  std::vector<std::string> items;
  for (const auto& w : words) {
    size_t start = 0;
    while (true) {
      const size_t comma = w.find(',', start);
      std::string item = w.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (item.empty())
        throw_error(ErrorKind::kInvalidArgument,
                    fmt::format("{} '{}' has an empty item; give the values separated by single commas, e.g. {} 64,128",
                                flag, w, flag));
      items.push_back(std::move(item));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return items;
}

// The whole numbers of an integer list option, a word of `named` standing for its number;
// Error(kInvalidArgument) naming the flag, the item and the value it is in.
std::vector<int64_t> int_items(const std::vector<std::string>& words, const std::string& flag,
                               const std::map<std::string, int64_t, std::less<>>& named) {
  std::vector<int64_t> out;
  for (const auto& word : words)
    for (const auto& item : list_items({word}, flag)) {
      if (auto it = named.find(item); it != named.end()) {
        out.push_back(it->second);
        continue;
      }
      int64_t v = 0;
      const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
      if (ec != std::errc() || end != item.data() + item.size())
        throw_error(ErrorKind::kInvalidArgument,
                    fmt::format("{}: '{}' in '{}' is not a whole number; give whole numbers separated by commas, "
                                "e.g. {} 64,128",
                                flag, item, word, flag));
      out.push_back(v);
    }
  return out;
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
    // Given twice, the last occurrence wins (wrapper scripts append overrides): a list's earlier
    // words are dropped as the next occurrence starts, a single value keeps the last.
    if (std::holds_alternative<std::vector<std::string>>(e.value))
      e.on->trigger_on_parse();
    else
      e.on->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
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

void SettingOptions::name_item(std::string_view key, const std::string& word, int64_t value) {
  for (auto& e : entries_)
    if (e.setting->key == key) e.named[word] = value;
}

bool SettingOptions::has_item(std::string_view key, std::string_view word) const {
  const Entry* e = find(key);
  if (!e || !given(key)) return false;
  const auto* words = std::get_if<std::vector<std::string>>(&e->value);
  if (!words) return false;
  const auto items = list_items(*words, e->flag);
  return std::find(items.begin(), items.end(), word) != items.end();
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
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          *member = int_items(std::get<std::vector<std::string>>(e.value), e.flag, e.named);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          *member = list_items(std::get<std::vector<std::string>>(e.value), e.flag);
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
    MatrixConfig m;
    const bool int_list = std::holds_alternative<std::vector<int64_t>*>(e.setting->get(m));
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
            check_setting_value(*e.setting, static_cast<double>(v), e.flag);
          } else if constexpr (std::is_same_v<T, std::string>) {
            check_setting_text(*e.setting, v, e.flag);
          } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            if (int_list)
              for (auto x : int_items(v, e.flag, e.named)) check_setting_value(*e.setting, static_cast<double>(x), e.flag);
            else
              list_items(v, e.flag);
          }
        },
        e.value);
  }
}

}  // namespace trainscope::cli

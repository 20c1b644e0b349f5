// The settings table as documentation: `trainscope settings` (text) and docs/configuration.md
// (Markdown, scripts/gen-docs.sh).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

#include "trainscope/settings.h"

namespace trainscope {

namespace {

std::string flags_of(const Setting& s) {
  std::vector<std::string> f;
  if (!s.flag.empty()) f.push_back(s.flag);
  if (!s.off_flag.empty()) f.push_back(s.off_flag);
  return fmt::format("{}", fmt::join(f, ", "));
}

std::string description(const Setting& s) {
  std::string d = s.help;
  if (!s.applies_text.empty()) d += fmt::format(" (checked when {})", s.applies_text);
  return d;
}

std::string md_cell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|' || c == '<') out += '\\';  // a table border; the start of an HTML tag
    out += c;
  }
  return out;
}

}  // namespace

std::string settings_markdown() {
  std::string out =
      "| TOML key | `run` flag | default | valid values | description |\n|---|---|---|---|---|\n";
  for (const auto& s : settings()) {
    if (s.hidden) continue;
    auto code = [](const std::string& v) { return v.empty() ? std::string() : "`" + v + "`"; };
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", s.key, md_cell(code(flags_of(s))), md_cell(code(s.default_text())),
                       md_cell(s.valid_text()), md_cell(description(s)));
  }
  return out;
}

std::string settings_text() {
  std::string out;
  for (const auto& s : settings()) {
    if (s.hidden) continue;
    out += fmt::format("{:<34} {:<26} default {}\n", s.key, flags_of(s), s.default_text());
    std::string r = s.valid_text();
    out += fmt::format("    {}{}\n", description(s), r.empty() ? "" : "; valid: " + r);
  }
  return out;
}

}  // namespace trainscope

#include "common/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>


namespace trainscope {

std::string utc_timestamp(UtcFormat format) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, format == UtcFormat::kFolder ? "%Y%m%d-%H%M%S" : "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string format_number(double v) {
  double a = std::fabs(v);
  if (a >= 100) return fmt::format("{:.0f}", v);
  if (a >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2f}", v);
}

std::string format_rate(double per_s) { return format_number(per_s); }

std::string format_duration(double s) {
  if (s < 1e-3) return fmt::format("{} µs", format_number(s * 1e6));
  if (s < 1) return fmt::format("{} ms", format_number(s * 1e3));
  if (s < 120) return fmt::format("{} s", format_number(s));
  if (s < 7200) return fmt::format("{} min", format_number(s / 60));
  return fmt::format("{} h", format_number(s / 3600));
}

std::string count_of(long long n, const std::string& noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

std::string ascii_lower(std::string s) {
  for (auto& ch : s)
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  return s;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];  // row[i-1][j-1]
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];  // row[i-1][j]
      row[j] = std::min({up + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string nearest_spelling(std::string_view word, const std::vector<std::string>& candidates) {
  const size_t limit = std::max<size_t>(2, word.size() / 3);
  std::string best;
  size_t best_d = limit + 1;
  for (const auto& c : candidates)
    if (const size_t d = edit_distance(word, c); d < best_d) {
      best = c;
      best_d = d;
    }
  return best;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) {
    if (c == '"') o += "\"\"";
    else if (c == '\n' || c == '\r') o += ' ';
    else o += c;
  }
  return o + "\"";
}

}  // namespace trainscope

#include "telemetry/proc_parse.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

namespace trainscope::telemetry {

namespace {
std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

template <class Fn>
void for_each_line(std::string_view text, Fn fn) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    fn(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}
}  // namespace

std::optional<MemoryCgroup> parse_self_cgroup(std::string_view text) {
  std::optional<MemoryCgroup> v1, v2;
  for_each_line(text, [&](std::string_view line) {
    auto a = line.find(':');
    auto b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) return;
    std::string_view id = line.substr(0, a), controllers = line.substr(a + 1, b - a - 1);
    std::string path(trim(line.substr(b + 1)));
    if (path.empty() || path.front() != '/') return;
    if (id == "0" && controllers.empty()) v2 = MemoryCgroup{true, path};
    for (size_t pos = 0; pos <= controllers.size();) {
      size_t comma = std::min(controllers.find(',', pos), controllers.size());
      if (controllers.substr(pos, comma - pos) == "memory") v1 = MemoryCgroup{false, path};
      pos = comma + 1;
    }
  });
  return v1 ? v1 : v2;
}

namespace {
// The whole of `text` (surrounding white space aside) as an integer of type T, else nullopt.
template <class T>
std::optional<T> parse_integer(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  T v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return v;
}
}  // namespace

std::optional<uint64_t> parse_u64(std::string_view text) { return parse_integer<uint64_t>(text); }

std::optional<int64_t> parse_i64(std::string_view text) { return parse_integer<int64_t>(text); }

std::map<std::string, CpuJiffies> parse_proc_stat(std::string_view text) {
  std::map<std::string, CpuJiffies> out;
  for_each_line(text, [&](std::string_view line) {
    if (line.substr(0, 3) != "cpu") return;
    auto f = split_ws(line);
    if (f.size() < 5) return;  // at least user nice system idle
    uint64_t v[8] = {};
    size_t n = std::min<size_t>(f.size() - 1, 8);
    for (size_t i = 0; i < n; ++i) {
      auto x = parse_u64(f[i + 1]);
      if (!x) return;
      v[i] = *x;
    }
    CpuJiffies j;
    for (size_t i = 0; i < 8; ++i) j.total += v[i];
    j.steal = v[7];
    j.busy = j.total - v[3] - v[4] - v[7];  // minus idle, iowait, steal
    out[std::string(f[0])] = j;
  });
  return out;
}

std::optional<SelfStat> parse_self_stat(std::string_view text) {
  size_t close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  auto f = split_ws(trim(text.substr(close + 1)));
  // f[0] is field 3 (state); field k is f[k - 3].
  if (f.size() < 18) return std::nullopt;
  auto ut = parse_u64(f[14 - 3]), st = parse_u64(f[15 - 3]);
  auto th = parse_i64(f[20 - 3]);
  if (!ut || !st || !th) return std::nullopt;
  return SelfStat{*ut + *st, *th};
}

std::optional<uint64_t> parse_kb_field(std::string_view text, std::string_view key) {
  std::optional<uint64_t> out;
  for_each_line(text, [&](std::string_view line) {
    if (out || line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':') return;
    auto f = split_ws(line.substr(key.size() + 1));
    if (f.empty()) return;
    auto v = parse_u64(f[0]);
    if (!v) return;
    uint64_t mult = 1;
    if (f.size() > 1) {
      if (f[1] == "kB") mult = 1024;
      else return;
    }
    out = *v * mult;
  });
  return out;
}

std::vector<double> parse_cpuinfo_mhz(std::string_view text) {
  std::vector<double> out;
  for_each_line(text, [&](std::string_view line) {
    if (line.substr(0, 7) != "cpu MHz") return;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    std::string v(trim(line.substr(colon + 1)));
    char* end = nullptr;
    double mhz = std::strtod(v.c_str(), &end);
    if (end != v.c_str() && *end == '\0') out.push_back(mhz);
  });
  return out;
}

namespace {
// 100 * (part delta) / (total delta) between two readings of one /proc/stat line; nullopt when
// total did not advance or a counter went backwards (CPU hot-unplug resets them).
std::optional<double> share_pct(uint64_t part_a, uint64_t part_b, uint64_t total_a, uint64_t total_b) {
  if (total_b <= total_a || part_b < part_a) return std::nullopt;
  uint64_t dt = total_b - total_a, dp = part_b - part_a;
  if (dp > dt) return std::nullopt;
  // 100 * dp / dt can round to 100 + 1 ulp when dp == dt (found by fuzzing): clamp.
  return std::min(100.0, 100.0 * static_cast<double>(dp) / static_cast<double>(dt));
}
}  // namespace

std::optional<double> cpu_util_pct(const CpuJiffies& a, const CpuJiffies& b) {
  return share_pct(a.busy, b.busy, a.total, b.total);
}

std::optional<double> cpu_steal_pct(const CpuJiffies& a, const CpuJiffies& b) {
  return share_pct(a.steal, b.steal, a.total, b.total);
}

}  // namespace trainscope::telemetry

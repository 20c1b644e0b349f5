#include "trainscope/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace trainscope {

double percentile_sorted(const std::vector<double>& s, double p) {
  if (s.empty()) return NAN;
  if (p <= 0) return s.front();
  if (p >= 100) return s.back();
  double rank = p / 100.0 * static_cast<double>(s.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(rank));
  size_t hi = std::min(lo + 1, s.size() - 1);
  double frac = rank - static_cast<double>(lo);
  return s[lo] + (s[hi] - s[lo]) * frac;
}

std::optional<double> percentile(std::vector<double> values, double p) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  return percentile_sorted(values, p);
}

std::optional<double> mean(const std::vector<double>& v) {
  if (v.empty()) return std::nullopt;
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

std::optional<double> median(std::vector<double> v) { return percentile(std::move(v), 50); }

long long union_length(std::vector<std::pair<long long, long long>> iv) {
  std::sort(iv.begin(), iv.end());
  long long total = 0, cur_s = 0, cur_e = 0;
  bool open = false;
  for (auto [s, e] : iv) {
    if (e <= s) continue;
    if (!open || s > cur_e) {
      if (open) total += cur_e - cur_s;
      cur_s = s;
      cur_e = e;
      open = true;
    } else {
      cur_e = std::max(cur_e, e);
    }
  }
  if (open) total += cur_e - cur_s;
  return total;
}

}  // namespace trainscope

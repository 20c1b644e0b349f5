// Interval arithmetic on sorted, disjoint [start, end) ranges, as the profiler plugin's
// range_utils.py does it: merge, intersect, subtract, sum, clip. The in-memory analysis
// (reference_analysis.cpp) splits steps with it; the bounded one sweeps instead (breakdown.cpp).
#include <algorithm>

#include "trace/reference_analysis.h"

namespace trainscope::trace::reference {

Ranges merge_ranges(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  for (const auto& [s, e] : r) {
    if (e <= s) continue;
    if (!out.empty() && s <= out.back().second) out.back().second = std::max(out.back().second, e);
    else out.emplace_back(s, e);
  }
  return out;
}

Ranges intersect_ranges(const Ranges& a, const Ranges& b) {
  Ranges out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t s = std::max(a[i].first, b[j].first), e = std::min(a[i].second, b[j].second);
    if (s < e) out.emplace_back(s, e);
    if (a[i].second < b[j].second) ++i;
    else ++j;
  }
  return out;
}

Ranges subtract_ranges(const Ranges& a, const Ranges& b) {
  Ranges out;
  size_t j = 0;
  for (auto [s, e] : a) {
    while (j < b.size() && b[j].second <= s) ++j;
    for (size_t k = j; k < b.size() && b[k].first < e; ++k) {
      if (b[k].first > s) out.emplace_back(s, b[k].first);
      s = std::max(s, b[k].second);
      if (s >= e) break;
    }
    if (s < e) out.emplace_back(s, e);
  }
  return out;
}

int64_t ranges_sum(const Ranges& r) {
  int64_t sum = 0;
  for (const auto& [s, e] : r) sum += e - s;
  return sum;
}

Ranges clip_ranges(const Ranges& r, int64_t start, int64_t end) {
  auto it = std::upper_bound(r.begin(), r.end(), start,
                             [](int64_t v, const std::pair<int64_t, int64_t>& x) { return v < x.second; });
  Ranges out;
  for (; it != r.end() && it->first < end; ++it) {
    const int64_t s = std::max(it->first, start), e = std::min(it->second, end);
    if (s < e) out.emplace_back(s, e);
  }
  return out;
}

}  // namespace trainscope::trace::reference

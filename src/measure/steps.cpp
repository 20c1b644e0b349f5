// The hook's step lines and the steady window (include/trainscope/measure.h).
#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "trainscope/measure.h"
#include "trainscope/stats.h"

namespace trainscope::measure {

int parse_step_lines(const std::string& text, int64_t origin_mono_ns, std::vector<int64_t>& ends, int64_t* items) {
  int bad = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream fields(line);
    std::string word;
    long long t = 0, n = -1;
    if (!(fields >> word >> t >> n) || word != "step" || t < origin_mono_ns) {
      ++bad;
      continue;
    }
    ends.push_back(t - origin_mono_ns);
    if (items && n > 0) *items += n;
  }
  return bad;
}

void steady_window(MeasureResult& r, int64_t warmup_steps, std::optional<double> items_per_step) {
  const auto& e = r.step_end_ns;
  const int64_t n = static_cast<int64_t>(e.size()), w = std::max<int64_t>(1, warmup_steps);
  if (n < w + 1) {
    r.notes.push_back(n == 0 ? "the program reported no step: the hook watches torch.optim optimizers' step() in a "
                               "Python program (or call trainscope.step())"
                             : fmt::format("only {} step(s) reported, fewer than the {} warm-up step(s) + 1: no steady "
                                           "window (lower --warmup-steps)",
                                           n, w));
    return;
  }
  r.window_start_ns = e[static_cast<size_t>(w - 1)];
  r.window_end_ns = e.back();
  std::vector<double> ms;
  for (int64_t i = w; i < n; ++i) ms.push_back(static_cast<double>(e[static_cast<size_t>(i)] - e[static_cast<size_t>(i - 1)]) * 1e-6);
  r.window.steps = n - w;
  r.window.mean_ms = *mean(ms);
  r.window.p50_ms = *percentile(ms, 50);
  r.window.p95_ms = *percentile(ms, 95);
  r.window.max_ms = *std::max_element(ms.begin(), ms.end());
  const double seconds = static_cast<double>(*r.window_end_ns - *r.window_start_ns) * 1e-9;
  if (seconds > 0) {
    r.steps_per_s = static_cast<double>(r.window.steps) / seconds;
    if (items_per_step) r.items_per_s = *r.steps_per_s * *items_per_step;
  }
}

}  // namespace trainscope::measure

// The hook's step lines and the steady window (include/trainscope/measure.h).
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "trainscope/error.h"
#include "trainscope/measure.h"
#include "trainscope/stats.h"

namespace trainscope::measure {

int parse_step_lines(const std::string& text, int64_t origin_mono_ns, std::vector<int64_t>& ends, int64_t* items,
                     std::vector<int64_t>* step_items) {
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
    if (step_items) step_items->push_back(n >= 0 ? n : -1);
  }
  return bad;
}

namespace {

// Items per step of the window: the configured figure, else the mean the program reported when
// every window step (steps first..n-1, 0-based) carried a count.
std::optional<double> window_items_per_step(const MeasureResult& r, int64_t first, int64_t n,
                                            std::optional<double> items_per_step) {
  if (items_per_step) return items_per_step;
  if (static_cast<int64_t>(r.step_items.size()) < n) return std::nullopt;
  double sum = 0;
  for (int64_t i = first; i < n; ++i) {
    const int64_t k = r.step_items[static_cast<size_t>(i)];
    if (k < 0) return std::nullopt;
    sum += static_cast<double>(k);
  }
  return sum / static_cast<double>(n - first);
}

}  // namespace

void steady_window(MeasureResult& r, int64_t warmup_steps, std::optional<double> items_per_step,
                   std::optional<int64_t> last_step) {
  const auto& e = r.step_end_ns;
  const int64_t all = static_cast<int64_t>(e.size()), w = std::max<int64_t>(1, warmup_steps);
  const int64_t n = last_step ? std::min(all, *last_step) : all;
  if (n < w + 1) {
    r.notes.push_back(all == 0 ? "the program reported no step: the hook watches torch.optim optimizers' step() in a "
                                 "Python program (or call trainscope.step())"
                               : fmt::format("only {} step(s) {}, fewer than the {} warm-up step(s) + 1: no steady "
                                             "window (lower --warmup-steps)",
                                             n, last_step ? "before the profiled window" : "reported", w));
    return;
  }
  r.window_start_ns = e[static_cast<size_t>(w - 1)];
  r.window_end_ns = e[static_cast<size_t>(n - 1)];
  std::vector<double> ms;
  for (int64_t i = w; i < n; ++i) ms.push_back(static_cast<double>(e[static_cast<size_t>(i)] - e[static_cast<size_t>(i - 1)]) * 1e-6);
  r.window.steps = n - w;
  r.window.mean_ms = *mean(ms);
  r.window.p50_ms = *percentile(ms, 50);
  r.window.p95_ms = *percentile(ms, 95);
  r.window.max_ms = *std::max_element(ms.begin(), ms.end());
  r.items_per_step = window_items_per_step(r, w, n, items_per_step);
  const double seconds = static_cast<double>(*r.window_end_ns - *r.window_start_ns) * 1e-9;
  if (seconds > 0) {
    r.steps_per_s = static_cast<double>(r.window.steps) / seconds;
    if (r.items_per_step) r.items_per_s = *r.steps_per_s * *r.items_per_step;
  }
}

std::pair<int64_t, int64_t> parse_profile_steps(const std::string& text) {
  long long a = 0, b = 0;
  char dash = 0, extra = 0;
  const int got = std::sscanf(text.c_str(), "%lld%c%lld%c", &a, &dash, &b, &extra);
  if (got == 1) b = a;
  if (!((got == 1) || (got == 3 && dash == '-')) || a < 1 || b < a)
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("measure: --profile-steps '{}' is not a window of steps: write A-B (1-based, A <= B), "
                            "e.g. --profile-steps 20-24, or one step A",
                            text));
  return {a, b};
}

}  // namespace trainscope::measure

// Reading telemetry.csv.gz (or telemetry.csv) of a run folder back into series: the report's
// charts and the TensorBoard reporter read the samples the sampler wrote
// (TelemetrySampler::write_samples_csv_gz), each picking its own metrics.
#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>

#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/telemetry.h"

namespace trainscope {

namespace {

// Keeps the first, min, max and last point of each time bucket so peaks survive thinning.
std::vector<std::pair<int64_t, double>> thin(const std::vector<std::pair<int64_t, double>>& p, size_t max_points) {
  if (p.size() <= max_points || max_points < 8) return p;
  size_t buckets = max_points / 2;
  std::vector<std::pair<int64_t, double>> out;
  size_t per = (p.size() + buckets - 1) / buckets;
  for (size_t i = 0; i < p.size(); i += per) {
    size_t end = std::min(p.size(), i + per);
    auto [lo, hi] = std::minmax_element(p.begin() + i, p.begin() + end,
                                        [](const auto& x, const auto& y) { return x.second < y.second; });
    if (lo <= hi) {
      out.push_back(*lo);
      if (hi != lo) out.push_back(*hi);
    } else {
      out.push_back(*hi);
      out.push_back(*lo);
    }
  }
  return out;
}

}  // namespace

std::vector<CounterSeries> read_telemetry_series(const std::string& run_dir, size_t max_points, std::string* why,
                                                 const std::function<bool(const std::string&, const std::string&)>& keep) {
  std::string path = run_dir + "/telemetry.csv.gz";
  if (!file_exists(path)) path = run_dir + "/telemetry.csv";
  if (!file_exists(path)) {
    if (why) *why = "no telemetry.csv.gz in the run folder (telemetry off, or the matrix did not finish)";
    return {};
  }
  std::vector<uint8_t> bytes;
  try {
    bytes = read_file_bytes(path, uint64_t{4} << 30);
  } catch (const Error& e) {
    if (why) *why = e.what();
    return {};
  }
  std::map<std::pair<std::string, std::string>, CounterSeries> m;
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  size_t pos = 0;
  bool header = true;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    if (header) {
      header = false;
      continue;
    }
    size_t c1 = line.find(','), c2 = line.find(',', c1 + 1), c3 = line.find(',', c2 + 1);
    if (c1 == std::string_view::npos || c2 == std::string_view::npos || c3 == std::string_view::npos) continue;
    std::string dev(line.substr(c1 + 1, c2 - c1 - 1)), met(line.substr(c2 + 1, c3 - c2 - 1));
    if (keep && !keep(dev, met)) continue;
    try {
      int64_t t = std::stoll(std::string(line.substr(0, c1)));
      double v = std::stod(std::string(line.substr(c3 + 1)));
      if (!std::isfinite(v)) continue;
      auto& s = m[{dev, met}];
      s.device = dev;
      s.metric = met;
      s.points.emplace_back(t, v);
    } catch (...) {
      continue;  // a malformed line is skipped; the rest still charts
    }
  }
  std::vector<CounterSeries> out;
  for (auto& [k, s] : m) {
    std::sort(s.points.begin(), s.points.end());
    s.points = thin(s.points, max_points);
    out.push_back(std::move(s));
  }
  if (out.empty() && why) *why = path + " holds no utilisation, power, temperature or memory samples";
  return out;
}

}  // namespace trainscope

// Helpers of the report component's tests (tests/report/test_*.cpp): the fixtures' folders
// (tests/fixtures/report/make_fixtures.py) and look-ups into an Analysis. One copy each: `inline`,
// in namespace report_test.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "trainscope/fs.h"
#include "trainscope/report.h"

namespace report_test {

using namespace trainscope;

inline const std::string kStudy = std::string(TS_FIXTURES_DIR) + "/report/study";
inline const std::string kHealthy = std::string(TS_FIXTURES_DIR) + "/report/healthy";

inline const DeviceComparison* cmp(const Analysis& a, const std::string& model, int64_t b, const std::string& gpu = "cuda:0") {
  for (const auto& d : a.device_comparisons)
    if (d.model == model && d.batch_size == b && d.gpu_device == gpu) return &d;
  return nullptr;
}

inline std::vector<const Advice*> fired(const Analysis& a, const std::string& rule) {
  std::vector<const Advice*> out;
  for (const auto& x : a.advice)
    if (x.rule == rule) out.push_back(&x);
  return out;
}

inline bool fired_on(const Analysis& a, const std::string& rule, const std::string& device, const std::string& model, int64_t b) {
  auto v = fired(a, rule);
  return std::any_of(v.begin(), v.end(), [&](const Advice* x) {
    return x->device == device && x->model == model && x->batch_size == b;
  });
}

inline std::string all_sentences(const Analysis& a, const std::string& id) {
  std::string s;
  for (const auto& q : a.answers)
    if (q.id == id)
      for (const auto& x : q.sentences) s += x + "\n";
  return s;
}

inline std::string tmpdir(const std::string& name) {
  auto d = std::filesystem::path(TS_BINARY_DIR) / "test-report" / name;
  trainscope::remove_tree(d);
  std::filesystem::create_directories(d);
  return d.string();
}

// A second host's folder: the study's results with another provenance, one workload missing.
inline ReportInput second_host() {
  auto b = load_run_folder(kStudy);
  b.provenance.host = "gpu-box";
  b.provenance.libtorch_version = "2.1.0";
  b.provenance.intra_op_threads = 32;
  b.run_dir = "/elsewhere/run";
  std::erase_if(b.runs, [](const RunRecord& r) { return r.model == "cnn" && r.batch_size == 64; });
  for (auto& r : b.runs)
    if (r.steady_samples_per_s) *r.steady_samples_per_s *= 2;
  return b;
}

// The healthy fixture's CPU run made contended the way a shared 2-core machine was measured:
// 2 intra-op threads, the process on one core (99 %), the machine 100 % busy.
inline ReportInput contended_fixture() {
  auto in = load_run_folder(kHealthy);
  in.provenance.cpu_logical_cores = 2;
  for (auto& r : in.runs) {
    if (r.device != "cpu") continue;
    r.intra_op_threads = 2;
    if (!r.telemetry) r.telemetry.emplace();
    r.telemetry->headline.process_cpu_pct_mean = 99;
    r.telemetry->headline.cpu_util_pct_mean = 100;
  }
  return in;
}

}  // namespace report_test

// `trainscope infer`'s output (trainscope/inference_reporter.h): inference.json (its form:
// src/results/inference_run.cpp) and the console table.
#include <fmt/format.h>

#include "results/record_json.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/inference_reporter.h"

namespace trainscope {

namespace {

std::string num(const std::optional<double>& v, const char* fmtspec = "{:.3f}") {
  return v ? fmt::format(fmt::runtime(fmtspec), *v) : "—";
}
std::string num(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "—"; }

// The server run the table shows: the configured rate's, else the search's last.
const ServerRun* shown_server_run(const InferenceSection& m) {
  if (!m.server || m.server->runs.empty()) return nullptr;
  return m.server->qps ? &m.server->runs.front() : &m.server->runs.back();
}

constexpr const char* kRowFormat = "{:<34} {:<7} {:>9} {:>9} {:>9} {:>8} {:>13} {:>7} {:>9} {:>9} {:>5} {:>9} {:>10}\n";

std::string format_row(const std::string& label, const std::string& device, const InferenceSection& m) {
  const SingleStreamResult ss = m.single_stream.value_or(SingleStreamResult{});
  const ServerRun* srv = shown_server_run(m);
  std::string q = m.single_stream ? std::to_string(ss.latency.queries) + (ss.latency.too_few_queries ? "(!)" : "") : "—";
  const OfflineResult off = m.offline.value_or(OfflineResult{});
  std::string s = fmt::format(
      fmt::runtime(kRowFormat), label, device, num(ss.latency.p50_ms), num(ss.latency.p90_ms), num(ss.latency.p99_ms), q,
      num(off.best_samples_per_s, "{:.0f}"), num(off.best_batch_size),
      num(srv ? std::optional<double>(srv->qps) : std::nullopt, "{:.1f}"), num(srv ? srv->latency.p99_ms : std::nullopt),
      srv ? (srv->meets_target ? "yes" : "no") : "—",
      num(m.server ? m.server->max_qps_meeting_target : std::nullopt, "{:.1f}"),
      num(ss.telemetry.joules_per_sample, "{:.4g}"));
  if (ss.split) {
    auto p50 = [](const std::optional<SplitPart>& x) { return num(x ? x->p50_ms : std::nullopt, "{:.4f}"); };
    s += fmt::format("{:<34} {:<7} single-stream split p50: h2d {} ms, compute {} ms, d2h {} ms (CUDA events)\n", "", "",
                     p50(ss.split->h2d_ms), p50(ss.split->compute_ms), p50(ss.split->d2h_ms));
  }
  if (ss.latency.too_few_queries) s += fmt::format("  (!) {}\n", ss.latency.too_few_reason);
  if (m.single_stream && ss.telemetry.stats_too_few_samples.value_or(false))
    s += fmt::format("  (!) single-stream power and energy on {} rest on {} telemetry sample(s), too few for statistics; "
                     "sample faster (--telemetry-interval) or give the scenario more time\n",
                     device, ss.telemetry.stats_samples_min.value_or(0));
  if (m.single_stream && !ss.telemetry.absent_reason.empty())
    s += fmt::format("  energy per inference absent on {}: {}\n", device, ss.telemetry.absent_reason);
  return s;
}

}  // namespace

std::string format_inference_table(const std::vector<InferenceRun>& runs, int64_t intra_op_threads) {
  std::string s = "\n";  // appended, not "\n" + ...: GCC 12 misreports -Wrestrict on the latter
  s += fmt::format(fmt::runtime(kRowFormat), "model / checkpoint", "device", "ss_p50ms", "ss_p90ms",
                                     "ss_p99ms", "queries", "offline_sps", "@batch", "srv_qps", "srv_p99ms", "met",
                                     "max_qps", "J/sample");
  for (const auto& r : runs) {
    const std::string label = r.label.size() > 34 ? fmt::format("…{}", r.label.substr(r.label.size() - 33)) : r.label;
    if (r.failed())
      s += fmt::format("{:<34} {:<7} error ({}): {}\n", label, r.device, r.error_kind, r.error);
    else
      s += format_row(label, r.device, r.inference.value_or(InferenceSection{}));
  }
  s += "columns: ss_p50/p90/p99ms = single-stream latency percentiles (ms, one sample per query); queries = "
       "timed single-stream queries; offline_sps @batch = best offline throughput (samples/s) and its batch "
       "size; srv_qps, srv_p99ms, met = server scenario rate (queries/s), its p99 latency (ms, queueing "
       "included) and whether it met the target; max_qps = highest rate meeting the target (--find-max-qps); "
       "J/sample = device energy per sample where an energy counter exists; — = scenario not run or not "
       "measured (the JSON says why)\n";
  s += fmt::format("percentiles: exact, linear interpolation between closest ranks (Hyndman-Fan type 7); "
                   "intra-op threads {}\n", intra_op_threads);
  return s;
}

void InferenceFileReporter::start(const Provenance& p) {
  provenance_ = p;
  runs_.clear();
  write();
}

void InferenceFileReporter::measurement_finished(const InferenceRun& r) {
  runs_.push_back(r);
  write();
}

void InferenceFileReporter::finish(const std::vector<InferenceRun>& runs) {
  runs_ = runs;
  write();
}

void InferenceFileReporter::write() const { write_file_atomic(path_, inference_json(provenance_, runs_)); }

void InferenceConsoleReporter::measurement_started(const InferenceRun& r) {
  fmt::print(out_, "{} on {} ({} samples of {})\n", r.label, r.device, r.test_samples, r.dataset);
  std::fflush(out_);
}

void InferenceConsoleReporter::progress(const std::string& line) {
  fmt::print(out_, "  {}\n", line);
  std::fflush(out_);
}

void InferenceConsoleReporter::finish(const std::vector<InferenceRun>& runs) {
  fmt::print(out_, "{}results: {}\n", format_inference_table(runs, intra_op_threads_), results_path_);
  std::fflush(out_);
}

}  // namespace trainscope

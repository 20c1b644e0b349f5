// `trainscope history`, `trainscope compare A B`, `trainscope report RUN`: the run history
// database and the comparison report (library: trainscope/history.h, trainscope/report.h).
#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "commands.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "common/text.h"
#include "trainscope/console_table.h"
#include "trainscope/compare.h"
#include "trainscope/history.h"
#include "trainscope/report.h"

namespace trainscope::cli {

namespace {

// The same folder (or history id) given twice would count its runs twice as repeats: refused.
void refuse_repeated_refs(const std::vector<std::string>& refs) {
  std::set<std::string> seen;
  for (const auto& ref : refs) {
    std::error_code ec;
    const auto canon = std::filesystem::is_directory(ref, ec) ? std::filesystem::weakly_canonical(ref, ec).string() : ref;
    if (!seen.insert(canon).second)
      throw_error(ErrorKind::kInvalidArgument,
                  fmt::format("RUN '{}' is given twice: its runs would count twice, as repeats; give each run folder "
                              "or history id once", ref));
  }
}
const char* kDefaultDb = "trainscope-runs/history.sqlite";

// Read-only commands never create a database: a missing one is a usage error naming --db.
void require_history_db(const std::string& db) {
  if (!file_exists(db))
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("--db '{}': no history database there; `trainscope run` creates it when it records its "
                            "first run: check the path, or pass the --db that run used",
                            db));
}

// `trainscope history import DIR`: a run folder (e.g. from another host) into the database.
void add_import_command(CLI::App* h, std::shared_ptr<std::string> db) {
  auto import_dir = std::make_shared<std::string>();
  auto* hi = h->add_subcommand("import", "Add a run folder (e.g. from another host) to the history database");
  hi->fallthrough();  // --db may follow DIR
  hi->add_option("DIR", *import_dir,
                 "folder holding results.json (`trainscope run`) and/or inference*.json (`trainscope infer`)")
      ->required();
  hi->callback([db, import_dir] {
    HistoryDb d(*db);
    fmt::print("{}", render_history_import(import_folder(d, *import_dir), *db));
  });
}

std::string opt(const std::optional<double>& v, const char* f = "{:.2f}") {
  return v ? fmt::format(fmt::runtime(f), *v) : "—";
}

// How a server row was served: "fcfs", "cont x32"; "—" in a row of a version 3 database.
std::string serving(const GenerationServerRow& r) {
  if (r.batching.empty()) return "—";
  return r.batching == "continuous" ? fmt::format("cont x{}", r.max_batch.value_or(0)) : r.batching;
}

// The generation results `trainscope infer` recorded (tests, then server rates), newest first;
// false when there are none. Printed before the runs' table.
bool print_generation_history(const HistoryDb& d, size_t limit) {
  const auto tests = d.list_generation_tests(limit);
  const auto server = d.list_generation_server(limit);
  if (!tests.empty()) {
    fmt::print("generation tests (trainscope infer; tokens/s mean ± stddev over the repetitions)\n");
    fmt::print("{:>5}  {:<20} {:<8} {:<28} {:<14} {:>6} {:>7}  {:>22} {:>10}  {}\n", "id", "started (UTC)", "device",
               "model", "test", "batch", "threads", "tokens/s", "J/token", "run folder");
    for (const auto& t : tests)
      fmt::print("{:>5}  {:<20} {:<8} {:<28} {:<14} {:>6} {:>7}  {:>22} {:>10}  {}\n", t.id, t.started_utc, t.device,
                 generation_label(t.model, t.dtype, t.execution), t.test, t.batch,
                 t.intra_op_threads ? std::to_string(*t.intra_op_threads) : "—",
                 !t.error.empty() ? "failed: " + t.error
                 : t.tokens_per_s_mean ? fmt::format("{:.2f} ± {:.2f}", *t.tokens_per_s_mean, t.tokens_per_s_stddev.value_or(0))
                                       : "—",
                 opt(t.joules_per_token, "{:.4g}"), t.run_dir);
  }
  if (!server.empty()) {
    fmt::print("\ngeneration server runs (ms; goodput in requests/s)\n");
    fmt::print("{:>5}  {:<20} {:<8} {:<28} {:<11} {:<7} {:>7} {:>8} {:>9} {:>10} {:>10} {:>10} {:>10} {:>8}  {}\n", "id",
               "started (UTC)", "device", "model", "batching", "lengths", "threads", "rate/s", "served", "TTFT p50",
               "TTFT p99", "TPOT p50", "TPOT p99", "goodput", "run folder");
    for (const auto& r : server)
      fmt::print("{:>5}  {:<20} {:<8} {:<28} {:<11} {:<7} {:>7} {:>8g} {:>9} {:>10} {:>10} {:>10} {:>10} {:>8}  {}\n", r.id,
                 r.started_utc, r.device, generation_label(r.model, r.dtype, r.execution), serving(r),
                 r.lengths.empty() ? "—" : r.lengths, r.intra_op_threads ? std::to_string(*r.intra_op_threads) : "—",
                 r.rate_per_s, fmt::format("{}/{}", r.requests_served, r.requests_issued), opt(r.ttft_p50_ms),
                 opt(r.ttft_p99_ms), opt(r.tpot_p50_ms), opt(r.tpot_p99_ms), opt(r.goodput_per_s), r.run_dir);
  }
  if (!tests.empty() || !server.empty()) fmt::print("\n");
  return !tests.empty() || !server.empty();
}

// `trainscope report RUN...`: report.md/report.html from one or more run sets (several hosts).
void add_report_command(CLI::App& app) {
  struct ReportFlags {
    std::vector<std::string> refs;
    std::string db = kDefaultDb, out;
  };
  auto rf = std::make_shared<ReportFlags>();
  auto* r = app.add_subcommand("report", "Rebuild report.md and report.html from run folders (one or several, from "
                                         "any hosts) or the history database");
  r->add_option("RUN", rf->refs,
                "run folder, m<N> (matrix) or <N> (run) from `trainscope history`; several: compared across hosts")
      ->required();
  r->add_option("--db", rf->db, "history database (default trainscope-runs/history.sqlite)");
  r->add_option("-o,--out", rf->out, "folder for report.md/report.html (default: the first run folder)");
  r->callback([rf] {
    refuse_repeated_refs(rf->refs);
    std::vector<ReportInput> parts;
    for (const auto& ref : rf->refs) {
      parts.push_back(resolve_runs(ref, rf->db));
      require_runs(parts.back(), ref);  // an empty folder is no report (exit 2), not an empty one
    }
    auto in = merge_inputs(parts);
    std::string out = !rf->out.empty() ? rf->out : !in.run_dir.empty() ? in.run_dir : std::string(".");
    auto files = write_report(in, out);
    fmt::print("{}\n", render_console(in, analyze(in)));
    fmt::print("report: {}\n{}\n", files.markdown_path, files.html_path);
  });
}

}  // namespace

void add_history_commands(CLI::App& app, int& exit_status) {
  // ---- history
  auto db = std::make_shared<std::string>(kDefaultDb);
  auto limit = std::make_shared<int64_t>(50);
  auto* h = app.add_subcommand("history", "List the runs recorded in the history database, newest first");
  h->add_option("--db", *db, "history database (default trainscope-runs/history.sqlite)");
  h->add_option("-n,--limit", *limit, "rows to show (0 = all; default 50)");
  h->callback([h, db, limit] {
    if (h->got_subcommand("import")) return;  // `history import DIR` does its own work
    if (*limit < 0)
      throw_error(ErrorKind::kInvalidArgument,
                  fmt::format("row limit {} is out of range; use an integer >= 0 (0 = all) (-n/--limit)", *limit));
    require_history_db(*db);
    HistoryDb d(*db, HistoryDb::Access::kRead);  // listing needs no write access
    auto rows = d.list(static_cast<size_t>(*limit));
    const bool generation = print_generation_history(d, static_cast<size_t>(*limit));
    if (rows.empty()) {
      if (!generation) fmt::print("no runs in {} yet (trainscope run records every run there)\n", *db);
      return;
    }
    // The model as the report names the cell: with its variant and world size (model_label).
    fmt::print("{:>5} {:>6}  {:<20} {:<10} {:<20} {:>6} {:>3}  {:<11} {:>14} {:>9}  {}\n", "id", "matrix", "started (UTC)",
               "device", "model", "batch", "rep", "status", "samples/s", "test acc", "run folder");
    for (const auto& r : rows)
      fmt::print("{:>5} {:>6}  {:<20} {:<10} {:<20} {:>6} {:>3}  {:<11} {:>14} {:>9}  {}\n", r.id,
                 "m" + std::to_string(r.matrix_id), r.started_utc, r.device, model_label(r.model, r.variant, r.world_size),
                 r.batch_size, r.repeat, r.status,
                 r.steady_samples_per_s ? format_rate(*r.steady_samples_per_s) : "—",
                 r.test_accuracy_pct ? fmt::format("{:.1f} %", *r.test_accuracy_pct) : "—", r.run_dir);
    fmt::print("\ncompare or report: a run folder, m<N> (a whole matrix) or <N> (one run)\n");
  });

  add_import_command(h, db);

  // ---- compare
  struct CompareFlags {
    std::string a, b, db = kDefaultDb, metric;  // metric "": default_compare_metric
    double threshold_pct = 5;
  };
  auto cf = std::make_shared<CompareFlags>();
  auto* c = app.add_subcommand("compare",
                               "Compare two run sets (run folders, m<N> or <N>); exits 4 when the metric regressed "
                               "beyond the threshold and the noise");
  c->add_option("A", cf->a, "baseline: run folder, m<N> (matrix) or <N> (run) from `trainscope history`")->required();
  c->add_option("B", cf->b, "candidate, same forms")->required();
  c->add_option("--db", cf->db, "history database (default trainscope-runs/history.sqlite)");
  std::string names;
  for (const auto& m : compare_metrics()) names += (names.empty() ? "" : ", ") + m.name;
  c->add_option("--metric", cf->metric,
                 "metric to gate on (default steady_samples_per_s; gen_tokens_per_s when a side holds only a language "
                 "model's generation results; inference_samples_per_s when it holds only an image model's inference "
                 "runs): " + names);
  c->add_option("--threshold-pct", cf->threshold_pct, "allowed worsening in percent (default 5)");
  c->callback([cf, &exit_status] {
    auto a = resolve_runs(cf->a, cf->db);
    require_runs(a, cf->a);
    auto b = resolve_runs(cf->b, cf->db);
    require_runs(b, cf->b);
    const std::string metric = cf->metric.empty() ? default_compare_metric(a, b) : cf->metric;
    auto res = compare_inputs(a, b, metric, cf->threshold_pct);
    fmt::print("{}", render_compare(res, cf->a, cf->b));
    size_t measured = 0;
    for (const auto& row : res.rows) measured += row.delta_pct.has_value();
    if (res.regressed) exit_status = kExitRegression;
    else if (measured == 0) {
      // A CI gate must not pass when nothing was compared.
      if (res.rows.empty())
        fmt::print(stderr, "trainscope: error: no cell (device, model, batch size) is in both A and B; nothing was "
                           "compared\n");
      else
        fmt::print(stderr, "trainscope: error: no cell could be compared on '{}' (the verdict column says why); "
                           "nothing was compared\n", metric);
      exit_status = kExitUsage;
    }
  });
  add_report_command(app);
}

}  // namespace trainscope::cli

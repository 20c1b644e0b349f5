// llama-bench's output formats of the generation tests, and the server and sweep tables
// (src/results/generation_output.h).
#include "results/generation_output.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "trainscope/error.h"

namespace trainscope {

namespace {

using ojson = nlohmann::ordered_json;

ojson opt_json(const OptD& v) { return v ? ojson(*v) : ojson(nullptr); }
ojson opt_ns(const OptD& v) { return v ? ojson(static_cast<int64_t>(std::llround(*v))) : ojson(nullptr); }

// One row as an ordered object: llama-bench's field order, trainscope's fields after n_threads.
ojson row_json(const GenerationBenchRow& r, bool samples) {
  const auto& i = r.info;
  const auto& t = r.test;
  ojson o;
  o["build_commit"] = i.build_commit;
  o["cpu_info"] = i.cpu_info;
  o["gpu_info"] = i.gpu_info;
  o["backends"] = i.backends;
  o["model_filename"] = i.model_filename;
  o["model_type"] = i.model_type;
  o["model_size"] = i.model_size;
  o["model_n_params"] = i.model_n_params;
  o["n_threads"] = i.n_threads;
  o["devices"] = i.devices;
  o["execution"] = i.execution;
  o["n_seq"] = t.batch;
  o["n_prompt"] = t.n_prompt;
  o["n_gen"] = t.n_gen;
  o["n_depth"] = t.n_depth;
  o["test_time"] = i.test_time;
  o["avg_ns"] = opt_ns(t.avg_ns);
  o["stddev_ns"] = opt_ns(t.stddev_ns);
  o["avg_ts"] = opt_json(t.tokens_per_s_mean);
  o["stddev_ts"] = opt_json(t.tokens_per_s_stddev);
  if (samples) {
    ojson ns = ojson::array(), ts = ojson::array();
    for (double v : t.samples_ns) ns.push_back(static_cast<int64_t>(std::llround(v)));
    for (double v : t.samples_tokens_per_s) ts.push_back(v);
    o["samples_ns"] = ns;
    o["samples_ts"] = ts;
  }
  return o;
}

std::string csv_cell(const ojson& v) {
  if (v.is_null()) return "";
  if (v.is_string()) {
    std::string s = "\"";
    for (char c : v.get<std::string>()) s += c == '"' ? std::string("\"\"") : std::string(1, c);
    return s + "\"";
  }
  return v.dump();
}

std::string sql_value(const ojson& v) {
  if (v.is_null()) return "NULL";
  if (v.is_string()) {
    std::string s = "'";
    for (char c : v.get<std::string>()) s += c == '\'' ? std::string("''") : std::string(1, c);
    return s + "'";
  }
  return v.dump();
}

std::string sql_type(const ojson& v) {
  if (v.is_string()) return "TEXT";
  if (v.is_number_float()) return "REAL";
  return "INTEGER";
}

std::string csv_output(const std::vector<GenerationBenchRow>& rows) {
  std::vector<std::string> names;
  const ojson first = row_json(rows.empty() ? GenerationBenchRow{} : rows.front(), false);
  for (const auto& [k, v] : first.items()) names.push_back(k);
  std::string out = fmt::format("{}\n", fmt::join(names, ","));
  for (const auto& r : rows) {
    std::vector<std::string> cells;
    const ojson o = row_json(r, false);
    for (const auto& [k, v] : o.items()) cells.push_back(csv_cell(v));
    out += fmt::format("{}\n", fmt::join(cells, ","));
  }
  return out;
}

// llama-bench's sql printer: CREATE TABLE IF NOT EXISTS test (...) and one INSERT per test.
std::string sql_output(const std::vector<GenerationBenchRow>& rows) {
  GenerationBenchRow typed;  // a row with every figure present, for the column types
  typed.test.avg_ns = typed.test.stddev_ns = typed.test.tokens_per_s_mean = typed.test.tokens_per_s_stddev = 0.5;
  std::vector<std::string> cols, names;
  const ojson typed_row = row_json(typed, false);
  for (const auto& [k, v] : typed_row.items()) {
    cols.push_back(fmt::format("  {} {}", k, k == "avg_ns" || k == "stddev_ns" ? "INTEGER" : sql_type(v)));
    names.push_back(k);
  }
  std::string out = fmt::format("CREATE TABLE IF NOT EXISTS test (\n{}\n);\n\n", fmt::join(cols, ",\n"));
  for (const auto& r : rows) {
    std::vector<std::string> vals;
    const ojson o = row_json(r, false);
    for (const auto& [k, v] : o.items()) vals.push_back(sql_value(v));
    out += fmt::format("INSERT INTO test ({}) VALUES ({});\n", fmt::join(names, ", "), fmt::join(vals, ", "));
  }
  return out;
}

std::string human_size(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  return b >= 1024.0 * 1024 * 1024 ? fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024))
                                   : fmt::format("{:.2f} MiB", b / (1024.0 * 1024));
}

std::string human_params(int64_t n) {
  const double p = static_cast<double>(n);
  return p >= 1e9 ? fmt::format("{:.2f} B", p / 1e9) : fmt::format("{:.2f} M", p / 1e6);
}

std::string rate_cell(const TokenRateTest& t) {
  if (!t.error.empty()) return fmt::format("failed: {}", t.error_kind.empty() ? t.error : t.error_kind);
  if (!t.tokens_per_s_mean) return "—";
  return fmt::format("{:.2f} ± {:.2f}", *t.tokens_per_s_mean, t.tokens_per_s_stddev.value_or(0));
}

std::string md_output(const std::vector<GenerationBenchRow>& rows) {
  std::string out = "| model | size | params | backend | threads | test | t/s |\n"
                    "| --- | ---: | ---: | --- | ---: | ---: | ---: |\n";
  for (const auto& r : rows) {
    std::string test = r.test.test;
    if (r.test.batch > 1) test += fmt::format(" x{}", r.test.batch);
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", r.info.model_type, human_size(r.info.model_size),
                       human_params(r.info.model_n_params), r.info.backends, r.info.n_threads, test, rate_cell(r.test));
  }
  return out;
}

std::string ms(const OptD& v) { return v ? fmt::format("{:.2f}", *v) : "—"; }
std::string three(const LatencyFields& l) { return fmt::format("{} / {} / {}", ms(l.p50_ms), ms(l.p90_ms), ms(l.p99_ms)); }

}  // namespace

std::vector<std::string> generation_output_formats() { return {"md", "csv", "json", "jsonl", "sql"}; }

std::string generation_bench_output(const std::vector<GenerationBenchRow>& rows, const std::string& format) {
  if (format == "md") return md_output(rows);
  if (format == "csv") return csv_output(rows);
  if (format == "sql") return sql_output(rows);
  if (format == "json" || format == "jsonl") {
    ojson all = ojson::array();
    std::string lines;
    for (const auto& r : rows) {
      all.push_back(row_json(r, true));
      lines += row_json(r, true).dump(-1, ' ', false, ojson::error_handler_t::replace) + "\n";
    }
    return format == "jsonl" ? lines : all.dump(2, ' ', false, ojson::error_handler_t::replace) + "\n";
  }
  throw_error(ErrorKind::kInvalidArgument, fmt::format("--output {}: unknown format; use one of {}", format,
                                                       fmt::join(generation_output_formats(), ", ")));
}

namespace {

// "continuous x8", "fcfs"; "—" for a record written before the field existed.
std::string batching_cell(const GenerationServerRun& r) {
  if (r.batching.empty()) return "—";
  return r.batching == "continuous" ? fmt::format("continuous x{}", r.max_batch) : r.batching;
}

// Mean prompt / output tokens per request, with "text" when drawn from the text.
std::string lengths_cell(const GenerationServerRun& r) {
  if (!r.prompt_lengths.mean || !r.output_lengths.mean) return "—";
  return fmt::format("{:.0f} / {:.0f}{}", *r.prompt_lengths.mean, *r.output_lengths.mean,
                     r.lengths == "text" ? " (text)" : "");
}

}  // namespace

std::string generation_server_table(const std::vector<std::pair<std::string, GenerationServer>>& servers) {
  std::string out = "| model | rate req/s | served | req/s | out tok/s | TTFT p50/p90/p99 ms | TPOT p50/p90/p99 ms "
                    "| ITL p50/p90/p99 ms | e2e p50/p90/p99 ms | goodput req/s | SLO met % | batching | mean batch "
                    "| prompt / output tok |\n"
                    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |\n";
  for (const auto& [label, s] : servers)
    for (const auto& r : s.runs)
      out += fmt::format("| {} | {:g} | {}/{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", label,
                         r.rate_per_s, r.requests_served, r.requests_issued, ms(r.request_throughput_per_s),
                         ms(r.output_tokens_per_s), three(r.ttft), three(r.tpot), three(r.itl), three(r.e2e),
                         ms(r.goodput_per_s), ms(r.slo_attainment_pct), batching_cell(r), ms(r.mean_running_batch),
                         lengths_cell(r));
  return out;
}

std::string decode_sweep_table(const std::vector<std::pair<std::string, DecodeSweep>>& sweeps) {
  std::string out = "| model | batch | decode tok/s | step ms | note |\n| --- | ---: | ---: | ---: | --- |\n";
  for (const auto& [label, s] : sweeps)
    for (const auto& p : s.points) {
      std::string note = !p.error.empty() ? p.error : (s.saturation_batch == p.batch ? "saturation point" : "");
      out += fmt::format("| {} | {} | {} | {} | {} |\n", label, p.batch, ms(p.tokens_per_s), p.step_ms ? fmt::format("{:.3f}", *p.step_ms) : "—", note);
    }
  return out;
}

}  // namespace trainscope

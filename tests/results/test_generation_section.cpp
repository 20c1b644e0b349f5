// The generation section (trainscope/generation_section.h): llama-bench's mean ± stddev, TPOT,
// percentiles, goodput, energy per token, the JSON round trip, and every output format parsed
// back (src/results/generation_output.h).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "results/generation_output.h"
#include "trainscope/error.h"
#include "trainscope/generation_section.h"
#include "trainscope/record_sections.h"

namespace trainscope {
namespace {

TEST(GenerationStats, TestNamesAreLlamaBenchs) {
  EXPECT_EQ(token_test_name(512, 0, 0), "pp512");
  EXPECT_EQ(token_test_name(0, 128, 0), "tg128");
  EXPECT_EQ(token_test_name(512, 0, 512), "pp512 @ d512");
  EXPECT_EQ(token_test_name(0, 128, 4096), "tg128 @ d4096");
}

TEST(GenerationStats, MeanAndSampleStddevOverRepetitions) {
  TokenRateTest t;
  t.n_gen = 100;
  t.batch = 2;
  t.samples_ns = {1e9, 2e9, 4e9};  // 200, 100, 50 tokens/s
  summarize_token_test(t);
  EXPECT_EQ(t.repetitions, 3);
  ASSERT_EQ(t.samples_tokens_per_s.size(), 3u);
  EXPECT_DOUBLE_EQ(t.samples_tokens_per_s[0], 200);
  EXPECT_DOUBLE_EQ(*t.tokens_per_s_mean, 350.0 / 3);
  // sample stddev (n - 1): mean 116.67, squares 6944.4 + 277.8 + 4444.4 = 11666.7 / 2
  EXPECT_NEAR(*t.tokens_per_s_stddev, std::sqrt(11666.666666 / 2), 1e-3);
  EXPECT_DOUBLE_EQ(*t.avg_ns, 7e9 / 3);
  EXPECT_NEAR(*t.stddev_ns, std::sqrt((std::pow(1e9 - 7e9 / 3, 2) + std::pow(2e9 - 7e9 / 3, 2) +
                                       std::pow(4e9 - 7e9 / 3, 2)) / 2), 1);
}

TEST(GenerationStats, OneRepetitionHasZeroStddevAndNoneHasNoFigures) {
  TokenRateTest one;
  one.n_prompt = 512;
  one.samples_ns = {0.5e9};
  summarize_token_test(one);
  EXPECT_DOUBLE_EQ(*one.tokens_per_s_mean, 1024);
  EXPECT_DOUBLE_EQ(*one.tokens_per_s_stddev, 0);
  TokenRateTest none;
  summarize_token_test(none);
  EXPECT_FALSE(none.tokens_per_s_mean);
  EXPECT_FALSE(none.avg_ns);
}

TEST(GenerationStats, TpotExcludesTheFirstToken) {
  // 5 tokens, first at 100 ms, last at 180 ms: 4 gaps of 20 ms.
  EXPECT_DOUBLE_EQ(*time_per_output_token_ms(180, 100, 5), 20);
  EXPECT_FALSE(time_per_output_token_ms(100, 100, 1));
  EXPECT_FALSE(time_per_output_token_ms(100, 100, 0));
  EXPECT_DOUBLE_EQ(*time_per_output_token_ms(130, 100, 2), 30);
}

TEST(GenerationStats, PercentilesOnSmallAndLargeCounts) {
  auto small = latency_percentiles({3, 1, 2}, 1);
  EXPECT_DOUBLE_EQ(*small.p50_ms, 2);
  EXPECT_DOUBLE_EQ(*small.p99_ms, 1 + 0.99 * 2 * 1);  // rank 1.98: 2 + 0.98
  EXPECT_DOUBLE_EQ(*small.max_ms, 3);
  auto one = latency_percentiles({7}, 5);
  EXPECT_DOUBLE_EQ(*one.p99_ms, 7);
  EXPECT_TRUE(one.too_few_queries);
  EXPECT_NE(one.too_few_reason.find("only 1"), std::string::npos);
  std::vector<double> big;
  for (int i = 1; i <= 10001; ++i) big.push_back(10002 - i);  // 10001 .. 1, any order
  auto l = latency_percentiles(big, 100);
  EXPECT_DOUBLE_EQ(*l.p50_ms, 5001);
  EXPECT_DOUBLE_EQ(*l.p90_ms, 9001);
  EXPECT_DOUBLE_EQ(*l.p99_ms, 9901);
  EXPECT_FALSE(l.too_few_queries);
  EXPECT_FALSE(latency_percentiles({}, 1).p50_ms);
}

RequestTiming req(double arrival, std::vector<double> tokens) { return RequestTiming{arrival, std::move(tokens)}; }

TEST(GenerationStats, ServerSummaryTtftTpotItlAndGoodput) {
  std::vector<RequestTiming> rs = {
      req(0.0, {0.1, 0.12, 0.14}),   // TTFT 100 ms, TPOT 20 ms: good under (150, 25)
      req(0.5, {0.8, 0.81}),         // TTFT 300 ms: misses TTFT
      req(1.0, {1.05, 1.15, 1.25}),  // TTFT 50 ms, TPOT 100 ms: misses TPOT
      req(1.5, {1.6}),               // one token: no TPOT, TTFT 100 ms: good
      req(1.9, {}),                  // not served
  };
  auto r = generation_server_summary(2.0, rs, 150, 25, 1);
  EXPECT_EQ(r.requests_issued, 5);
  EXPECT_EQ(r.requests_served, 4);
  EXPECT_EQ(r.good_requests, 2);
  EXPECT_EQ(r.output_tokens, 9);
  EXPECT_EQ(r.ttft.queries, 4);
  EXPECT_EQ(r.tpot.queries, 3);  // the one-token request has none
  EXPECT_EQ(r.itl.queries, 5);   // 2 + 1 + 2 gaps
  EXPECT_NEAR(*r.ttft.max_ms, 300, 1e-9);
  EXPECT_NEAR(*r.tpot.p50_ms, 20, 1e-9);   // {10, 20, 100}
  EXPECT_NEAR(*r.itl.max_ms, 100, 1e-9);
  EXPECT_NEAR(*r.e2e.max_ms, 310, 1e-9);
  ASSERT_TRUE(r.duration_s);
  EXPECT_DOUBLE_EQ(*r.duration_s, 1.6);
  EXPECT_DOUBLE_EQ(*r.goodput_per_s, 2 / 1.6);
  EXPECT_DOUBLE_EQ(*r.request_throughput_per_s, 4 / 1.6);
  EXPECT_DOUBLE_EQ(*r.output_tokens_per_s, 9 / 1.6);
  EXPECT_DOUBLE_EQ(*r.slo_attainment_pct, 50);
}

TEST(GenerationStats, NothingServedHasNoThroughput) {
  auto r = generation_server_summary(1.0, {req(0.2, {})}, 100, 10, 1);
  EXPECT_EQ(r.requests_served, 0);
  EXPECT_FALSE(r.goodput_per_s);
  EXPECT_TRUE(r.ttft.too_few_queries);
}

TEST(GenerationStats, EnergyPerTokenPerPhase) {
  TokenRateTest a, b;
  a.n_prompt = 100, a.repetitions = 2, a.batch = 1, a.test = "pp100";
  b.n_prompt = 50, b.repetitions = 2, b.batch = 2, b.test = "pp50";
  a.telemetry = ScenarioTelemetry{};
  a.telemetry->energy_j = 10, a.telemetry->window_s = 1, a.telemetry->energy_method = "counter";
  b.telemetry = ScenarioTelemetry{};
  b.telemetry->energy_j = 30, b.telemetry->window_s = 2;
  auto e = token_energy("prefill", {&a, &b});
  EXPECT_DOUBLE_EQ(*e.tokens, 400);
  EXPECT_DOUBLE_EQ(*e.joules_per_token, 0.1);
  EXPECT_DOUBLE_EQ(*e.tokens_per_j, 10);
  EXPECT_EQ(e.energy_method, "counter");
  b.telemetry->energy_j.reset();
  b.telemetry->absent_reason = "no power source";
  auto none = token_energy("prefill", {&a, &b});
  EXPECT_FALSE(none.joules_per_token);
  EXPECT_EQ(none.absent_reason, "no power source");
  EXPECT_NE(token_energy("decode", {}).absent_reason, "");
}

GenerationSection sample_section() {
  GenerationSection s;
  s.decoding = "greedy";
  s.execution = "eager";
  s.context = 1024, s.vocab = 50304, s.model_parameters = 124'000'000;
  TokenRateTest t;
  t.test = "pp512", t.n_prompt = 512, t.samples_ns = {1e6, 2e6};
  summarize_token_test(t);
  s.tests.push_back(t);
  s.prefill_energy = TokenEnergy{};
  s.prefill_energy->phase = "prefill";
  s.prefill_energy->absent_reason = "telemetry is off";
  DecodeSweep sw;
  sw.points = {{1, 100.0, 10.0, "", ""}, {2, 150.0, 13.0, "", ""}, {4, {}, {}, "out_of_memory", "out of memory at batch 4"}};
  sw.saturation_batch = 2, sw.stop_kind = "memory";
  s.decode_sweep = sw;
  GenerationServer srv;
  srv.slo_ttft_ms = 500, srv.slo_tpot_ms = 30;
  srv.runs.push_back(generation_server_summary(1, {req(0.1, {0.2, 0.3})}, 500, 30, 1));
  s.server = srv;
  return s;
}

TEST(GenerationSection, JsonRoundTrip) {
  const GenerationSection s = sample_section();
  const std::string text = generation_section_json(s);
  const GenerationSection back = generation_section_from_json(text);
  EXPECT_EQ(generation_section_json(back), text);
  ASSERT_EQ(back.tests.size(), 1u);
  EXPECT_EQ(back.tests[0].samples_ns, s.tests[0].samples_ns);
  EXPECT_EQ(*back.tests[0].tokens_per_s_mean, *s.tests[0].tokens_per_s_mean);
  EXPECT_EQ(back.decode_sweep->points[2].error_kind, "out_of_memory");
  EXPECT_EQ(*back.server->runs[0].ttft.p50_ms, *s.server->runs[0].ttft.p50_ms);
  auto j = nlohmann::json::parse(text);
  EXPECT_TRUE(j["tests"][0].contains("tokens_per_s_mean"));
  EXPECT_TRUE(j["server"]["runs"][0]["tpot"].contains("p99_ms"));
  EXPECT_THROW(generation_section_from_json("[1,2]"), Error);
}

TEST(GenerationSection, InferenceSectionCarriesIt) {
  InferenceSection inf;
  inf.generation = sample_section();
  EXPECT_TRUE(inf.generation->decode_sweep);
}

std::vector<GenerationBenchRow> sample_rows() {
  GenerationBenchInfo info;
  info.build_commit = "abc123", info.cpu_info = "Xeon \"Gold\"", info.backends = "CPU", info.model_type = "gpt2";
  info.model_size = 500'000'000, info.model_n_params = 124'440'000, info.n_threads = 16;
  info.model_filename = "run/checkpoints/x's.pt", info.test_time = "2026-12-04T20:00:00Z";
  std::vector<GenerationBenchRow> rows;
  for (auto [p, g] : {std::pair<int64_t, int64_t>{512, 0}, {0, 128}}) {
    GenerationBenchRow r{info, {}};
    r.test.n_prompt = p, r.test.n_gen = g, r.test.test = token_test_name(p, g, 0);
    r.test.samples_ns = {1e8, 1.1e8, 0.9e8};
    summarize_token_test(r.test);
    rows.push_back(r);
  }
  return rows;
}

TEST(GenerationOutput, MarkdownHasLlamaBenchsColumns) {
  auto md = generation_bench_output(sample_rows(), "md");
  EXPECT_EQ(md.rfind("| model | size | params | backend | threads | test | t/s |", 0), 0u) << md;
  EXPECT_NE(md.find("| pp512 | 5154.48 ± 518.03 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| tg128 | 1288.62 ± 129.51 |"), std::string::npos) << md;
  EXPECT_NE(md.find("124.44 M"), std::string::npos);
  EXPECT_NE(md.find("476.84 MiB"), std::string::npos);
}

TEST(GenerationOutput, JsonAndJsonlParse) {
  auto j = nlohmann::json::parse(generation_bench_output(sample_rows(), "json"));
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["n_prompt"], 512);
  EXPECT_EQ(j[0]["samples_ns"].size(), 3u);
  EXPECT_NEAR(j[1]["avg_ts"].get<double>(), 1280 * (1 / 1.0 + 1 / 1.1 + 1 / 0.9) / 3, 1e-6);
  std::istringstream lines(generation_bench_output(sample_rows(), "jsonl"));
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    auto o = nlohmann::json::parse(line);
    EXPECT_TRUE(o.contains("stddev_ts"));
    ++n;
  }
  EXPECT_EQ(n, 2);
}

TEST(GenerationOutput, CsvHeaderAndQuoting) {
  auto csv = generation_bench_output(sample_rows(), "csv");
  std::istringstream in(csv);
  std::string header, row;
  std::getline(in, header);
  EXPECT_EQ(header.rfind("build_commit,cpu_info,gpu_info,backends,model_filename,model_type,model_size,model_n_params,"
                         "n_threads", 0), 0u) << header;
  EXPECT_NE(header.find("n_prompt,n_gen,n_depth,test_time,avg_ns,stddev_ns,avg_ts,stddev_ts"), std::string::npos);
  std::getline(in, row);
  EXPECT_NE(row.find("\"Xeon \"\"Gold\"\"\""), std::string::npos) << row;
}

int count_rows(void* n, int, char**, char**) {
  ++*static_cast<int*>(n);
  return 0;
}

TEST(GenerationOutput, SqlRunsInSqlite) {
  auto sql = generation_bench_output(sample_rows(), "sql");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "") << "\n" << sql;
  sqlite3_free(err);
  int n = 0;
  EXPECT_EQ(sqlite3_exec(db, "SELECT n_prompt, avg_ts FROM test WHERE model_filename = 'run/checkpoints/x''s.pt'",
                         count_rows, &n, nullptr), SQLITE_OK);
  EXPECT_EQ(n, 2);
  sqlite3_close(db);
}

TEST(GenerationOutput, UnknownFormatNamesTheChoices) {
  try {
    generation_bench_output({}, "xml");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("md, csv, json, jsonl, sql"), std::string::npos);
  }
}

TEST(GenerationOutput, ServerAndSweepTables) {
  auto s = sample_section();
  auto t = generation_server_table({{"gpt2 cpu", *s.server}});
  EXPECT_NE(t.find("TTFT p50/p90/p99 ms"), std::string::npos);
  EXPECT_NE(t.find("| gpt2 cpu | 1 | 1/1 |"), std::string::npos) << t;
  auto w = decode_sweep_table({{"gpt2 cpu", *s.decode_sweep}});
  EXPECT_NE(w.find("| gpt2 cpu | 2 | 150.00 | 13.000 | saturation point |"), std::string::npos) << w;
  EXPECT_NE(w.find("out of memory at batch 4"), std::string::npos);
}

}  // namespace
}  // namespace trainscope

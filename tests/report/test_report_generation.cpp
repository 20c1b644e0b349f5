// A language model's generation results (inference.json, docs/generation.md#outputs) in compare,
// the history, and the report's RQ5 and tables, on records made in memory with a cuda:0 side (the
// CI machine has no GPU): regression and noise on tokens/s, TPOT and TTFT p99, the "simple
// network" verdict eager and with CUDA graphs, what is said when a side was not measured, and the
// history's version-3 tables and the migration of a version-2 database.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "trainscope/compare.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/history.h"
#include "trainscope/report.h"

#include "report_helpers.h"
#include "test_helpers.h"

using namespace trainscope;
using namespace report_test;

namespace {

// A pp/tg test whose repetitions ran at `tps` tokens/s each.
TokenRateTest token_test(int64_t n_prompt, int64_t n_gen, std::vector<double> tps) {
  TokenRateTest t;
  t.n_prompt = n_prompt;
  t.n_gen = n_gen;
  t.test = token_test_name(n_prompt, n_gen, 0);
  t.repetitions = static_cast<int64_t>(tps.size());
  for (double x : tps) t.samples_ns.push_back(1e9 * static_cast<double>(n_prompt + n_gen) / x);
  summarize_token_test(t);
  return t;
}

GenerationServerRun server_rate(double rate, double ttft_p99, double tpot_p99) {
  GenerationServerRun s;
  s.rate_per_s = rate;
  s.requests_issued = s.requests_served = 20;
  s.ttft.p50_ms = ttft_p99 / 2;
  s.ttft.p99_ms = ttft_p99;
  s.tpot.p50_ms = tpot_p99 / 2;
  s.tpot.p99_ms = tpot_p99;
  s.goodput_per_s = rate;
  s.slo_attainment_pct = 100;
  return s;
}

// gpt2 on `device` with `execution`: pp512 at `pp` tokens/s, tg128 at `tg` (three repetitions,
// ±1 %), and a server run at 2 requests/s when `tpot_p99` > 0.
InferenceRun gen_run(const std::string& device, const std::string& execution, double pp, double tg,
                     double tpot_p99 = 0) {
  InferenceRun r;
  r.label = "runs/lm/checkpoints/cpu-gpt2.pt";
  r.model = "gpt2";
  r.weights = "checkpoint";
  r.device = device;
  InferenceSection inf;
  inf.device = device;
  inf.intra_op_threads = 16;
  GenerationSection g;
  g.execution = execution;
  g.model_parameters = 124'000'000;
  g.model_size_bytes = 496'000'000;
  g.tests = {token_test(512, 0, {pp * 0.99, pp, pp * 1.01}), token_test(0, 128, {tg * 0.99, tg, tg * 1.01})};
  if (tpot_p99 > 0) {
    GenerationServer s;
    s.lengths = "prompt 128, output 128 tokens";
    s.runs = {server_rate(2, 40 * tpot_p99, tpot_p99)};
    g.server = s;
  }
  inf.generation = g;
  r.inference = inf;
  return r;
}

InferenceDocument doc(std::vector<InferenceRun> runs, const std::string& command = "trainscope infer --run runs/lm") {
  InferenceDocument d;
  d.provenance.host = "h200-host";
  d.provenance.date_utc = "2026-12-04T10:00:00Z";
  d.provenance.command_line = command;
  d.runs = std::move(runs);
  return d;
}

ReportInput input_of(std::vector<InferenceDocument> docs) {
  ReportInput in;
  in.run_dir = "runs/lm";
  in.inference = std::move(docs);
  return in;
}

const CompareRow* row_of(const CompareResult& c, const std::string& model, const std::string& device) {
  for (const auto& r : c.rows)
    if (r.model == model && r.device == device) return &r;
  return nullptr;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(ReportGeneration, DtypeComesFromTheCommandLineElseFloat32) {
  Provenance p;
  EXPECT_EQ(generation_dtype(p), "float32");
  p.command_line = "trainscope infer --run x --dtype bfloat16 --graphs";
  EXPECT_EQ(generation_dtype(p), "bfloat16");
  p.command_line = "trainscope infer --dtype=float16";
  EXPECT_EQ(generation_dtype(p), "float16");
  EXPECT_EQ(generation_label("gpt2", "bfloat16", "cuda_graph_replay"), "gpt2 [bfloat16, cuda graphs]");
  EXPECT_EQ(generation_label("gpt2", "float32", "eager (cuda graph capture failed for batch 1: x)"),
            "gpt2 [float32, eager]");
}

TEST(ReportGeneration, CompareGatesTokensPerSecondBeyondTheNoise) {
  const auto a = doc({gen_run("cpu", "eager", 2500, 80), gen_run("cuda:0", "eager", 28000, 200)});
  // B: cuda:0 decoding 30 % slower (a regression), its prefill 0.5 % faster (inside the repetitions' spread).
  const auto b = doc({gen_run("cpu", "eager", 2500, 80), gen_run("cuda:0", "eager", 28140, 140)});
  const CompareResult c = compare_generation({a}, {b}, "gen_tokens_per_s", 5);
  EXPECT_TRUE(c.higher_is_better);
  ASSERT_EQ(c.rows.size(), 4u);
  const CompareRow* tg = row_of(c, "gpt2 [float32, eager] tg128", "cuda:0");
  ASSERT_NE(tg, nullptr);
  EXPECT_EQ(tg->a.n, 3);  // the repetitions are the spread
  EXPECT_TRUE(tg->regression);
  EXPECT_FALSE(tg->single_repeat);
  EXPECT_NEAR(*tg->delta_pct, -30, 0.01);
  const CompareRow* pp = row_of(c, "gpt2 [float32, eager] pp512", "cuda:0");
  ASSERT_NE(pp, nullptr);
  EXPECT_TRUE(pp->noise);
  EXPECT_FALSE(pp->regression);
  EXPECT_TRUE(c.regressed);
  const std::string text = render_compare(c, "A", "B");
  EXPECT_TRUE(has(text, "REGRESSION")) << text;
  EXPECT_TRUE(has(text, "gpt2 [float32, eager] tg128")) << text;
  // The same results on both sides: no regression.
  EXPECT_FALSE(compare_generation({a}, {a}).regressed);
}

TEST(ReportGeneration, CompareGatesTpotAndTtftP99AsSingleMeasurements) {
  const auto a = doc({gen_run("cuda:0", "eager", 28000, 200, 5.0)});
  const auto b = doc({gen_run("cuda:0", "eager", 28000, 200, 7.5)});
  const CompareResult tpot = compare_generation({a}, {b}, "tpot_p99_ms", 5);
  EXPECT_FALSE(tpot.higher_is_better);
  ASSERT_EQ(tpot.rows.size(), 1u);
  EXPECT_EQ(tpot.rows[0].model, "gpt2 [float32, eager] server 2 req/s");
  EXPECT_TRUE(tpot.rows[0].regression);
  EXPECT_TRUE(tpot.rows[0].single_repeat);
  EXPECT_TRUE(has(render_compare(tpot, "A", "B"), "1 repeat: may be noise"));
  // Lower is better: B against A is an improvement.
  const CompareResult ttft = compare_generation({b}, {a}, "ttft_p99_ms", 5);
  ASSERT_EQ(ttft.rows.size(), 1u);
  EXPECT_TRUE(ttft.rows[0].improvement);
  EXPECT_FALSE(ttft.regressed);
}

TEST(ReportGeneration, CompareNamesWhatIsOnOneSideOnlyAndTheMetrics) {
  const auto a = doc({gen_run("cpu", "eager", 2500, 80)});
  const auto b = doc({gen_run("cpu", "eager", 2500, 80), gen_run("cuda:0", "cuda_graph_replay", 28000, 800)});
  const CompareResult c = compare_generation({a}, {b});
  EXPECT_EQ(c.rows.size(), 2u);
  ASSERT_EQ(c.only_in_b.size(), 2u);
  EXPECT_TRUE(has(c.only_in_b[0], "gpt2 [float32, cuda graphs]")) << c.only_in_b[0];
  const CompareResult none = compare_generation({}, {b});
  EXPECT_TRUE(has(none.warnings.at(0), "A holds no generation results")) << none.warnings.at(0);
  try {
    compare_generation({a}, {b}, "tokens_per_s");
    ADD_FAILURE() << "an unknown metric was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    for (const char* m : {"gen_tokens_per_s", "tpot_p99_ms", "ttft_p99_ms", "steady_samples_per_s"})
      EXPECT_TRUE(has(e.what(), m)) << e.what();
  }
}

TEST(ReportGeneration, CompareDefaultsToTokensPerSecondWhenTheInputsHoldOnlyGeneration) {
  const ReportInput gen = input_of({doc({gen_run("cpu", "eager", 2500, 80)})});
  EXPECT_EQ(default_compare_metric(gen, gen), "gen_tokens_per_s");
  ReportInput both = load_run_folder(kHealthy);
  both.inference = gen.inference;
  EXPECT_EQ(default_compare_metric(both, both), "steady_samples_per_s");
  EXPECT_EQ(default_compare_metric(both, gen), "gen_tokens_per_s");
  // compare_inputs routes a generation metric to the inference documents and their provenance.
  const CompareResult c = compare_inputs(gen, gen, "gen_tokens_per_s");
  EXPECT_EQ(c.rows.size(), 2u);
  EXPECT_TRUE(has(c.host_a, "h200-host")) << c.host_a;
}

TEST(ReportGeneration, Rq5SaysCpuAgainstGpuForPrefillAndDecodingWithAndWithoutGraphs) {
  // CPU decodes 100 tokens/s; cuda:0 330 eager (3.3x) and 820 with graphs (8.2x): launch-bound.
  const ReportInput in = input_of({doc({gen_run("cpu", "eager", 2500, 100), gen_run("cuda:0", "eager", 28000, 330),
                                        gen_run("cuda:0", "cuda_graph_replay", 28000, 820)})});
  const std::string rq5 = all_sentences(analyze(in), "RQ5");
  EXPECT_TRUE(has(rq5, "Prefill (pp512) of `gpt2 [float32, eager]` on cuda:0: 28000 tokens/s, 11.2× faster than the "
                       "CPU's 2500 tokens/s")) << rq5;
  EXPECT_TRUE(has(rq5, "Decoding (tg128) of `gpt2 [float32, cuda graphs]` on cuda:0: 820 tokens/s, 8.20× faster"))
      << rq5;
  // The decoding verdict is the simple-network answer's, not repeated in RQ5.
  const std::string sn = all_sentences(analyze(in), "simple_network");
  EXPECT_TRUE(has(sn, "Batch-1 decoding of `gpt2` (float32) on cuda:0 is 8.20× the CPU with CUDA graphs, 3.30× the CPU "
                      "eager: eager decoding is launch-bound")) << sn;
  EXPECT_TRUE(has(sn, "2.48× faster on the same GPU")) << sn;
  EXPECT_FALSE(has(sn, "Not answerable")) << sn;
  EXPECT_FALSE(has(rq5, "Batch-1 decoding")) << rq5;
  EXPECT_FALSE(has(rq5, "No inference measurements")) << rq5;
}

TEST(ReportGeneration, SimpleNetworkAnswerGivesTheVerdictForEagerDecoding) {
  // Eager decoding 1.2x the CPU, 6x with graphs: the finding holds for eager only.
  const ReportInput in = input_of({doc({gen_run("cpu", "eager", 2500, 100), gen_run("cuda:0", "eager", 28000, 120),
                                        gen_run("cuda:0", "cuda_graph_replay", 28000, 600)})});
  const std::string sn = all_sentences(analyze(in), "simple_network");
  EXPECT_TRUE(has(sn, "the study's \"simple network\" finding holds for eager decoding and not with CUDA graphs"))
      << sn;
  // Eager only: the verdict, and that graphs were not measured.
  const ReportInput eager = input_of({doc({gen_run("cpu", "eager", 2500, 100), gen_run("cuda:0", "eager", 28000, 120)})});
  const std::string e = all_sentences(analyze(eager), "simple_network");
  EXPECT_TRUE(has(e, "is 1.20× the CPU eager: it gains little from the GPU")) << e;
  EXPECT_TRUE(has(e, "with CUDA graphs not measured")) << e;
  // Equal within the repetitions' spread: said, no ratio claimed.
  const ReportInput same = input_of({doc({gen_run("cpu", "eager", 2500, 100), gen_run("cuda:0", "eager", 2500, 100.5)})});
  EXPECT_TRUE(has(all_sentences(analyze(same), "simple_network"), "the same as the CPU (within the noise)"));
  // Generation on one side only: no verdict, the section says why.
  const ReportInput cpu_only = input_of({doc({gen_run("cpu", "eager", 2500, 100)})});
  EXPECT_TRUE(has(all_sentences(analyze(cpu_only), "simple_network"), "Not answerable"));
}

TEST(ReportGeneration, Rq5SaysWhichSideWasNotMeasured) {
  const ReportInput cpu_only = input_of({doc({gen_run("cpu", "eager", 2500, 100)})});
  const std::string c = all_sentences(analyze(cpu_only), "RQ5");
  EXPECT_TRUE(has(c, "Generation of `gpt2 [float32, eager]` on cpu (16 threads): pp512 2500 tokens/s, tg128 100 "
                     "tokens/s")) << c;
  EXPECT_TRUE(has(c, "not measured on a GPU")) << c;
  EXPECT_TRUE(has(c, "--devices cpu,cuda")) << c;
  // Generation results without training runs (`trainscope report inference.json`) still make a report.
  EXPECT_TRUE(has(render_markdown(cpu_only, analyze(cpu_only)), "## Generation (language models)"));
  // Both devices, but the CPU ran other tests: said, not compared.
  InferenceRun other = gen_run("cpu", "eager", 2500, 100);
  other.inference->generation->tests[1] = token_test(0, 64, {99, 100, 101});
  const ReportInput mismatched = input_of({doc({other, gen_run("cuda:0", "eager", 28000, 300)})});
  const std::string m = all_sentences(analyze(mismatched), "RQ5");
  EXPECT_TRUE(has(m, "the CPU did not run tg128 at batch 1, so there is no CPU figure")) << m;
  EXPECT_TRUE(has(m, "Prefill (pp512) of `gpt2 [float32, eager]` on cuda:0: 28000 tokens/s, 11.2× faster")) << m;
  const ReportInput gpu_only = input_of({doc({gen_run("cuda:0", "eager", 28000, 300)})});
  EXPECT_TRUE(has(all_sentences(analyze(gpu_only), "RQ5"), "not measured on the CPU"));
  // A language model trained but never given to infer.
  ReportInput trained;
  trained.run_dir = "runs/lm";
  RunRecord r;
  r.run_id = "cpu-gpt-mini-b4-r0";
  r.device = "cpu";
  r.model = "gpt-mini";
  r.batch_size = 4;
  r.status = RunStatus::kOk;
  r.steady_samples_per_s = 10;
  r.language_model = LanguageModelSection{};
  trained.runs = {r};
  const std::string t = all_sentences(analyze(trained), "RQ5");
  EXPECT_TRUE(has(t, "Generation of `gpt-mini` was not measured")) << t;
  EXPECT_TRUE(has(t, "trainscope infer --run runs/lm")) << t;
}

TEST(ReportGeneration, ReportHasTheGenerationAndServerTables) {
  ReportInput in = load_run_folder(kHealthy);
  InferenceRun graphs = gen_run("cuda:0", "cuda_graph_replay", 28000, 820);
  graphs.inference->generation->tests[0].joules_per_token = 3.544e-05;  // energy per token in mJ, never 3.544e-05 J
  in.inference = {doc({gen_run("cpu", "eager", 2500, 100, 12.5), graphs})};
  const Analysis a = analyze(in);
  const std::string md = render_markdown(in, a);
  EXPECT_TRUE(has(md, "| 0.0354 mJ |")) << md;
  EXPECT_FALSE(has(md, "e-05")) << md;
  EXPECT_TRUE(has(md, "## Generation (language models)")) << md;
  EXPECT_TRUE(has(md, "| model | size | params | backend | device | threads | execution | test | t/s | mJ/token |")) << md;
  EXPECT_TRUE(has(md, "| gpt2 float32 | 473 MiB | 124.00 M | CUDA | cuda:0 | 16 | cuda_graph_replay | tg128 | 820.")) << md;
  EXPECT_TRUE(has(md, "TTFT p50/p90/p99 ms")) << md;
  EXPECT_TRUE(has(md, "| gpt2 [float32, eager] cpu | 2 |")) << md;
  const std::string html = render_html(in, a, {});
  EXPECT_TRUE(has(html, "<h2 id=\"generation\">Generation (language models)</h2>")) << html.substr(0, 200);
  EXPECT_TRUE(has(html, "<th>TPOT p50/p90/p99 ms</th>"));
  EXPECT_TRUE(has(html, "<td>cuda_graph_replay</td>"));
  // Without generation results there is no section.
  EXPECT_FALSE(has(render_markdown(load_run_folder(kHealthy), analyze(load_run_folder(kHealthy))), "## Generation"));
}

TEST(ReportGeneration, RunFolderAndInferenceFileAreReadBack) {
  const std::string dir = tmpdir("gen_folder");
  std::filesystem::copy(kHealthy, dir, std::filesystem::copy_options::recursive);
  const InferenceDocument d = doc({gen_run("cpu", "eager", 2500, 100)});
  write_file_atomic(dir + "/inference.json", inference_json(d.provenance, d.runs));
  // A --graphs invocation written beside it (-o <dir>/inference-graphs.json) is read too.
  const InferenceDocument graphs = doc({gen_run("cuda:0", "cuda_graph_replay", 28000, 820)});
  write_file_atomic(dir + "/inference-graphs.json", inference_json(graphs.provenance, graphs.runs));
  const ReportInput in = load_run_folder(dir);
  ASSERT_EQ(in.inference.size(), 2u);
  EXPECT_EQ(in.inference[0].path, dir + "/inference-graphs.json");  // by name
  EXPECT_EQ(in.inference[1].generation_runs().size(), 1u);
  EXPECT_EQ(in.inference[1].provenance.host, "h200-host");
  std::filesystem::remove(dir + "/inference-graphs.json");
  // A matrix of the history (m<N>) whose folder holds an inference.json gets it too.
  {
    HistoryDb db(dir + "/h.sqlite");
    const int64_t m = db.import_runs(load_run_folder(dir)).matrix_id;
    EXPECT_EQ(resolve_runs("m" + std::to_string(m), dir + "/h.sqlite").inference.size(), 1u);
  }
  // The file alone (compare A.json B.json): generation results only, accepted as a run set.
  const ReportInput file = resolve_runs(dir + "/inference.json", dir + "/none.sqlite");
  EXPECT_TRUE(file.runs.empty());
  ASSERT_EQ(file.inference.size(), 1u);
  EXPECT_NO_THROW(require_runs(file, dir + "/inference.json"));
  // A malformed inference.json is named.
  write_file_atomic(dir + "/inference.json", "{\"runs\": 3}");
  try {
    load_run_folder(dir);
    ADD_FAILURE() << "a malformed inference.json was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kDataFormat);
    EXPECT_TRUE(has(e.what(), dir + "/inference.json")) << e.what();
  }
}

TEST(ReportGeneration, HistoryRecordsTestsAndServerRatesOnce) {
  const std::string dir = tmpdir("gen_history");
  HistoryDb db(dir + "/h.sqlite");
  const InferenceDocument d = doc({gen_run("cpu", "eager", 2500, 100, 12.5), gen_run("cuda:0", "eager", 28000, 300)},
                                  "trainscope infer --run runs/lm --dtype bfloat16");
  EXPECT_EQ(db.record_generation(d, "runs/lm"), 2u);
  auto tests = db.list_generation_tests();
  ASSERT_EQ(tests.size(), 4u);
  EXPECT_EQ(tests[0].device, "cuda:0");  // newest first
  EXPECT_EQ(tests[0].test, "tg128");
  EXPECT_EQ(tests[0].dtype, "bfloat16");
  EXPECT_EQ(tests[0].run_dir, "runs/lm");
  EXPECT_NEAR(*tests[0].tokens_per_s_mean, 300, 1e-6);
  EXPECT_NEAR(*tests[0].tokens_per_s_stddev, 3, 1e-6);
  auto server = db.list_generation_server();
  ASSERT_EQ(server.size(), 1u);
  EXPECT_EQ(server[0].rate_per_s, 2);
  EXPECT_EQ(*server[0].tpot_p99_ms, 12.5);
  EXPECT_EQ(*server[0].ttft_p99_ms, 500);
  EXPECT_EQ(server[0].requests_served, 20);
  // The same invocation recorded again (history import of its folder) adds nothing.
  db.record_generation(d, "runs/lm");
  EXPECT_EQ(db.list_generation_tests().size(), 4u);
  EXPECT_EQ(db.list_generation_server().size(), 1u);
  EXPECT_EQ(db.list_generation_tests(1).size(), 1u);
  // A failed measurement records nothing.
  InferenceRun failed = gen_run("cuda:1", "eager", 1, 1);
  failed.error_kind = "out_of_memory";
  EXPECT_FALSE(db.record_generation_run(db.begin_generation("runs/lm", d.provenance), failed, "float32"));
}

TEST(ReportGeneration, AVersion2HistoryIsMigratedAndReadOnlyStillListed) {
  const std::string dir = tmpdir("gen_migrate");
  const std::string path = dir + "/h.sqlite";
  {
    HistoryDb db(path);
    db.import_runs(second_host());
  }
  {  // back to version 2: no generation tables
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw,
                           "DROP TABLE generation_server; DROP TABLE generation_tests; DROP TABLE generation_sessions; "
                           "PRAGMA user_version=2;",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(raw);
  }
  if (std::system(("chattr +i '" + dir + "' 2>/dev/null").c_str()) == 0) {
    struct Unlock {
      std::string d;
      ~Unlock() { (void)std::system(("chattr -i '" + d + "'").c_str()); }
    } unlock{dir};
    HistoryDb ro(path, HistoryDb::Access::kRead);  // cannot be migrated here: read as version 2
    EXPECT_EQ(ro.list().size(), second_host().runs.size());
    EXPECT_TRUE(ro.list_generation_tests().empty());
  }
  HistoryDb db(path);
  EXPECT_EQ(db.list().size(), second_host().runs.size());
  EXPECT_EQ(db.record_generation(doc({gen_run("cpu", "eager", 2500, 100)}), "runs/lm"), 1u);
  EXPECT_EQ(db.list_generation_tests().size(), 2u);
}

TEST(ReportGeneration, TheReportAtTheEndOfARunKeepsTheFoldersGenerationResults) {
  // A --resume of a folder `infer --run` measured: the report written at finish still has them.
  const std::string dir = tmpdir("gen_reporter");
  const InferenceDocument d = doc({gen_run("cpu", "eager", 2500, 100)});
  write_file_atomic(dir + "/inference.json", inference_json(d.provenance, d.runs));
  ReportFilesReporter rep(nullptr);
  const ReportInput healthy = load_run_folder(kHealthy);
  rep.start(healthy.provenance, dir, healthy.runs.size());
  rep.finish(healthy.runs);
  ASSERT_TRUE(rep.written());
  EXPECT_EQ(rep.input().inference.size(), 1u);
  EXPECT_TRUE(has(trainscope::test::read_text(dir + "/report.md"), "## Generation (language models)"));
}

// Several `infer` invocations of one folder (inference.json and inference-graphs.json): compare
// keeps their cells apart with a source column, pairs a side of one invocation with the other
// side's inference.json, and the report's generation tables name each row's source.
#include <gtest/gtest.h>

#include <string>

#include "gen_fixtures.h"
#include "report_helpers.h"
#include "trainscope/compare.h"
#include "trainscope/report.h"

using namespace trainscope;
using namespace gen_fixture;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const CompareRow* row_from(const CompareResult& c, const std::string& source) {
  for (const auto& r : c.rows)
    if (r.source == source) return &r;
  return nullptr;
}

}  // namespace

TEST(CompareGenSources, TheSourceIsTheFileNameWithoutJson) {
  EXPECT_EQ(inference_source(doc({}, "runs/lm/inference.json")), "inference");
  EXPECT_EQ(inference_source(doc({}, "runs/lm/inference-graphs.json")), "inference-graphs");
  EXPECT_EQ(inference_source(doc({})), "inference");
}

TEST(CompareGenSources, TwoInvocationsOfOneFolderAreNotMerged) {
  // The same model, device and labels in both files: only the file tells them apart.
  const std::vector<InferenceDocument> a = {doc({gen_run("cpu", 100)}, "a/inference.json"),
                                            doc({gen_run("cpu", 300)}, "a/inference-graphs.json")};
  const std::vector<InferenceDocument> b = {doc({gen_run("cpu", 100)}, "b/inference.json"),
                                            doc({gen_run("cpu", 200)}, "b/inference-graphs.json")};
  const CompareResult c = compare_generation(a, b, "gen_tokens_per_s", 5);
  ASSERT_EQ(c.rows.size(), 2u);
  const CompareRow* plain = row_from(c, "inference");
  const CompareRow* graphs = row_from(c, "inference-graphs");
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(graphs, nullptr);
  EXPECT_EQ(plain->a.n, 3);  // its own three repetitions, not six of two invocations
  EXPECT_NEAR(*plain->delta_pct, 0, 1e-9);
  EXPECT_NEAR(*graphs->delta_pct, -100.0 / 3, 0.01);
  EXPECT_TRUE(graphs->regression);
  EXPECT_FALSE(plain->regression);
  const std::string text = render_compare(c, "A", "B");
  EXPECT_TRUE(has(text, "source")) << text;
  EXPECT_TRUE(has(text, "inference-graphs")) << text;
}

TEST(CompareGenSources, OneInvocationPairsWithTheOtherSidesInferenceJson) {
  const std::vector<InferenceDocument> a = {doc({gen_run("cpu", 100)}, "a/results-of-yesterday.json")};
  const std::vector<InferenceDocument> b = {doc({gen_run("cpu", 100)}, "b/inference.json"),
                                            doc({gen_run("cpu", 300)}, "b/inference-graphs.json")};
  const CompareResult c = compare_generation(a, b, "gen_tokens_per_s", 5);
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].source, "inference");
  ASSERT_EQ(c.only_in_b.size(), 1u);
  EXPECT_TRUE(has(c.only_in_b[0], "(inference-graphs)")) << c.only_in_b[0];
  // One invocation on each side: no source column at all.
  const CompareResult one = compare_generation(a, {b[1]}, "gen_tokens_per_s", 5);
  ASSERT_EQ(one.rows.size(), 1u);
  EXPECT_EQ(one.rows[0].source, "");
  EXPECT_FALSE(has(render_compare(one, "A", "B"), "source")) << render_compare(one, "A", "B");
}

TEST(CompareGenSources, TheReportsGenerationTablesNameEachRowsSource) {
  ReportInput in = load_run_folder(report_test::kHealthy);
  in.inference = {doc({gen_run("cpu", 100, 5.0)}, "runs/lm/inference.json"),
                  doc({gen_run("cpu", 300, 2.0, Serving{"continuous", 32})}, "runs/lm/inference-graphs.json")};
  const std::string md = render_markdown(in, analyze(in));
  EXPECT_TRUE(has(md, "| source | model | size |")) << md;
  EXPECT_TRUE(has(md, "| inference | gpt2 float32 |")) << md;
  EXPECT_TRUE(has(md, "| inference-graphs | gpt2 float32 |")) << md;
  // The server table's rows: the label names the invocation.
  EXPECT_TRUE(has(md, "| gpt2 [float32, eager] cpu (inference-graphs) | 2 |")) << md;
  EXPECT_TRUE(has(md, "| gpt2 [float32, eager] cpu (inference) | 2 |")) << md;
  // One invocation: no source column.
  in.inference.pop_back();
  const std::string one = render_markdown(in, analyze(in));
  EXPECT_FALSE(has(one, "| source |")) << one;
  EXPECT_TRUE(has(one, "| gpt2 [float32, eager] cpu | 2 |")) << one;
}

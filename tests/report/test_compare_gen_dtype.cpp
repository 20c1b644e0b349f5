// The generation record's own dtype (trainscope/generation_section.h GenerationSection::dtype):
// written into inference.json from the invocation's --dtype when its producer left it empty, read
// back before the command line (which old records fall back to), and kept by compare: a bfloat16
// cell is never paired with a float32 one, and the sides' compute types are a warning.
#include <gtest/gtest.h>

#include <string>

#include "gen_fixtures.h"
#include "trainscope/compare.h"

using namespace trainscope;
using namespace gen_fixture;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(CompareGenDtype, InferenceJsonWritesEachRunsDtype) {
  Provenance p;
  p.command_line = "trainscope infer --run runs/lm --dtype bfloat16";
  const auto runs = inference_runs_from_json(
      inference_json(p, {gen_run("cpu", 100), gen_run("cpu", 100, 0, {}, 16, "float16")}));
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].inference->generation->dtype, "bfloat16");  // from the invocation's --dtype
  EXPECT_EQ(runs[1].inference->generation->dtype, "float16");   // its own, kept
}

TEST(CompareGenDtype, TheRecordsDtypeComesBeforeTheCommandLine) {
  Provenance p;
  p.command_line = "trainscope infer --run runs/lm --dtype bfloat16";
  EXPECT_EQ(generation_dtype(gen_run("cpu", 100, 0, {}, 16, "float16"), p), "float16");
  EXPECT_EQ(generation_dtype(gen_run("cpu", 100), p), "bfloat16");  // an old record: the command line
  EXPECT_EQ(generation_dtype(gen_run("cpu", 100), Provenance{}), "float32");
}

TEST(CompareGenDtype, Bfloat16IsNotPairedWithFloat32) {
  // Both invocations' command lines say nothing of --dtype (a config or wrapper chose it): only
  // the records tell the types apart.
  const auto a = doc({gen_run("cuda:0", 200, 0, {}, 16, "float32")});
  const auto b = doc({gen_run("cuda:0", 400, 0, {}, 16, "bfloat16")});
  const CompareResult c = compare_generation({a}, {b}, "gen_tokens_per_s", 5);
  EXPECT_TRUE(c.rows.empty());
  ASSERT_EQ(c.only_in_a.size(), 1u);
  ASSERT_EQ(c.only_in_b.size(), 1u);
  EXPECT_TRUE(has(c.only_in_a[0], "gpt2 [float32, eager]")) << c.only_in_a[0];
  EXPECT_TRUE(has(c.only_in_b[0], "gpt2 [bfloat16, eager]")) << c.only_in_b[0];
  bool warned = false;
  for (const auto& w : c.warnings) warned |= has(w, "compute types (A: float32; B: bfloat16)");
  EXPECT_TRUE(warned);
  // One dtype on both sides: paired, no warning.
  const CompareResult same = compare_generation({b}, {b}, "gen_tokens_per_s", 5);
  EXPECT_EQ(same.rows.size(), 1u);
  for (const auto& w : same.warnings) EXPECT_FALSE(has(w, "compute types")) << w;
}

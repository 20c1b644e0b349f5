// compare on a language model's server runs (trainscope/compare.h compare_generation): runs served
// otherwise (fcfs against continuous batching, another max batch, request lengths from the text
// against fixed ones, other intra-op threads) are paired with "differs:" lines and a warning, as
// training runs whose settings differ; the batch column says how each rate was served.
#include <gtest/gtest.h>

#include <string>

#include "gen_fixtures.h"
#include "trainscope/compare.h"

using namespace trainscope;
using namespace gen_fixture;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

bool has_line(const std::vector<std::string>& lines, const std::string& part) {
  for (const auto& l : lines)
    if (has(l, part)) return true;
  return false;
}

}  // namespace

TEST(CompareGenServing, FcfsAgainstContinuousBatchingIsADifference) {
  const auto a = doc({gen_run("cuda:0", 200, 5.0, Serving{"fcfs", 1})});
  const auto b = doc({gen_run("cuda:0", 200, 2.0, Serving{"continuous", 32})});
  const CompareResult c = compare_generation({a}, {b}, "tpot_p99_ms", 5);
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].batch_label, "fcfs | cont x32");
  EXPECT_TRUE(has_line(c.setting_differences, "server batching: A fcfs; B cont x32"));
  EXPECT_TRUE(has_line(c.warnings, "differs in settings"));
  const std::string text = render_compare(c, "A", "B");
  EXPECT_TRUE(has(text, "differs: server batching: A fcfs; B cont x32")) << text;
  EXPECT_TRUE(has(text, "fcfs | cont x32")) << text;
}

TEST(CompareGenServing, MaxBatchLengthsAndThreadsAreDifferences) {
  const auto a = doc({gen_run("cuda:0", 200, 5.0, Serving{"continuous", 8, "fixed"}, 16)});
  const auto b = doc({gen_run("cuda:0", 200, 5.0, Serving{"continuous", 4096, "text"}, 8)});
  const CompareResult c = compare_generation({a}, {b}, "ttft_p99_ms", 5);
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_TRUE(has_line(c.setting_differences, "server batching: A cont x8; B cont x4096"));
  EXPECT_TRUE(has_line(c.setting_differences, "server request lengths: A fixed; B text"));
  EXPECT_TRUE(has_line(c.setting_differences, "intra-op threads: A 16; B 8"));
  // The pp/tg tests of the same runs differ only in their threads.
  const CompareResult tg = compare_generation({a}, {b}, "gen_tokens_per_s", 5);
  ASSERT_EQ(tg.setting_differences.size(), 1u);
  EXPECT_TRUE(has(tg.setting_differences[0], "intra-op threads: A 16; B 8"));
}

TEST(CompareGenServing, TheSameServingIsNoDifferenceAndNamesTheBatchColumn) {
  const auto a = doc({gen_run("cuda:0", 200, 5.0, Serving{"continuous", 32})});
  const auto b = doc({gen_run("cuda:0", 200, 5.2, Serving{"continuous", 32})});
  const CompareResult c = compare_generation({a}, {b}, "tpot_p99_ms", 5);
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_TRUE(c.setting_differences.empty());
  EXPECT_FALSE(has_line(c.warnings, "differs in settings"));
  EXPECT_EQ(c.rows[0].batch_label, "cont x32");
  // The row's batch cell says how it was served, not the batch 1 of an fcfs worker.
  const std::string text = render_compare(c, "A", "B");
  const auto row = text.substr(text.find("gpt2 [float32, eager] server 2 req/s"));
  EXPECT_TRUE(has(row.substr(0, row.find('\n')), "cont x32")) << text;
  // pp/tg rows keep their batch number.
  const CompareResult tg = compare_generation({a}, {b}, "gen_tokens_per_s", 5);
  ASSERT_EQ(tg.rows.size(), 1u);
  EXPECT_EQ(tg.rows[0].batch_label, "");
  EXPECT_EQ(tg.rows[0].batch_size, 1);
}

// A language model's generation results through the built binary's outputs (docs/generation.md#outputs):
// a tiny GPT trained for two steps on the CPU, `infer --run` with tiny pp/tg tests and one server
// rate, then `report` (RQ5 and the generation tables), `compare` (the gate on tokens/s and TPOT
// p99, its exit status on a regression) and `history` (the rows infer recorded).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "cli/lm_checkpoint.h"
#include "test_helpers.h"
#include "trainscope/fs.h"

using nlohmann::json;

namespace {

std::string root() { return lm_checkpoint::process_root("gen_outputs"); }

int run_binary(const std::vector<std::string>& args, std::string* out) {
  return lm_checkpoint::run_binary(root(), args, out);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Trained and measured once per test process: gpt-mini of one block, width 32, two steps; then
// pp8 and tg4 twice each and a server rate of 50 requests/s, recorded in the run's history.
const std::string& run_dir() {
  static std::string dir = [] {
    const std::string run = lm_checkpoint::train_tiny_gpt(root(), [](const std::string& corpus) {
      std::ofstream o(corpus + "/part.txt");
      for (int i = 0; i < 200; ++i) o << "the quick brown fox jumps over the lazy dog " << (i % 7) << ".\n";
    });
    std::string out;
    const int rc = run_binary({"infer", "--run", run, "--devices", "cpu", "--threads", "1", "--no-telemetry", "--pp",
                               "8", "--tg", "4", "--repetitions", "2", "--gen-batches", "none", "--server-rates", "50",
                               "--prompt-len", "4", "--output-len", "3"},
                              &out);
    EXPECT_EQ(rc, 0) << out;
    return run;
  }();
  return dir;
}

// inference.json with every tg test's tokens/s scaled by `factor` (a slower or faster candidate).
std::string scaled_copy(double factor, const std::string& name) {
  std::ifstream in(run_dir() + "/inference.json");
  json j = json::parse(in);
  for (auto& r : j["runs"])
    for (auto& t : r["inference"]["generation"]["tests"]) {
      if (t["n_prompt"].get<int64_t>() != 0) continue;
      for (auto& s : t["samples_tokens_per_s"]) s = s.get<double>() * factor;
      t["tokens_per_s_mean"] = t["tokens_per_s_mean"].get<double>() * factor;
    }
  const std::string path = root() + "/" + name;
  trainscope::write_file_atomic(path, j.dump(2));
  return path;
}

}  // namespace

TEST(GenerateOutputsE2e, ReportAnswersRq5AndHasTheGenerationTables) {
  std::string out;
  ASSERT_EQ(run_binary({"report", run_dir()}, &out), 0) << out;
  const std::string md = trainscope::test::read_text(run_dir() + "/report.md");
  EXPECT_TRUE(has(md, "## Generation (language models)")) << md;
  EXPECT_TRUE(has(md, "| gpt-mini float32 |")) << md;
  EXPECT_TRUE(has(md, "| tg4 |")) << md;
  EXPECT_TRUE(has(md, "TTFT p50/p90/p99 ms")) << md;
  EXPECT_TRUE(has(md, "Generation of `gpt-mini [float32, eager]` on cpu (1 thread): pp8 ")) << md;
  // The CI machine has no GPU: RQ5 says so and how to measure it.
  EXPECT_TRUE(has(md, "not measured on a GPU")) << md;
  const std::string html = trainscope::test::read_text(run_dir() + "/report.html");
  EXPECT_TRUE(has(html, "<h2 id=\"generation\">")) << "report.html has no generation section";
}

TEST(GenerateOutputsE2e, CompareGatesTokensPerSecondAndTpot) {
  std::string out;
  // The folder against its own inference.json: a side without training runs, so tokens/s is the default.
  ASSERT_EQ(run_binary({"compare", run_dir(), run_dir() + "/inference.json"}, &out), 0) << out;
  EXPECT_TRUE(has(out, "metric gen_tokens_per_s (higher is better)")) << out;
  EXPECT_TRUE(has(out, "gpt-mini [float32, eager] tg4")) << out;
  EXPECT_TRUE(has(out, "no regression")) << out;
  // Decoding at half the rate: exit 4, the regression named.
  ASSERT_EQ(run_binary({"compare", run_dir(), scaled_copy(0.5, "slower.json")}, &out), 4) << out;
  EXPECT_TRUE(has(out, "REGRESSION")) << out;
  EXPECT_TRUE(has(out, "-50.0%")) << out;
  ASSERT_EQ(run_binary({"compare", run_dir(), scaled_copy(1.0, "same.json"), "--metric", "tpot_p99_ms"}, &out), 0) << out;
  EXPECT_TRUE(has(out, "server 50 req/s")) << out;
  // Two run folders compare their training by default; the generation metric is asked for.
  ASSERT_EQ(run_binary({"compare", run_dir(), run_dir(), "--metric", "ttft_p99_ms"}, &out), 0) << out;
  EXPECT_TRUE(has(out, "metric ttft_p99_ms (lower is better)")) << out;
  EXPECT_NE(run_binary({"compare", run_dir(), run_dir(), "--metric", "tokens_s"}, &out), 0);
  EXPECT_TRUE(has(out, "gen_tokens_per_s, tpot_p99_ms, ttft_p99_ms")) << out;
}

TEST(GenerateOutputsE2e, HistoryListsWhatInferRecorded) {
  std::string out;
  const std::string db = root() + "/runs/history.sqlite";
  run_dir();
  ASSERT_EQ(run_binary({"history", "--db", db}, &out), 0) << out;
  EXPECT_TRUE(has(out, "generation tests")) << out;
  EXPECT_TRUE(has(out, "gpt-mini [float32, eager]")) << out;
  EXPECT_TRUE(has(out, "tg4")) << out;
  EXPECT_TRUE(has(out, "generation server runs")) << out;
  // Importing the folder again adds no generation row: the invocation is there already.
  ASSERT_EQ(run_binary({"history", "import", run_dir(), "--db", db}, &out), 0) << out;
  ASSERT_EQ(run_binary({"history", "--db", db}, &out), 0) << out;
  size_t rows = 0;
  for (size_t at = 0; (at = out.find(" tg4 ", at)) != std::string::npos; ++at) ++rows;
  EXPECT_EQ(rows, 1u) << out;
}

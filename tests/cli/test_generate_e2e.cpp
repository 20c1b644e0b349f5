// Token generation end to end through the built `trainscope` binary (docs/generation.md): a tiny
// GPT trained for two steps, then `infer` runs pp/tg, the decode batch sweep and the server
// scenario on its checkpoint, writes inference.json and prints llama-bench's formats; bad inputs
// are clear errors.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "cli/lm_checkpoint.h"

using nlohmann::json;

namespace {

std::string root() { return lm_checkpoint::process_root("gen_e2e"); }

int run_binary(const std::vector<std::string>& args, std::string* out) {
  return lm_checkpoint::run_binary(root(), args, out);
}

// Trains once per test process: a GPT of one block, width 32, windows of 32 tokens (context 256), for two steps.
const std::string& run_dir() {
  static std::string dir = lm_checkpoint::train_tiny_gpt(root(), [](const std::string& corpus) {
    for (int f = 0; f < 2; ++f) {
      std::ofstream o(corpus + "/part" + std::to_string(f) + ".txt");
      for (int i = 0; i < 100; ++i) o << "the quick brown fox jumps over the lazy dog " << (i % 7) << ".\n";
    }
  });
  return dir;
}

std::vector<std::string> infer_args(std::vector<std::string> more) {
  std::vector<std::string> a = {"infer", "--run", run_dir(), "--devices", "cpu", "--threads", "1", "--no-telemetry"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

}  // namespace

TEST(GenerateE2e, InferRunsEveryScenarioOnALanguageModelCheckpoint) {
  const std::string out_json = root() + "/gen.json";
  std::string out;
  const int rc = run_binary(infer_args({"--pp", "16", "--tg", "8", "--repetitions", "2", "--gen-batches", "1,2",
                                        "--server-rates", "50,100", "--prompt-len", "8", "--output-len", "4",
                                        "--slo-ttft-ms", "1000", "--slo-tpot-ms", "1000", "-o", out_json}),
                            &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("| model | size | params | backend | threads | test | t/s |"), std::string::npos) << out;
  EXPECT_NE(out.find("| pp16 |"), std::string::npos) << out;
  EXPECT_NE(out.find("| tg8 |"), std::string::npos) << out;
  EXPECT_NE(out.find("TTFT p50/p90/p99 ms"), std::string::npos) << out;
  std::ifstream f(out_json);
  const json j = json::parse(f);
  ASSERT_EQ(j["runs"].size(), 1u);
  const auto& g = j["runs"][0]["inference"]["generation"];
  ASSERT_TRUE(g.is_object()) << j.dump(2);
  EXPECT_EQ(g["context"], 256);  // gpt-mini's position embedding (the preset's, longer than --seq-len)
  EXPECT_EQ(g["decoding"], "greedy (argmax)");
  ASSERT_EQ(g["tests"].size(), 2u);
  EXPECT_EQ(g["tests"][0]["test"], "pp16");
  EXPECT_EQ(g["tests"][0]["samples_ns"].size(), 2u);
  EXPECT_GT(g["tests"][1]["tokens_per_s_mean"].get<double>(), 0);
  EXPECT_EQ(g["decode_sweep"]["points"].size(), 2u);
  ASSERT_EQ(g["server"]["runs"].size(), 2u);
  const auto& s = g["server"]["runs"][0];
  EXPECT_EQ(s["requests_served"], s["requests_issued"]);
  EXPECT_EQ(s["output_tokens"].get<int64_t>(), 4 * s["requests_served"].get<int64_t>());
  EXPECT_TRUE(s["tpot"]["p99_ms"].is_number());
  EXPECT_TRUE(s["goodput_per_s"].is_number());
  EXPECT_NE(g["prefill_energy"]["absent_reason"].get<std::string>().find("telemetry is off"), std::string::npos);
  EXPECT_GT(g["model_parameters"].get<int64_t>(), 0);
}

TEST(GenerateE2e, OutputJsonlIsLlamaBenchsFields) {
  std::string out;
  ASSERT_EQ(run_binary(infer_args({"--pp", "8", "--tg", "4", "--repetitions", "1", "--gen-batches", "none",
                                   "--output", "jsonl", "-o", root() + "/jsonl.json"}),
                       &out),
            0)
      << out;
  std::istringstream in(out);
  std::string line;
  int rows = 0;
  while (std::getline(in, line)) {
    if (line.rfind("{\"build_commit\"", 0) != 0) continue;
    const json o = json::parse(line);
    for (const char* k : {"model_filename", "model_size", "model_n_params", "n_threads", "n_prompt", "n_gen", "n_depth",
                          "avg_ns", "stddev_ns", "avg_ts", "stddev_ts", "samples_ns", "samples_ts"})
      EXPECT_TRUE(o.contains(k)) << k;
    ++rows;
  }
  EXPECT_EQ(rows, 2) << out;
}

TEST(GenerateE2e, BadInputsAreClearErrors) {
  std::string out;
  EXPECT_NE(run_binary(infer_args({"--pp", "300", "--gen-batches", "none", "-o", root() + "/bad.json"}), &out), 0);
  EXPECT_NE(out.find("--pp 300"), std::string::npos) << out;
  EXPECT_NE(out.find("context of 256"), std::string::npos) << out;
  EXPECT_NE(run_binary(infer_args({"--gen-batches", "0", "-o", root() + "/bad.json"}), &out), 0);
  EXPECT_NE(out.find("--gen-batches 0"), std::string::npos) << out;
  EXPECT_NE(run_binary(infer_args({"--scenario", "offline", "-o", root() + "/bad.json"}), &out), 0);
  EXPECT_NE(out.find("is a language model"), std::string::npos) << out;
  EXPECT_NE(out.find("--scenario"), std::string::npos) << out;
  EXPECT_NE(run_binary(infer_args({"--output", "xml", "--gen-batches", "none", "-o", root() + "/bad.json"}), &out), 0);
  EXPECT_NE(out.find("--output xml"), std::string::npos) << out;
}

TEST(GenerateE2e, AnImageCheckpointIsNoLanguageModel) {
  std::string out;
  ASSERT_EQ(run_binary({"run", "--devices", "cpu", "-m", "mlp", "--data-format", "synthetic", "--max-steps", "2",
                        "--warmup-steps", "0", "--min-time", "0", "--no-inference", "--threads", "1", "--no-progress",
                        "-b", "8", "--out", root() + "/runs", "--name", "img"},
                       &out),
            0)
      << out;
  EXPECT_NE(run_binary({"infer", "--run", root() + "/runs/img", "--devices", "cpu", "--no-telemetry", "--pp", "8", "-o",
                        root() + "/img.json"},
                       &out),
            0);
  EXPECT_NE(out.find("not a language model's"), std::string::npos) << out;
  EXPECT_NE(out.find("--pp"), std::string::npos) << out;
}

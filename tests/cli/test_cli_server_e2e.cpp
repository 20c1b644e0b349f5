// The server scenario's continuous batching and text lengths end to end through the built
// `trainscope` binary (docs/generation.md#what-the-server-scenario-models-and-what-it-does-not):
// a tiny GPT trained for two steps on paragraphs of text, then `infer --server-rates` with each
// batching and lengths; inference.json records how the requests were served; bad values are
// clear errors.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "cli/lm_checkpoint.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string root() { return lm_checkpoint::process_root("server_e2e"); }

int run_binary(const std::vector<std::string>& args, std::string* out) {
  return lm_checkpoint::run_binary(root(), args, out);
}

// Paragraphs of 1 to 6 sentences separated by blank lines (corpus/), and the same sentences
// without blank lines (flat/).
const std::string& run_dir() {
  static std::string dir = lm_checkpoint::train_tiny_gpt(root(), [](const std::string& corpus) {
    fs::create_directories(root() + "/flat");
    for (int f = 0; f < 2; ++f) {
      std::ofstream o(corpus + "/part" + std::to_string(f) + ".txt");
      std::ofstream flat(root() + "/flat/part" + std::to_string(f) + ".txt");
      for (int p = 0; p < 60; ++p) {
        for (int s = 0; s <= p % 6; ++s) o << "the fox jumps " << s << ". ", flat << "the fox jumps " << s << ".\n";
        o << "\n\n";
      }
    }
  });
  return dir;
}

std::vector<std::string> server_args(std::vector<std::string> more) {
  std::vector<std::string> a = {"infer", "--run", run_dir(), "--devices", "cpu", "--threads", "1", "--no-telemetry",
                                "--pp", "0", "--tg", "0", "--gen-batches", "none", "--server-rates", "200",
                                "--prompt-len", "40", "--output-len", "12"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

json server_run(const std::string& path) {
  std::ifstream f(path);
  const json j = json::parse(f);
  return j["runs"][0]["inference"]["generation"]["server"];
}

}  // namespace

TEST(CliServerE2e, ContinuousBatchingWithLengthsFromTheText) {
  const std::string path = root() + "/cont.json";
  std::string out;
  ASSERT_EQ(run_binary(server_args({"--server-lengths", "text", "--server-max-batch", "4", "-o", path}), &out), 0)
      << out;
  EXPECT_NE(out.find("| batching | mean batch |"), std::string::npos) << out;
  EXPECT_NE(out.find("continuous x4"), std::string::npos) << out;
  const json s = server_run(path);
  EXPECT_NE(s["worker"].get<std::string>().find("continuous batching"), std::string::npos) << s.dump(2);
  const json& r = s["runs"][0];
  EXPECT_EQ(r["batching"], "continuous");
  EXPECT_EQ(r["max_batch"], 4);
  EXPECT_EQ(r["lengths"], "text");
  EXPECT_EQ(r["requests_served"], r["requests_issued"]);
  EXPECT_GE(r["mean_running_batch"].get<double>(), 1.0);
  EXPECT_LE(r["mean_running_batch"].get<double>(), 4.0);
  const json& p = r["prompt_tokens_per_request"];
  const json& o = r["output_tokens_per_request"];
  EXPECT_LE(p["max"].get<int64_t>(), 40);
  EXPECT_LE(o["max"].get<int64_t>(), 12);
  EXPECT_LT(p["min"].get<int64_t>(), p["max"].get<int64_t>()) << "lengths follow the paragraphs";
  EXPECT_LE(p["p50"].get<double>(), p["p99"].get<double>());
  // every token asked for was served: the output tokens are the sum of the requests' lengths
  EXPECT_NEAR(r["output_tokens"].get<double>(), o["mean"].get<double>() * r["requests_issued"].get<double>(), 1e-6);
}

TEST(CliServerE2e, FcfsOnFixedLengths) {
  const std::string path = root() + "/fcfs.json";
  std::string out;
  ASSERT_EQ(run_binary(server_args({"--server-batching", "fcfs", "-o", path}), &out), 0) << out;
  const json s = server_run(path);
  const json& r = s["runs"][0];
  EXPECT_EQ(r["batching"], "fcfs");
  EXPECT_EQ(r["max_batch"], 1);
  EXPECT_EQ(r["mean_running_batch"], 1.0);
  EXPECT_EQ(r["lengths"], "fixed");
  EXPECT_EQ(r["prompt_tokens_per_request"]["min"], 40);
  EXPECT_EQ(r["output_tokens_per_request"]["max"], 12);
}

TEST(CliServerE2e, BadValuesAreClearErrors) {
  std::string out;
  EXPECT_NE(run_binary(server_args({"--server-batching", "batched", "-o", root() + "/bad.json"}), &out), 0);
  EXPECT_NE(out.find("batched"), std::string::npos) << out;
  EXPECT_NE(out.find("fcfs or continuous"), std::string::npos) << out;
  EXPECT_NE(run_binary(server_args({"--server-max-batch", "0", "-o", root() + "/bad.json"}), &out), 0);
  EXPECT_NE(out.find("--server-max-batch"), std::string::npos) << out;
  // text without blank lines has no paragraph boundary: the fix is named
  EXPECT_NE(run_binary(server_args({"--server-lengths", "text", "--data", root() + "/flat", "-o", root() + "/bad.json"}),
                       &out),
            0);
  EXPECT_NE(out.find("--server-lengths text"), std::string::npos) << out;
  EXPECT_NE(out.find("--server-lengths fixed"), std::string::npos) << out;
}

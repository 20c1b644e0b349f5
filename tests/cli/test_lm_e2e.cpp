// A language model end to end through the built `trainscope` binary: a tiny GPT (one block,
// width 32) trains on a small text corpus, and its record, TensorBoard scalars, `compare`,
// `history` and report carry the task's figures (docs/language-models.md).
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "tboard/tfevents_reader.h"
#include "test_helpers.h"
#include "trainscope/fs.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

int run_binary(const std::vector<std::string>& args, std::string* out) {
  const std::string log = ::testing::TempDir() + "lm_e2e_" + std::to_string(getpid()) + ".log";
  const int rc = trainscope::test::run_trainscope(args, log);
  *out = trainscope::test::read_text(log);
  return rc;
}

std::string root() { return ::testing::TempDir() + "lm_e2e_" + std::to_string(getpid()); }

// Trains once per test process: two text files (a validation split by whole files needs two).
const json& trained() {
  static json results = [] {
    trainscope::remove_tree(root());
    fs::create_directories(root() + "/corpus");
    for (int f = 0; f < 2; ++f) {
      std::ofstream o(root() + "/corpus/part" + std::to_string(f) + ".txt");
      for (int i = 0; i < 200; ++i) o << "the quick brown fox jumps over the lazy dog " << (i % 7) << ".\n";
    }
    std::string out;
    const int rc = run_binary({"run", "--devices", "cpu", "--models", "gpt-mini", "--lm-layers", "1", "--lm-width", "32",
                               "--lm-heads", "2", "--data-format", "text", "--data", root() + "/corpus", "--seq-len",
                               "16", "-b", "4", "--max-steps", "12", "--warmup-steps", "2", "--min-time", "0",
                               "--eval-windows", "8", "--no-inference", "--threads", "1", "--no-progress", "--out",
                               root() + "/runs", "--name", "lm"},
                              &out);
    EXPECT_EQ(rc, 0) << out;
    std::ifstream f(root() + "/runs/lm/results.json");
    return f ? json::parse(f) : json::object();
  }();
  return results;
}

}  // namespace

TEST(LmE2e, TheRecordNamesItsTaskAndItsLanguageModelFigures) {
  const auto& j = trained();
  ASSERT_EQ(j.value("runs", json::array()).size(), 1u);
  const auto& r = j["runs"][0];
  EXPECT_EQ(j["schema_version"], 2);
  EXPECT_EQ(r["task"], "causal_lm");
  EXPECT_EQ(r["throughput_unit"], "tokens/s");
  EXPECT_EQ(r["input_shape"], json({1, 1, 16}));
  const auto& lm = r["language_model"];
  EXPECT_EQ(lm["seq_len"], 16);
  EXPECT_EQ(lm["vocab_size"], 256);
  EXPECT_EQ(lm["tokenizer"], "bytes");
  EXPECT_EQ(lm["layers"], 1);
  EXPECT_EQ(lm["d_model"], 32);
  // tokens/s is samples (windows)/s x T; perplexity and bits per byte follow from the loss
  EXPECT_NEAR(lm["steady_tokens_per_s"].get<double>(), 16 * r["steady_samples_per_s"].get<double>(), 1e-6);
  const double loss = lm["val_loss"].get<double>();
  EXPECT_GT(loss, 0.5);
  EXPECT_LT(loss, std::log(256.0) + 0.5);  // below chance level after 12 steps, or near it
  EXPECT_NEAR(lm["val_perplexity"].get<double>(), std::exp(loss), 1e-9);
  EXPECT_NEAR(lm["val_bits_per_byte"].get<double>(), loss / std::log(2.0), 1e-9);
  EXPECT_DOUBLE_EQ(loss, r["epochs"].back()["test_loss"].get<double>());
  // PaLM: 6 N + 12 L d T per token, N = every parameter but the position embedding (256 x 32)
  const double n = r["parameters"].get<double>() - 256.0 * 32;
  EXPECT_DOUBLE_EQ(lm["train_flops_per_token"].get<double>(), 6 * n + 12.0 * 1 * 32 * 16);
  EXPECT_DOUBLE_EQ(r["forward_flops_per_sample"].get<double>(), 16 * (6 * n + 12.0 * 32 * 16) / 3);
  EXPECT_TRUE(r["epochs"][0]["train_accuracy_pct"].is_null());  // not measured for a language model
}

TEST(LmE2e, TensorBoardCompareHistoryAndTheReportCarryTheTask) {
  const auto& j = trained();
  ASSERT_EQ(j.value("runs", json::array()).size(), 1u);
  const std::string run_dir = root() + "/runs/lm";
  const std::string tb = run_dir + "/tensorboard/" + j["runs"][0]["run_id"].get<std::string>();
  ASSERT_TRUE(fs::is_directory(tb));
  const auto file = fs::directory_iterator(tb)->path().string();
  std::ifstream in(file, std::ios::binary);
  auto events = tfevents_reader::read(std::string((std::istreambuf_iterator<char>(in)), {}));
  EXPECT_EQ(events.scalars["run/val_loss"].size(), 1u);
  EXPECT_EQ(events.scalars["run/steady_tokens_per_s"].size(), 1u);
  EXPECT_TRUE(events.scalars["epoch/train_accuracy_pct"].empty());
  std::string out;
  EXPECT_EQ(run_binary({"compare", run_dir, run_dir}, &out), 0) << out;
  EXPECT_NE(out.find("gpt-mini"), std::string::npos) << out;
  EXPECT_EQ(run_binary({"history", "--db", root() + "/runs/history.sqlite"}, &out), 0) << out;
  EXPECT_NE(out.find("gpt-mini"), std::string::npos) << out;
  std::ifstream report(run_dir + "/report.md");
  const std::string md((std::istreambuf_iterator<char>(report)), {});
  EXPECT_NE(md.find("gpt-mini"), std::string::npos);
  EXPECT_NE(md.find("| device | batch | tokens/s |"), std::string::npos) << "the summary counts tokens";
  EXPECT_NE(md.find("energy/token"), std::string::npos);
  EXPECT_NE(md.find("## Language models"), std::string::npos);
  EXPECT_NE(md.find(fmt::format("{:.2f}", j["runs"][0]["language_model"]["val_perplexity"].get<double>())), std::string::npos)
      << "the perplexity is in the report";
}

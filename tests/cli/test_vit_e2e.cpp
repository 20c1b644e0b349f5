// A vision transformer end to end through the built `trainscope` binary: `-m vit-ti` trains on
// synthetic 3 x 32 x 32 images (patch 4), its record carries the counted parameters and FLOPs,
// and `infer --run` loads its checkpoint (docs/workloads.md#models).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "test_helpers.h"
#include "trainscope/fs.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string root() { return ::testing::TempDir() + "vit_e2e_" + std::to_string(getpid()); }

int run_binary(const std::vector<std::string>& args, std::string* out) {
  const std::string log = root() + ".log";
  const int rc = trainscope::test::run_trainscope(args, log);
  *out = trainscope::test::read_text(log);
  return rc;
}

// ViT-Ti for 3 x 32 x 32 images and 4 classes, from its shape (src/workload/vit.h): patch 4,
// 64 patches + the class token, d 192, MLP 768, 12 layers.
constexpr int64_t kD = 192, kMlp = 768, kPatches = 64, kTokens = 65, kLayers = 12, kClasses = 4;
constexpr int64_t kParameters = (3 * 16 * kD + kD) + kD + kTokens * kD +
                                kLayers * (4 * kD + 3 * kD * kD + 3 * kD + kD * kD + kD + 2 * kD * kMlp + kMlp + kD) +
                                2 * kD + kD * kClasses + kClasses;
constexpr double kForwardFlops = 2.0 * kPatches * 48 * kD +
                                 kLayers * (2.0 * kTokens * (4 * kD * kD + 2 * kD * kMlp) + 4.0 * kTokens * kTokens * kD) +
                                 2.0 * kD * kClasses;

// Trains once per test process.
const json& trained() {
  static json results = [] {
    trainscope::remove_tree(root());
    fs::create_directories(root());
    std::ofstream(root() + "/synthetic.toml") << "[data]\nformat = \"synthetic\"\nsynthetic_train = 64\n"
                                                 "synthetic_test = 16\nsynthetic_channels = 3\nsynthetic_size = 32\n"
                                                 "synthetic_classes = 4\n";
    std::string out;
    const int rc = run_binary({"run", "--config", root() + "/synthetic.toml", "--devices", "cpu", "--models", "vit-ti",
                               "-b", "8", "--max-steps", "6", "--warmup-steps", "2", "--min-time", "0",
                               "--no-inference", "--threads", "1", "--no-progress", "--out", root() + "/runs", "--name",
                               "vit"},
                              &out);
    EXPECT_EQ(rc, 0) << out;
    std::ifstream f(root() + "/runs/vit/results.json");
    return f ? json::parse(f) : json::object();
  }();
  return results;
}

}  // namespace

TEST(VitE2e, TrainsOnSyntheticImagesWithItsCountedParametersAndFlops) {
  const auto& j = trained();
  ASSERT_EQ(j.value("runs", json::array()).size(), 1u);
  const auto& r = j["runs"][0];
  EXPECT_EQ(r["model"], "vit-ti");
  EXPECT_EQ(r["status"], "ok") << r.dump();
  EXPECT_EQ(r["task"], "classification");
  EXPECT_EQ(r["input_shape"], json({3, 32, 32}));
  EXPECT_EQ(r["parameters"], kParameters);
  EXPECT_NEAR(r["forward_flops_per_sample"].get<double>(), kForwardFlops, 1.0);
  EXPECT_TRUE(r["final_train_loss"].is_number()) << r.dump();
}

TEST(VitE2e, InferLoadsTheRunsCheckpoint) {
  ASSERT_FALSE(trained().empty());
  std::string out;
  const int rc = run_binary({"infer", "--run", root() + "/runs/vit", "--devices", "cpu", "--scenario", "single-stream",
                             "--budget", "1", "--no-telemetry"},
                            &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("cpu-vit-ti-b8-r0.pt"), std::string::npos) << out;
  EXPECT_NE(out.find("single-stream:"), std::string::npos) << out;
}

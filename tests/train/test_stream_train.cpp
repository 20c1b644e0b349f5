// Training from a streamed image folder (docs/input-pipeline.md): the trainer's BatchSource,
// the record's input_pipeline section and the bad-image policy end to end.
#include <gtest/gtest.h>

#include "trainscope/fs.h"

#include <filesystem>
#include <fstream>

#include "train/trainer.h"
#include "train_helpers.h"
#include "trainscope/error.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>

using namespace trainscope;
namespace fs = std::filesystem;

namespace {

// Two classes told apart by brightness: train/ with 12 and test/ with 3 RGB PNGs of 10x10 per class.
std::string two_class_folder(const std::string& name) {
  const std::string root = ::testing::TempDir() + name + "/";
  trainscope::remove_tree(root);
  for (const auto& [split, count] : {std::pair<std::string, int>{"train", 12}, {"test", 3}})
    for (int c = 0; c < 2; ++c) {
      const std::string dir = root + split + "/c" + std::to_string(c) + "/";
      fs::create_directories(dir);
      for (int i = 0; i < count; ++i) {
        std::vector<uint8_t> px(10 * 10 * 3, static_cast<uint8_t>(c == 0 ? 30 + i : 200 + i));
        stbi_write_png((dir + std::to_string(i) + ".png").c_str(), 10, 10, 3, px.data(), 30);
      }
    }
  return root;
}

Workload streamed(const std::string& root, const std::string& on_bad = "fail") {
  DataConfig d;
  d.format = "folder";
  d.path = root;
  d.image_size = 8;
  d.image_channels = 3;
  d.cache_data = "off";
  d.data_workers = 2;
  d.on_bad_image = on_bad;
  return make_workload(load_datasets(d, 5));
}

RunSpec spec(int64_t epochs) {
  RunSpec s;
  s.run_id = "stream";
  s.device = "cpu";
  s.model = "mlp";
  s.batch_size = 4;
  s.train.epochs = epochs;
  s.train.warmup_steps = 1;
  s.origin = std::chrono::steady_clock::now();
  return s;
}

}  // namespace

TEST(StreamTrain, TrainsFromTheStreamAndRecordsThePipeline) {
  auto w = streamed(two_class_folder("stream_train"));
  ASSERT_TRUE(w.data.stream);
  const int64_t n = w.data.train.count;
  TrainHooks hooks;
  auto r = train_run(spec(2), w, hooks);
  ASSERT_EQ(r.status, RunStatus::kOk) << r.failure_reason;
  ASSERT_EQ(r.epochs.size(), 2u);
  EXPECT_EQ(r.epochs[0].samples, n);
  ASSERT_TRUE(r.input_pipeline);
  const auto& p = *r.input_pipeline;
  EXPECT_EQ(p.mode, "stream");
  EXPECT_EQ(p.workers, 2);
  EXPECT_EQ(p.workers_reason, "--data-workers / data.data_workers");
  EXPECT_EQ(p.images_decoded, 2 * n);
  EXPECT_EQ(p.bad_images, 0);
  ASSERT_TRUE(p.prefetch_batches && p.queue_max_depth);
  EXPECT_LE(*p.queue_max_depth, *p.prefetch_batches);
  EXPECT_EQ(p.queue_depth.size(), static_cast<size_t>(2 * r.steps_per_epoch));
  EXPECT_TRUE(p.decode_per_s_per_worker && *p.decode_per_s_per_worker > 0);
  EXPECT_TRUE(p.loader_cpu_pct);
  EXPECT_TRUE(p.trainer_cpu_pct);
  ASSERT_TRUE(r.phases);
}

TEST(StreamTrain, InMemoryRunsRecordTheirMode) {
  auto w = test::synthetic_workload(64, 16, 8);
  TrainHooks hooks;
  auto r = train_run(spec(1), w, hooks);
  ASSERT_TRUE(r.input_pipeline);
  EXPECT_EQ(r.input_pipeline->mode, "memory");
  EXPECT_FALSE(r.input_pipeline->workers);
}

TEST(StreamTrain, BadImageFailsTheRunByDefaultOrIsSkippedAndCounted) {
  auto root = two_class_folder("stream_train_bad");
  std::ofstream(root + "train/c1/5.png", std::ios::trunc) << "\x89PNG truncated";
  {
    auto w = streamed(root);
    TrainHooks hooks;
    try {
      train_run(spec(1), w, hooks);
      FAIL() << "a corrupt image did not fail the run";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kDataFormat);
      EXPECT_NE(std::string(e.what()).find("c1/5.png"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--on-bad-image skip"), std::string::npos) << e.what();
    }
  }
  auto w = streamed(root, "skip");
  TrainHooks hooks;
  auto r = train_run(spec(2), w, hooks);
  ASSERT_EQ(r.status, RunStatus::kOk) << r.failure_reason;
  ASSERT_TRUE(r.input_pipeline);
  EXPECT_EQ(w.data.train.count, 24);
  EXPECT_EQ(r.input_pipeline->bad_images, 2);  // once per epoch
  EXPECT_EQ(r.epochs[0].samples, 23);
  ASSERT_FALSE(r.input_pipeline->problems.empty());
  EXPECT_NE(r.input_pipeline->problems[0].find("train/c1/5.png"), std::string::npos);
}

// Variants in the trainer and the matrix (docs/variants.md): bf16 autocast and its guard,
// channels_last, the graph capture's fallback on a CPU build, --target-accuracy, applicability.
#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>

#include "trainscope/fs.h"

#include <filesystem>
#include <map>

#include "train/compat.h"
#include "train/device.h"
#include "train/trainer.h"
#include "train_helpers.h"
#include "train/variant_exec.h"
#include "trainscope/error.h"
#include "trainscope/runner.h"

using namespace trainscope;
namespace fs = std::filesystem;

using test::synthetic_workload;

namespace {

RunSpec spec(const std::string& model, const std::string& variant, int64_t epochs = 1) {
  RunSpec s;
  s.run_id = "t";
  s.device = "cpu";
  s.model = model;
  s.batch_size = 64;
  s.train.epochs = epochs;
  s.train.warmup_steps = 2;
  s.variant = variant;
  s.origin = std::chrono::steady_clock::now();
  return s;
}

MatrixConfig small_matrix(const std::string& name) {
  MatrixConfig m;
  m.devices = {"cpu"};
  m.models = {"mlp"};
  m.batch_sizes = {64};
  m.data.format = "synthetic";
  m.data.synthetic_train = 256;
  m.data.synthetic_test = 64;
  m.data.synthetic_size = 16;
  m.train.warmup_steps = 1;
  m.telemetry.enabled = false;
  m.profile.enabled = false;
  m.inference.enabled = false;
  m.out_dir = ::testing::TempDir() + "variants";
  m.run_name = name;
  trainscope::remove_tree(m.out_dir + "/" + name);
  m.progress = false;
  m.train.min_time_s = 0;  // the requested epochs only
  return m;
}

}  // namespace

TEST(VariantGuard, Bf16SwitchesAutocastOnAndRestoresIt) {
  const torch::Device cpu("cpu");
  ASSERT_FALSE(compat::autocast_enabled(false));
  const auto dtype = compat::autocast_dtype(false);
  {
    VariantGuard g(parse_variant("bf16", "x"), cpu);
    EXPECT_TRUE(compat::autocast_enabled(false));
    EXPECT_EQ(compat::autocast_dtype(false), at::kBFloat16);
    auto y = torch::mm(torch::ones({4, 4}), torch::ones({4, 4}));
    EXPECT_EQ(y.scalar_type(), at::kBFloat16);  // autocast reached the matrix product
  }
  EXPECT_FALSE(compat::autocast_enabled(false));
  EXPECT_EQ(compat::autocast_dtype(false), dtype);
  {
    VariantGuard g(parse_variant("eager", "x"), cpu);
    EXPECT_FALSE(compat::autocast_enabled(false));
  }
}

// Found on the H200: with LibTorch's weight-cast cache on for a whole run, every forward after
// the first used the first step's bf16 weights (resnet18 bf16 lost 16 points of accuracy) and
// a later CUDA-graph capture failed. The guard keeps the cache off: a forward after an update
// sees the updated weights.
TEST(VariantGuard, Bf16ForwardSeesUpdatedWeights) {
  torch::manual_seed(3);
  torch::nn::Linear lin(8, 4);
  auto x = torch::randn({2, 8});
  const bool cache_before = at::autocast::is_autocast_cache_enabled();
  {
    VariantGuard g(parse_variant("bf16", "x"), torch::Device("cpu"));
    EXPECT_FALSE(at::autocast::is_autocast_cache_enabled());
    auto before = lin->forward(x).to(at::kFloat);
    {
      torch::NoGradGuard ng;
      lin->weight.add_(1.0);  // what an optimizer step does
    }
    auto after = lin->forward(x).to(at::kFloat);
    EXPECT_GT((after - before).abs().max().item<float>(), 0.5f) << "the forward used a stale bf16 copy of the weights";
  }
  EXPECT_EQ(at::autocast::is_autocast_cache_enabled(), cache_before);
}

TEST(VariantGuard, Tf32FlagsAreRestored) {
  auto& ctx = at::globalContext();
  const bool cublas = ctx.allowTF32CuBLAS(), cudnn = ctx.allowTF32CuDNN();
  {
    VariantGuard g(parse_variant("tf32", "x"), torch::Device("cpu"));
    EXPECT_TRUE(ctx.allowTF32CuBLAS());
    EXPECT_TRUE(ctx.allowTF32CuDNN());
  }
  EXPECT_EQ(ctx.allowTF32CuBLAS(), cublas);
  EXPECT_EQ(ctx.allowTF32CuDNN(), cudnn);
}

TEST(VariantGuard, CudnnBenchmarkIsSetOnlyOnCudaAndRestored) {
  auto& ctx = at::globalContext();
  const bool before = ctx.benchmarkCuDNN();
  {
    VariantGuard g(parse_variant("eager", "x"), torch::Device("cpu"), !before);
    EXPECT_EQ(ctx.benchmarkCuDNN(), before) << "a CPU run must not touch cuDNN's global state";
  }
  if (!torch::cuda::is_available()) return;
  {
    VariantGuard g(parse_variant("eager", "x"), torch::Device("cuda:0"), !before);
    EXPECT_EQ(ctx.benchmarkCuDNN(), !before);
  }
  EXPECT_EQ(ctx.benchmarkCuDNN(), before);
}

TEST(VariantExec, ChannelsLastConvertsConvKernelsAndForwardGivesFloatLogits) {
  auto m = make_model("cnn", 1, 16, 16, 10);
  EXPECT_TRUE(has_4d_parameters(*m));
  EXPECT_FALSE(has_4d_parameters(*make_model("mlp", 1, 16, 16, 10)));
  EXPECT_GT(convert_model_memory_format(*m, at::MemoryFormat::ChannelsLast), 0);
  for (const auto& p : m->parameters())
    if (p.dim() == 4) EXPECT_TRUE(p.is_contiguous(at::MemoryFormat::ChannelsLast));
  VariantGuard g(parse_variant("bf16", "x"), torch::Device("cpu"));
  auto logits = variant_forward(*m, torch::randn({3, 1, 16, 16}), at::MemoryFormat::ChannelsLast);
  EXPECT_EQ(logits.scalar_type(), at::kFloat);
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{3, 10}));
}

TEST(TrainerVariants, Bf16AndChannelsLastTrainOnTheCpuAndRecordTheVariant) {
  auto w = synthetic_workload(512, 256);
  TrainHooks hooks;
  for (const char* v : {"bf16", "channels_last", "bf16+channels_last"}) {
    auto r = train_run(spec("cnn", v, 2), w, hooks);
    ASSERT_EQ(r.status, RunStatus::kOk) << v;
    EXPECT_EQ(r.variant, v);
    EXPECT_EQ(r.variant_note, "");
    ASSERT_TRUE(r.test_accuracy_pct) << v;  // accuracy per variant
    EXPECT_GT(*r.test_accuracy_pct, 50.0) << v;
    EXPECT_EQ(r.mfu_precision, std::string(v).find("bf16") != std::string::npos ? "bf16" : "fp32");
    ASSERT_TRUE(r.train_flops_per_s);  // CPU: FLOP/s kept, MFU absent with the reason
    EXPECT_FALSE(r.mfu_pct);
    EXPECT_NE(r.mfu_note.find("MFU absent on cpu"), std::string::npos);
  }
  EXPECT_FALSE(compat::autocast_enabled(false));  // the guard restored it
}

TEST(TrainerVariants, ForcedGraphCaptureOnACpuBuildRecordsTheReasonAndTrainsEagerly) {
  auto w = synthetic_workload(512, 256);
  TrainHooks hooks;
  auto s = spec("mlp", "graphs");
  s.train.force_graph_capture = true;
  auto r = train_run(s, w, hooks);
  ASSERT_EQ(r.status, RunStatus::kOk);
  EXPECT_EQ(r.variant, "graphs");
  EXPECT_NE(r.variant_note.find("graphs fell back to eager"), std::string::npos) << r.variant_note;
  EXPECT_NE(r.variant_note.find("CUDA"), std::string::npos) << r.variant_note;
  EXPECT_EQ(r.steps_completed, 8);
}

TEST(TargetAccuracy, StopsAtTheFirstEpochThatReachesIt) {
  auto w = synthetic_workload(512, 256);
  TrainHooks hooks;
  auto ref = train_run(spec("mlp", "eager", 4), w, hooks);
  ASSERT_EQ(ref.epochs.size(), 4u);
  // The target: epoch 2's accuracy; the targeted run (same seed, same data) stops at the first
  // epoch whose accuracy reaches it.
  const double target = *ref.epochs[1].test_accuracy_pct;
  size_t expect = 0;
  while (*ref.epochs[expect].test_accuracy_pct < target) ++expect;
  auto s = spec("mlp", "eager", 4);
  s.train.target_accuracy_pct = target;
  auto r = train_run(s, w, hooks);
  ASSERT_TRUE(r.time_to_accuracy);
  const auto& t = *r.time_to_accuracy;
  EXPECT_TRUE(t.reached);
  EXPECT_EQ(r.epochs.size(), expect + 1);
  EXPECT_EQ(t.samples, static_cast<int64_t>(expect + 1) * 512);
  EXPECT_EQ(t.steps, static_cast<int64_t>(expect + 1) * 8);
  EXPECT_EQ(t.evaluations, static_cast<int64_t>(expect + 1));
  ASSERT_TRUE(t.time_s);
  EXPECT_NEAR(*t.time_s, r.train_time_s, 1e-9);  // training time only (evaluation excluded)
  if (expect + 1 < 4) EXPECT_EQ(r.stop_reason, "target_accuracy");
}

TEST(TargetAccuracy, EveryNStepsStopsMidEpochAndAMissSaysSo) {
  auto big = synthetic_workload(2048, 256);
  TrainHooks hooks;
  auto s = spec("mlp", "eager", 3);
  s.train.target_accuracy_pct = 30;  // chance is 10 %: reached within the first epoch's evaluations
  s.train.eval_every_steps = 2;
  auto r = train_run(s, big, hooks);
  ASSERT_TRUE(r.time_to_accuracy && r.time_to_accuracy->reached);
  EXPECT_EQ(*r.time_to_accuracy->steps % 2, 0);
  EXPECT_LT(*r.time_to_accuracy->steps, 32);  // before the end of epoch 1 (32 steps)
  EXPECT_EQ(r.epochs.size(), 1u);
  EXPECT_EQ(r.stop_reason, "target_accuracy");
  EXPECT_EQ(r.steps_completed, *r.time_to_accuracy->steps);

  auto miss = spec("mlp", "eager", 1);
  miss.train.target_accuracy_pct = 100;
  miss.train.learning_rate = 1e-7;  // stays near chance
  auto w = synthetic_workload(512, 256);
  auto m = train_run(miss, w, hooks);
  ASSERT_TRUE(m.time_to_accuracy);
  EXPECT_FALSE(m.time_to_accuracy->reached);
  EXPECT_FALSE(m.time_to_accuracy->time_s);
  bool said = false;
  for (const auto& n : m.notes) said |= n.find("target accuracy 100.00 % not reached") != std::string::npos;
  EXPECT_TRUE(said);
}

// Found by a walkthrough: an epoch ending at an --eval-every-steps step evaluated the same
// weights twice (one evaluation too many), and the mid-epoch evaluations inflated the estimated
// time for the requested epochs.
TEST(TargetAccuracy, AnEpochEndingAtAnEvaluationStepReusesIt) {
  TrainHooks hooks;
  auto miss = spec("mlp", "eager", 1);  // 512 samples / batch 64 = 8 steps
  miss.train.target_accuracy_pct = 100;
  miss.train.learning_rate = 1e-7;
  miss.train.eval_every_steps = 4;
  auto w = synthetic_workload(512, 256);
  auto m = train_run(miss, w, hooks);
  ASSERT_TRUE(m.time_to_accuracy);
  EXPECT_EQ(m.steps_completed, 8);
  EXPECT_EQ(m.time_to_accuracy->evaluations, 2);  // at steps 4 and 8; the epoch's end reuses step 8's
  ASSERT_EQ(m.epochs.size(), 1u);
  ASSERT_TRUE(m.epochs[0].test_accuracy_pct);
}

TEST(MatrixVariants, EachVariantIsACellWithItsOwnRunId) {
  auto m = small_matrix("two");
  m.models = {"mlp", "cnn"};
  m.train.variants = {"eager", "bf16", "channels_last"};
  auto res = run_matrix(m);
  ASSERT_EQ(res.runs.size(), 6u);
  std::map<std::string, RunRecord> by_id;
  for (const auto& r : res.runs) by_id[r.run_id] = r;
  ASSERT_TRUE(by_id.count("cpu-mlp-b64-r0"));
  EXPECT_EQ(by_id["cpu-mlp-b64-r0-bf16"].status, RunStatus::kOk);
  EXPECT_EQ(by_id["cpu-mlp-b64-r0-bf16"].variant, "bf16");
  EXPECT_EQ(by_id["cpu-cnn-b64-r0-channels_last"].status, RunStatus::kOk);
  // mlp has no convolution: channels_last is recorded as not applicable, not an error
  const auto& na = by_id["cpu-mlp-b64-r0-channels_last"];
  EXPECT_EQ(na.status, RunStatus::kNotApplicable);
  EXPECT_NE(na.variant_note.find("4-D parameters"), std::string::npos);
  EXPECT_FALSE(res.any_failed);
}

TEST(MatrixVariants, GpuOnlyVariantOnExplicitCpuDevicesIsBadInputButDefaultDevicesRecordIt) {
  auto m = small_matrix("gpuonly");
  m.train.variants = {"eager", "graphs"};
  try {
    run_matrix(m);
    ADD_FAILURE() << "graphs on --devices cpu was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("--variants"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--devices cuda"), std::string::npos) << e.what();
  }
  if (!visible_devices().empty() && visible_devices().size() > 1) GTEST_SKIP() << "a GPU is visible";
  m.devices = {};  // the default: cpu and every visible GPU (none here)
  auto res = run_matrix(m);
  ASSERT_EQ(res.runs.size(), 2u);
  EXPECT_EQ(res.runs[0].status, RunStatus::kOk);
  EXPECT_EQ(res.runs[1].status, RunStatus::kNotApplicable);
  EXPECT_EQ(res.runs[1].variant_note.rfind("not applicable on cpu", 0), 0u);
}

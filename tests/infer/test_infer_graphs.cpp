// Inference with CUDA graphs (ExecutorOptions::cuda_graphs, InferenceOptions::cuda_graphs): the
// record's `execution` field. The GPU tests need a CUDA build and a CUDA device and are skipped
// with a message otherwise (bench/gpu/build_and_run.sh stage `graphs` runs them).
#include <gtest/gtest.h>

#include <torch/script.h>

#include <iostream>
#include <string>

#include "infer/bench.h"
#include "infer/executor.h"
#include "results/record_json.h"
#include "torch_test_helpers.h"
#include "trainscope/inference.h"
#include "workload/model.h"

using namespace trainscope;

namespace {

InferenceOptions quick(bool cuda_graphs) {
  InferenceOptions o;
  o.single_stream_budget_s = 0.01;
  o.min_queries = 5;
  o.warmup_queries = 2;
  o.offline_batch_sizes = {1, 8};
  o.offline_budget_s = 0.01;
  o.cuda_graphs = cuda_graphs;
  return o;
}

using trainscope::test::gpu_available;
using trainscope::test::kNeedsGpu;

// A TorchScript model whose forward reads a value back to the host (float(x.sum())) and uses it
// in its output: runs eagerly, cannot be captured in a CUDA graph. (An earlier version used the
// value only in `1.0 if s == s else 0.0`; on the H200 that forward was captured, most likely
// because TorchScript's optimiser folded the comparison and removed the dead host read.)
std::string save_host_sync_net(const std::string& path) {
  torch::jit::Module net("HostSyncNet");
  net.register_parameter("w", torch::randn({64, 10}).requires_grad_(), false);
  net.define(
      "def forward(self, x):\n"
      "  s = float(x.sum())\n"
      "  return torch.mm(x.flatten(1), self.w) * s\n");
  net.save(path);
  return path;
}

}  // namespace

TEST(InferGraphs, CpuIgnoresCudaGraphsAndSaysNotApplicable) {
  torch::manual_seed(1);
  auto m = make_model("mlp", 1, 8, 8, 10);
  auto x = torch::randn({16, 1, 8, 8});
  auto asked = to_json(measure_inference(*m, torch::kCPU, x, quick(true)));
  EXPECT_EQ(asked["execution"].get<std::string>(), "eager (cuda graphs not applicable on cpu)");
  EXPECT_TRUE(asked["single_stream"]["p50_ms"].is_number());  // measured all the same
  auto plain = to_json(measure_inference(*m, torch::kCPU, x, quick(false)));
  EXPECT_EQ(plain["execution"].get<std::string>(), "eager");
  c10::InferenceMode im;
  EXPECT_EQ(make_inference_executor(*m, torch::kCPU)->execution(), "eager");
}

// The model of the GPU fallback test below is valid TorchScript and runs eagerly on the CPU.
TEST(InferGraphs, HostSyncModelRunsEagerlyOnCpu) {
  auto path = save_host_sync_net(::testing::TempDir() + "host_sync_net_cpu.pt");
  auto m = make_model(path, 1, 8, 8, 10);
  auto j = to_json(measure_inference(*m, torch::kCPU, torch::randn({16, 1, 8, 8}), quick(true)));
  EXPECT_EQ(j["execution"].get<std::string>(), "eager (cuda graphs not applicable on cpu)");
  EXPECT_TRUE(j["single_stream"]["p50_ms"].is_number());
}

TEST(InferGraphs, GpuReplaysCapturedForwardPerBatchSize) {
  if (!gpu_available()) GTEST_SKIP() << kNeedsGpu;
  const torch::Device dev("cuda:0");
  for (const char* name : {"mlp", "cnn"}) {
    torch::manual_seed(1);
    auto m = make_model(name, 1, 8, 8, 10);
    m->to(dev);
    auto x = torch::randn({16, 1, 8, 8});
    auto j = to_json(measure_inference(*m, dev, x, quick(true)));
    EXPECT_EQ(j["execution"].get<std::string>(), "cuda_graph_replay") << name;
    EXPECT_TRUE(j["single_stream"]["p50_ms"].is_number()) << name;
    EXPECT_GT(j["offline"]["per_batch"][1]["samples_per_s"].get<double>(), 0) << name;
  }
}

TEST(InferGraphs, GpuModelThatCannotBeCapturedFallsBackWithReason) {
  if (!gpu_available()) GTEST_SKIP() << kNeedsGpu;
  const torch::Device dev("cuda:0");
  auto path = save_host_sync_net(::testing::TempDir() + "host_sync_net.pt");
  auto m = make_model(path, 1, 8, 8, 10);
  m->to(dev);
  auto j = to_json(measure_inference(*m, dev, torch::randn({16, 1, 8, 8}), quick(true)));
  const auto mode = j["execution"].get<std::string>();
  std::cout << "execution: " << mode << "\n";
  EXPECT_EQ(mode.rfind("eager (cuda graph capture failed for batch 1: ", 0), 0u) << mode;
  EXPECT_TRUE(j["single_stream"]["p50_ms"].is_number());  // measured eagerly
}

// The trace analysis (include/trainscope/trace_analysis.h) on real torch-1.13 traces and on a
// hand-written Kineto trace whose figures are worked out by hand in tests/fixtures/trace/README.md.
#include <gtest/gtest.h>
#include <algorithm>
#include <numeric>

#include "trainscope/trace_analysis.h"

using namespace trainscope;
using namespace trainscope::trace;

namespace {

const std::string kDir = std::string(TS_FIXTURES_DIR) + "/trace";
const std::string kHand = kDir + "/kineto_hand/rank0.pt.trace.json";

int64_t cat(const Step& s, Category c) { return s.category_ns[static_cast<int>(c)]; }

int64_t sum(const std::array<int64_t, kCategoryCount>& a) { return std::accumulate(a.begin(), a.end(), int64_t{0}); }

std::string only_trace_in(const std::string& dir) {
  const auto traces = find_traces({dir});
  EXPECT_EQ(traces.size(), 1u) << dir;
  return traces.at(0);
}

}  // namespace

TEST(TraceKineto, StepsAreExtendedToTheirGpuWork) {
  const TraceAnalysis a = analyze_trace(kHand);
  EXPECT_EQ(a.schema, "kineto");
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_EQ(a.steps[0].name, "ProfilerStep#1");
  EXPECT_EQ(a.steps[0].start_ns, 1000000);
  EXPECT_EQ(a.steps[0].end_ns, 1115000);  // the all-reduce launched in step 1 ends at 1115 us
  EXPECT_EQ(a.steps[1].start_ns, 1120000);
  EXPECT_EQ(a.steps[1].end_ns, 1200000);
}

TEST(TraceKineto, CategoriesAsWorkedOutByHand) {
  const TraceAnalysis a = analyze_trace(kHand);
  ASSERT_EQ(a.steps.size(), 2u);
  const Step& s1 = a.steps[0];
  EXPECT_EQ(cat(s1, Category::kKernel), 35000);
  EXPECT_EQ(cat(s1, Category::kMemcpy), 4000);
  EXPECT_EQ(cat(s1, Category::kMemset), 2000);
  EXPECT_EQ(cat(s1, Category::kCommunication), 33000);
  EXPECT_EQ(cat(s1, Category::kRuntime), 8000);
  EXPECT_EQ(cat(s1, Category::kDataLoader), 10000);
  EXPECT_EQ(cat(s1, Category::kCpuExec), 17000);
  EXPECT_EQ(cat(s1, Category::kOther), 6000);
  const Step& s2 = a.steps[1];
  EXPECT_EQ(cat(s2, Category::kKernel), 24980);  // add_kernel starts at 1170.020 us: ns exact
  EXPECT_EQ(cat(s2, Category::kCommunication), 0);
  EXPECT_EQ(cat(s2, Category::kRuntime), 9000);
  EXPECT_EQ(cat(s2, Category::kDataLoader), 4000);
  EXPECT_EQ(cat(s2, Category::kCpuExec), 16000);
  EXPECT_EQ(cat(s2, Category::kOther), 26020);
  for (const Step& s : a.steps) EXPECT_EQ(sum(s.category_ns), s.duration_ns()) << s.name;
  EXPECT_EQ(a.steps_ns, 195000);
  EXPECT_EQ(sum(a.total_ns), a.steps_ns);
}

TEST(TraceKineto, MetadataOfTheRank) {
  const TraceAnalysis a = analyze_trace(kHand);
  EXPECT_EQ(a.rank, 0);
  EXPECT_EQ(a.world_size, 2);
  EXPECT_EQ(a.backend, "nccl");
  EXPECT_EQ(a.devices, std::vector<std::string>{"NVIDIA H200"});
}

TEST(TraceKineto, IdleTimeSplitAsHta) {
  const TraceAnalysis a = analyze_trace(kHand);
  ASSERT_EQ(a.idle.size(), 3u);  // streams 7, 8, 20 of device 0
  const StreamIdle& s7 = a.idle[0];
  EXPECT_EQ(s7.stream, 7);
  EXPECT_EQ(s7.host_wait_ns, 92000);  // memset and relu were launched after the GPU ran dry
  EXPECT_EQ(s7.kernel_wait_ns, 20);   // add_kernel 20 ns after relu_kernel (< 30 ns)
  EXPECT_EQ(s7.other_ns, 7000);       // memcpy 2 us and mul 5 us after their predecessors, launched in time
  EXPECT_EQ(s7.busy_ns, 30000 + 4000 + 2000 + 10000 + 9980 + 5000);
  EXPECT_EQ(a.idle[1].stream, 8);
  EXPECT_EQ(a.idle[1].host_wait_ns, 101000);
  EXPECT_EQ(a.idle[2].idle_ns(), 0);  // one kernel: no gap
}

TEST(TraceKineto, CommunicationOverlap) {
  const TraceAnalysis a = analyze_trace(kHand);
  ASSERT_TRUE(a.overlap.has_value());
  EXPECT_EQ(a.overlap->computation_ns, 59980);
  EXPECT_EQ(a.overlap->communication_ns, 40000);
  EXPECT_EQ(a.overlap->overlap_ns, 5000);  // bias_kernel runs during the all-reduce
  EXPECT_EQ(a.overlap->other_ns, 195000 + 5000 - 59980 - 40000);
  EXPECT_DOUBLE_EQ(a.overlap->overlap_pct(), 12.5);
}

TEST(TraceKineto, OperatorAndKernelTables) {
  const TraceAnalysis a = analyze_trace(kHand);
  ASSERT_FALSE(a.operators.empty());
  EXPECT_EQ(a.operators[0].name, "aten::mm");  // the largest self time
  EXPECT_EQ(a.operators[0].self_ns, 28000);    // 30 us minus the nested aten::empty
  EXPECT_EQ(a.operators[0].total_ns, 30000);
  EXPECT_EQ(a.operators[0].device_ns, 30000);
  auto relu = std::find_if(a.operators.begin(), a.operators.end(), [](auto& r) { return r.name == "aten::relu"; });
  ASSERT_NE(relu, a.operators.end());
  EXPECT_EQ(relu->device_ns, 10000 + 9980 + 5000 + 2000);
  for (const auto& r : a.operators) EXPECT_NE(r.name.rfind("ProfilerStep#", 0), 0u) << "steps are no operators";
  ASSERT_EQ(a.kernels.size(), 7u);
  EXPECT_EQ(a.kernels[0].name, "ncclKernel_AllReduce_RING_LL_Sum_float");
  EXPECT_EQ(a.kernel_ns, 40000 + 30000 + 10000 + 9980 + 5000 + 5000 + 2000);
  EXPECT_EQ(analyze_trace(kHand, AnalyzeOptions{2, 30}).kernels.size(), 2u);
}

TEST(TraceKineto, KernelWaitThresholdIsAnOption) {
  const TraceAnalysis a = analyze_trace(kHand, AnalyzeOptions{15, 10});  // 20 ns gap is no longer kernel wait
  EXPECT_EQ(a.idle[0].kernel_wait_ns, 0);
  EXPECT_EQ(a.idle[0].other_ns, 7020);
}

// torch 1.13 without Kineto (tests/fixtures/trace/make_fixtures.py): the legacy array.
TEST(TraceLegacy, Torch113TrainingTraceSumsToItsSteps) {
  for (const std::string dir : {"torch113_mlp", "torch113_mlp_gz"}) {
    const TraceAnalysis a = analyze_trace(only_trace_in(kDir + "/" + dir));
    EXPECT_EQ(a.schema, "legacy");
    ASSERT_EQ(a.steps.size(), 3u) << dir;  // schedule(wait=1, warmup=1, active=3)
    for (const Step& s : a.steps) {
      EXPECT_GT(s.duration_ns(), 0);
      EXPECT_EQ(sum(s.category_ns), s.duration_ns()) << dir << " " << s.name;
      EXPECT_GT(cat(s, Category::kDataLoader), 0) << "the DataLoader's __next__ is its own category";
      EXPECT_GT(cat(s, Category::kCpuExec), 0);
      EXPECT_EQ(cat(s, Category::kKernel), 0);
    }
    auto addmm = std::find_if(a.operators.begin(), a.operators.end(), [](auto& r) { return r.name == "aten::addmm"; });
    ASSERT_NE(addmm, a.operators.end()) << dir;
    EXPECT_EQ(addmm->calls, 6);  // two Linear layers, three steps
    EXPECT_LE(addmm->self_ns, addmm->total_ns);
    EXPECT_TRUE(a.idle.empty());
    EXPECT_FALSE(a.overlap.has_value());
  }
}

TEST(TraceLegacy, WithoutStepAnnotationsOneStepOverTheTrace) {
  const TraceAnalysis a = analyze_trace(kDir + "/torch113_nosteps.json");
  ASSERT_EQ(a.steps.size(), 1u);
  EXPECT_EQ(a.steps[0].name, "0");
  EXPECT_EQ(sum(a.steps[0].category_ns), a.steps[0].duration_ns());
  EXPECT_NE(a.notes.at(0).find("no ProfilerStep#N"), std::string::npos);
}

// A real Kineto trace: torch 2.11 on an H200 (bench/gpu/make_kineto_trace.py --gzip, a tiny CNN,
// schedule(wait=1, warmup=1, active=3)).
TEST(TraceKineto, RealH200TraceOfTorch211) {
  const TraceAnalysis a = analyze_trace(only_trace_in(kDir + "/h200_torch211_cnn"));
  EXPECT_EQ(a.schema, "kineto");
  EXPECT_EQ(a.devices, std::vector<std::string>{"NVIDIA H200"});
  EXPECT_FALSE(a.rank.has_value());  // a single process writes no distributedInfo
  ASSERT_EQ(a.steps.size(), 3u);
  EXPECT_EQ(a.steps[0].name, "ProfilerStep#2");
  for (const Step& s : a.steps) {
    EXPECT_EQ(sum(s.category_ns), s.duration_ns()) << s.name;
    EXPECT_GT(cat(s, Category::kKernel), 0) << s.name;
    EXPECT_GT(cat(s, Category::kRuntime), 0) << s.name;
    EXPECT_GT(cat(s, Category::kDataLoader), 0) << s.name << ": 2.x writes it as a user_annotation";
    EXPECT_EQ(cat(s, Category::kCommunication), 0);
  }
  EXPECT_GT(a.total_ns[static_cast<int>(Category::kMemcpy)], 0);
  ASSERT_FALSE(a.kernels.empty());
  ASSERT_FALSE(a.idle.empty());
  EXPECT_GT(a.idle[0].host_wait_ns, a.idle[0].other_ns) << "a tiny model: the GPU waits for the CPU";
  EXPECT_FALSE(a.overlap.has_value());
}

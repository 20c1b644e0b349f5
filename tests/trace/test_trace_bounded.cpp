// analyze_trace in bounded memory: the sorter against std::stable_sort, the analysis
// with a tiny memory budget (every sorter spilling to its temporary file and merging in several
// passes) against the same analysis held in memory, on every fixture and on generated traces
// whose steps' GPU work runs late and whose events are listed per thread and stream as Kineto
// lists them; and the records held at once, which must not grow with the number of steps.
#include <gtest/gtest.h>
#include <fmt/core.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>

#include "../test_helpers.h"
#include "trace/reference_analysis.h"
#include "trace/streams.h"
#include "trainscope/trace_analysis.h"

using namespace trainscope;
using namespace trainscope::trace;

namespace {

const std::string kDir = std::string(TS_FIXTURES_DIR) + "/trace";

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "pid" + std::to_string(getpid()) + "_" + name;
}

struct Rec {
  int64_t key, seq;
};
struct KeyLess {  // ties on key only: the sorter must keep the order records were added in
  bool operator()(const Rec& a, const Rec& b) const { return a.key < b.key; }
};

// The most records a sorter of capacity `cap` holds at once (spill.h).
int64_t sorter_bound(size_t cap) {
  const size_t fan = Sorter<Rec, KeyLess>::kFanIn;
  return static_cast<int64_t>(std::max(cap, fan) + std::max<size_t>(1, cap / fan));
}

// The bound of TraceStreams's eleven sorters for a budget (collect.cpp splits it evenly).
int64_t analysis_bound(int64_t budget) {
  auto cap = [&](size_t bytes) { return static_cast<size_t>(std::max<int64_t>(1, budget / 11 / static_cast<int64_t>(bytes))); };
  return 7 * sorter_bound(cap(sizeof(RangeRec))) + sorter_bound(cap(sizeof(CorrRec))) +
         sorter_bound(cap(sizeof(IdleRec))) + sorter_bound(cap(sizeof(OpRec))) + sorter_bound(cap(sizeof(ExtRec)));
}

// A Kineto trace of `steps` steps, listed as Kineto lists events: each thread's, then each
// stream's, not in time order overall. Per step: a DataLoader annotation, nested operators on
// two threads with External ids (one wrapping a child of the same start and duration), python
// events, runtime calls, kernels on two streams (some
// launched by one call, as a CUDA graph's are, one lacking a correlation), a copy, a fill, an
// all-reduce overlapping the computation; GPU work runs up to a step and a half late, so joins
// cross step windows; times are drawn with ties (seeded).
std::string generated_trace(int steps, unsigned seed) {
  std::mt19937 rng(seed);
  auto draw = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<std::string> cpu, side, gpu7, gpu8;
  auto ev = [](const std::string& cat, const std::string& name, int tid, int64_t ts, int64_t dur, const std::string& args) {
    return fmt::format(R"({{"ph":"X","cat":"{}","name":"{}","pid":1,"tid":{},"ts":{},"dur":{}{}}})", cat, name, tid, ts,
                       dur, args.empty() ? "" : R"(,"args":{)" + args + "}");
  };
  int64_t ext = 1, corr = 1;
  for (int i = 0; i < steps; ++i) {
    const int64_t t = 1000 + int64_t{i} * 200;
    cpu.push_back(ev("user_annotation", fmt::format("ProfilerStep#{}", i), 1, t, 190, ""));
    cpu.push_back(ev("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 1, t + 1, draw(5, 20), ""));
    for (int k = 0; k < 6; ++k) {
      const int64_t ot = t + 25 + 25 * k, e = ext++;
      cpu.push_back(ev("cpu_op", fmt::format("aten::op{}", draw(0, 4)), 1, ot, draw(10, 22), fmt::format(R"("External id":{})", e)));
      cpu.push_back(ev("cpu_op", "aten::empty", 1, ot + draw(0, 2), draw(1, 3), fmt::format(R"("External id":{})", ext++)));
      cpu.push_back(ev("python", "nn.Module: Linear", 1, ot - 2, draw(1, 30), ""));
      if (k == 2) {  // a wrapper and its one child: same start, same duration
        const int d = draw(3, 6);
        cpu.push_back(ev("cpu_op", "aten::to", 1, ot + 17, d, ""));
        cpu.push_back(ev("cpu_op", "aten::_to_copy", 1, ot + 17, d, ""));
      }
      const int64_t rt = ot + 4 + draw(0, 3), c = corr++, lag = draw(0, 300);
      cpu.push_back(ev("cuda_runtime", k == 5 ? "cudaGraphLaunch" : "cudaLaunchKernel", 1, rt, draw(1, 4), fmt::format(R"("correlation":{},"External id":{})", c, e)));
      const int n = k == 5 ? 3 : 1;  // a graph launch: three kernels of one correlation
      for (int g = 0; g < n; ++g) {
        auto& s = (k + g) % 2 ? gpu8 : gpu7;
        const int stream = (k + g) % 2 ? 8 : 7;
        s.push_back(ev("kernel", fmt::format("kernel_{}", draw(0, 5)), stream, rt + lag + 10 * g, draw(0, 12),
                       fmt::format(R"("correlation":{},"External id":{},"stream":{},"device":0)", c, e, stream)));
      }
    }
    side.push_back(ev("cpu_op", "autograd::engine::evaluate_function", 2, t + draw(0, 100), draw(20, 60), ""));
    side.push_back(ev("cpu_op", "aten::mul", 2, t + draw(100, 120), draw(5, 10), fmt::format(R"("External id":{})", ext++)));
    gpu7.push_back(ev("gpu_memcpy", "Memcpy HtoD", 7, t + draw(30, 60), draw(2, 6), R"("stream":7,"device":0)"));
    gpu8.push_back(ev("gpu_memset", "Memset", 8, t + draw(30, 60), draw(1, 3), fmt::format(R"("correlation":{},"stream":8,"device":0)", corr++)));
    gpu8.push_back(ev("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float", 9, t + draw(100, 180), draw(20, 40), R"("stream":9,"device":0)"));
  }
  cpu.push_back(ev("cpu_op", "aten::copy_", 1, 1000 + int64_t{steps} * 200 + 50, 7, ""));  // after the last step
  std::string s = R"({"schemaVersion": 1, "deviceProperties": [{"name": "NVIDIA H200"}], "traceEvents": [)";
  bool first = true;
  for (const auto* part : {&cpu, &side, &gpu7, &gpu8})
    for (const std::string& e : *part) s += (first ? "" : ",\n") + e, first = false;
  return s + "]}";
}

std::string write_trace(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Every figure of an analysis, as the JSON rendering writes it (all rows: top is huge).
std::string figures(const std::string& path, int64_t budget) {
  return render_json({analyze_trace(path, AnalyzeOptions{1000000, 30, budget})});
}

// The same of the analysis with every event in memory (reference_analysis.cpp).
std::string reference_figures(const std::string& path) {
  return render_json({reference::analyze_in_memory(path, AnalyzeOptions{1000000, 30})});
}

}  // namespace

TEST(TraceSorter, MatchesStableSortAtEveryCapacity) {
  std::mt19937 rng(7);
  std::vector<Rec> recs;
  for (int64_t i = 0; i < 5000; ++i) recs.push_back(Rec{std::uniform_int_distribution<int64_t>(0, 300)(rng), i});
  std::vector<Rec> expected = recs;
  std::stable_sort(expected.begin(), expected.end(), KeyLess{});
  for (size_t cap : {size_t{1}, size_t{5}, size_t{64}, size_t{100000}}) {  // 5000 runs: three merge passes
    HeldCount held;
    Sorter<Rec, KeyLess> sorter(cap, held);
    for (const Rec& r : recs) sorter.add(r);
    for (int pass = 0; pass < 2; ++pass) {  // a sorter reads again
      auto in = sorter.read();
      std::vector<Rec> got;
      for (Rec r{}; in.next(r);) got.push_back(r);
      ASSERT_EQ(got.size(), expected.size()) << cap;
      for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i].seq, expected[i].seq) << "cap " << cap << " at " << i;
    }
    if (cap < recs.size()) EXPECT_LE(held.peak, sorter_bound(cap)) << cap;
  }
}

TEST(TraceSorter, UnwritableTemporaryFolderNamesItAndTheFix) {
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  setenv("TMPDIR", "/nonexistent-trainscope-tmp", 1);
  const std::string e = test::what_of([] {
    HeldCount held;
    Sorter<Rec, KeyLess> sorter(1, held);
    sorter.add(Rec{1, 1});
  });
  if (old) setenv("TMPDIR", saved.c_str(), 1);
  else unsetenv("TMPDIR");
  EXPECT_NE(e.find("/nonexistent-trainscope-tmp: cannot create a temporary file"), std::string::npos) << e;
  EXPECT_NE(e.find("set TMPDIR"), std::string::npos) << e;
}

TEST(TraceBounded, FixturesGiveTheFiguresOfTheInMemoryAnalysis) {
  std::vector<std::string> paths = find_traces({kDir});
  paths.push_back(kDir + "/torch113_nosteps.json");
  for (const std::string& path : paths) {
    const std::string expected = reference_figures(path);
    EXPECT_EQ(figures(path, int64_t{1} << 30), expected) << path;
    EXPECT_EQ(figures(path, 512), expected) << path << " spilled";
  }
}

TEST(TraceBounded, GeneratedTracesGiveTheFiguresOfTheInMemoryAnalysis) {
  for (unsigned seed : {3u, 4u, 5u}) {
    const std::string path = write_trace(fmt::format("ref{}.pt.trace.json", seed), generated_trace(150, seed));
    const std::string expected = reference_figures(path);
    EXPECT_EQ(figures(path, 2048), expected) << "seed " << seed;
  }
}

TEST(TraceBounded, GeneratedTraceGivesTheSameFiguresSpilledAsInMemory) {
  const std::string path = write_trace("gen.pt.trace.json", generated_trace(300, 1));
  const TraceAnalysis a = analyze_trace(path, AnalyzeOptions{1000000, 30, int64_t{1} << 30});
  ASSERT_EQ(a.steps.size(), 300u);
  ASSERT_TRUE(a.overlap.has_value());
  EXPECT_GT(a.overlap->overlap_ns, 0);
  for (int64_t budget : {int64_t{300}, int64_t{4096}, int64_t{65536}})
    EXPECT_EQ(figures(path, budget), render_json({a})) << budget;
}

TEST(TraceBounded, RecordsHeldDoNotGrowWithTheSteps) {
  const int64_t budget = 4096, bound = analysis_bound(budget);
  for (int steps : {100, 1000}) {
    const std::string path = write_trace(fmt::format("gen{}.pt.trace.json", steps), generated_trace(steps, 2));
    const TraceAnalysis a = analyze_trace(path, AnalyzeOptions{15, 30, budget});
    EXPECT_EQ(a.steps.size(), static_cast<size_t>(steps));
    EXPECT_LE(a.max_events_held, bound) << steps << " steps";
    EXPECT_GT(a.events, 5 * bound) << "the bound is far below the trace's events";
    const TraceAnalysis all = analyze_trace(path, AnalyzeOptions{15, 30, int64_t{1} << 30});
    EXPECT_GT(all.max_events_held, a.events) << "in memory, the sorters hold more records than the trace has events";
  }
}

TEST(TraceBounded, NonPositiveBudgetIsRefused) {
  const std::string e = test::what_of([] { analyze_trace(kDir + "/kineto_hand/rank0.pt.trace.json", AnalyzeOptions{15, 30, 0}); });
  EXPECT_NE(e.find("memory budget"), std::string::npos) << e;
  EXPECT_NE(e.find("--memory-mb"), std::string::npos) << e;
}

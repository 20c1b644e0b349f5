// Bad traces: each error names the file and, for bad JSON, the byte offset; folders; ranges;
// the renderings; a large generated trace read as a stream.
#include <gtest/gtest.h>
#include <fmt/core.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "../test_helpers.h"
#include "trace/reference_analysis.h"
#include "trainscope/fs.h"
#include "trainscope/trace_analysis.h"

namespace fs = std::filesystem;
using namespace trainscope;
using namespace trainscope::trace;
using trainscope::test::what_of;

namespace {

const std::string kDir = std::string(TS_FIXTURES_DIR) + "/trace";
const std::string kHand = kDir + "/kineto_hand/rank0.pt.trace.json";

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "pid" + std::to_string(getpid()) + "_" + name;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string error_of(const std::string& path) {
  return what_of([&] { analyze_trace(path); });
}

}  // namespace

TEST(TraceErrors, TruncatedTraceNamesFileAndOffset) {
  const std::string text = test::read_text(kHand);
  const std::string path = temp_path("cut.pt.trace.json");
  write(path, text.substr(0, 1500));
  const std::string e = error_of(path);
  EXPECT_NE(e.find(path), std::string::npos) << e;
  EXPECT_NE(e.find("truncated at byte 15"), std::string::npos) << e;
  write(path, text.substr(0, text.size() - 3));  // cut between events' closing brackets
  EXPECT_NE(error_of(path).find("truncated"), std::string::npos) << error_of(path);
}

TEST(TraceErrors, TruncatedGzipNamesFile) {
  const std::string gz = gzip_compress(test::read_text(kHand));
  const std::string path = temp_path("cut.pt.trace.json.gz");
  write(path, gz.substr(0, gz.size() / 2));
  const std::string e = error_of(path);
  EXPECT_NE(e.find(path), std::string::npos) << e;
  EXPECT_NE(e.find("gzip"), std::string::npos) << e;
  write(path, gz);  // the whole member reads as the plain file does
  EXPECT_EQ(analyze_trace(path).steps.size(), 2u);
}

TEST(TraceErrors, MalformedJsonNamesOffset) {
  const std::string path = temp_path("bad.json");
  write(path, R"([{"ph": "X", "ts": 1,, "dur": 2}])");
  const std::string e = error_of(path);
  EXPECT_NE(e.find(path + ": not valid JSON at byte 22"), std::string::npos) << e;
}

TEST(TraceErrors, UnknownSchemas) {
  const std::string path = temp_path("schema.json");
  write(path, R"({"traceName": "x", "events": []})");
  EXPECT_NE(error_of(path).find("unknown trace schema: the JSON object has no 'traceEvents'"), std::string::npos)
      << error_of(path);
  write(path, R"({"schemaVersion": 2, "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1}]})");
  EXPECT_NE(error_of(path).find("unknown trace schema version 2"), std::string::npos) << error_of(path);
  write(path, "42");
  EXPECT_NE(error_of(path).find("not a PyTorch profiler trace"), std::string::npos) << error_of(path);
  write(path, R"({"schemaVersion": 1, "traceEvents": []})");
  EXPECT_NE(error_of(path).find("holds no profiler events"), std::string::npos) << error_of(path);
}

TEST(TraceErrors, MissingFileIsAnIoError) {
  try {
    analyze_trace(temp_path("absent.pt.trace.json"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find("absent.pt.trace.json: cannot open"), std::string::npos) << e.what();
  }
}

TEST(TraceFolders, FindsTracesRecursivelyAndSorted) {
  const auto traces = find_traces({kDir});
  ASSERT_EQ(traces.size(), 4u);  // h200_torch211_cnn, kineto_hand, torch113_mlp(_gz), not torch113_nosteps.json
  EXPECT_TRUE(std::is_sorted(traces.begin(), traces.end()));
  EXPECT_EQ(find_traces({kHand}), std::vector<std::string>{kHand});
  const std::string empty = temp_path("no_traces");
  fs::create_directories(empty);
  EXPECT_NE(what_of([&] { find_traces({empty}); }).find("holds no *.pt.trace.json"), std::string::npos);
  EXPECT_NE(what_of([&] { find_traces({empty + "/nope"}); }).find("no such file or folder"), std::string::npos);
}

TEST(TraceRanges, IntersectSubtractClip) {
  using namespace trainscope::trace::reference;
  const Ranges a = merge_ranges({{5, 10}, {0, 3}, {2, 4}, {20, 30}});
  EXPECT_EQ(a, (Ranges{{0, 4}, {5, 10}, {20, 30}}));
  const Ranges b{{3, 6}, {8, 25}};
  EXPECT_EQ(intersect_ranges(a, b), (Ranges{{3, 4}, {5, 6}, {8, 10}, {20, 25}}));
  EXPECT_EQ(subtract_ranges(a, b), (Ranges{{0, 3}, {6, 8}, {25, 30}}));
  EXPECT_EQ(clip_ranges(a, 2, 22), (Ranges{{2, 4}, {5, 10}, {20, 22}}));
  EXPECT_EQ(ranges_sum(a), 4 + 5 + 10);
}

TEST(TraceRender, JsonMarkdownAndTextCarryTheSameSteps) {
  const std::vector<TraceAnalysis> v{analyze_trace(kHand)};
  const auto j = nlohmann::json::parse(render_json(v));
  EXPECT_EQ(j["schema"], "trainscope.analyze/1");
  const auto& t = j["traces"].at(0);
  EXPECT_EQ(t["steps"].size(), 2u);
  EXPECT_EQ(t["steps"][0]["categories_ns"]["communication"], 33000);
  EXPECT_EQ(t["categories_total_ns"]["other"], 6000 + 26020);
  EXPECT_EQ(t["gpu_idle"][0]["host_wait_ns"], 92000);
  EXPECT_DOUBLE_EQ(t["comm_overlap"]["overlap_pct"].get<double>(), 12.5);
  const std::string md = render_markdown(v);
  EXPECT_NE(md.find("| ProfilerStep#1 | 115 µs | 30.4 % |"), std::string::npos) << md;
  const std::string text = render_text(v);
  EXPECT_NE(text.find("Communication"), std::string::npos);
  EXPECT_NE(text.find("12.5 %"), std::string::npos) << text;
}

// A generated Kineto trace of 2000 steps (about 100 k events), gzip-compressed: read as a
// stream, every step's categories sum to its duration.
TEST(TraceLarge, ManyStepsStreamed) {
  std::string s = R"({"schemaVersion": 1, "traceEvents": [)";
  for (int i = 0; i < 2000; ++i) {
    const int64_t t = 1000 + i * 100;
    s += fmt::format(R"({{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{}","pid":1,"tid":1,"ts":{},"dur":90}},)", i, t);
    for (int k = 0; k < 12; ++k)
      s += fmt::format(R"({{"ph":"X","cat":"cpu_op","name":"aten::op{}","pid":1,"tid":1,"ts":{}.5,"dur":3}},)", k, t + 2 + 7 * k);
    for (int k = 0; k < 12; ++k)
      s += fmt::format(R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":1,"args":{{"correlation":{}}}}},)",
                       t + 3 + 7 * k, i * 100 + k);
    for (int k = 0; k < 12; ++k)
      s += fmt::format(R"({{"ph":"X","cat":"kernel","name":"k{}","pid":0,"tid":7,"ts":{},"dur":4,"args":{{"stream":7,"correlation":{}}}}},)",
                       k, t + 5 + 7 * k, i * 100 + k);
  }
  s.back() = ']';
  s += "}";
  const std::string path = temp_path("large.pt.trace.json.gz");
  write(path, gzip_compress(s));
  const TraceAnalysis a = analyze_trace(path);
  EXPECT_EQ(a.events, 2000 * 37);
  ASSERT_EQ(a.steps.size(), 2000u);
  for (const Step& st : a.steps)
    ASSERT_EQ(std::accumulate(st.category_ns.begin(), st.category_ns.end(), int64_t{0}), st.duration_ns()) << st.name;
  EXPECT_EQ(a.total_ns[static_cast<int>(Category::kKernel)], 2000 * 12 * 4000);
  const std::string text = render_text({a});
  EXPECT_NE(text.find("(1980 more)\n"), std::string::npos) << "the console lists the first and last 10 steps";
  EXPECT_NE(text.find("ProfilerStep#1999"), std::string::npos);
  EXPECT_EQ(text.find("ProfilerStep#1000 "), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(render_json({a}))["traces"][0]["steps"].size(), 2000u) << "the JSON has every step";
}

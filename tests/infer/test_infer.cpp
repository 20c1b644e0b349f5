// Inference: percentile arithmetic, the Poisson arrival process, checkpoint reload and errors.
// No assertion depends on how fast this machine is.
#include <gtest/gtest.h>

#include "trainscope/fs.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "infer/bench.h"
#include "infer/checkpoint.h"
#include "results/record_json.h"
#include "train/trainer.h"
#include "trainscope/error.h"
#include "trainscope/inference.h"
#include "trainscope/runner.h"

using namespace trainscope;
namespace fs = std::filesystem;

namespace {

template <typename F>
ErrorKind error_kind_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "no trainscope::Error thrown";
  return ErrorKind::kInternal;
}

template <typename F>
std::string error_message_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

DataConfig synthetic_data(int64_t size) {
  DataConfig d;
  d.format = "synthetic";
  d.synthetic_train = 256;
  d.synthetic_test = 64;
  d.synthetic_size = size;
  return d;
}

std::string temp_dir(const std::string& name) {
  auto p = fs::path(::testing::TempDir()) / ("infer-" + name);
  trainscope::remove_tree(p);
  fs::create_directories(p);
  return p.string();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
}

// Trains a small model for a few steps, saves checkpoint + description, returns reference
// logits of the trained model on the first test samples (eval mode).
struct Trained {
  std::string weights;
  torch::Tensor x, logits;
};
Trained train_and_save(const std::string& model, const std::string& dir, int64_t size = 12) {
  DataConfig d = synthetic_data(size);
  auto w = make_workload(load_datasets(d, 42));
  RunSpec s;
  s.run_id = model;
  s.device = "cpu";
  s.model = model;
  s.batch_size = 32;
  s.train.epochs = 1;
  s.train.max_steps = 5;
  s.train.warmup_steps = 1;
  s.checkpoint_path = dir + "/" + model + ".pt";
  s.origin = std::chrono::steady_clock::now();
  Trained t;
  t.x = w.test_x.narrow(0, 0, 8).clone();
  TrainHooks hooks;
  hooks.on_trained = [&](Model& m, const torch::Device&) {
    torch::NoGradGuard ng;
    m.set_training(false);
    t.logits = m.forward(t.x).clone();
  };
  auto r = train_run(s, w, hooks);
  EXPECT_EQ(r.status, RunStatus::kOk);
  write_text(dir + "/" + model + ".json", checkpoint_description(s, d, w).dump(2));
  t.weights = s.checkpoint_path;
  return t;
}

}  // namespace

// ---- percentiles (type 7, hand-computed) ----

TEST(InferPercentiles, SmallListsByHand) {
  // 5 values, unsorted: rank = p/100 * 4. p90: 3.6 -> 4 + 0.6 * 1 = 4.6; p99: 3.96 -> 4.96.
  auto s = summarize_latencies({5, 1, 4, 2, 3}, 1);
  EXPECT_EQ(s.queries, 5);
  EXPECT_DOUBLE_EQ(*s.p50_ms, 3.0);
  EXPECT_DOUBLE_EQ(*s.p90_ms, 4.6);
  EXPECT_DOUBLE_EQ(*s.p99_ms, 4.96);
  EXPECT_DOUBLE_EQ(*s.max_ms, 5.0);
  EXPECT_DOUBLE_EQ(*s.mean_ms, 3.0);
  EXPECT_FALSE(s.too_few_queries);
  // Two values: p90 = 10 + 0.9 * 10 = 19.
  auto two = summarize_latencies({20, 10}, 1);
  EXPECT_DOUBLE_EQ(*two.p50_ms, 15.0);
  EXPECT_DOUBLE_EQ(*two.p90_ms, 19.0);
  // One value: every percentile is that value.
  auto one = summarize_latencies({7}, 1);
  EXPECT_DOUBLE_EQ(*one.p99_ms, 7.0);
}

TEST(InferPercentiles, LargeListsByHand) {
  // 0..1000 reversed: rank = p/100 * 1000 is an integer, so p = the value itself.
  std::vector<double> v(1001);
  std::iota(v.begin(), v.end(), 0.0);
  std::reverse(v.begin(), v.end());
  auto s = summarize_latencies(v, 200);
  EXPECT_DOUBLE_EQ(*s.p50_ms, 500.0);
  EXPECT_DOUBLE_EQ(*s.p90_ms, 900.0);
  EXPECT_DOUBLE_EQ(*s.p99_ms, 990.0);
  EXPECT_DOUBLE_EQ(*s.max_ms, 1000.0);
  EXPECT_DOUBLE_EQ(*s.mean_ms, 500.0);
  // i^2 for i = 0..9999: p99 rank = 0.99 * 9999 = 9899.01 -> 9899^2 + 0.01 * (9900^2 - 9899^2).
  std::vector<double> q(10000);
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<double>(i * i);
  auto sq = summarize_latencies(q, 200);
  EXPECT_NEAR(*sq.p99_ms, 97990201.0 + 0.01 * 19799.0, 1e-4);
  // p50 rank 4999.5 -> (4999^2 + 5000^2) / 2.
  EXPECT_NEAR(*sq.p50_ms, (4999.0 * 4999.0 + 5000.0 * 5000.0) / 2, 1e-6);
}

TEST(InferPercentiles, TooFewQueriesIsFlaggedNotSilent) {
  auto s = summarize_latencies({1, 2, 3}, 200);
  EXPECT_TRUE(s.too_few_queries);
  EXPECT_NE(s.too_few_reason.find("200"), std::string::npos);
  ASSERT_TRUE(s.p50_ms);  // still reported, but flagged
  auto j = to_json(s);
  EXPECT_TRUE(j["too_few_queries"].get<bool>());
  EXPECT_TRUE(j.contains("too_few_reason"));
  auto empty = summarize_latencies({}, 10);
  EXPECT_TRUE(empty.too_few_queries);
  EXPECT_FALSE(empty.p50_ms);
  EXPECT_TRUE(to_json(empty)["p99_ms"].is_null());
}

// ---- server arrivals ----

TEST(InferServer, PoissonArrivalsHaveTheAskedForRate) {
  for (double qps : {3.0, 250.0, 40000.0}) {
    const int64_t n = 200000;
    auto t = poisson_arrivals(qps, n, 7);
    ASSERT_EQ(static_cast<int64_t>(t.size()), n);
    std::vector<double> gaps(t.size());
    std::adjacent_difference(t.begin(), t.end(), gaps.begin());
    for (double g : gaps) ASSERT_GT(g, 0.0);
    double mean = t.back() / static_cast<double>(n);
    double var = 0;
    for (double g : gaps) var += (g - mean) * (g - mean);
    var /= static_cast<double>(n - 1);
    // Mean gap 1/qps; its standard error is 1/(qps sqrt(n)) = 0.22 %: a 2 % bound is > 8 sigma.
    EXPECT_NEAR(mean * qps, 1.0, 0.02) << qps;
    // Exponential gaps: coefficient of variation 1.
    EXPECT_NEAR(std::sqrt(var) / mean, 1.0, 0.03) << qps;
    // Counts in windows of 10 mean gaps: Poisson, so variance / mean (dispersion) ~ 1.
    double window = 10.0 / qps;
    std::vector<int64_t> counts(static_cast<size_t>(t.back() / window) + 1, 0);
    for (double a : t) ++counts[static_cast<size_t>(a / window)];
    counts.pop_back();  // last window is partial
    double cm = 0, cv = 0;
    for (auto c : counts) cm += static_cast<double>(c);
    cm /= static_cast<double>(counts.size());
    for (auto c : counts) cv += (static_cast<double>(c) - cm) * (static_cast<double>(c) - cm);
    cv /= static_cast<double>(counts.size() - 1);
    EXPECT_NEAR(cv / cm, 1.0, 0.1) << qps;
  }
  EXPECT_EQ(poisson_arrivals(100, 50, 1), poisson_arrivals(100, 50, 1));  // seeded
  EXPECT_NE(poisson_arrivals(100, 50, 1), poisson_arrivals(100, 50, 2));
  EXPECT_EQ(error_kind_of([] { poisson_arrivals(0, 10, 1); }), ErrorKind::kInvalidArgument);
}

TEST(InferServer, SummaryIncludesQueueingAndJudgesTheTarget) {
  // Latencies 5, 5, 30 ms. p99 rank 1.98 -> 5 + 0.98 * 25 = 29.5 ms.
  std::vector<double> arr = {0.0, 0.1, 0.2}, done = {0.005, 0.105, 0.230};
  auto j = to_json(server_summary(10, arr, done, 10, 1));
  EXPECT_NEAR(j["p99_ms"].get<double>(), 29.5, 1e-9);
  EXPECT_NEAR(j["p50_ms"].get<double>(), 5.0, 1e-9);
  EXPECT_FALSE(j["meets_target"].get<bool>());
  EXPECT_TRUE(server_summary(10, arr, done, 40, 1).meets_target);
  // Too few queries never meets the target, whatever the numbers.
  EXPECT_FALSE(server_summary(10, arr, done, 40, 100).meets_target);
}

// ---- checkpoints ----

TEST(InferCheckpoint, TrainedCheckpointReloadsToIdenticalOutputs) {
  auto dir = temp_dir("reload");
  for (const char* model : {"mlp", "cnn"}) {
    auto t = train_and_save(model, dir);
    auto info = read_checkpoint_description(t.weights);
    EXPECT_EQ(info.model, model);
    EXPECT_EQ(info.channels, 1);
    EXPECT_EQ(info.height, 12);
    auto m = load_checkpoint_model(info);
    torch::NoGradGuard ng;
    m->set_training(false);
    auto out = m->forward(t.x);
    EXPECT_TRUE(torch::equal(out, t.logits)) << model;
    // The inputs the loader rebuilds from the description are the ones training used.
    auto in = load_inference_inputs(info.data, info.seed, 8, &info.mean, &info.std);
    EXPECT_TRUE(torch::allclose(in.x, t.x, 1e-5, 1e-6)) << model;
    EXPECT_NO_THROW(check_model_fits_inputs(*m, in.x, info.num_classes, {1, 12, 12}, model));
  }
}

TEST(InferCheckpoint, RunMatrixWritesInferenceAndLoadableCheckpoints) {
  MatrixConfig m;
  m.devices = {"cpu"};
  m.models = {"mlp"};
  m.batch_sizes = {32};
  m.data = synthetic_data(8);
  m.train.max_steps = 5;
  m.train.warmup_steps = 1;
  m.out_dir = temp_dir("matrix");
  m.run_name = "r";
  m.progress = false;
  m.train.min_time_s = 0;  // the requested epochs only
  m.telemetry.enabled = false;
  m.profile.enabled = false;
  m.inference.single_stream_budget_s = 0.05;
  m.inference.min_queries = 10;
  m.inference.offline_batch_sizes = {1, 16};
  m.inference.offline_budget_s = 0.02;
  auto res = run_matrix(m);
  ASSERT_EQ(res.runs.size(), 1u);
  ASSERT_TRUE(res.runs[0].inference);
  const auto inf = to_json(*res.runs[0].inference);
  ASSERT_TRUE(inf.is_object()) << inf.dump();
  ASSERT_FALSE(res.runs[0].inference->failed()) << inf.dump();
  ASSERT_TRUE(inf["error"].is_null()) << inf.dump();
  for (const char* k : {"p50_ms", "p90_ms", "p99_ms", "max_ms", "mean_ms", "queries"})
    EXPECT_TRUE(inf["single_stream"].contains(k)) << k;
  EXPECT_EQ(inf["offline"]["per_batch"].size(), 2u);
  EXPECT_TRUE(inf["offline"]["best_samples_per_s"].is_number());
  EXPECT_EQ(inf["grad_mode"], "inference_mode");
  EXPECT_EQ(inf["intra_op_threads"].get<int64_t>(), res.runs[0].intra_op_threads);
  EXPECT_TRUE(inf["single_stream"]["telemetry"].contains("absent_reason"));  // telemetry off
  auto ckpts = run_checkpoints(res.run_dir);
  ASSERT_EQ(ckpts.size(), 1u);
  auto info = read_checkpoint_description(ckpts[0]);
  EXPECT_NO_THROW(load_checkpoint_model(info));
}

TEST(InferCheckpoint, InvalidCheckpointsAreClearErrors) {
  auto dir = temp_dir("invalid");
  auto t = train_and_save("mlp", dir);
  // No description beside the weights.
  fs::copy_file(t.weights, dir + "/lonely.pt");
  auto msg = error_message_of([&] { read_checkpoint_description(dir + "/lonely.pt"); });
  EXPECT_NE(msg.find("no description"), std::string::npos) << msg;
  EXPECT_EQ(error_kind_of([&] { read_checkpoint_description(dir + "/lonely.pt"); }), ErrorKind::kCheckpoint);
  // Missing file.
  EXPECT_EQ(error_kind_of([&] { read_checkpoint_description(dir + "/absent.pt"); }), ErrorKind::kCheckpoint);
  // Malformed description.
  write_text(dir + "/bad.pt", "x");
  write_text(dir + "/bad.json", "{\"model\": \"mlp\"");
  EXPECT_EQ(error_kind_of([&] { read_checkpoint_description(dir + "/bad.pt"); }), ErrorKind::kCheckpoint);
  // Valid description, garbage weights.
  fs::copy_file(dir + "/mlp.json", dir + "/garbage.json");
  write_text(dir + "/garbage.pt", "this is not a checkpoint");
  auto g = read_checkpoint_description(dir + "/garbage.pt");
  EXPECT_EQ(error_kind_of([&] { load_checkpoint_model(g); }), ErrorKind::kCheckpoint);
  // Weights of an mlp described as a cnn.
  auto info = read_checkpoint_description(t.weights);
  info.model = "cnn";
  EXPECT_EQ(error_kind_of([&] { load_checkpoint_model(info); }), ErrorKind::kCheckpoint);
  // A run folder without checkpoints.
  EXPECT_EQ(error_kind_of([&] { run_checkpoints(dir + "/nope"); }), ErrorKind::kIo);
}

TEST(InferCheckpoint, ModelDataShapeMismatchIsAClearError) {
  auto dir = temp_dir("shape");
  auto t = train_and_save("cnn", dir, 12);
  auto info = read_checkpoint_description(t.weights);
  auto m = load_checkpoint_model(info);
  auto other = load_inference_inputs(synthetic_data(16), 42, 4);  // 1x16x16, model wants 1x12x12
  auto msg = error_message_of([&] { check_model_fits_inputs(*m, other.x, info.num_classes, {1, 12, 12}, "cnn"); });
  EXPECT_NE(msg.find("1x12x12"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--data"), std::string::npos) << msg;
  EXPECT_EQ(error_kind_of([&] { check_model_fits_inputs(*m, other.x, info.num_classes, {1, 12, 12}, "cnn"); }),
            ErrorKind::kModel);
  // Without a recorded shape the forward pass itself is the check (cnn's fc layer is sized for 12x12).
  EXPECT_EQ(error_kind_of([&] { check_model_fits_inputs(*m, other.x, info.num_classes, {}, "cnn"); }),
            ErrorKind::kModel);
}

// ---- scenarios on the CPU (shape of the result only; no timing assertions) ----

TEST(InferScenarios, TooFewQueriesFlaggedAndServerServesEveryQuery) {
  torch::manual_seed(1);
  auto m = make_model("mlp", 1, 8, 8, 10);
  auto x = torch::randn({32, 1, 8, 8});
  InferenceOptions o;
  o.single_stream_budget_s = 0.005;
  o.min_queries = 1000000000;  // cannot be reached within the 5x hard stop
  o.warmup_queries = 2;
  o.offline_batch_sizes = {4, 100};  // 100 > pool size: the pool is repeated
  o.offline_budget_s = 0.005;
  auto j = to_json(measure_inference(*m, torch::kCPU, x, o));
  EXPECT_TRUE(j["single_stream"]["too_few_queries"].get<bool>());
  EXPECT_TRUE(j["single_stream"]["too_few_reason"].is_string());
  EXPECT_EQ(j["offline"]["per_batch"][1]["batch_size"].get<int64_t>(), 100);
  EXPECT_FALSE(j.contains("server"));
  InferenceOptions s;
  s.single_stream = s.offline = false;
  s.warmup_queries = 2;
  s.min_queries = 20;
  s.server = true;
  s.server_qps = 2000;
  s.server_budget_s = 0.02;
  s.server_target_p99_ms = 1e6;  // generous: the verdict must not depend on machine speed
  auto js = to_json(measure_inference(*m, torch::kCPU, x, s));
  const auto& srv = js["server"]["runs"][0];
  EXPECT_TRUE(js["server"]["meets_target"].get<bool>());
  EXPECT_EQ(srv["served"].get<int64_t>(), srv["queries_issued"].get<int64_t>());
  EXPECT_EQ(srv["queries"].get<int64_t>(), srv["queries_issued"].get<int64_t>());
  EXPECT_FALSE(j["single_stream"].contains("split"));  // CPU: no copies to split
}

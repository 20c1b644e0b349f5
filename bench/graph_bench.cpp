// CUDA graphs against eager execution, on one GPU, without the trainer (docs/variants.md#cuda-graphs):
//
//   graph_bench infer [--device cuda:0] [--models cnn,resnet18] [--pairs 3] [--budget 2]
//       single-stream inference (batch 1, 1x28x28, random inputs: latency does not depend on the
//       values): eager and graph replay alternately, `pairs` times each; one JSON line per run
//       with p50/p99 end-to-end and the p50 of the compute part (CUDA events).
//   graph_bench train [--device cuda:0] [--models mlp,cnn,resnet18] [--batches 64,128] [--steps 400]
//       training samples/s of the same step (Adam, cross-entropy, 1x28x28 inputs already on the
//       device) eager and as a replayed graph; one JSON line per (model, batch, mode), with the
//       fallback reason when the capture failed.
//
// Figures go to bench/RESULTS.md (bench/gpu/build_and_run.sh stage `graphs`). Without CUDA it
// prints the reason and exits 0.
#include <fmt/format.h>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "infer/bench.h"
#include "results/record_json.h"
#include "train/device.h"
#include "train/graph_step.h"
#include "train/optimizer.h"
#include "workload/model.h"
#include "trainscope/host_malloc.h"
#include "trainscope/provenance.h"

using namespace trainscope;

namespace {

struct Args {
  std::string what, device = "cuda:0";
  std::vector<std::string> models;
  std::vector<int64_t> batches = {64, 128};
  int pairs = 3, steps = 400;
  double budget_s = 2;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');) out.push_back(part);
  return out;
}

Args parse(int argc, char** argv) {
  Args a;
  a.what = argc > 1 ? argv[1] : "";
  a.models = a.what == "train" ? split("mlp,cnn,resnet18") : split("cnn,resnet18");
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--device") a.device = v;
    else if (k == "--models") a.models = split(v);
    else if (k == "--batches") {
      a.batches.clear();
      for (auto& b : split(v)) a.batches.push_back(std::stoll(b));
    } else if (k == "--pairs") a.pairs = std::stoi(v);
    else if (k == "--steps") a.steps = std::stoi(v);
    else if (k == "--budget") a.budget_s = std::stod(v);
  }
  return a;
}

void bench_infer(const Args& a) {
  const torch::Device dev(a.device);
  for (const auto& name : a.models) {
    torch::manual_seed(1);
    auto m = make_model(name, 1, 28, 28, 10);
    m->to(dev);
    auto pool = torch::randn({512, 1, 28, 28});
    for (int p = 0; p < a.pairs; ++p)
      for (bool graphs : {false, true}) {
        InferenceOptions o;
        o.offline = false;
        o.single_stream_budget_s = a.budget_s;
        o.cuda_graphs = graphs;
        auto j = to_json(measure_inference(*m, dev, pool, o));
        const auto& ss = j["single_stream"];
        fmt::print("{{\"bench\": \"graph_infer\", \"model\": \"{}\", \"execution\": {}, \"queries\": {}, \"p50_ms\": {}, "
                   "\"p99_ms\": {}, \"compute_p50_ms\": {}}}\n",
                   name, j["execution"].dump(), ss["queries"].dump(), ss["p50_ms"].dump(), ss["p99_ms"].dump(),
                   ss.contains("split") ? ss["split"]["compute_ms"]["p50_ms"].dump() : "null");
      }
  }
}

// Samples/s of `steps` training steps after 20 untimed ones; graph: replays of a captured step.
void bench_train_one(const Args& a, const std::string& name, int64_t b, bool graphs) {
  const torch::Device dev(a.device);
  torch::manual_seed(1);
  auto m = make_model(name, 1, 28, 28, 10);
  m->to(dev);
  m->set_training(true);
  TrainConfig cfg;  // Adam, lr 1e-3, fused on CUDA
  auto opt = make_optimizer(cfg, m->parameters(), dev, graphs);
  auto xs = torch::randn({8, b, 1, 28, 28}, torch::TensorOptions().device(dev));
  auto ys = torch::randint(0, 10, {8, b}, torch::TensorOptions().dtype(torch::kLong).device(dev));
  auto fwd = [&](const torch::Tensor& x) { return m->forward(x); };
  auto fwd_loss = [&](const torch::Tensor& x, const torch::Tensor& y) { return loss_of_logits(fwd(x), y); };
  std::unique_ptr<CapturedTrainStep> step;
  std::string reason;
  if (graphs) {
    auto out = capture_train_step(*m, *opt, fwd_loss, xs[0], ys[0], dev, 3);
    step = std::move(out.step);
    reason = out.fallback_reason;
  }
  auto one = [&](int i) {
    auto x = xs[i % 8], y = ys[i % 8];
    if (step) {
      step->static_x().copy_(x, true);
      step->static_y().copy_(y, true);
      step->replay();
      return;
    }
    opt->zero_grad();
    torch::nn::functional::cross_entropy(fwd(x), y).backward();
    opt->step();
  };
  for (int i = 0; i < 20; ++i) one(i);
  device_synchronize(dev);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < a.steps; ++i) one(i);
  device_synchronize(dev);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("{{\"bench\": \"graph_train\", \"model\": \"{}\", \"batch\": {}, \"mode\": \"{}\", \"optimizer\": \"{}\", "
             "\"samples_per_s\": {:.1f}, \"fallback_reason\": \"{}\"}}\n",
             name, b, step ? "graph" : "eager", opt->implementation(), a.steps * b / s, reason);
}

}  // namespace

int main(int argc, char** argv) {
  trainscope::set_host_malloc(true);  // as `trainscope run` does (docs/configuration.md#host-memory-allocator)
  Args a = parse(argc, argv);
  if (a.what != "infer" && a.what != "train") {
    fmt::print(stderr, "usage: graph_bench infer|train [options] (see the comment at the top of bench/graph_bench.cpp)\n");
    return 2;
  }
  if (!torch::cuda::is_available()) {
    fmt::print("graph_bench: no CUDA device available to this build; nothing to measure\n");
    return 0;
  }
  if (a.what == "infer") bench_infer(a);
  else
    for (const auto& name : a.models)
      for (int64_t b : a.batches)
        for (bool graphs : {false, true}) bench_train_one(a, name, b, graphs);
  return 0;
}

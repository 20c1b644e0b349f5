// The telemetry sampler's cost to a training loop, measured inside one process so that the
// host's run-to-run spread cancels (docs/telemetry.md#cost-to-the-workload):
//
//   sampler_ab [--device cpu|cuda:0] [--model mlp|cnn|resnet18] [--batch 128] [--pairs 12]
//              [--block-steps 200] [--threads 0] [--interval 0.1] [--slow-interval 1]
//
// The same eager training step as the trainer (Adam, cross-entropy, the per-step loss and
// accuracy sums of train/step_sums.h; random 1x28x28 inputs already on the device: the
// sampler's cost does not depend on the values) runs in blocks of --block-steps timed steps,
// each after a tenth as many untimed ones. A pair is one block with the sampler running (the
// default run's sampler: every source, the same intervals) and one without, in the order
// on-off, off-on, on-off, ... so that a steady drift of the host cancels over pairs. Prints one
// JSON line per pair and a summary: the median of the pairs' ratios (samples/s with the
// sampler / without), its 90 % bootstrap interval (pairs resampled, as bench/self_overhead.sh)
// and whether it resolves a 3 % cost. --threads 0: every core (the run's default).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "train/device.h"
#include "train/optimizer.h"
#include "train/step_sums.h"
#include "trainscope/telemetry.h"
#include "workload/model.h"

using namespace trainscope;

namespace {

struct Args {
  std::string device = "cpu", model = "cnn";
  int64_t batch = 128;
  int pairs = 12, block_steps = 200, threads = 0;
  double interval_s = 0.1, slow_interval_s = 1.0;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--device") a.device = v;
    else if (k == "--model") a.model = v;
    else if (k == "--batch") a.batch = std::stoll(v);
    else if (k == "--pairs") a.pairs = std::stoi(v);
    else if (k == "--block-steps") a.block_steps = std::stoi(v);
    else if (k == "--threads") a.threads = std::stoi(v);
    else if (k == "--interval") a.interval_s = std::stod(v);
    else if (k == "--slow-interval") a.slow_interval_s = std::stod(v);
    else throw std::invalid_argument("unknown option " + k + " (see the comment at the top of bench/sampler_ab.cpp)");
  }
  if (a.pairs < 3 || a.block_steps < 10) throw std::invalid_argument("--pairs must be >= 3 and --block-steps >= 10");
  return a;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// 90 % bootstrap interval of the median of `ratios`, pairs resampled (bench/self_overhead.sh).
std::pair<double, double> interval(const std::vector<double>& ratios) {
  std::mt19937 rng(1);
  std::uniform_int_distribution<size_t> pick(0, ratios.size() - 1);
  constexpr int kReps = 2000;
  std::vector<double> meds, draw(ratios.size());
  for (int r = 0; r < kReps; ++r) {
    for (auto& d : draw) d = ratios[pick(rng)];
    meds.push_back(median(draw));
  }
  std::sort(meds.begin(), meds.end());
  return {meds[kReps * 5 / 100], meds[kReps * 95 / 100 - 1]};
}

}  // namespace

int main(int argc, char** argv) try {
  const Args a = parse(argc, argv);
  // 0: one intra-op thread per logical CPU, as a run's --threads 0 (config.md)
  torch::set_num_threads(a.threads > 0 ? a.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  const torch::Device dev(a.device);
  torch::manual_seed(1);
  auto m = make_model(a.model, 1, 28, 28, 10);
  m->to(dev);
  m->set_training(true);
  TrainConfig cfg;  // Adam, lr 1e-3, fused on CUDA: the trainer's default
  auto opt = make_optimizer(cfg, m->parameters(), dev);
  auto xs = torch::randn({8, a.batch, 1, 28, 28}, torch::TensorOptions().device(dev));
  auto ys = torch::randint(0, 10, {8, a.batch}, torch::TensorOptions().dtype(torch::kLong).device(dev));
  auto sums = make_step_sums(dev);
  int64_t k = 0;
  auto step = [&] {
    auto x = xs[k % 8], y = ys[k % 8];
    ++k;
    opt->zero_grad();
    auto logits = m->forward(x);
    auto loss = torch::nn::functional::cross_entropy(logits, y);
    loss.backward();
    opt->step();
    add_step_sums(sums, loss, logits, y);
  };
  TelemetryOptions to;
  to.interval_s = a.interval_s;
  to.slow_interval_s = a.slow_interval_s;
  TelemetrySampler sampler(to, std::chrono::steady_clock::now());
  sampler.probe();  // once, outside every block (a run probes before training too)
  auto block = [&](bool on) {
    if (on) sampler.start();
    for (int i = 0; i < std::max(1, a.block_steps / 10); ++i) step();
    device_synchronize(dev);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < a.block_steps; ++i) step();
    device_synchronize(dev);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (on) sampler.stop();
    return static_cast<double>(a.block_steps * a.batch) / s;
  };
  for (int i = 0; i < 3; ++i) step();  // allocator, kernels, optimizer state
  std::vector<double> ratios;
  for (int p = 0; p < a.pairs; ++p) {
    double on = 0, off = 0;
    if (p % 2 == 0) {
      on = block(true);
      off = block(false);
    } else {
      off = block(false);
      on = block(true);
    }
    ratios.push_back(on / off);
    fmt::print("{{\"bench\": \"sampler_ab\", \"pair\": {}, \"samples_per_s_sampler_on\": {:.1f}, "
               "\"samples_per_s_sampler_off\": {:.1f}, \"ratio\": {:.4f}}}\n",
               p, on, off, on / off);
  }
  const auto [lo, hi] = interval(ratios);
  const char* verdict = lo >= 0.97 ? "cost below 3 % resolved"
                        : hi < 0.97 ? "cost above 3 %"
                                    : "the spread cannot resolve 3 %: run more pairs";
  fmt::print("{} {} b{} ({} intra-op threads, sampler every {} s, slow fields every {} s, scheduling {}): median pair "
             "ratio {:.4f}, 90 % interval [{:.4f}, {:.4f}] over {} pairs of {} steps: {}\n",
             a.device, a.model, a.batch, torch::get_num_threads(), a.interval_s, a.slow_interval_s,
             sampler.thread_scheduling(), median(ratios), lo, hi, a.pairs, a.block_steps, verdict);
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "sampler_ab: {}\n", e.what());
  return 2;
}

// Greedy decoding of a GPT with the key/value cache, without the CLI (src/workload/decoder.h),
// in the shape of bench/lm_peer.py's `generate` cell so the two read side by side:
//
//   decode_bench [--device cuda:0|cpu] [--model gpt2] [--dtype float32|bfloat16] [--graphs 0|1]
//                [--batch 1] [--prompt 128] [--new 128] [--reps 3]
//
// Random weights (speed does not depend on them) and random prompt ids below 50257. Per rep:
// prefill = one append of the prompt (synchronised), then `new` greedy tokens, each one append
// of the argmax of the previous logits (the argmax read back to the host, as a server streams a
// token). TPOT = (decode time) / (new - 1) with the first token's time excluded as lm_peer.py
// does (its prefill call is separate from generate: TPOT = (generate - prefill) / (new - 1)).
// One warm-up rep (which also captures the graphs), then the best of `reps`. One JSON line.
#include <fmt/format.h>
#include <torch/torch.h>

#include <chrono>
#include <string>

#include "infer/graph_decoder.h"
#include "workload/gpt.h"
#include "workload/model.h"

using namespace trainscope;

namespace {

struct Args {
  std::string device = "cuda:0", model = "gpt2", dtype = "float32";
  bool graphs = false;
  int64_t batch = 1, prompt = 128, fresh = 128, reps = 3;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--device") a.device = v;
    else if (k == "--model") a.model = v;
    else if (k == "--dtype") a.dtype = v;
    else if (k == "--graphs") a.graphs = v == "1";
    else if (k == "--batch") a.batch = std::stoll(v);
    else if (k == "--prompt") a.prompt = std::stoll(v);
    else if (k == "--new") a.fresh = std::stoll(v);
    else if (k == "--reps") a.reps = std::stoll(v);
    else throw std::runtime_error("unknown option " + k);
  }
  return a;
}

void sync(const torch::Device& d) {
  if (d.is_cuda()) torch::cuda::synchronize(d.index());
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  const torch::Device dev(a.device);
  torch::manual_seed(0);
  auto model = make_gpt(a.model, gpt_preset(a.model, 50304));
  model->to(dev);
  const auto dtype = a.dtype == "bfloat16" ? torch::kBFloat16 : torch::kFloat;
  auto dec = with_cuda_graphs(make_gpt_decoder(*model, dtype), a.graphs);
  c10::InferenceMode im;
  auto prompt = torch::randint(0, 50257, {a.batch, a.prompt}, torch::TensorOptions().dtype(torch::kLong).device(dev));
  double best_pf = 1e30, best_tpot = 1e30;
  for (int64_t r = 0; r <= a.reps; ++r) {
    dec->reset(a.batch, a.prompt + a.fresh);
    sync(dev);
    double t0 = now_s();
    auto logits = dec->append(prompt);
    auto next = logits.argmax(-1).view({a.batch, 1});
    (void)next.cpu();
    double t1 = now_s();
    for (int64_t i = 1; i < a.fresh; ++i) {
      next = dec->append(next).argmax(-1).view({a.batch, 1});
      (void)next.cpu();  // the token on the host, as a server streams it
    }
    double t2 = now_s();
    if (r == 0) continue;  // warm-up (and graph capture)
    best_pf = std::min(best_pf, t1 - t0);
    best_tpot = std::min(best_tpot, (t2 - t1) / static_cast<double>(a.fresh - 1));
  }
  fmt::print("{{\"cell\": \"decode_bench\", \"model\": \"{}\", \"device\": \"{}\", \"dtype\": \"{}\", \"execution\": \"{}\", "
             "\"batch\": {}, \"prompt\": {}, \"new\": {}, \"threads\": {}, \"prefill_tokens_per_s\": {:.0f}, "
             "\"decode_tokens_per_s\": {:.1f}, \"tpot_ms\": {:.3f}}}\n",
             a.model, a.device, a.dtype, dec->execution(), a.batch, a.prompt, a.fresh, at::get_num_threads(),
             static_cast<double>(a.batch * a.prompt) / best_pf, static_cast<double>(a.batch) / best_tpot,
             1000 * best_tpot);
  return 0;
}

#include "train/lm_task.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "train/task_loss.h"
#include "train/variant_exec.h"
#include "trainscope/error.h"
#include "workload/gpt.h"

namespace trainscope {

namespace {

torch::Tensor windows(const Dataset& d, int64_t offset) {
  auto* base = const_cast<int64_t*>(d.tokens.data()) + offset;
  return torch::from_blob(base, {d.count, d.width}, {d.width, 1}, torch::kLong);
}

}  // namespace

void view_token_windows(Workload& w) {
  w.train_x = windows(w.data.train, 0);
  w.train_y = windows(w.data.train, 1);
  w.test_x = windows(w.data.test, 0);
  w.test_y = windows(w.data.test, 1);
  auto n = w.data.train.name;
  auto pos = n.rfind(' ');
  w.dataset_name = pos == std::string::npos ? n : n.substr(0, pos);
}

GptShape run_lm_shape(const std::string& name, const Dataset& train, const TrainConfig& cfg) {
  GptShape s = lm_model_shape(name, train.width, train.num_classes);
  if (cfg.lm_layers > 0) s.layers = cfg.lm_layers;
  if (cfg.lm_width > 0) s.d_model = cfg.lm_width;
  if (cfg.lm_heads > 0) s.heads = cfg.lm_heads;
  return s;
}

std::unique_ptr<Model> make_run_model(const std::string& name, const Dataset& train, const TrainConfig& cfg) {
  const std::string task = model_task(name), data = train.is_tokens() ? "causal_lm" : "classification";
  if (!task.empty() && task != data)
    throw_error(ErrorKind::kModel,
                data == "causal_lm"
                    ? fmt::format("model '{}' is an image classifier, but the data is a token stream (--data-format "
                                  "text or tokens); train a language model on it: {}",
                                  name, fmt::join(builtin_lm_models(), ", "))
                    : fmt::format("model '{}' is a language model, but the data holds {}x{}x{} images; give it text "
                                  "(--data-format text) or token files (--data-format tokens)",
                                  name, train.channels, train.height, train.width));
  if (task == "causal_lm") return make_gpt(name, run_lm_shape(name, train, cfg));
  return make_model(name, train.channels, train.height, train.width, train.num_classes);
}

std::optional<double> run_forward_flops(Model& model, const std::string& name, const Dataset& train,
                                        const TrainConfig& cfg) {
  if (!train.is_tokens()) return count_forward_flops(model, train.channels, train.height, train.width);
  if (model_task(name) == "causal_lm")
    return static_cast<double>(train.width) * gpt_train_flops_per_token(run_lm_shape(name, train, cfg), train.width) / 3;
  return count_forward_flops_on(model, torch::zeros({1, train.width}, torch::kLong));
}

std::string resolved_lm_loss(const TrainConfig& cfg, const torch::Device& device) {
  if (cfg.lm_loss != "auto") return cfg.lm_loss;
  return device.is_cuda() ? "full" : "fused";
}

bool fuses_lm_loss(Model& model, const TrainConfig& cfg, const torch::Device& device) {
  return resolved_lm_loss(cfg, device) == "fused" && is_builtin_gpt(model);
}

StepForward make_step_forward(Model& model, at::MemoryFormat format, const TrainConfig& cfg,
                              const torch::Device& device) {
  if (fuses_lm_loss(model, cfg, device))
    return [&model](const torch::Tensor& x, const torch::Tensor& y) { return StepOutput{gpt_fused_loss(model, x, y), {}}; };
  return [&model, format](const torch::Tensor& x, const torch::Tensor& y) {
    return loss_of_logits(variant_forward(model, x, format), y);
  };
}

int64_t eval_batch_for(const Dataset& train, const TrainConfig& cfg, int64_t batch_size) {
  return train.is_tokens() ? batch_size : cfg.eval_batch_size;
}

void describe_task(RunRecord& r, const std::string& model, const DatasetPair& data, const TrainConfig& cfg,
                   const torch::Device& device, bool bf16) {
  const auto& tr = data.train;
  if (!tr.is_tokens()) {
    r.task = "classification";
    r.throughput_unit = "samples/s";
    return;
  }
  r.task = "causal_lm";
  r.throughput_unit = "tokens/s";
  LanguageModelSection lm;
  lm.seq_len = tr.width;
  lm.vocab_size = tr.num_classes;
  lm.model_vocab_size = tr.num_classes;
  lm.tokenizer = data.tokenizer;
  if (model_task(model) == "causal_lm") {
    const GptShape s = run_lm_shape(model, tr, cfg);
    lm.model_vocab_size = s.vocab;
    lm.layers = s.layers, lm.d_model = s.d_model, lm.heads = s.heads, lm.context = s.context;
    lm.train_flops_per_token = gpt_train_flops_per_token(s, tr.width);
    const auto opts = torch::TensorOptions().dtype(bf16 ? torch::kBFloat16 : torch::kFloat).device(device);
    // requires_grad: SDPA picks its backend for training tensors (some backends do not run backward)
    auto q = torch::empty({1, s.heads, tr.width, s.d_model / s.heads}, opts.requires_grad(true));
    lm.attention = attention_backend(q, q, q);
    lm.loss = resolved_lm_loss(cfg, device);
  } else {
    lm.attention = "the TorchScript module's own";
    lm.loss = "full";
  }
  r.language_model = lm;
}

nlohmann::json lm_checkpoint_shape(const std::string& model, const Dataset& train, const TrainConfig& cfg) {
  if (!train.is_tokens()) return nullptr;
  nlohmann::json j = {{"seq_len", train.width}, {"vocab", train.num_classes}};
  if (model_task(model) == "causal_lm") {
    const GptShape s = run_lm_shape(model, train, cfg);
    j.update({{"layers", s.layers}, {"d_model", s.d_model}, {"heads", s.heads}, {"context", s.context},
              {"model_vocab", s.vocab}});
  }
  return j;
}

void language_model_figures(RunRecord& r) {
  if (!r.language_model) return;
  auto& lm = *r.language_model;
  if (r.steady_samples_per_s) lm.steady_tokens_per_s = *r.steady_samples_per_s * static_cast<double>(lm.seq_len);
  lm.train_loss = r.final_train_loss;
  if (!r.epochs.empty() && r.epochs.back().test_loss) {
    const double loss = *r.epochs.back().test_loss;
    lm.val_loss = loss;
    lm.val_perplexity = std::exp(loss);
    if (lm.tokenizer == "bytes") lm.val_bits_per_byte = loss / std::log(2.0);
    lm.val_token_accuracy_pct = r.epochs.back().test_accuracy_pct;
  }
}

}  // namespace trainscope

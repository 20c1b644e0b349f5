// What a run does differently when its data set is a token stream (causal language modelling;
// docs/language-models.md): the model it builds, its FLOPs, the record's task fields and its
// language-model figures. The step itself is the same for both tasks (train/task_loss.h).
#pragma once

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>

#include "trainscope/config.h"
#include "trainscope/dataset.h"
#include "trainscope/run_record.h"
#include "train/graph_step.h"
#include "train/trainer.h"
#include "workload/model.h"

namespace trainscope {

/// Sets w.train_x / train_y / test_x / test_y of a token data set: int64 [count, T] views of
/// the token stream, x row i = tokens[i*T, i*T+T), y row i = tokens[i*T+1, i*T+T+1) (no copy).
void view_token_windows(Workload& w);

/// The model of a run on `train`: a built-in language model with the run's shape settings
/// (train.lm_layers / lm_width / lm_heads over the preset) for a token set, else make_model.
/// Throws Error(kModel) when the model's task is not the data's (an image model on tokens, a
/// language model on images), naming both and the fix.
std::unique_ptr<Model> make_run_model(const std::string& name, const Dataset& train, const TrainConfig& cfg);

/// The GPT shape make_run_model builds for a built-in language model on `train`.
GptShape run_lm_shape(const std::string& name, const Dataset& train, const TrainConfig& cfg);

/// Forward FLOPs per sample (per window for a language model): a built-in language model's by
/// the PaLM formula (a third of 6N + 12LdT per token, times T); otherwise counted on one sample
/// (count_forward_flops; int64 zeros [1, T] for a TorchScript language model).
std::optional<double> run_forward_flops(Model& model, const std::string& name, const Dataset& train,
                                        const TrainConfig& cfg);

/// The step's forward and loss (train/graph_step.h StepForward) of `model` in a run of `cfg`, one
/// for the eager and the captured step: for a built-in GPT with train.lm_loss = fused, the loss
/// without logits (gpt_fused_loss, workload/gpt.h; StepOutput::logits undefined); for every other
/// model, or lm_loss = full, variant_forward's float32 logits (train/variant_exec.h) and task_loss.
StepForward make_step_forward(Model& model, at::MemoryFormat format, const TrainConfig& cfg,
                              const torch::Device& device);

/// train.lm_loss for a run on `device`: "fused" or "full" as set; "auto" (the default) is "full" on
/// CUDA and "fused" elsewhere: the fused loss trades a little GPU throughput for less memory and is
/// faster on the CPU (bench/RESULTS.md has the measurements).
std::string resolved_lm_loss(const TrainConfig& cfg, const torch::Device& device);

/// Whether make_step_forward fuses the loss of `model` under `cfg` on `device`.
bool fuses_lm_loss(Model& model, const TrainConfig& cfg, const torch::Device& device);

/// Predictions per sample: the window's T tokens for a language model, 1 for an image.
inline int64_t predictions_per_sample(const Dataset& train) { return train.is_tokens() ? train.width : 1; }

/// The batch size evaluation uses: eval_batch_size for images; for a language model the training
/// batch size, so that the logits (B x T x V) fit where training fits.
int64_t eval_batch_for(const Dataset& train, const TrainConfig& cfg, int64_t batch_size);

/// Fills r.task, r.throughput_unit and, for a token set, the language_model section's settings
/// (sequence length, vocabularies, tokenizer, the built-in's shape and training FLOPs per token,
/// the attention implementation that runs on `device` at the variant's precision, and the
/// training loss's: "fused" where a built-in model fuses it under cfg.lm_loss on `device`, else "full").
void describe_task(RunRecord& r, const std::string& model, const DatasetPair& data, const TrainConfig& cfg,
                   const torch::Device& device, bool bf16);

/// What a checkpoint of a language-model run needs to rebuild its model: {"seq_len", "vocab",
/// "tokenizer"} and, for a built-in, {"layers", "d_model", "heads", "context", "model_vocab"};
/// null for an image set.
nlohmann::json lm_checkpoint_shape(const std::string& model, const Dataset& train, const TrainConfig& cfg);

/// The language-model figures once training and evaluation are over: tokens/s from the steady
/// samples/s, the last epoch's training loss, validation loss (nats per token), perplexity,
/// bits per byte (byte tokens) and next-token accuracy from the last evaluation.
void language_model_figures(RunRecord& r);

}  // namespace trainscope

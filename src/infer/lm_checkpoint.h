// A language model's checkpoint from `trainscope run` (checkpoints/<run_id>.pt with its .json,
// "task": "causal_lm" and the "language_model" shape; src/matrix/run_folder.cpp writes it), the
// model it holds, a Decoder over it and the validation text its prompts are drawn from.
//
// Errors: a description that is not a language model's, is malformed or lacks its shape, and
// weights that do not load, throw Error(kCheckpoint) naming the file and the fix.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>

#include "trainscope/config.h"
#include "workload/decoder.h"
#include "workload/gpt.h"
#include "workload/model.h"

namespace trainscope {

/// The "task" of the description beside `weights_path` ("causal_lm", "classification"; "" when
/// it has none or cannot be read: the image checkpoint reader then says what is wrong).
std::string checkpoint_task(const std::string& weights_path);

struct LmCheckpoint {
  std::string weights_path, description_path, model, weights_format;
  GptShape shape;           // built-in GPT: its shape; a TorchScript LM: context and vocab only
  int64_t seq_len = 0;      // the training window
  DataConfig data;          // the text or tokens it was trained on
  uint64_t seed = 0;
  std::string trained_on, description;  // description: the .json as written
  int64_t batch_size = 0;
};

LmCheckpoint read_lm_checkpoint(const std::string& weights_path);

/// Whether the checkpoint `weights_path` and its description can say what it holds: throws
/// Error(kCheckpoint) naming the file and the fix when the .pt is missing, or its description
/// (the .json beside it) is missing, not JSON or not a JSON object. `infer` calls it when
/// generation flags meet a checkpoint whose description names no language model, so a damaged
/// description is named as such, not as "not a language model" (checkpoint_task() reads it as
/// "no task").
void check_checkpoint_description(const std::string& weights_path);

/// The model with its weights, on the CPU.
std::unique_ptr<Model> load_lm_model(const LmCheckpoint& c);

/// A decoder over `model` (already on `device`): the cached GPT decoder computing in `dtype`,
/// replaying CUDA graphs with `cuda_graphs` on a GPU (infer/graph_decoder.h); a TorchScript LM
/// gets the recomputing decoder (no cache).
std::unique_ptr<Decoder> make_lm_decoder(Model& model, const LmCheckpoint& c, const torch::Device& device,
                                         torch::ScalarType dtype, bool cuda_graphs);

/// The slot decoder of continuous batching (workload/decoder.h) over built-in GPT `model` (already
/// on its device) computing in `dtype`; nullptr for a TorchScript LM, which has no slot cache.
std::unique_ptr<SlotDecoder> make_lm_slot_decoder(Model& model, const LmCheckpoint& c, torch::ScalarType dtype);

/// The validation token stream of `data` (1-D int64 on the CPU): the windows' tokens of the
/// test split (the training split when there is none).
torch::Tensor validation_tokens(const DataConfig& data, uint64_t seed);

}  // namespace trainscope

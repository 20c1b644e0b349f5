// Loading what `trainscope run` saved (checkpoints/<run_id>.pt + <run_id>.json, see
// checkpoint_description in train/trainer.h) and the inputs to run it on.
//
// Errors: a missing or malformed description, or weights that do not load, throw
// Error(kCheckpoint) naming the file and what to do; a data set whose sample shape differs
// from the model's input shape throws Error(kModel).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/config.h"
#include "workload/model.h"

namespace trainscope {

struct CheckpointInfo {
  std::string weights_path, description_path;
  nlohmann::json description;
  std::string model;                 // "cnn", ... or the TorchScript path it was trained from
  std::string weights_format;        // "libtorch_archive" | "torchscript"
  int64_t channels = 0, height = 0, width = 0, num_classes = 0;
  std::vector<float> mean, std;      // per channel, [0,1] pixel units
  DataConfig data;                   // the data it was trained on
  uint64_t seed = 0;
  std::string trained_on;
  int64_t batch_size = 0;
};

/// Reads <weights without extension>.json beside `weights_path`.
CheckpointInfo read_checkpoint_description(const std::string& weights_path);

/// Builds the model the description names and loads the weights (on the CPU).
std::unique_ptr<Model> load_checkpoint_model(const CheckpointInfo& info);

/// Every checkpoints/*.pt of a run folder that has a description beside it, sorted.
/// Throws Error(kIo) when the folder has no checkpoints/ or none in it.
std::vector<std::string> run_checkpoints(const std::string& run_dir);

/// Test inputs, float32 N x C x H x W on the CPU (a copy that owns its memory).
struct InferenceInputs {
  torch::Tensor x, y;
  std::string dataset;       // e.g. "fashion-mnist test"
  std::vector<float> mean, std;
};

/// Loads the test set of `data` (seeded as in training) and keeps at most `limit` samples
/// (0 = all). With `renormalise_mean`/`_std` given (the checkpoint's), inputs are re-normalised
/// to them, so the model sees exactly what it was trained on.
InferenceInputs load_inference_inputs(const DataConfig& data, uint64_t seed, int64_t limit,
                                      const std::vector<float>* renormalise_mean = nullptr,
                                      const std::vector<float>* renormalise_std = nullptr);

/// Checks that `model` takes one sample of `x` and returns [1, classes] logits; throws
/// Error(kModel) naming both shapes and the fix otherwise. `expected_chw` (may be empty) is
/// the input shape the checkpoint was trained on.
void check_model_fits_inputs(Model& model, const torch::Tensor& x, int64_t classes,
                             const std::vector<int64_t>& expected_chw, const std::string& what);

}  // namespace trainscope

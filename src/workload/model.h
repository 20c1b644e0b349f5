// Models trainscope trains: built-in networks and user TorchScript files behind one interface.
//
// Built-ins (input N x C x H x W float32, output N x classes logits):
//  * mlp      : Flatten, Linear(C*H*W, 128), ReLU, Linear(128, classes) -- the study's "simple network".
//  * cnn      : [Conv3x3(C,32,pad 1), ReLU, MaxPool2] [Conv3x3(32,64,pad 1), ReLU, MaxPool2],
//               Flatten, Linear(64*(H/4)*(W/4), 128), ReLU, Linear(128, classes).
//  * resnet18 : He et al. 2016 ResNet-18 (BasicBlock x [2,2,2,2], widths 64..512) with the
//               CIFAR-style 3x3 stride-1 stem and no max-pool, for 28-32 px inputs; BatchNorm;
//               global average pool; Linear(512, classes). ~11.2 M parameters for 10 classes.
//  * vgg11    : Simonyan & Zisserman 2015 configuration A (64,M,128,M,256,256,M,512,512,M,512,512,M)
//               with BatchNorm, 3x3 convs, a max-pool skipped when the map is already 1x1,
//               global average pool and Linear(512, classes) (small-input variant).
//  * vit-s, vit-ti : vision transformers ViT-S and ViT-Ti (workload/vit.h), patch 16 from 64 px,
//               patch 4 below; 22,050,664 and 5,717,416 parameters at 224 x 224 x 3, 1000 classes.
//  * a path ending in .pt/.pth/.ts: a TorchScript module (torch.jit.save) whose forward takes
//    N x C x H x W and returns N x classes logits; trained through its parameters().
//
// Errors: unknown name or unreadable TorchScript -> Error(kModel) naming the model and the fix.
#pragma once

#include <torch/script.h>
#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "workload/model_names.h"

namespace trainscope {

struct GptShape;  // workload/gpt.h

class Model {
 public:
  virtual ~Model() = default;
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
  /// The parameters, each tensor once: a module registered under several attribute names
  /// (weight sharing) appears once per name in the module's own traversal, but is one tensor
  /// (one c10::TensorImpl); it is counted, stepped and given optimizer state once. First-seen
  /// order of the traversal.
  std::vector<torch::Tensor> parameters();
  virtual void set_training(bool on) = 0;
  virtual void to(const torch::Device& device) = 0;
  /// Writes the weights (native: torch::save archive; TorchScript: the scripted module).
  virtual void save(const std::string& path) = 0;
  /// Loads weights written by save(); throws Error(kCheckpoint) on mismatch.
  virtual void load(const std::string& path) = 0;
  const std::string& name() const { return name_; }
  /// Number of trainable scalars (of parameters(), so shared tensors count once).
  int64_t parameter_count();

 protected:
  /// Every parameter slot of the module's traversal, aliases included; parameters() dedups.
  virtual std::vector<torch::Tensor> parameter_slots() = 0;
  std::string name_;
};

/// Built-in model names, in the order the CLI lists them.
std::vector<std::string> builtin_models();

/// Creates a model for inputs of shape channels x height x width and `classes` outputs.
/// A built-in language model (gpt-mini, gpt2, gpt2-medium; workload/gpt.h) takes the shape of a
/// token Dataset (trainscope/dataset.h): channels = height = 1, width = the sequence length,
/// classes = the data's vocabulary; its shape is lm_model_shape's.
/// The weights are initialised from LibTorch's global generator (seed it first).
std::unique_ptr<Model> make_model(const std::string& name, int64_t channels, int64_t height, int64_t width,
                                  int64_t classes);

/// The output vocabulary of a built-in language model is the data's rounded up to a multiple of
/// 64 (GPT-2's 50257 -> 50304, as nanoGPT pads it, so the output matrix product tiles evenly);
/// the padded ids never occur in the data.
constexpr int64_t kVocabMultiple = 64;

/// The shape of built-in language model `name` for windows of seq_len tokens of a vocabulary of
/// `vocab`: the preset's layers, width and heads, the vocabulary padded (kVocabMultiple), the
/// context the preset's or seq_len when longer. Throws Error(kModel) for another name.
GptShape lm_model_shape(const std::string& name, int64_t seq_len, int64_t vocab);

/// "causal_lm" for a built-in language model, "classification" for a built-in image model, ""
/// for a TorchScript file (its task is the data's).
std::string model_task(const std::string& name);

/// Checks, before anything runs, that `model` fits the data: one sample of `x` (N x C x H x W,
/// N >= 1) goes through forward() without gradients in eval mode (the model is left in it) and
/// must give [1, classes] logits (classes 0: any width); with `need_trainable` the model must
/// also have trainable parameters. `what` names the model ("model 'x.pt'"). Throws
/// Error(kModel) naming `what`, the data's sample shape (e.g. 1x28x28) and the fix; for a
/// forward pass that fails, the last line of what LibTorch or the TorchScript interpreter
/// raised, without the interpreter's traceback. Used by `trainscope run` (every model of the
/// matrix) and `trainscope infer`.
void check_model_fits(Model& model, const torch::Tensor& x, int64_t classes, bool need_trainable,
                      const std::string& what);

/// Forward FLOPs per sample, counted on a one-sample forward pass by an operator observer
/// (at::RecordFunction): 2 FLOPs per multiply-accumulate of aten::convolution
/// (2 * N * Cout * Hout * Wout * Cin/groups * kh * kw) and of aten::addmm / aten::mm / aten::bmm
/// (2 * M * N * K), and of aten::scaled_dot_product_attention's two matrix products
/// (2 * L * S * (E + Ev) per batch entry and head, as torch/utils/flop_counter.py counts it; the
/// operators it runs inside are then not counted again); element-wise operators, pooling and
/// normalisation are not counted (they are a few percent of the total for these networks).
/// Returns nullopt if no counted operator ran.
std::optional<double> count_forward_flops(Model& model, int64_t channels, int64_t height, int64_t width);

/// The same count on the one-sample input `sample` (e.g. int64 token ids [1, T]).
std::optional<double> count_forward_flops_on(Model& model, const torch::Tensor& sample);

/// FLOPs of one operator call from its inputs, by the formulas above (0 when the operator is
/// not counted or its inputs are not tensors of the expected rank). Used by count_forward_flops
/// and by the operator profiler.
double op_flops(const at::RecordFunction& fn);

}  // namespace trainscope

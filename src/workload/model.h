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

namespace trainscope {

class Model {
 public:
  virtual ~Model() = default;
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
  virtual std::vector<torch::Tensor> parameters() = 0;
  virtual void set_training(bool on) = 0;
  virtual void to(const torch::Device& device) = 0;
  /// Writes the weights (native: torch::save archive; TorchScript: the scripted module).
  virtual void save(const std::string& path) = 0;
  /// Loads weights written by save(); throws Error(kCheckpoint) on mismatch.
  virtual void load(const std::string& path) = 0;
  const std::string& name() const { return name_; }
  /// Number of trainable scalars.
  int64_t parameter_count();

 protected:
  std::string name_;
};

/// Built-in model names, in the order the CLI lists them.
std::vector<std::string> builtin_models();
bool is_torchscript_path(const std::string& model);

/// Creates a model for inputs of shape channels x height x width and `classes` outputs.
/// The weights are initialised from LibTorch's global generator (seed it first).
std::unique_ptr<Model> make_model(const std::string& name, int64_t channels, int64_t height, int64_t width,
                                  int64_t classes);

/// Forward FLOPs per sample, counted on a one-sample forward pass by an operator observer
/// (at::RecordFunction): 2 FLOPs per multiply-accumulate of aten::convolution
/// (2 * N * Cout * Hout * Wout * Cin/groups * kh * kw) and of aten::addmm / aten::mm / aten::bmm
/// (2 * M * N * K); element-wise operators, pooling and normalisation are not counted (they are a
/// few percent of the total for these networks). Returns nullopt if no counted operator ran.
std::optional<double> count_forward_flops(Model& model, int64_t channels, int64_t height, int64_t width);

/// FLOPs of one operator call from its inputs, by the formulas above (0 when the operator is
/// not counted or its inputs are not tensors of the expected rank). Used by count_forward_flops
/// and by the operator profiler.
double op_flops(const at::RecordFunction& fn);

}  // namespace trainscope

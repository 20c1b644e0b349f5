// TorchScript model files for tests, built in C++ (torch::jit::Module::define compiles the
// TorchScript source) and saved with torch::jit::Module::save at test time, so no binary model
// file is kept in the repository. Each function writes `path` and returns it.
#pragma once

#include <torch/script.h>

#include <cmath>
#include <memory>
#include <string>

namespace ts_test {

using Unit = std::shared_ptr<torch::jit::CompilationUnit>;

/// A linear layer y = x W^T + b as a TorchScript module of class `cls`. The modules of one file
/// share one compilation unit (a parent's forward must see its children's methods) and each has
/// its own class name.
inline torch::jit::Module script_linear(const Unit& cu, const std::string& cls, int64_t in, int64_t out) {
  torch::jit::Module m(cls, cu);
  auto weight = torch::randn({out, in}) / std::sqrt(static_cast<double>(in));
  m.register_parameter("weight", weight.requires_grad_(), false);  // trainable, as nn.Parameter
  m.register_parameter("bias", torch::zeros({out}).requires_grad_(), false);
  m.define("def forward(self, x):\n  return torch.addmm(self.bias, x, self.weight.t())\n");
  return m;
}

/// Weight sharing: ONE Linear(784, 784) registered under three attribute names (a, b, c) and
/// applied once, then Linear(784, 10): 615,440 + 7,850 = 623,290 distinct parameters in 4
/// tensors, while the module's traversal lists the shared weight and bias three times.
inline std::string save_shared_linear_net(const std::string& path) {
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  auto shared = script_linear(cu, "Shared", 784, 784);
  torch::jit::Module net("SharedNet", cu);
  for (const char* name : {"a", "b", "c"}) net.register_module(name, shared);
  net.register_module("head", script_linear(cu, "Head", 784, 10));
  net.define("def forward(self, x):\n  return self.head.forward(torch.relu(self.a.forward(x.flatten(1))))\n");
  net.save(path);
  return path;
}

/// A model made for 3x32x32 inputs (CIFAR-10): Linear(3072, 10) on the flattened sample. On
/// 1x28x28 samples the interpreter raises a shape error (784 features, not 3072).
inline std::string save_cifar_shaped_net(const std::string& path) {
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  torch::jit::Module net("CifarNet", cu);
  net.register_module("fc", script_linear(cu, "Fc", 3 * 32 * 32, 10));
  net.define("def forward(self, x):\n  return self.fc.forward(x.flatten(1))\n");
  net.save(path);
  return path;
}

/// No parameters at all: the first 10 features of each sample as logits (fits 1x28x28 data).
inline std::string save_parameterless_net(const std::string& path) {
  torch::jit::Module net("NothingToTrain");
  net.define("def forward(self, x):\n  return x.flatten(1).narrow(1, 0, 10)\n");
  net.save(path);
  return path;
}

}  // namespace ts_test

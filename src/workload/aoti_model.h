// torch.export / AOTInductor packages (`.pt2`, torch._inductor.aoti_compile_and_package) as a
// Model for `infer` (docs/inference.md#aotinductor-packages). Loaded through LibTorch's
// torch::inductor::AOTIModelPackageLoader, which LibTorch has from PyTorch 2.6; CMake defines
// TRAINSCOPE_WITH_AOTI when the configured LibTorch has it (src/CMakeLists.txt).
//
// A package is compiled for one device type (its metadata's AOTI_DEVICE_KEY, "cpu" or "cuda")
// and holds its own weights: it runs, it does not train (no parameters, save and load throw).
//
// Errors: Error(kModel) naming the file when it does not exist, cannot be loaded, or when this
// LibTorch has no loader (LibTorch 1.13: "needs LibTorch >= 2.6"); Error(kInvalidArgument) when
// moved to a device of another type than the package's.
#pragma once

#include <memory>
#include <string>

#include "workload/model.h"

namespace trainscope {

/// A path ending in ".pt2".
bool is_aoti_package_path(const std::string& model);

/// Whether this build can load packages (LibTorch >= 2.6 at configure time).
bool aoti_available();

/// The package at `path` as a Model (forward: N x C x H x W -> the package's first output).
std::unique_ptr<Model> make_aoti_model(const std::string& path);

}  // namespace trainscope

// AotiModel (workload/aoti_model.h): a torch.export / AOTInductor package behind the Model
// interface, or, on a LibTorch without the loader, the error that says what is needed.
#include "workload/aoti_model.h"

#include <fmt/core.h>
#include <torch/version.h>

#include "trainscope/error.h"
#include "trainscope/fs.h"

#ifdef TRAINSCOPE_WITH_AOTI
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#endif

namespace trainscope {

bool is_aoti_package_path(const std::string& m) { return m.size() > 4 && m.compare(m.size() - 4, 4, ".pt2") == 0; }

#ifdef TRAINSCOPE_WITH_AOTI

bool aoti_available() { return true; }

namespace {

class AotiModel final : public Model {
 public:
  explicit AotiModel(const std::string& path) {
    name_ = path;
    try {
      loader_ = std::make_unique<torch::inductor::AOTIModelPackageLoader>(path);
      const auto meta = loader_->get_metadata();
      const auto it = meta.find("AOTI_DEVICE_KEY");
      device_ = it == meta.end() ? "" : it->second;
    } catch (const std::exception& e) {
      throw_error(ErrorKind::kModel, fmt::format("cannot load the AOTInductor package '{}': {}; make it with "
                                                 "torch._inductor.aoti_compile_and_package(torch.export.export(model, "
                                                 "(example,)), package_path='{}')",
                                                 path, e.what(), path));
    }
  }
  // A package runs on the device it was compiled for: an input elsewhere (infer's shape check
  // runs one CPU sample before the model is placed) is copied there first. Measured inputs are
  // already there, as to() refuses any other device.
  torch::Tensor forward(const torch::Tensor& x) override {
    const bool elsewhere = (device_ == "cuda" && !x.is_cuda()) || (device_ == "cpu" && !x.is_cpu());
    std::vector<at::Tensor> in{(elsewhere ? x.to(device_ == "cuda" ? torch::Device("cuda:0") : torch::kCPU) : x).contiguous()};
    std::vector<at::Tensor> out = loader_->run(in);
    if (out.empty())
      throw_error(ErrorKind::kModel, fmt::format("AOTInductor package '{}' returned no output", name_));
    return out.front();
  }
  void set_training(bool) override {}
  void to(const torch::Device& d) override {
    const std::string want = d.is_cuda() ? "cuda" : d.is_cpu() ? "cpu" : d.str();
    if (!device_.empty() && want != device_)
      throw_error(ErrorKind::kInvalidArgument,
                  fmt::format("AOTInductor package '{}' was compiled for {}, not {}: measure it on that device "
                              "(--devices {}) or export it again for {}",
                              name_, device_, d.str(), device_ == "cuda" ? "cuda:0" : device_, want));
  }
  void save(const std::string&) override { read_only(); }
  void load(const std::string&) override { read_only(); }

 protected:
  std::vector<torch::Tensor> parameter_slots() override { return {}; }

 private:
  [[noreturn]] void read_only() const {
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("AOTInductor package '{}' holds compiled weights: it can be measured by infer, not "
                            "trained, saved or loaded",
                            name_));
  }
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader_;
  std::string device_;
};

}  // namespace

std::unique_ptr<Model> make_aoti_model(const std::string& path) {
  if (!file_exists(path))
    throw_error(ErrorKind::kModel, fmt::format("AOTInductor package '{}' (--model): the file does not exist", path));
  return std::make_unique<AotiModel>(path);
}

#else

bool aoti_available() { return false; }

std::unique_ptr<Model> make_aoti_model(const std::string& path) {
  throw_error(ErrorKind::kModel,
              fmt::format("'{}' is a torch.export / AOTInductor package (.pt2): this trainscope was built against "
                          "LibTorch {}, which has no AOTIModelPackageLoader; build it against LibTorch >= 2.6 (the "
                          "PyTorch wheel's, README.md#on-a-gpu-host), or measure a TorchScript file (.pt) or a "
                          "checkpoint instead",
                          path, TORCH_VERSION));
}

#endif

}  // namespace trainscope

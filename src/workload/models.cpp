#include <fmt/format.h>
#include <fmt/ranges.h>

#include <ATen/record_function.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <functional>
#include <string_view>
#include <unordered_set>

#include "common/text.h"
#include "common/zip_crc.h"
#include "train/compat.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "workload/aoti_model.h"
#include "workload/gpt.h"
#include "workload/model.h"
#include "workload/native_model.h"
#include "workload/vit.h"

namespace trainscope {

namespace nn = torch::nn;

std::vector<torch::Tensor> Model::parameters() {
  std::vector<torch::Tensor> unique;
  std::unordered_set<const c10::TensorImpl*> seen;
  for (auto& p : parameter_slots())
    if (seen.insert(p.unsafeGetTensorImpl()).second) unique.push_back(p);
  return unique;
}

int64_t Model::parameter_count() {
  int64_t n = 0;
  for (auto& p : parameters())
    if (p.requires_grad()) n += p.numel();
  return n;
}

namespace {

// ---------------- built-in networks ----------------

struct MlpImpl : nn::Module {
  MlpImpl(int64_t in, int64_t classes) {
    fc1 = register_module("fc1", nn::Linear(in, 128));
    fc2 = register_module("fc2", nn::Linear(128, classes));
  }
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::relu(fc1(x.flatten(1)))); }
  nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Mlp);

struct CnnImpl : nn::Module {
  CnnImpl(int64_t c, int64_t h, int64_t w, int64_t classes) {
    conv1 = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(c, 32, 3).padding(1)));
    conv2 = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)));
    fc1 = register_module("fc1", nn::Linear(64 * (h / 4) * (w / 4), 128));
    fc2 = register_module("fc2", nn::Linear(128, classes));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);
    return fc2(torch::relu(fc1(x.flatten(1))));
  }
  nn::Conv2d conv1{nullptr}, conv2{nullptr};
  nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Cnn);

struct BasicBlockImpl : nn::Module {
  BasicBlockImpl(int64_t in, int64_t out, int64_t stride) {
    conv1 = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false)));
    bn1 = register_module("bn1", nn::BatchNorm2d(out));
    conv2 = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(out, out, 3).stride(1).padding(1).bias(false)));
    bn2 = register_module("bn2", nn::BatchNorm2d(out));
    if (stride != 1 || in != out) {
      shortcut = register_module("shortcut", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)),
                                                            nn::BatchNorm2d(out)));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    auto y = torch::relu(bn1(conv1(x)));
    y = bn2(conv2(y));
    return torch::relu(y + (shortcut ? shortcut->forward(x) : x));
  }
  nn::Conv2d conv1{nullptr}, conv2{nullptr};
  nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  nn::Sequential shortcut{nullptr};
};
TORCH_MODULE(BasicBlock);

// Inputs at least this many pixels on their shorter side get torchvision's ImageNet stem (7x7
// stride-2 convolution, 3x3 stride-2 max-pool: 224 px reaches layer1 at 56 px); smaller ones the
// CIFAR stem (3x3 stride 1, no pool), which keeps 28-32 px images from shrinking to 7-8 px before
// layer1. Source: He et al. 2016 (arXiv 1512.03385), Table 1 and section 4.2; docs/workloads.md.
constexpr int64_t kImageNetStemMinSide = 64;

struct ResNet18Impl : nn::Module {
  ResNet18Impl(int64_t c, int64_t h, int64_t w, int64_t classes) : imagenet_stem(std::min(h, w) >= kImageNetStemMinSide) {
    const int64_t k = imagenet_stem ? 7 : 3;
    stem = register_module("stem", nn::Conv2d(nn::Conv2dOptions(c, 64, k).stride(imagenet_stem ? 2 : 1).padding(k / 2).bias(false)));
    bn = register_module("bn", nn::BatchNorm2d(64));
    int64_t in = 64;
    const int64_t widths[4] = {64, 128, 256, 512};
    for (int i = 0; i < 4; ++i) {
      nn::Sequential layer;
      for (int b = 0; b < 2; ++b) {
        int64_t stride = (b == 0 && i > 0) ? 2 : 1;
        layer->push_back(BasicBlock(in, widths[i], stride));
        in = widths[i];
      }
      layers.push_back(register_module(fmt::format("layer{}", i + 1), layer));
    }
    fc = register_module("fc", nn::Linear(512, classes));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(bn(stem(x)));
    if (imagenet_stem) x = torch::max_pool2d(x, 3, 2, 1);
    for (auto& l : layers) x = l->forward(x);
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc(x);
  }
  bool imagenet_stem;
  nn::Conv2d stem{nullptr};
  nn::BatchNorm2d bn{nullptr};
  std::vector<nn::Sequential> layers;
  nn::Linear fc{nullptr};
};
TORCH_MODULE(ResNet18);

struct Vgg11Impl : nn::Module {
  Vgg11Impl(int64_t c, int64_t h, int64_t w, int64_t classes) {
    const int64_t cfg[] = {64, -1, 128, -1, 256, 256, -1, 512, 512, -1, 512, 512, -1};
    int64_t in = c, hh = h, ww = w;
    for (int64_t v : cfg) {
      if (v < 0) {
        if (hh >= 2 && ww >= 2) {
          features->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(2)));
          hh /= 2;
          ww /= 2;
        }
      } else {
        features->push_back(nn::Conv2d(nn::Conv2dOptions(in, v, 3).padding(1)));
        features->push_back(nn::BatchNorm2d(v));
        features->push_back(nn::ReLU(true));
        in = v;
      }
    }
    register_module("features", features);
    fc = register_module("fc", nn::Linear(512, classes));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = features->forward(x);
    return fc(torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1));
  }
  nn::Sequential features;
  nn::Linear fc{nullptr};
};
TORCH_MODULE(Vgg11);

class ScriptModel final : public Model {
 public:
  ScriptModel(const std::string& path) {
    name_ = path;
    if (!file_exists(path))
      throw_error(ErrorKind::kModel, fmt::format("TorchScript model '{}' (--models / models): the file does not exist; "
                                                 "check the path (relative to the current folder) or give a built-in "
                                                 "model name",
                                                 path));
    // LibTorch's zip reader does not check CRCs: a damaged member would load silently.
    check_zip_crcs(path, "save the model again (torch.jit.save) or copy it again from where it was written");
    try {
      m_ = torch::jit::load(path);
    } catch (const c10::Error& e) {
      throw_error(ErrorKind::kModel, fmt::format("cannot load TorchScript model '{}': {}; save it with "
                                                 "torch.jit.save(torch.jit.script(model), path)",
                                                 path, e.what_without_backtrace()));
    }
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    auto out = m_.forward({x});
    if (!out.isTensor())
      throw_error(ErrorKind::kModel, fmt::format("TorchScript model '{}' returned a {} instead of a logits tensor",
                                                 name_, out.tagKind()));
    return out.toTensor();
  }
  std::vector<torch::Tensor> parameter_slots() override {
    std::vector<torch::Tensor> v;
    for (const auto& p : m_.parameters()) v.push_back(p);
    return v;
  }
  void set_training(bool on) override { m_.train(on); }
  void to(const torch::Device& d) override { m_.to(d); }
  void save(const std::string& path) override {
    try {
      write_file_through_temporary(path, [&](const std::string& tmp) { m_.save(tmp); });
    } catch (const c10::Error& e) {
      throw_error(ErrorKind::kIo, fmt::format("cannot write checkpoint '{}': {}", path, e.what_without_backtrace()));
    }
  }
  void load(const std::string& path) override {
    check_zip_crcs(path, "train the run again (trainscope run) or copy the checkpoint again from its run folder");
    try {
      m_ = torch::jit::load(path);
    } catch (const c10::Error& e) {
      throw_error(ErrorKind::kCheckpoint, fmt::format("cannot load TorchScript checkpoint '{}': {}", path,
                                                      e.what_without_backtrace()));
    }
  }

 private:
  torch::jit::script::Module m_;
};

}  // namespace

std::vector<std::string> builtin_models() {
  std::vector<std::string> v = {"mlp", "cnn", "resnet18", "vgg11"};
  for (auto& n : builtin_vit_models()) v.push_back(n);
  return v;
}

GptShape lm_model_shape(const std::string& name, int64_t seq_len, int64_t vocab) {
  GptShape s = gpt_preset(name, (vocab + kVocabMultiple - 1) / kVocabMultiple * kVocabMultiple);
  s.context = std::max(s.context, seq_len);
  return s;
}

std::string model_task(const std::string& name) {
  if (is_builtin_lm(name)) return "causal_lm";
  return is_torchscript_path(name) ? "" : "classification";
}

std::unique_ptr<Model> make_model(const std::string& name, int64_t c, int64_t h, int64_t w, int64_t classes) {
  if (name == "mlp") return std::make_unique<NativeModel<Mlp>>(name, [=] { return Mlp(c * h * w, classes); });
  if (name == "cnn") {
    if (h < 4 || w < 4) throw_error(ErrorKind::kModel, fmt::format("cnn needs inputs of at least 4x4, got {}x{}", h, w));
    return std::make_unique<NativeModel<Cnn>>(name, [=] { return Cnn(c, h, w, classes); });
  }
  if (name == "resnet18") return std::make_unique<NativeModel<ResNet18>>(name, [=] { return ResNet18(c, h, w, classes); });
  if (name == "vgg11") return std::make_unique<NativeModel<Vgg11>>(name, [=] { return Vgg11(c, h, w, classes); });
  if (is_builtin_vit(name)) return make_vit(name, vit_preset(name, c, h, w, classes));
  if (is_builtin_lm(name)) {
    if (c != 1 || h != 1)
      throw_error(ErrorKind::kModel, fmt::format("model '{}' is a language model: it trains on token data "
                                                 "(--data-format text or tokens), not on {}x{}x{} images",
                                                 name, c, h, w));
    return make_gpt(name, lm_model_shape(name, w, classes));
  }
  if (is_aoti_package_path(name)) return make_aoti_model(name);
  if (is_torchscript_path(name)) return std::make_unique<ScriptModel>(name);
  auto every = builtin_models();
  for (auto& n : builtin_lm_models()) every.push_back(n);
  const std::string near = nearest_spelling(ascii_lower(name), every);  // "MLP" is near "mlp"
  throw_error(ErrorKind::kModel, fmt::format("unknown model '{}'{}; use one of {}, or the path of a TorchScript file (.pt)",
                                             name, near.empty() ? "" : " (did you mean " + near + "?)",
                                             fmt::join(every, ", ")));
}

// ---------------- FLOP counting ----------------

namespace {

std::vector<int64_t> shape_of(const c10::IValue& v) {
  if (!v.isTensor()) return {};
  auto s = v.toTensor().sizes();
  return {s.begin(), s.end()};
}

std::vector<int64_t> ints_of(const c10::IValue& v) {
  if (v.isIntList()) return v.toIntVector();
  return {};
}

// at::scaled_dot_product_attention is counted whole (op_flops); the operators it runs inside
// (the math backend's matmul and bmm) would count its matrix products a second time.
bool counts_its_callees(const at::RecordFunction& fn) {
  return std::string_view(compat::op_name(fn)) == "aten::scaled_dot_product_attention";
}

thread_local double t_flops = 0;
thread_local int t_counted = 0;
thread_local int t_inside_counted = 0;  // depth of counts_its_callees operators running

struct InsideCounted : at::ObserverContext {};

std::unique_ptr<at::ObserverContext> count_start(const at::RecordFunction& fn) {
  if (t_inside_counted > 0) return nullptr;
  double f = op_flops(fn);
  if (f > 0) {
    t_flops += f;
    ++t_counted;
  }
  if (!counts_its_callees(fn)) return nullptr;
  ++t_inside_counted;
  return std::make_unique<InsideCounted>();
}

void count_end(const at::RecordFunction& /*fn*/, at::ObserverContext* ctx) {
  if (ctx) --t_inside_counted;
}

// Scaled dot-product attention, q [..., L, E], k [..., S, E], v [..., S, Ev]: the two matrix
// products Q K^T (2 L S E per batch entry) and A V (2 L S Ev), as PyTorch's FLOP counter counts
// them (torch/utils/flop_counter.py, sdpa_flop_count); a causal mask is not subtracted there
// either.
double sdpa_flops(const std::vector<int64_t>& q, const std::vector<int64_t>& k, const std::vector<int64_t>& v) {
  if (q.size() < 2 || k.size() != q.size() || v.size() != q.size()) return 0;
  double batch = 1;
  for (size_t i = 0; i + 2 < q.size(); ++i) batch *= static_cast<double>(q[i]);
  const double L = static_cast<double>(q[q.size() - 2]), S = static_cast<double>(k[k.size() - 2]);
  return 2.0 * batch * L * S * static_cast<double>(q.back() + v.back());
}

}  // namespace

double op_flops(const at::RecordFunction& fn) {
  std::string name = compat::op_name(fn);
  auto in = fn.inputs();
  if (name == "aten::convolution" && in.size() >= 9) {
    auto x = shape_of(in[0]), wt = shape_of(in[1]);
    auto stride = ints_of(in[3]), pad = ints_of(in[4]), dil = ints_of(in[5]);
    if (x.size() != 4 || wt.size() != 4 || stride.size() < 2 || pad.size() < 2 || dil.size() < 2) return 0;
    bool transposed = in[6].isBool() && in[6].toBool();
    if (transposed) return 0;
    int64_t groups = in[8].isInt() ? in[8].toInt() : 1;
    int64_t ho = (x[2] + 2 * pad[0] - dil[0] * (wt[2] - 1) - 1) / stride[0] + 1;
    int64_t wo = (x[3] + 2 * pad[1] - dil[1] * (wt[3] - 1) - 1) / stride[1] + 1;
    (void)groups;  // weight's dim 1 is already Cin/groups
    return 2.0 * static_cast<double>(x[0]) * wt[0] * ho * wo * wt[1] * wt[2] * wt[3];
  }
  if (name == "aten::addmm" && in.size() >= 3) {
    auto a = shape_of(in[1]), b = shape_of(in[2]);
    if (a.size() == 2 && b.size() == 2) return 2.0 * static_cast<double>(a[0]) * a[1] * b[1];
  }
  if (name == "aten::mm" && in.size() >= 2) {
    auto a = shape_of(in[0]), b = shape_of(in[1]);
    if (a.size() == 2 && b.size() == 2) return 2.0 * static_cast<double>(a[0]) * a[1] * b[1];
  }
  if (name == "aten::bmm" && in.size() >= 2) {
    auto a = shape_of(in[0]), b = shape_of(in[1]);
    if (a.size() == 3 && b.size() == 3) return 2.0 * static_cast<double>(a[0]) * a[1] * a[2] * b[2];
  }
  if (name == "aten::scaled_dot_product_attention" && in.size() >= 3)
    return sdpa_flops(shape_of(in[0]), shape_of(in[1]), shape_of(in[2]));
  return 0;
}

std::optional<double> count_forward_flops(Model& model, int64_t c, int64_t h, int64_t w) {
  return count_forward_flops_on(model, torch::zeros({1, c, h, w}));
}

std::optional<double> count_forward_flops_on(Model& model, const torch::Tensor& sample) {
  t_flops = 0;
  t_counted = 0;
  t_inside_counted = 0;
  auto handle = at::addThreadLocalCallback(at::RecordFunctionCallback(&count_start, &count_end).needsInputs(true));
  try {
    torch::NoGradGuard ng;
    // The model's FLOPs, whatever the precision: under autocast (the bf16 variant) the cast
    // wrapper and the kernel it redispatches to would both report each matrix product.
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    model.set_training(false);
    model.forward(sample);
    model.set_training(true);
  } catch (...) {
    at::removeCallback(handle);
    model.set_training(true);
    throw;
  }
  at::removeCallback(handle);
  if (t_counted == 0) return std::nullopt;
  return t_flops;
}

}  // namespace trainscope

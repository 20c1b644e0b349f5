// The Model interface (workload/model.h) over a LibTorch C++ module holder: built-in networks.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include <functional>
#include <string>

#include "common/zip_crc.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "workload/model.h"

namespace trainscope {

/// A built-in network: `factory` makes a fresh module (also the scratch copy load() checks a
/// checkpoint against). Holder is a TORCH_MODULE holder whose forward takes one tensor.
template <typename Holder>
class NativeModel final : public Model {
 public:
  NativeModel(std::string name, std::function<Holder()> factory) : factory_(std::move(factory)), m_(factory_()) {
    name_ = std::move(name);
  }
  torch::Tensor forward(const torch::Tensor& x) override { return m_->forward(x); }
  std::vector<torch::Tensor> parameter_slots() override { return m_->parameters(); }
  void set_training(bool on) override { m_->train(on); }
  void to(const torch::Device& d) override { m_->to(d); }
  /// The module itself (for code that needs more than forward: a GPT's cached decoder).
  Holder& module() { return m_; }
  void save(const std::string& path) override {
    try {
      write_file_through_temporary(path, [&](const std::string& tmp) { torch::save(m_, tmp); });
    } catch (const c10::Error& e) {
      throw_error(ErrorKind::kIo, fmt::format("cannot write checkpoint '{}': {}", path, e.what_without_backtrace()));
    }
  }
  // torch::load silently takes tensors of another shape: load into a scratch copy first,
  // check every parameter and buffer, then copy into the model.
  void load(const std::string& path) override {
    Holder tmp = factory_();
    // LibTorch's zip reader does not check CRCs: a damaged tensor would load silently.
    check_zip_crcs(path, "train the run again (trainscope run) or copy the checkpoint again from its run folder");
    try {
      torch::load(tmp, path);
    } catch (const c10::Error& e) {
      throw_error(ErrorKind::kCheckpoint,
                  fmt::format("checkpoint '{}' does not fit model '{}': {}; use a checkpoint written for this model",
                              path, name_, e.what_without_backtrace()));
    }
    auto src_p = tmp->named_parameters(), src_b = tmp->named_buffers();
    auto check_copy = [&](const std::string& key, torch::Tensor& dst, const torch::Tensor& src) {
      if (src.sizes() != dst.sizes())
        throw_error(ErrorKind::kCheckpoint,
                    fmt::format("checkpoint '{}': tensor '{}' has shape [{}] but model '{}' needs [{}]; it was written "
                                "for another model or data shape",
                                path, key, fmt::join(src.sizes().vec(), ", "), name_, fmt::join(dst.sizes().vec(), ", ")));
    };
    for (auto& p : m_->named_parameters()) check_copy(p.key(), p.value(), src_p[p.key()]);
    for (auto& b : m_->named_buffers()) check_copy(b.key(), b.value(), src_b[b.key()]);
    torch::NoGradGuard ng;
    for (auto& p : m_->named_parameters()) p.value().copy_(src_p[p.key()]);
    for (auto& b : m_->named_buffers()) b.value().copy_(src_b[b.key()]);
  }

 private:
  std::function<Holder()> factory_;
  Holder m_;
};

}  // namespace trainscope

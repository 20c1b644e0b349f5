// What the matrix checks before a step runs (exit 2 when wrong; nothing is written): settings,
// devices, data, every model's pre-flight forward pass, variants, the run ids' file names.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <string_view>

#include "dist/stall.h"
#include "matrix/matrix.h"
#include "train/device.h"
#include "train/error_text.h"
#include "train/lm_task.h"
#include "train/variant_exec.h"
#include "workload/model_names.h"
#include "trainscope/dataset.h"
#include "trainscope/error.h"
#include "trainscope/host_malloc.h"
#include "trainscope/settings.h"
#include "trainscope/variants.h"

namespace trainscope::matrix_detail {

namespace {

// The longest name a run writes beside its id: traces/<run id>.trace.json.gz under the temporary
// name of an atomic write (trainscope/fs.h: ".tmp." and a process id of up to 10 digits).
constexpr size_t kLongestRunFileSuffix = std::string_view(".trace.json.gz.tmp.").size() + 10;
constexpr size_t kMaxFileName = 255;  // NAME_MAX of Linux file systems

// make_model, where a model file LibTorch cannot read (an operator this LibTorch lacks: the
// TorchScript compiler's ErrorReport, no c10::Error) is bad input naming the file, not a bug.
std::unique_ptr<Model> model_or_bad_input(const std::string& name, const Dataset& train, const TrainConfig& cfg) {
  std::error_code ec;
  if (is_torchscript_path(name) && std::filesystem::is_directory(name, ec))
    throw_error(ErrorKind::kModel, fmt::format("model '{}' (--models / models) is a folder, not a TorchScript file; "
                                               "give the .pt file saved by torch.jit.save",
                                               name));
  try {
    return make_run_model(name, train, cfg);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    const std::string why = first_line(error_without_backtrace(e));
    throw_error(ErrorKind::kModel, fmt::format("cannot load model '{}' (--models / models): {}; save it with the "
                                               "LibTorch version trainscope uses (its provenance names it), from "
                                               "operators that version has",
                                               name, why));
  }
}

}  // namespace

// Everything that can be checked before a step runs (exit 2 when wrong; nothing is written).
void Matrix::check_inputs() {
  validate(cfg_);
  std::string malloc_warning;
  set_host_malloc(cfg_.train.malloc_tuning, &malloc_warning);  // before the data and the models allocate
  if (!malloc_warning.empty()) warning(malloc_warning);
  std::string threads_warning;
  set_intra_op_threads(cfg_.train.threads, setting("train.threads").long_flag(), &threads_warning);
  if (!threads_warning.empty()) warning(threads_warning);
  std::string device_note;
  devices_ = resolve_devices(cfg_.devices, &device_note);
  // Data first: a bad path or corrupt file stops us before any training. With --seq-lens the
  // first length is checked here (run_cells cuts the data for the others).
  if (!cfg_.data.seq_lens.empty()) cfg_.data.seq_len = cfg_.data.seq_lens.front();
  workload_.emplace(make_workload(load_datasets(cfg_.data, cfg_.train.seed)));
  const auto& tr = workload_->data.train;
  if (tr.count < 1) throw_error(ErrorKind::kDataFormat, "the training set is empty");
  // Models: build each once on the CPU to reject unknown names, shape mismatches and models
  // with nothing to train before anything runs.
  for (const auto& m : cfg_.models) {
    auto model = model_or_bad_input(m, tr, cfg_.train);
    // A forward pass that never returns is named after --dist-timeout, as a stalled step is.
    dist::StallWatch watch("models", cfg_.dist.timeout_s, nullptr, [this](const std::string& msg) { warning(msg); });
    watch.set_what(fmt::format("the pre-flight forward pass of model '{}'", m));
    watch.step_begin(0);
    check_model_fits(*model, workload_->train_x, tr.num_classes, /*need_trainable=*/true, fmt::format("model '{}'", m));
    watch.step_end(0);
    model_has_4d_[m] = has_4d_parameters(*model);
    model_parameters_[m] = model->parameter_count();
  }
  check_variants();
  size_t device_cells = 0;
  for (const auto& d : devices_) device_cells += device_variants(d).size();
  planned_ = device_cells * cfg_.models.size() * cfg_.batch_sizes.size() * static_cast<size_t>(cfg_.repeats) *
             (tr.is_tokens() ? std::max<size_t>(cfg_.data.seq_lens.size(), 1) : 1);
  check_file_names();
  if (!device_note.empty()) notice(device_note);  // after the input checks: a bad input's error comes alone
  for (const auto& n : workload_->data.notes) notice(n);
}

// Every file a run writes is named by its run id, which holds the model's name (a model file's
// stem): an id too long for a file name is bad input now, not a failed checkpoint after training.
void Matrix::check_file_names() const {
  const auto names = run_id_model_names(cfg_.models);
  int64_t batch = *std::max_element(cfg_.batch_sizes.begin(), cfg_.batch_sizes.end());
  if (cfg_.batch_sweep.enabled)  // the sweep doubles up to the training set at most
    batch = std::max(batch, static_cast<int64_t>(workload_->data.train.count));
  for (size_t mi = 0; mi < names.size(); ++mi)
    for (const auto& dev : devices_)
      for (const auto& variant : device_variants(dev)) {
        const std::string id = run_id_of(dev, names[mi], batch, cfg_.repeats - 1, variant);
        if (id.size() + kLongestRunFileSuffix <= kMaxFileName) continue;
        const size_t over = id.size() + kLongestRunFileSuffix - kMaxFileName;
        throw_error(ErrorKind::kInvalidArgument,
                    fmt::format("model '{}' gives run ids of {} characters ('{}'), too long for the files named after "
                                "them (traces/<run id>.trace.json.gz, checkpoints/<run id>.pt: at most {} bytes a "
                                "name); give the model file a name at least {} characters shorter",
                                cfg_.models[mi], id.size(), id, kMaxFileName, over));
      }
}

// Variants (docs/variants.md#applicability): a GPU-only variant asked for explicitly on CPU-only
// devices is bad input; with the default devices (or a GPU among them) its CPU cells are
// recorded as not applicable.
void Matrix::check_variants() {
  variants_.clear();
  default_variants_ = cfg_.train.variants.empty();
  for (const auto& v : default_variants_ ? default_variants(devices_) : cfg_.train.variants)
    variants_.push_back(parse_variant(v, "--variants").name());
  check_gpu_only_variants(variants_, devices_, !cfg_.devices.empty());
}

// The variants a device's cells run: all asked for (a GPU-only one asked for on the CPU is
// recorded as not applicable), or with the default set, those that apply to the device.
std::vector<std::string> Matrix::device_variants(const std::string& dev) const {
  if (!default_variants_ || dev != "cpu") return variants_;
  std::vector<std::string> v;
  for (const auto& x : variants_)
    if (!parse_variant(x, "--variants").gpu_only()) v.push_back(x);
  return v;
}

}  // namespace trainscope::matrix_detail

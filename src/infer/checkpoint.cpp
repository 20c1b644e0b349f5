#include "infer/checkpoint.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "trainscope/dataset.h"
#include "trainscope/error.h"

namespace trainscope {

namespace fs = std::filesystem;
using json = nlohmann::json;

CheckpointInfo read_checkpoint_description(const std::string& weights_path) {
  CheckpointInfo c;
  c.weights_path = weights_path;
  c.description_path = fs::path(weights_path).replace_extension(".json").string();
  std::error_code ec;
  if (!fs::is_regular_file(weights_path, ec))
    throw_error(ErrorKind::kCheckpoint, fmt::format("checkpoint '{}' does not exist or is not a file; pass a .pt "
                                                    "file from <run folder>/checkpoints/ or --run <run folder>",
                                                    weights_path));
  std::ifstream f(c.description_path);
  if (!f)
    throw_error(ErrorKind::kCheckpoint,
                fmt::format("checkpoint '{}' has no description '{}' beside it (trainscope run writes both); "
                            "for a TorchScript file use --model <file> instead, for fresh weights --model NAME "
                            "--untrained",
                            weights_path, c.description_path));
  std::stringstream ss;
  ss << f.rdbuf();
  try {
    c.description = json::parse(ss.str());
    const json& d = c.description;
    c.model = d.at("model").get<std::string>();
    c.weights_format = d.value("weights_format", "libtorch_archive");
    auto shape = d.at("input_shape").get<std::vector<int64_t>>();
    if (shape.size() != 3 || std::any_of(shape.begin(), shape.end(), [](int64_t v) { return v < 1; }))
      throw_error(ErrorKind::kCheckpoint, "input_shape must be [C, H, W] with positive sizes");
    c.channels = shape[0], c.height = shape[1], c.width = shape[2];
    c.num_classes = d.at("num_classes").get<int64_t>();
    if (c.num_classes < 1) throw_error(ErrorKind::kCheckpoint, "num_classes must be >= 1");
    c.mean = d.at("normalisation").at("mean").get<std::vector<float>>();
    c.std = d.at("normalisation").at("std").get<std::vector<float>>();
    if (c.mean.size() != static_cast<size_t>(c.channels) || c.std.size() != c.mean.size())
      throw_error(ErrorKind::kCheckpoint, "normalisation mean/std need one value per input channel");
    const json& dd = d.at("data");
    c.data.format = dd.at("format").get<std::string>();
    c.data.path = dd.at("path").get<std::string>();
    c.data.image_size = dd.value("image_size", c.data.image_size);
    c.data.image_channels = dd.value("image_channels", c.data.image_channels);
    // The synthetic set is described by its shape; the checkpoint's shape is authoritative.
    c.data.synthetic_channels = c.channels;
    c.data.synthetic_size = c.height;
    c.data.synthetic_classes = c.num_classes;
    c.seed = d.value("seed", uint64_t{42});
    c.trained_on = d.value("trained_on", "");
    c.batch_size = d.value("batch_size", int64_t{0});
  } catch (const json::exception& e) {
    throw_error(ErrorKind::kCheckpoint, fmt::format("checkpoint description '{}' is malformed ({}); it should be "
                                                    "the .json trainscope run wrote beside the .pt",
                                                    c.description_path, e.what()));
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kCheckpoint) throw;
    throw_error(ErrorKind::kCheckpoint, fmt::format("checkpoint description '{}': {}", c.description_path, e.what()));
  }
  return c;
}

std::unique_ptr<Model> load_checkpoint_model(const CheckpointInfo& c) {
  try {
    if (c.weights_format == "torchscript") {
      // A TorchScript model trained by trainscope: the checkpoint is the scripted module itself.
      auto m = make_model(c.weights_path, c.channels, c.height, c.width, c.num_classes);
      return m;
    }
    if (is_torchscript_path(c.model))
      throw_error(ErrorKind::kCheckpoint, fmt::format("checkpoint description '{}' names TorchScript model '{}' but "
                                                      "weights_format '{}'",
                                                      c.description_path, c.model, c.weights_format));
    auto m = make_model(c.model, c.channels, c.height, c.width, c.num_classes);
    m->load(c.weights_path);
    return m;
  } catch (const c10::Error& e) {
    throw_error(ErrorKind::kCheckpoint, fmt::format("checkpoint '{}' cannot be loaded as model '{}': {}; it is "
                                                    "corrupt or was written for another model",
                                                    c.weights_path, c.model, e.what_without_backtrace()));
  } catch (const Error& e) {
    // a damaged file (common/zip_crc.h) is a data-format error, as a damaged data set is
    if (e.kind() == ErrorKind::kCheckpoint || e.kind() == ErrorKind::kDataFormat) throw;
    // make_model on a bad TorchScript file says kModel; for a checkpoint it is the checkpoint that is bad.
    throw_error(ErrorKind::kCheckpoint, fmt::format("checkpoint '{}': {}", c.weights_path, e.what()));
  }
}

std::vector<std::string> run_checkpoints(const std::string& run_dir) {
  fs::path dir = fs::path(run_dir) / "checkpoints";
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw_error(ErrorKind::kIo, fmt::format("'{}' has no checkpoints/ folder; pass the folder trainscope run "
                                            "printed (\"run folder: ...\")",
                                            run_dir));
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".pt" && fs::exists(fs::path(e.path()).replace_extension(".json")))
      out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  if (out.empty())
    throw_error(ErrorKind::kIo, fmt::format("'{}' holds no checkpoint (.pt with its .json); runs that failed or "
                                            "were interrupted write none",
                                            dir.string()));
  return out;
}

InferenceInputs load_inference_inputs(const DataConfig& data, uint64_t seed, int64_t limit,
                                      const std::vector<float>* rmean, const std::vector<float>* rstd) {
  DatasetPair p = load_datasets(data, seed);
  const Dataset& te = p.test.count > 0 ? p.test : p.train;
  if (te.count < 1) throw_error(ErrorKind::kDataFormat, fmt::format("data set '{}' has no samples", p.source));
  int64_t n = limit > 0 ? std::min(limit, te.count) : te.count;
  InferenceInputs in;
  in.dataset = te.name;
  auto x = torch::from_blob(const_cast<float*>(te.images.data()), {te.count, te.channels, te.height, te.width},
                            torch::kFloat)
               .narrow(0, 0, n)
               .clone();
  in.y = torch::from_blob(const_cast<int64_t*>(te.labels.data()), {te.count}, torch::kLong).narrow(0, 0, n).clone();
  in.mean = p.mean, in.std = p.std;
  if (rmean && rstd && rmean->size() == static_cast<size_t>(te.channels) && rstd->size() == rmean->size() &&
      (*rmean != p.mean || *rstd != p.std) && p.mean.size() == rmean->size()) {
    // Undo this load's normalisation and apply the checkpoint's: x01 = x * s + m; x' = (x01 - m') / s'.
    auto col = [&](const std::vector<float>& v) { return torch::tensor(v).view({1, -1, 1, 1}); };
    x = ((x * col(p.std) + col(p.mean)) - col(*rmean)) / col(*rstd);
    in.mean = *rmean, in.std = *rstd;
  }
  in.x = x.contiguous();
  return in;
}

void check_model_fits_inputs(Model& model, const torch::Tensor& x, int64_t classes,
                             const std::vector<int64_t>& expected_chw, const std::string& what) {
  auto chw = x.sizes().vec();
  chw.erase(chw.begin());
  if (!expected_chw.empty() && chw != expected_chw)
    throw_error(ErrorKind::kModel, fmt::format("{} expects inputs of shape {} but the data have samples of shape {}; "
                                               "pass --data with the data set it was trained on",
                                               what, fmt::join(expected_chw, "x"), fmt::join(chw, "x")));
  // Inference needs no trainable parameters (a torch.jit.freeze'd module has none).
  check_model_fits(model, x, classes, /*need_trainable=*/false, what);
}

}  // namespace trainscope

#include "infer/lm_checkpoint.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "infer/graph_decoder.h"
#include "trainscope/dataset.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"

namespace trainscope {

namespace {

using json = nlohmann::json;

std::string description_path(const std::string& weights) {
  auto p = weights;
  auto dot = p.rfind('.');
  return (dot == std::string::npos ? p : p.substr(0, dot)) + ".json";
}

json read_description(const std::string& path) {
  std::ifstream f(path);
  if (!f) return json();
  std::stringstream ss;
  ss << f.rdbuf();
  return json::parse(ss.str(), nullptr, false);
}

}  // namespace

std::string checkpoint_task(const std::string& weights_path) {
  const json d = read_description(description_path(weights_path));
  return d.is_object() && d.contains("task") && d["task"].is_string() ? d["task"].get<std::string>() : "";
}

void check_checkpoint_description(const std::string& weights_path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(weights_path, ec))
    throw_error(ErrorKind::kCheckpoint, fmt::format("checkpoint '{}' does not exist or is not a file; pass a .pt file "
                                                    "from <run folder>/checkpoints/ or --run <run folder>",
                                                    weights_path));
  const std::string path = description_path(weights_path);
  auto damaged = [&](const std::string& what) {
    throw_error(ErrorKind::kCheckpoint,
                fmt::format("checkpoint '{}': its description '{}' is {}, so what model the checkpoint holds is "
                            "unknown; copy the run folder again (the .json trainscope run wrote beside the .pt), or "
                            "train the run again",
                            weights_path, path, what));
  };
  std::ifstream f(path);
  if (!f) damaged("missing");
  std::stringstream ss;
  ss << f.rdbuf();
  try {
    if (!json::parse(ss.str()).is_object()) damaged("not a JSON object");
  } catch (const json::exception& e) {
    damaged(fmt::format("malformed JSON ({})", e.what()));
  }
}

LmCheckpoint read_lm_checkpoint(const std::string& weights_path) {
  LmCheckpoint c;
  c.weights_path = weights_path;
  c.description_path = description_path(weights_path);
  const json d = read_description(c.description_path);
  auto bad = [&](const std::string& what) {
    throw_error(ErrorKind::kCheckpoint, fmt::format("checkpoint description '{}': {}; it should be the .json "
                                                    "trainscope run wrote beside a language model's .pt",
                                                    c.description_path, what));
  };
  if (!d.is_object()) bad("missing or not JSON");
  if (d.value("task", std::string()) != "causal_lm") bad("not a language model (\"task\" is not \"causal_lm\")");
  try {
    const json& lm = d.at("language_model");
    c.model = d.at("model").get<std::string>();
    c.weights_format = d.value("weights_format", "libtorch_archive");
    c.seq_len = lm.at("seq_len").get<int64_t>();
    c.shape.vocab = lm.value("model_vocab", lm.at("vocab").get<int64_t>());
    c.shape.context = lm.value("context", c.seq_len);
    c.shape.layers = lm.value("layers", int64_t{0});
    c.shape.d_model = lm.value("d_model", int64_t{0});
    c.shape.heads = lm.value("heads", int64_t{0});
    c.data.format = d.at("data").at("format").get<std::string>();
    c.data.path = d.at("data").at("path").get<std::string>();
    c.data.seq_len = c.seq_len;
    c.seed = d.value("seed", uint64_t{42});
    c.trained_on = d.value("trained_on", "");
    c.batch_size = d.value("batch_size", int64_t{0});
  } catch (const json::exception& e) {
    bad(fmt::format("malformed ({})", e.what()));
  }
  if (c.seq_len < 1 || c.shape.vocab < 1 || c.shape.context < 1) bad("language_model needs positive seq_len, vocab and context");
  c.description = d.dump();
  return c;
}

std::unique_ptr<Model> load_lm_model(const LmCheckpoint& c) {
  try {
    if (c.weights_format == "torchscript") return make_model(c.weights_path, 1, 1, c.seq_len, c.shape.vocab);
    auto m = make_gpt(c.model, c.shape);
    m->load(c.weights_path);
    return m;
  } catch (const c10::Error& e) {
    throw_error(ErrorKind::kCheckpoint, fmt::format("checkpoint '{}' cannot be loaded as language model '{}': {}; it "
                                                    "is corrupt or was written for another model",
                                                    c.weights_path, c.model, e.what_without_backtrace()));
  }
}

std::unique_ptr<Decoder> make_lm_decoder(Model& model, const LmCheckpoint& c, const torch::Device& device,
                                         torch::ScalarType dtype, bool cuda_graphs) {
  if (c.weights_format == "torchscript" || !is_builtin_lm(c.model))
    return make_recompute_decoder(model, c.shape.context, c.shape.vocab, device);
  return with_cuda_graphs(make_gpt_decoder(model, dtype), cuda_graphs);
}

std::unique_ptr<SlotDecoder> make_lm_slot_decoder(Model& model, const LmCheckpoint& c, torch::ScalarType dtype) {
  if (c.weights_format == "torchscript" || !is_builtin_lm(c.model)) return nullptr;
  return make_gpt_slot_decoder(model, dtype);
}

torch::Tensor validation_tokens(const DataConfig& data, uint64_t seed) {
  DatasetPair p = load_datasets(data, seed);
  const Dataset& d = p.test.is_tokens() ? p.test : p.train;
  if (!d.is_tokens())
    throw_error(ErrorKind::kDataFormat, fmt::format("data '{}' (format {}) holds no tokens; a language model needs "
                                                    "--data-format text or tokens",
                                                    data.path, data.format));
  return torch::tensor(d.tokens, torch::kLong);
}

}  // namespace trainscope

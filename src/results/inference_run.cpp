// inference.json read and written through the record's JSON form (trainscope/inference_run.h).
#include "trainscope/inference_run.h"

#include <fmt/format.h>

#include <filesystem>
#include <sstream>

#include "results/record_json.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"

namespace trainscope {

using nlohmann::json;

std::string inference_json(const Provenance& p, const std::vector<InferenceRun>& runs) {
  // Each generation run names its compute type: a run whose producer left it "" gets its
  // invocation's --dtype, the value `infer` built its decoder with (trainscope/inference_run.h).
  std::vector<InferenceRun> out = runs;
  for (auto& r : out)
    if (r.inference && r.inference->generation && r.inference->generation->dtype.empty())
      r.inference->generation->dtype = generation_dtype(p);
  return record_document_json(p, record_json::write(out));
}

std::vector<InferenceRun> inference_runs_from_json(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded())
    throw_error(ErrorKind::kDataFormat, "inference.json is not JSON; write it again with trainscope infer");
  std::vector<InferenceRun> runs;
  if (j.is_object() && j.contains("runs")) record_json::read(j["runs"], runs);
  return runs;
}

std::vector<const InferenceRun*> InferenceDocument::generation_runs() const {
  std::vector<const InferenceRun*> out;
  for (const auto& r : runs)
    if (!r.failed() && r.inference && r.inference->generation) out.push_back(&r);
  return out;
}

InferenceDocument load_inference_document(const std::string& path) {
  const auto bytes = read_file_bytes(path, uint64_t{1} << 31);
  const json j = json::parse(bytes.begin(), bytes.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("runs") || !j["runs"].is_array())
    throw_error(ErrorKind::kDataFormat,
                fmt::format("{}: not an inference.json (no JSON object with a \"runs\" array); pass a file written by "
                            "`trainscope infer`, or its run folder",
                            path));
  InferenceDocument d;
  d.path = path;
  if (j.contains("provenance") && j["provenance"].is_object()) d.provenance = provenance_from_json(j["provenance"]);
  record_json::read(j["runs"], d.runs);
  return d;
}

std::string generation_dtype(const Provenance& p) {
  std::istringstream words(p.command_line);
  std::string w, previous;
  while (words >> w) {
    if (w.rfind("--dtype=", 0) == 0) return w.substr(8);
    if (previous == "--dtype") return w;
    previous = w;
  }
  return "float32";
}

std::string generation_dtype(const InferenceRun& r, const Provenance& p) {
  if (r.inference && r.inference->generation && !r.inference->generation->dtype.empty())
    return r.inference->generation->dtype;
  return generation_dtype(p);
}

std::string inference_source(const InferenceDocument& d) {
  if (d.path.empty()) return "inference";
  std::string name = std::filesystem::path(d.path).filename().string();
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) name.resize(name.size() - 5);
  return name;
}

}  // namespace trainscope

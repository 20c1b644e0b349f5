// inference.json read and written through the record's JSON form (trainscope/inference_run.h).
#include "trainscope/inference_run.h"

#include <fmt/format.h>

#include <sstream>

#include "results/record_json.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"

namespace trainscope {

using nlohmann::json;

std::string inference_json(const Provenance& p, const std::vector<InferenceRun>& runs) {
  return record_document_json(p, record_json::write(runs));
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

}  // namespace trainscope

// JSON form of the run record (src/results/record_json.h).
#include "results/record_json.h"

namespace trainscope {

using nlohmann::json;

json to_json(const RunRecord& r) { return record_json::write(r); }

RunRecord run_record_from_json(const json& j) {
  RunRecord r;
  r.status = RunStatus::kFailed;  // a run without a status did not finish
  record_json::read(j, r);
  return r;
}

json to_json(const Provenance& p) { return record_json::write(p); }

Provenance provenance_from_json(const json& j) {
  Provenance p;
  p.schema_version = 0;  // a block without one predates schema versions
  record_json::read(j, p);
  return p;
}

std::string record_document_json(const Provenance& p, json runs) {
  json doc = {{"provenance", to_json(p)}, {"schema_version", kSchemaVersion}, {"runs", std::move(runs)}};
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace trainscope

// render_json (include/trainscope/trace_analysis.h): schema "trainscope.analyze/1", every time
// in integer ns (docs/analyze.md#json).
#include <nlohmann/json.hpp>

#include "trainscope/trace_analysis.h"

namespace trainscope::trace {
namespace {

using json = nlohmann::ordered_json;

json categories(const std::array<int64_t, kCategoryCount>& ns) {
  json j = json::object();
  for (int c = 0; c < kCategoryCount; ++c) j[category_key(static_cast<Category>(c))] = ns[c];
  return j;
}

json tables(const TraceAnalysis& a) {
  json j;
  j["operators"] = json::array();
  for (const OperatorRow& r : a.operators)
    j["operators"].push_back({{"name", r.name}, {"calls", r.calls}, {"self_ns", r.self_ns}, {"total_ns", r.total_ns},
                              {"device_ns", r.device_ns}});
  j["kernels"] = json::array();
  for (const KernelRow& r : a.kernels)
    j["kernels"].push_back({{"name", r.name}, {"calls", r.calls}, {"total_ns", r.total_ns}, {"min_ns", r.min_ns},
                            {"max_ns", r.max_ns}});
  j["kernel_total_ns"] = a.kernel_ns;
  j["gpu_idle"] = json::array();
  for (const StreamIdle& s : a.idle)
    j["gpu_idle"].push_back({{"device", s.device}, {"stream", s.stream}, {"busy_ns", s.busy_ns},
                             {"host_wait_ns", s.host_wait_ns}, {"kernel_wait_ns", s.kernel_wait_ns},
                             {"other_ns", s.other_ns}});
  return j;
}

json one(const TraceAnalysis& a) {
  json j;
  j["path"] = a.path;
  j["schema"] = a.schema;
  j["rank"] = a.rank ? json(*a.rank) : json(nullptr);
  j["world_size"] = a.world_size ? json(*a.world_size) : json(nullptr);
  j["backend"] = a.backend;
  j["devices"] = a.devices;
  j["events"] = a.events;
  j["steps"] = json::array();
  for (const Step& s : a.steps)
    j["steps"].push_back({{"name", s.name}, {"start_ns", s.start_ns}, {"end_ns", s.end_ns},
                          {"duration_ns", s.duration_ns()}, {"categories_ns", categories(s.category_ns)}});
  j["steps_total_ns"] = a.steps_ns;
  j["categories_total_ns"] = categories(a.total_ns);
  j.update(tables(a));
  if (a.overlap)
    j["comm_overlap"] = {{"computation_ns", a.overlap->computation_ns}, {"communication_ns", a.overlap->communication_ns},
                         {"overlap_ns", a.overlap->overlap_ns}, {"other_ns", a.overlap->other_ns},
                         {"overlap_pct", a.overlap->overlap_pct()}};
  else
    j["comm_overlap"] = nullptr;
  j["notes"] = a.notes;
  return j;
}

}  // namespace

std::string render_json(const std::vector<TraceAnalysis>& analyses) {
  json j;
  j["schema"] = "trainscope.analyze/1";
  j["traces"] = json::array();
  for (const TraceAnalysis& a : analyses) j["traces"].push_back(one(a));
  return j.dump(2) + "\n";
}

}  // namespace trainscope::trace

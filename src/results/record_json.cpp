// JSON form of the run record (src/results/record_json.h).
#include "results/record_json.h"

namespace trainscope {

using nlohmann::json;

namespace {

template <typename T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

template <typename T>
std::optional<T> get_opt(const json& j, const char* k) {
  if (!j.contains(k) || j[k].is_null()) return std::nullopt;
  return j[k].get<T>();
}

}  // namespace

json to_json(const RunRecord& r) {
  json epochs = json::array();
  for (const auto& e : r.epochs)
    epochs.push_back({{"epoch", e.epoch},
                      {"steps", e.steps},
                      {"samples", e.samples},
                      {"train_loss", e.train_loss},
                      {"train_accuracy_pct", e.train_accuracy_pct},
                      {"test_accuracy_pct", opt(e.test_accuracy_pct)},
                      {"test_loss", opt(e.test_loss)},
                      {"epoch_time_s", e.epoch_time_s},
                      {"eval_time_s", e.eval_time_s},
                      {"samples_per_s", e.samples_per_s},
                      {"complete", e.complete},
                      {"start_ns", e.start_ns},
                      {"end_ns", e.end_ns},
                      {"energy_j", opt(e.energy_j)}});
  json phases = nullptr;
  if (r.phases)
    phases = {{"data_ms", r.phases->data_ms},         {"h2d_ms", r.phases->h2d_ms},
              {"forward_ms", r.phases->forward_ms},   {"backward_ms", r.phases->backward_ms},
              {"optimizer_ms", r.phases->optimizer_ms}, {"step_ms", r.phases->step_ms},
              {"steps", r.phases->steps},             {"method", r.phases->method}};
  return {{"run_id", r.run_id},
          {"device", r.device},
          {"device_name", r.device_name},
          {"model", r.model},
          {"batch_size", r.batch_size},
          {"repeat", r.repeat},
          {"world_size", r.world_size},
          {"status", to_string(r.status)},
          {"error_kind", r.error_kind.empty() ? json(nullptr) : json(r.error_kind)},
          {"failure_reason", r.failure_reason.empty() ? json(nullptr) : json(r.failure_reason)},
          {"dataset", r.dataset},
          {"train_samples", r.train_samples},
          {"test_samples", r.test_samples},
          {"input_shape", r.input_shape},
          {"num_classes", r.num_classes},
          {"parameters", opt(r.parameters)},
          {"forward_flops_per_sample", opt(r.forward_flops_per_sample)},
          {"optimizer", r.optimizer},
          {"optimizer_impl", r.optimizer_impl},
          {"learning_rate", r.learning_rate},
          {"seed", r.seed},
          {"intra_op_threads", r.intra_op_threads},
          {"epochs_requested", r.epochs_requested},
          {"warmup_steps", r.warmup_steps},
          {"epochs_completed", r.epochs_completed},
          {"steps_completed", r.steps_completed},
          {"steps_per_epoch", r.steps_per_epoch},
          {"train_time_s", r.train_time_s},
          {"steady_samples_per_s", opt(r.steady_samples_per_s)},
          {"mean_epoch_time_s", opt(r.mean_epoch_time_s)},
          {"time_for_requested_epochs_s", opt(r.time_for_requested_epochs_s)},
          {"time_for_requested_epochs_is_estimate", r.time_for_requested_epochs_is_estimate},
          {"stopped_early", r.stopped_early},
          {"stop_reason", r.stop_reason.empty() ? json(nullptr) : json(r.stop_reason)},
          {"final_train_loss", opt(r.final_train_loss)},
          {"final_train_accuracy_pct", opt(r.final_train_accuracy_pct)},
          {"test_accuracy_pct", opt(r.test_accuracy_pct)},
          {"phases", phases},
          {"peak_rss_bytes", opt(r.peak_rss_bytes)},
          {"device_peak_allocated_bytes", opt(r.device_peak_allocated_bytes)},
          {"device_peak_reserved_bytes", opt(r.device_peak_reserved_bytes)},
          {"epochs", epochs},
          {"start_ns", r.start_ns},
          {"end_ns", r.end_ns},
          {"checkpoint_path", r.checkpoint_path.empty() ? json(nullptr) : json(r.checkpoint_path)},
          {"notes", r.notes},
          {"telemetry", section_json(r.telemetry)},
          {"profile", section_json(r.profile)},
          {"inference", section_json(r.inference)}};
}

RunRecord run_record_from_json(const json& j) {
  RunRecord r;
  auto s = [&](const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string(); };
  r.run_id = s("run_id");
  r.device = s("device");
  r.device_name = s("device_name");
  r.model = s("model");
  r.batch_size = j.value("batch_size", int64_t{0});
  r.repeat = j.value("repeat", int64_t{0});
  r.world_size = j.value("world_size", int64_t{1});
  r.status = run_status_from_string(j.value("status", std::string("failed")));
  r.error_kind = s("error_kind");
  r.failure_reason = s("failure_reason");
  r.dataset = s("dataset");
  r.train_samples = j.value("train_samples", int64_t{0});
  r.test_samples = j.value("test_samples", int64_t{0});
  if (j.contains("input_shape")) r.input_shape = j["input_shape"].get<std::vector<int64_t>>();
  r.num_classes = j.value("num_classes", int64_t{0});
  r.parameters = get_opt<int64_t>(j, "parameters");
  r.forward_flops_per_sample = get_opt<double>(j, "forward_flops_per_sample");
  r.optimizer = s("optimizer");
  r.optimizer_impl = s("optimizer_impl");
  r.learning_rate = j.value("learning_rate", 0.0);
  r.seed = j.value("seed", uint64_t{0});
  r.intra_op_threads = j.value("intra_op_threads", int64_t{0});
  r.epochs_requested = j.value("epochs_requested", int64_t{0});
  r.warmup_steps = j.value("warmup_steps", int64_t{0});
  r.epochs_completed = j.value("epochs_completed", int64_t{0});
  r.steps_completed = j.value("steps_completed", int64_t{0});
  r.steps_per_epoch = j.value("steps_per_epoch", int64_t{0});
  r.train_time_s = j.value("train_time_s", 0.0);
  r.steady_samples_per_s = get_opt<double>(j, "steady_samples_per_s");
  r.mean_epoch_time_s = get_opt<double>(j, "mean_epoch_time_s");
  r.time_for_requested_epochs_s = get_opt<double>(j, "time_for_requested_epochs_s");
  r.time_for_requested_epochs_is_estimate = j.value("time_for_requested_epochs_is_estimate", false);
  r.stopped_early = j.value("stopped_early", false);
  r.stop_reason = s("stop_reason");
  r.final_train_loss = get_opt<double>(j, "final_train_loss");
  r.final_train_accuracy_pct = get_opt<double>(j, "final_train_accuracy_pct");
  r.test_accuracy_pct = get_opt<double>(j, "test_accuracy_pct");
  if (j.contains("phases") && j["phases"].is_object()) {
    const auto& p = j["phases"];
    PhaseBreakdown b;
    b.data_ms = p.value("data_ms", 0.0);
    b.h2d_ms = p.value("h2d_ms", 0.0);
    b.forward_ms = p.value("forward_ms", 0.0);
    b.backward_ms = p.value("backward_ms", 0.0);
    b.optimizer_ms = p.value("optimizer_ms", 0.0);
    b.step_ms = p.value("step_ms", 0.0);
    b.steps = p.value("steps", int64_t{0});
    b.method = p.value("method", "");
    r.phases = b;
  }
  r.peak_rss_bytes = get_opt<int64_t>(j, "peak_rss_bytes");
  r.device_peak_allocated_bytes = get_opt<int64_t>(j, "device_peak_allocated_bytes");
  r.device_peak_reserved_bytes = get_opt<int64_t>(j, "device_peak_reserved_bytes");
  if (j.contains("epochs"))
    for (const auto& e : j["epochs"]) {
      EpochRecord er;
      er.epoch = e.value("epoch", int64_t{0});
      er.steps = e.value("steps", int64_t{0});
      er.samples = e.value("samples", int64_t{0});
      er.train_loss = e.value("train_loss", 0.0);
      er.train_accuracy_pct = e.value("train_accuracy_pct", 0.0);
      er.test_accuracy_pct = get_opt<double>(e, "test_accuracy_pct");
      er.test_loss = get_opt<double>(e, "test_loss");
      er.epoch_time_s = e.value("epoch_time_s", 0.0);
      er.eval_time_s = e.value("eval_time_s", 0.0);
      er.samples_per_s = e.value("samples_per_s", 0.0);
      er.complete = e.value("complete", true);
      er.start_ns = e.value("start_ns", int64_t{0});
      er.end_ns = e.value("end_ns", int64_t{0});
      er.energy_j = get_opt<double>(e, "energy_j");
      r.epochs.push_back(er);
    }
  r.start_ns = j.value("start_ns", int64_t{0});
  r.end_ns = j.value("end_ns", int64_t{0});
  r.checkpoint_path = s("checkpoint_path");
  if (j.contains("notes")) r.notes = j["notes"].get<std::vector<std::string>>();
  auto sec = [&](const char* k) { return j.contains(k) ? j[k] : json(nullptr); };
  r.telemetry = record_json::section_from_json<TelemetrySection>(sec("telemetry"));
  r.profile = record_json::section_from_json<ProfileSection>(sec("profile"));
  r.inference = record_json::section_from_json<InferenceSection>(sec("inference"));
  return r;
}

std::string record_document_json(const Provenance& p, json runs) {
  json doc = {{"provenance", to_json(p)}, {"schema_version", kSchemaVersion}, {"runs", std::move(runs)}};
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace trainscope

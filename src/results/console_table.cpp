#include "trainscope/console_table.h"

#include <algorithm>
#include <fmt/format.h>


#include "common/text.h"
#include "trainscope/report.h"
#include "trainscope/variants.h"

namespace trainscope {

namespace {

// The "vs cpu" column: the report's speed-up of the run's cell (trainscope/report.h analyze).
// The CPU row is the baseline only when a GPU ran the same workload (trainscope/report.h
// shown_speedup, which the report uses too).
std::string speedup_column(const RunRecord& r, const Analysis& a) {
  const bool measured = r.status == RunStatus::kOk && r.steady_samples_per_s;
  const ShownSpeedup sp = shown_speedup(a, r.device, workload_of(r).model, r.batch_size);
  if (!measured || !sp.value) return "—";
  return fmt::format("{:.2f}×", *sp.value);
}

}  // namespace

std::string format_matrix_table(const std::vector<RunRecord>& runs) {
  ReportInput in;
  in.runs = runs;
  const Analysis analysis = analyze(in);
  std::vector<const RunRecord*> order;
  for (const auto& r : runs) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) {
    return std::tie(a->model, a->batch_size) < std::tie(b->model, b->batch_size);
  });
  int64_t epochs = runs.empty() ? 0 : runs.front().epochs_requested;
  // Variants (docs/variants.md): a variant column, and MFU where a run has it, only when used.
  const bool variants = std::any_of(runs.begin(), runs.end(), [](const RunRecord& r) { return r.variant != "eager"; });
  const bool mfu = std::any_of(runs.begin(), runs.end(), [](const RunRecord& r) { return r.mfu_pct.has_value(); });
  // Language models (docs/language-models.md): tokens/s and validation loss beside samples/s.
  const bool lm = std::any_of(runs.begin(), runs.end(), [](const RunRecord& r) { return r.language_model.has_value(); });
  // the variant column fits the longest name ("graphs+bf16+channels_last", "bf16+threads16")
  size_t vw = 20;
  for (const auto& r : runs) vw = std::max(vw, r.variant.size());
  auto extra = [&](const std::string& v, const std::string& m) {
    return (variants ? fmt::format(" {:<{}}", v, vw) : "") + (mfu ? fmt::format(" {:>7}", m) : "");
  };
  auto lm_cells = [&](const std::string& tps, const std::string& loss) {
    return lm ? fmt::format(" {:>11} {:>9}", tps, loss) : std::string();
  };
  std::string out;
  out += fmt::format("{:<14} {:>5} {:<8}{} {:>3} {:>11}{} {:>16} {:>18} {:>9} {:>8}  {}\n", "model", "batch", "device",
                     extra("variant", "MFU"), "rep", "samples/s", lm_cells("tokens/s", "val loss"), "epoch",
                     "time " + count_of(epochs, "epoch"), "test acc", "vs cpu", "status");
  out += std::string(106 + (variants ? vw + 1 : 0) + (mfu ? 8 : 0) + (lm ? 22 : 0), '-') + "\n";
  for (const auto* r : order) {
    // A language model's name carries its sequence length (a matrix dimension, --seq-lens).
    std::string model = r->language_model ? fmt::format("{} T{}", r->model, r->language_model->seq_len) : r->model;
    if (model.size() > 14) model = "…" + model.substr(model.size() - 13);
    std::string sps = r->steady_samples_per_s ? format_rate(*r->steady_samples_per_s) : "—";
    std::string ep = r->mean_epoch_time_s ? format_duration(*r->mean_epoch_time_s)
                     : (r->stopped_early && r->steady_samples_per_s && r->steps_per_epoch > 0)
                         ? format_duration(static_cast<double>(r->steps_per_epoch * r->batch_size * r->grad_accum) /
                                           *r->steady_samples_per_s) + " (est.)"
                         : "—";
    std::string tn = r->time_for_requested_epochs_s
                         ? format_duration(*r->time_for_requested_epochs_s) +
                               (r->time_for_requested_epochs_is_estimate ? " (est.)" : "")
                         : "—";
    std::string acc = r->test_accuracy_pct ? fmt::format("{:.1f} %", *r->test_accuracy_pct) : "—";
    std::string sp = speedup_column(*r, analysis);
    std::string st = to_string(r->status);
    const std::string& why = r->failure_reason.empty() ? r->variant_note : r->failure_reason;
    if (r->status != RunStatus::kOk && !why.empty()) {
      st = status_with_reason(r->status, why);
      if (st.size() > 60) st = st.substr(0, 57) + "...";
    } else if (r->stopped_early) {
      st += " (stopped: " + r->stop_reason + ")";
    }
    if (r->status == RunStatus::kOk && !r->variant_note.empty()) st += " (" + r->variant_note + ")";
    std::string mfu_cell = r->mfu_pct ? fmt::format("{:.2f} %", *r->mfu_pct) : "—";
    const auto* l = r->language_model ? &*r->language_model : nullptr;
    std::string tps = l && l->steady_tokens_per_s ? format_rate(*l->steady_tokens_per_s) : "—";
    std::string vloss = l && l->val_loss ? fmt::format("{:.3f}", *l->val_loss) : "—";
    out += fmt::format("{:<14} {:>5} {:<8}{} {:>3} {:>11}{} {:>16} {:>18} {:>9} {:>8}  {}\n", model, r->batch_size,
                       r->device, extra(r->variant, mfu_cell), r->repeat, sps, lm_cells(tps, vloss), ep, tn, acc, sp,
                       st);
  }
  bool any_est = false, any_part = false, any_no_rate = false;
  for (const auto& r : runs) {
    any_est |= r.time_for_requested_epochs_is_estimate;
    any_part |= r.stopped_early && !r.mean_epoch_time_s && r.steady_samples_per_s && r.steps_per_epoch > 0;
    any_no_rate |= r.status == RunStatus::kOk && !r.steady_samples_per_s;
  }
  out += "samples/s: steady-state training throughput after warm-up (samples per second).\n";
  if (lm)
    out += "language models: a sample is a window of T tokens; tokens/s = samples/s x T; val loss: next-token "
           "cross-entropy on the validation split, nats per token (guessing uniformly scores ln V: 5.55 for byte "
           "tokens; perplexity = exp(val loss), in results.json and the report); test acc: next tokens predicted "
           "exactly (docs/language-models.md).\n";
  if (std::any_of(runs.begin(), runs.end(), [](const RunRecord& r) { return r.world_size > 1; }))
    out += "data-parallel runs (world size > 1): samples/s, epoch and times are rank 0's; the job's samples/s over all "
           "ranks is in the per-rank table below (\"all ranks\").\n";
  if (mfu) out += "MFU: 3 x forward FLOPs x samples/s over the device's dense peak for the variant's precision (docs/variants.md#mfu).\n";
  if (any_est || any_part)  // one mark for every figure estimated from the steady-state rate
    out += "(est.): estimated from the measured steady-state rate: the epoch did not finish, the run stopped before "
           "the requested epochs, or an epoch held profiled steps (their time is the profiler's, not the "
           "workload's).\n";
  if (any_no_rate)
    out += "—: not measured; a run with no more steps than --warmup-steps has no steady-state rate (see notes in "
           "results.json).\n";
  for (const auto* r : order)
    if (auto line = format_input_pipeline(*r); !line.empty()) out += "input pipeline: " + line + "\n";
  return out;
}

}  // namespace trainscope

// The text renderings of an Analysis: the console's summary and report.md.
#include <fmt/format.h>

#include <algorithm>

#include "report/generation_report.h"
#include "report/render_parts.h"
#include "report/report_util.h"
#include "trainscope/report.h"

namespace trainscope {

using namespace report_detail;

std::string render_console(const ReportInput& in, const Analysis& a) {
  std::string s = console_summary(a) + console_advice(a);
  s += "\nResearch questions (answered in full in report.md)\n";
  for (const auto& q : a.answers)
    if (!q.sentences.empty()) s += fmt::format("  {}  {}\n", q.id == "simple_network" ? "Simple network" : q.id, q.sentences.front());
  for (const auto& n : a.notes) s += "note: " + n + "\n";
  for (const auto& f : instrumentation_flags(in)) s += "flag: " + f + "\n";
  return s;
}

namespace {

std::string md_summary_table(const Analysis& a) {
  std::string s;
  s += "\n## Details per device, model and batch size\n\n";
  s += "Median over repeats; (±half the spread, n = repeats) where there are several. — = not measured.\n\n";
  s += "| model | batch | device | runs ok/failed | samples/s | speed-up | epoch time | time for N epochs | test acc. | "
       "GPU util | SM activity | CPU util (machine) | process CPU | GPU peak alloc. | GPU peak reserved | host RSS | "
       "power mean | power peak | "
       "temp peak | energy/epoch | energy/sample | data share | h2d share | latency p50 | inference/s |\n";
  s += "|";
  for (int i = 0; i < 25; ++i) s += "---|";
  s += "\n";
  for (const auto& c : a.cells) {
    s += fmt::format(
        "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | "
        "{} | {} | {} | {} |\n",
        c.model, c.batch_size, c.device, runs_cell(c), fmt_stat(c.samples_per_s, ""), speedup_of(a, c),
        c.epoch_time_s.ok() ? fmt_time(c.epoch_time_s.median) + (c.epoch_time_is_estimate ? " (est.)" : "") : "—",
        c.time_for_epochs_s.ok() ? fmt::format("{} ({} ep.{})", fmt_time(c.time_for_epochs_s.median),
                                               c.epochs_requested, c.time_for_epochs_is_estimate ? ", est." : "")
                                 : "—",
        fmt_stat(c.test_accuracy_pct, " %"), fmt_device_stat(c, c.gpu_util_pct_mean, " %"), fmt_device_stat(c, c.sm_activity_pct_mean, " %"),
        fmt_stat(c.cpu_util_pct_mean, " %"), fmt_stat(c.process_cpu_cores, " cores"),
        c.device_peak_allocated_bytes.ok() ? fmt_bytes(c.device_peak_allocated_bytes.median) : "—",
        c.device_peak_reserved_bytes.ok() ? fmt_bytes(c.device_peak_reserved_bytes.median) : "—",
        c.rss_bytes_max.ok() ? fmt_bytes(c.rss_bytes_max.median) : "—", fmt_device_stat(c, c.power_w_mean, " W"),
        fmt_device_stat(c, c.power_w_max, " W"), fmt_device_stat(c, c.temp_c_max, " °C"), fmt_stat(c.energy_per_epoch_j, " J"),
        fmt_stat(c.energy_per_sample_j, " mJ", 1000), fmt_stat(c.data_share_pct, " %"), fmt_stat(c.h2d_share_pct, " %"),
        fmt_stat(c.latency_p50_ms, " ms"), fmt_stat(c.inference_samples_per_s, ""));
  }
  return s;
}

std::string md_answers_and_advice(const Analysis& a) {
  std::string s;
  s += "\n## Answers to the study's research questions\n\n";
  for (const auto& q : a.answers) {
    s += fmt::format("### {}: {}\n\n", q.id == "simple_network" ? "Simple network" : q.id, q.question);
    for (const auto& x : q.sentences) s += "- " + x + "\n";
    s += "\n";
  }
  s += md_advice(a);
  return s;
}

std::string md_comparisons(const Analysis& a) {
  std::string s;
  if (!a.batch_comparisons.empty()) {
    s += "\n## Batch sizes\n\n| device | model | batches | samples/s ratio | utilisation | memory |\n|---|---|---|---|---|---|\n";
    for (const auto& b : a.batch_comparisons)
      s += fmt::format("| {} | `{}` | {} → {} | {}{} | {} → {} | {} → {} |\n", b.device, b.model, b.batch_a, b.batch_b,
                       opt_num(b.samples_per_s_ratio, "×"), b.noise ? " (noise)" : "", opt_num(b.util_a_pct, " %"),
                       opt_num(b.util_b_pct, " %"), b.mem_a_bytes ? fmt_bytes(*b.mem_a_bytes) : "—",
                       b.mem_b_bytes ? fmt_bytes(*b.mem_b_bytes) : "—");
  }
  if (!a.balance.empty()) {
    s += "\n## Per-GPU balance\n\n| run | multi-GPU | GPU | util mean | power mean | power peak | memory peak |\n"
         "|---|---|---|---|---|---|---|\n";
    for (const auto& b : a.balance)
      for (const auto& e : b.gpus)
        s += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", b.run_id, b.multi_gpu_run ? "yes" : "no", e.gpu,
                         opt_num(e.util_pct_mean, " %"), opt_num(e.power_w_mean, " W"), opt_num(e.power_w_max, " W"),
                         e.mem_used_bytes_max ? fmt_bytes(*e.mem_used_bytes_max) : "—");
  }
  return s;
}

std::string md_definitions_and_notes(const ReportInput& in, const Analysis& a) {
  std::string s;
  s += "\n## Definitions\n\n";
  for (const auto& d : kDefinitions) s += fmt::format("- **{}**: {}\n", d[0], d[1]);
  std::vector<std::string> reasons;
  for (const auto& c : a.cells)
    for (const auto& r : c.absent_reasons)
      if (std::find(reasons.begin(), reasons.end(), r) == reasons.end()) reasons.push_back(r);
  const auto flags = instrumentation_flags(in);
  if (!a.notes.empty() || !reasons.empty() || !flags.empty()) {
    s += "\n## Notes\n\n";
    for (const auto& f : flags) s += "- **instrumentation cost**: " + f + "\n";
    for (const auto& n : a.notes) s += "- " + n + "\n";
    for (const auto& n : reasons) s += "- " + n + "\n";
  }
  return s;
}

// One line per streamed run (docs/input-pipeline.md); "" when no run was streamed.
std::string md_input_pipeline(const ReportInput& in) {
  std::string s;
  for (const auto& r : in.runs)
    if (auto line = format_input_pipeline(r); !line.empty()) s += "- " + line + "\n";
  return s.empty() ? s : "\n## Input pipeline\n\n" + s;
}

// --target-loss (docs/language-models.md#time-to-a-target-loss): "2.5 in 41 s, 1.2M tokens, 3.1 kJ",
// "2.5 not reached (best 2.71)", or "—" without a target.
std::string to_target_loss(const LanguageModelSection& l) {
  if (!l.target_loss) return "—";
  if (!l.target_loss_reached.value_or(false) || !l.time_to_target_loss_s)
    return fmt::format("{:g} not reached (best {})", *l.target_loss,
                       l.best_val_loss ? fmt::format("{:.3f}", *l.best_val_loss) : "—");
  return fmt::format("{:g} in {}, {} tokens{}", *l.target_loss, fmt_time(*l.time_to_target_loss_s),
                     fmt_num(static_cast<double>(l.tokens_to_target_loss.value_or(0))),
                     l.energy_to_target_loss_j ? fmt::format(", {} kJ", fmt_num(*l.energy_to_target_loss_j / 1000)) : "");
}

// One row per language-model run (docs/language-models.md): the figures its users read; "" when
// no run trained a language model.
std::string md_language_models(const ReportInput& in) {
  auto num = [](const std::optional<double>& v, const char* f) { return v ? fmt::format(fmt::runtime(f), *v) : "—"; };
  std::string s;
  for (const auto& r : in.runs) {
    if (!r.language_model) continue;
    const auto& l = *r.language_model;
    s += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", r.run_id, l.seq_len, num(l.steady_tokens_per_s, "{:.0f}"),
                     num(l.val_loss, "{:.3f}"), num(l.val_perplexity, "{:.2f}"), num(l.val_bits_per_byte, "{:.3f}"),
                     num(r.mfu_pct, "{:.1f} %"), l.attention.empty() ? "—" : l.attention, to_target_loss(l));
  }
  if (s.empty()) return s;
  return "\n## Language models\n\nValidation loss in nats per token (guessing uniformly scores ln V), perplexity = "
         "exp(loss), bits per byte for byte tokens; MFU by the PaLM formula (docs/language-models.md).\n\n"
         "| run | T | tokens/s | val loss | perplexity | bits/byte | MFU | attention | to target loss |\n"
         "|---|---|---|---|---|---|---|---|---|\n" +
         s;
}

std::string md_distributed(const ReportInput& in) {
  const std::string t = distributed_tables(in);
  return t.empty() ? t : "\n## Data-parallel ranks\n\n```\n" + t + "```\n";
}

}  // namespace

std::string render_markdown(const ReportInput& in, const Analysis& a) {
  std::string s = "# trainscope report\n\n";
  s += provenance_lines(in, "\n\n");
  if (!in.provenance.command_line.empty()) s += fmt::format("Command: `{}`\n\n", in.provenance.command_line);
  return s + md_summary(a) + md_language_models(in) + md_answers_and_advice(a) + md_generation(in) + md_summary_table(a) + md_comparisons(a) +
         md_input_pipeline(in) +
         md_distributed(in) +
         md_definitions_and_notes(in, a);
}

}  // namespace trainscope

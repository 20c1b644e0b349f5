// The report's answers for language models (docs/report.md#research-questions), on records made by
// hand: RQ2 memory over batch size and sequence length, RQ3 energy per token, RQ4 time and energy
// to a target validation loss on the CPU and the GPU, the "simple network" finding for gpt-mini,
// tokens/s throughout, and compare of the time to a target loss.
#include <gtest/gtest.h>

#include <string>

#include "trainscope/compare.h"
#include "trainscope/report.h"

using namespace trainscope;

namespace {

// An ok gpt-mini run at batch b and sequence length t on `device`, steady at `windows_per_s`.
RunRecord lm_run(const std::string& device, int64_t b, int64_t t, double windows_per_s, int64_t rss) {
  RunRecord r;
  r.run_id = device + "-gpt-mini-t" + std::to_string(t) + "-b" + std::to_string(b) + "-r0";
  r.device = device;
  r.device_name = device == "cpu" ? "Test CPU" : "Test GPU";
  r.model = "gpt-mini";
  r.batch_size = b;
  r.status = RunStatus::kOk;
  r.dataset = "python3-doc";
  r.train_samples = 1000;
  r.epochs_requested = 1;
  r.steady_samples_per_s = windows_per_s;
  r.peak_rss_bytes = rss;
  if (device != "cpu") r.device_peak_allocated_bytes = rss / 2;
  r.task = "causal_lm";
  r.throughput_unit = "tokens/s";
  LanguageModelSection l;
  l.seq_len = t;
  l.vocab_size = 256;
  l.steady_tokens_per_s = windows_per_s * static_cast<double>(t);
  l.val_loss = 2.0;
  r.language_model = l;
  EpochRecord e;
  e.epoch = 1;
  e.samples = 1000;
  e.energy_j = 1000.0 * static_cast<double>(t) * 0.002;  // 2 mJ per token
  r.epochs.push_back(e);
  return r;
}

void with_target(RunRecord& r, double target, std::optional<double> time_s, std::optional<double> energy_j) {
  auto& l = *r.language_model;
  l.target_loss = target;
  l.target_loss_reached = time_s.has_value();
  l.time_to_target_loss_s = time_s;
  l.energy_to_target_loss_j = energy_j;
  if (time_s) l.tokens_to_target_loss = 123456;
  l.best_val_loss = time_s ? target - 0.1 : target + 0.4;
}

std::string sentences(const Analysis& a, const std::string& id) {
  std::string s;
  for (const auto& q : a.answers)
    if (q.id == id)
      for (const auto& x : q.sentences) s += x + "\n";
  return s;
}

ReportInput input(std::vector<RunRecord> runs) {
  ReportInput in;
  in.provenance.host = "h";
  in.provenance.gpus.push_back({});
  in.runs = std::move(runs);
  return in;
}

}  // namespace

TEST(ReportLm, Rq2GivesMemoryOverBatchAndSequenceLength) {
  const auto a = analyze(input({lm_run("cpu", 8, 256, 10, 300'000'000), lm_run("cpu", 8, 1024, 2, 900'000'000),
                                lm_run("cpu", 16, 256, 18, 500'000'000)}));
  const std::string rq2 = sentences(a, "RQ2");
  EXPECT_NE(rq2.find("`gpt-mini` on cpu (language model, batch × sequence length)"), std::string::npos) << rq2;
  EXPECT_NE(rq2.find("at batch 8 × T 256"), std::string::npos) << rq2;
  EXPECT_NE(rq2.find("at batch 8 × T 1024"), std::string::npos) << rq2;
  EXPECT_NE(rq2.find("at batch 16 × T 256"), std::string::npos) << rq2;
  // The sequence length is part of the workload: each length is its own cell.
  int cells = 0;
  for (const auto& c : a.cells) cells += c.model.rfind("gpt-mini T", 0) == 0;
  EXPECT_EQ(cells, 3);
}

TEST(ReportLm, Rq4GivesTimeAndEnergyToTheTargetLossOnCpuAndGpu) {
  auto cpu = lm_run("cpu", 8, 256, 10, 300'000'000);
  auto gpu = lm_run("cuda:0", 8, 256, 400, 300'000'000);
  with_target(cpu, 2.5, 120.0, 9000.0);
  with_target(gpu, 2.5, 4.0, 1500.0);
  auto missed = lm_run("cpu", 16, 256, 18, 300'000'000);
  with_target(missed, 2.5, std::nullopt, std::nullopt);
  const auto a = analyze(input({cpu, gpu, missed}));
  const std::string rq4 = sentences(a, "RQ4");
  EXPECT_NE(rq4.find("`gpt-mini T256` at batch 8 on the CPU reaches validation loss 2.5 in 2.00 min"), std::string::npos)
      << rq4;
  EXPECT_NE(rq4.find("9.00 kJ"), std::string::npos) << rq4;
  EXPECT_NE(rq4.find("on cuda:0 reaches validation loss 2.5 in 4.00 s"), std::string::npos) << rq4;
  EXPECT_NE(rq4.find("1.50 kJ"), std::string::npos) << rq4;
  EXPECT_NE(rq4.find("at batch 16 on the CPU did not reach validation loss 2.5 (best 2.900)"), std::string::npos) << rq4;
  EXPECT_NE(rq4.find("tokens/s"), std::string::npos) << "the speed-up sentence counts tokens: " << rq4;
  const std::string md = render_markdown(input({cpu, gpu, missed}), a);
  EXPECT_NE(md.find("| to target loss |"), std::string::npos);
  EXPECT_NE(md.find("2.5 not reached (best 2.900)"), std::string::npos);
}

TEST(ReportLm, Rq3GivesEnergyPerToken) {
  const auto a = analyze(input({lm_run("cpu", 8, 256, 10, 300'000'000)}));
  const std::string rq3 = sentences(a, "RQ3");
  EXPECT_NE(rq3.find("2.00 mJ per token"), std::string::npos) << rq3;
}

TEST(ReportLm, SimpleNetworkFindingForGptMini) {
  // The GPU no faster than the CPU: the study's finding holds for the small language model.
  const auto a = analyze(input({lm_run("cpu", 8, 256, 10, 300'000'000), lm_run("cuda:0", 8, 256, 9, 300'000'000)}));
  const std::string sn = sentences(a, "simple_network");
  EXPECT_NE(sn.find("`gpt-mini T256` gains nothing from the GPU"), std::string::npos) << sn;
}

TEST(ReportLm, CompareGatesOnTimeToTheTargetLossAtOneTarget) {
  auto a = lm_run("cpu", 8, 256, 10, 1);
  auto b = a;
  with_target(a, 2.5, 100.0, 5000.0);
  with_target(b, 2.5, 150.0, 7000.0);
  const auto c = compare_runs({a}, {b}, "lm_time_to_target_loss_s");
  ASSERT_EQ(c.rows.size(), 1u);
  ASSERT_TRUE(c.rows[0].delta_pct);
  EXPECT_NEAR(*c.rows[0].delta_pct, 50, 1e-9);
  EXPECT_TRUE(c.rows[0].regression);  // lower is better: 50 % slower to the target
  auto other = b;
  other.language_model->target_loss = 3.0;
  const auto d = compare_runs({a}, {other}, "lm_time_to_target_loss_s");
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_NE(d.rows[0].why_not.find("the targets differ (A: loss 2.5; B: loss 3)"), std::string::npos) << d.rows[0].why_not;
  auto miss = b;
  with_target(miss, 2.5, std::nullopt, std::nullopt);
  const auto e = compare_runs({a}, {miss}, "lm_time_to_target_loss_s");
  EXPECT_NE(e.rows[0].why_not.find("target loss 2.5 not reached (best loss 2.900)"), std::string::npos) << e.rows[0].why_not;
}

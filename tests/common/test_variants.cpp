// Variants (trainscope/variants.h), MFU (train/mfu.h) and their record fields.
#include <gtest/gtest.h>

#include <map>

#include "results/record_json.h"
#include "trainscope/config.h"
#include "trainscope/error.h"
#include "train/mfu.h"
#include "trainscope/report.h"
#include "trainscope/run_record.h"
#include "trainscope/variants.h"

using namespace trainscope;

namespace {

std::string what_of_parse(const std::string& v) {
  try {
    parse_variant(v, "--variants");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Variants, ParseCanonicalNames) {
  EXPECT_TRUE(parse_variant("eager", "x").eager());
  EXPECT_EQ(parse_variant("eager", "x").name(), "eager");
  auto v = parse_variant("bf16+graphs", "x");
  EXPECT_TRUE(v.graphs);
  EXPECT_TRUE(v.bf16);
  EXPECT_FALSE(v.tf32);
  EXPECT_EQ(v.name(), "graphs+bf16");  // canonical order, whatever the order given
  EXPECT_EQ(parse_variant("channels_last+tf32", "x").name(), "tf32+channels_last");
  EXPECT_TRUE(parse_variant("tf32", "x").gpu_only());
  EXPECT_FALSE(parse_variant("bf16+channels_last", "x").gpu_only());
}

// threadsN: a CPU run's intra-op threads as a variant, written last in the canonical name.
TEST(Variants, ThreadsVariantParsesItsCountAndComesLast) {
  auto v = parse_variant("threads8+bf16", "x");
  EXPECT_EQ(v.threads, 8);
  EXPECT_TRUE(v.bf16);
  EXPECT_FALSE(v.eager());
  EXPECT_FALSE(v.gpu_only());
  EXPECT_EQ(v.name(), "bf16+threads8");
  EXPECT_EQ(parse_variant("threads1", "x").name(), "threads1");
  EXPECT_EQ(parse_variant("threads4096", "x").threads, 4096);
  EXPECT_EQ(variant_run_id_suffix("bf16+threads8"), "-bf16+threads8");
  EXPECT_EQ(model_with_variant("mlp", "threads8"), "mlp [threads8]");
  EXPECT_NE(what_of_parse("threads").find("'threads' needs a thread count: threads8, say"), std::string::npos);
  EXPECT_NE(what_of_parse("threadsx").find("needs a thread count"), std::string::npos);
  EXPECT_NE(what_of_parse("threads0").find("the thread count must be in 1..4096"), std::string::npos);
  EXPECT_NE(what_of_parse("threads5000").find("the thread count must be in 1..4096"), std::string::npos);
  EXPECT_NE(what_of_parse("threads2+threads4").find("a thread count appears twice"), std::string::npos);
  EXPECT_NE(what_of_parse("fp16").find("threadsN (N intra-op CPU threads, 1..4096)"), std::string::npos);
  // a CPU setting: not applicable on a GPU, applicable on the CPU whatever the model
  EXPECT_EQ(variant_not_applicable(v, "cpu", false), "");
  EXPECT_EQ(variant_not_applicable(parse_variant("threads8", "x"), "cuda:0", true),
            "not applicable on cuda:0: threads8 sets a CPU run's intra-op threads");
}

TEST(Variants, BadNamesSayWhatAndHow) {
  auto m = what_of_parse("fp16");
  EXPECT_NE(m.find("unknown part 'fp16'"), std::string::npos) << m;
  EXPECT_NE(m.find("--variants"), std::string::npos) << m;
  EXPECT_NE(m.find("graphs, bf16, tf32, channels_last"), std::string::npos) << m;
  EXPECT_NE(what_of_parse("bf16+bf16").find("appears twice"), std::string::npos);
  EXPECT_NE(what_of_parse("eager+bf16").find("cannot be combined"), std::string::npos);
  EXPECT_NE(what_of_parse("graphs+").find("empty part"), std::string::npos);
  EXPECT_NE(what_of_parse("").find("empty part"), std::string::npos);
}

TEST(Variants, NotApplicableRules) {
  auto na = [](const std::string& v, const std::string& dev, bool conv) {
    return variant_not_applicable(parse_variant(v, "x"), dev, conv);
  };
  EXPECT_EQ(na("eager", "cpu", false), "");
  EXPECT_EQ(na("bf16", "cpu", false), "");
  EXPECT_EQ(na("graphs", "cuda:0", false), "");
  EXPECT_EQ(na("tf32+channels_last", "cuda:1", true), "");
  EXPECT_EQ(na("graphs", "cpu", true).rfind("not applicable on cpu", 0), 0u);
  EXPECT_EQ(na("tf32", "cpu", true).rfind("not applicable on cpu", 0), 0u);
  EXPECT_NE(na("channels_last", "cuda:0", false).find("4-D parameters"), std::string::npos);
  EXPECT_NE(na("bf16+channels_last", "cpu", false), "");
  // a rank of a data-parallel job: graphs would replay without the all-reduce
  const auto dp = [](const std::string& v) { return variant_not_applicable(parse_variant(v, "x"), "cuda:0", true, true); };
  EXPECT_NE(dp("graphs+bf16").find("data-parallel"), std::string::npos);
  EXPECT_EQ(dp("bf16+channels_last"), "");
  EXPECT_EQ(dp("eager"), "");
}

TEST(Variants, RunIdSuffixAndWorkloadName) {
  EXPECT_EQ(variant_run_id_suffix("eager"), "");
  EXPECT_EQ(variant_run_id_suffix("graphs+bf16"), "-graphs+bf16");
  EXPECT_EQ(model_with_variant("cnn", "eager"), "cnn");
  EXPECT_EQ(model_with_variant("cnn", "bf16"), "cnn [bf16]");
}

TEST(Variants, ValidatedInTheSettingsTable) {
  MatrixConfig m;
  m.train.variants = {"eager", "bf16", "graphs+bf16"};
  EXPECT_NO_THROW(validate(m));
  m.train.variants = {"eager", "bogus"};
  try {
    validate(m);
    ADD_FAILURE() << "an unknown variant was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("TOML key train.variants"), std::string::npos) << e.what();
  }
  m.train.variants = {"graphs+bf16", "bf16+graphs"};  // one variant twice
  EXPECT_THROW(validate(m), Error);
  m.train.variants = {};  // the default set (default_variants)
  EXPECT_NO_THROW(validate(m));
  m.train.variants = {"eager"};
  m.train.target_accuracy_pct = 101;
  EXPECT_THROW(validate(m), Error);
}

TEST(Mfu, HandValuesForMlpOnH200) {
  const double fwd = 2.0 * (784 * 128 + 128 * 10);  // mlp 784-128-10, FLOPs per sample
  auto f = compute_mfu(fwd, 1e6, "cuda:0", "NVIDIA H200", /*bf16=*/true, /*tf32=*/false);
  ASSERT_TRUE(f.train_flops_per_s && f.mfu_pct && f.peak_flops_per_s);
  EXPECT_DOUBLE_EQ(*f.train_flops_per_s, 3.0 * fwd * 1e6);
  EXPECT_DOUBLE_EQ(*f.peak_flops_per_s, 989.4e12);
  EXPECT_NEAR(*f.mfu_pct, 100.0 * 3.0 * fwd * 1e6 / 989.4e12, 1e-12);
  EXPECT_EQ(f.precision, "bf16");
  EXPECT_EQ(f.note, "");
  auto fp32 = compute_mfu(fwd, 1e6, "cuda:0", "NVIDIA H200", false, false);
  EXPECT_DOUBLE_EQ(*fp32.peak_flops_per_s, 67e12);
  auto tf32 = compute_mfu(fwd, 1e6, "cuda:0", "NVIDIA A100-SXM4-80GB", false, true);
  EXPECT_DOUBLE_EQ(*tf32.peak_flops_per_s, 156e12);
  EXPECT_EQ(tf32.precision, "tf32");
}

TEST(Mfu, PeaksMatchByNameAndCpuHasNone) {
  EXPECT_EQ(find_device_peak("NVIDIA H200")->name, "NVIDIA H200 SXM");
  EXPECT_EQ(find_device_peak("NVIDIA H100 80GB HBM3")->name, "NVIDIA H100 SXM");
  EXPECT_EQ(find_device_peak("NVIDIA H100 PCIe"), nullptr);  // another peak: not guessed
  EXPECT_EQ(find_device_peak("NVIDIA H200 NVL"), nullptr);
  EXPECT_EQ(find_device_peak("NVIDIA RTX A6000")->bf16_tflops, 154.8);
  auto cpu = compute_mfu(1000.0, 50.0, "cpu", "AMD EPYC", false, false);
  EXPECT_DOUBLE_EQ(*cpu.train_flops_per_s, 150000.0);
  EXPECT_FALSE(cpu.mfu_pct);
  EXPECT_NE(cpu.note.find("MFU absent on cpu"), std::string::npos);
  auto unknown = compute_mfu(1000.0, 50.0, "cuda:0", "NVIDIA T4", false, false);
  EXPECT_FALSE(unknown.mfu_pct);
  EXPECT_NE(unknown.note.find("NVIDIA T4"), std::string::npos);
  EXPECT_FALSE(compute_mfu(std::nullopt, 50.0, "cuda:0", "NVIDIA H200", false, false).train_flops_per_s);
}

TEST(Variants, RecordFieldsRoundTripAndCsvColumns) {
  RunRecord r;
  r.run_id = "cpu-cnn-b64-r0-bf16";
  r.variant = "bf16";
  r.status = RunStatus::kNotApplicable;
  r.variant_note = "not applicable on cpu: x";
  r.mfu_pct = 12.5;
  r.time_to_accuracy = TimeToAccuracy{.target_pct = 80, .reached = true, .time_s = 1.5, .samples = 640};
  auto back = run_record_from_json(to_json(r));
  EXPECT_EQ(back.variant, "bf16");
  EXPECT_EQ(back.status, RunStatus::kNotApplicable);
  EXPECT_EQ(to_string(back.status), "not_applicable");
  EXPECT_EQ(back.variant_note, r.variant_note);
  EXPECT_EQ(back.mfu_pct, 12.5);
  ASSERT_TRUE(back.time_to_accuracy);
  EXPECT_EQ(back.time_to_accuracy->samples, 640);
  auto header = csv_header();
  auto row = csv_row(r);
  ASSERT_EQ(header.size(), row.size());
  auto col = [&](const std::string& name) {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return row[i];
    ADD_FAILURE() << "no column " << name;
    return std::string();
  };
  EXPECT_EQ(col("variant"), "bf16");
  EXPECT_EQ(col("target_reached"), "true");
  EXPECT_EQ(col("samples_to_target"), "640");
  // an older record without the key reads as eager
  auto j = to_json(r);
  j.erase("variant");
  EXPECT_EQ(run_record_from_json(j).variant, "eager");
}

namespace {

RunRecord ok_run(const std::string& device, const std::string& model, int64_t batch, const std::string& variant,
                 double sps) {
  RunRecord r;
  r.run_id = device + "-" + model + "-b" + std::to_string(batch) + "-r0" + variant_run_id_suffix(variant);
  r.device = device;
  r.model = model;
  r.batch_size = batch;
  r.variant = variant;
  r.status = RunStatus::kOk;
  r.steady_samples_per_s = sps;
  r.measurement.headline_steps = 100;
  return r;
}

}  // namespace

// A gain from a handful of steady steps is stated, not recommended.
TEST(VariantAdvice, GainFromFewSteadyStepsAsksForMoreSteps) {
  ReportInput in;
  in.runs = {ok_run("cpu", "cnn", 128, "eager", 100), ok_run("cpu", "cnn", 128, "bf16", 190)};
  in.runs[1].measurement.headline_steps = 2;
  const Analysis a = analyze(in);
  const Advice* gain = nullptr;
  for (const auto& x : a.advice)
    if (x.rule == "variant_gain") gain = &x;
  ASSERT_NE(gain, nullptr);
  EXPECT_NE(gain->advice.find("over only 2 steady steps per run"), std::string::npos) << gain->advice;
  EXPECT_EQ(gain->advice.find("train with --variants"), std::string::npos) << gain->advice;
}

TEST(VariantAdvice, MeasuredGainIsCitedAndUntriedVariantsAreUnmeasured) {
  ReportInput in;
  in.runs = {ok_run("cpu", "cnn", 128, "eager", 100), ok_run("cpu", "cnn", 128, "bf16", 190),
             ok_run("cuda:0", "mlp", 64, "eager", 1000), ok_run("cuda:0", "cnn", 64, "eager", 900)};
  in.runs[2].telemetry = TelemetrySection{};
  in.runs[2].telemetry->headline.util_pct_mean = 20;  // the GPU waited: launch-bound
  in.runs[3].telemetry = TelemetrySection{};
  in.runs[3].telemetry->headline.util_pct_mean = 95;  // busy: no suggestion
  const Analysis a = analyze(in);
  std::vector<const Advice*> gain, untried;
  for (const auto& x : a.advice) {
    if (x.rule == "variant_gain") gain.push_back(&x);
    if (x.rule == "variant_untried") untried.push_back(&x);
  }
  ASSERT_EQ(gain.size(), 1u);
  EXPECT_NE(gain[0]->advice.find("bf16: 1.90× on cpu for cnn b128, measured"), std::string::npos) << gain[0]->advice;
  ASSERT_EQ(untried.size(), 1u);  // the launch-bound GPU cell where only eager ran
  EXPECT_EQ(untried[0]->device, "cuda:0");
  EXPECT_EQ(untried[0]->model, "mlp");
  EXPECT_NE(untried[0]->advice.find("unmeasured"), std::string::npos);
  // variants are separate cells, never repeats of one another
  int cpu_cnn_cells = 0;
  for (const auto& c : a.cells) cpu_cnn_cells += c.device == "cpu" && c.batch_size == 128;
  EXPECT_EQ(cpu_cnn_cells, 2);
}

// threadsN (docs/variants.md#cpu-threads): the GPU's speed-up is taken against the CPU's fastest
// thread count, with a note; variant_gain advises --threads for a faster count, calls a count
// equal to eager's no change, and never advises an oversubscribed one.
TEST(VariantAdvice, ThreadCountsGiveTheCpuItsBestAndAreAdvisedHonestly) {
  ReportInput in;
  in.provenance.cpu_usable_cores = in.provenance.cpu_logical_cores = 16;
  auto cpu = [](const std::string& variant, double sps, int64_t threads) {
    RunRecord r = ok_run("cpu", "mlp", 128, variant, sps);
    r.intra_op_threads = threads;
    return r;
  };
  in.runs = {cpu("eager", 100, 16), cpu("threads8", 150, 8), cpu("threads16", 104, 16), cpu("threads32", 170, 32),
             ok_run("cuda:0", "mlp", 128, "eager", 600)};
  Analysis a = analyze(in);
  ASSERT_EQ(a.device_comparisons.size(), 1u);
  EXPECT_EQ(a.device_comparisons[0].cpu_model, "mlp [threads8]") << "threads32 ran faster, but on 16 usable CPUs";
  EXPECT_DOUBLE_EQ(*a.device_comparisons[0].speedup, 4.0);
  std::string notes;
  for (const auto& n : a.notes) notes += n + "\n";
  EXPECT_NE(notes.find("the CPU side of mlp b128's GPU speed-ups is mlp [threads8] (150 samples/s), its fastest thread "
                       "count measured, not mlp (100 samples/s)"),
            std::string::npos)
      << notes;
  std::map<std::string, std::string> gain;
  for (const auto& x : a.advice)
    if (x.rule == "variant_gain") gain[x.model] = x.advice + " | " + x.evidence;
  EXPECT_NE(gain["mlp [threads8]"].find("threads8: 1.50× on cpu for mlp b128, measured; train with --threads 8."),
            std::string::npos)
      << gain["mlp [threads8]"];
  EXPECT_NE(gain["mlp [threads8]"].find("(8 threads vs 16 threads)"), std::string::npos) << gain["mlp [threads8]"];
  EXPECT_NE(gain["mlp [threads16]"].find("eager ran 16 intra-op threads too: the same setting"), std::string::npos)
      << gain["mlp [threads16]"];
  EXPECT_NE(gain["mlp [threads32]"].find("32 threads on 16 usable CPUs: oversubscribed, not a setting to train with"),
            std::string::npos)
      << gain["mlp [threads32]"];
  // a group of one measured cell is not "fastest" of anything (a break test's find)
  for (const auto& c : a.cells) {
    if (c.model == "mlp [threads8]") EXPECT_EQ(c.verdict, "the only cell measured for `mlp [threads8]`");
    if (c.model == "mlp" && c.device == "cuda:0") EXPECT_EQ(c.verdict.rfind("fastest for `mlp`", 0), 0u) << c.verdict;
  }
}

TEST(VariantAdvice, GpuOnlyVariantIsComparedWithCpuEager) {
  ReportInput in;
  RunRecord na = ok_run("cpu", "mlp", 128, "graphs", 0);
  na.status = RunStatus::kNotApplicable;
  na.variant_note = "not applicable on cpu: graphs needs a CUDA device";
  na.steady_samples_per_s.reset();
  in.runs = {ok_run("cpu", "mlp", 128, "eager", 100), na, ok_run("cuda:0", "mlp", 128, "eager", 80),
             ok_run("cuda:0", "mlp", 128, "graphs", 400)};
  const Analysis a = analyze(in);
  std::optional<double> graphs_speedup;
  for (const auto& d : a.device_comparisons)
    if (d.model == "mlp [graphs]") graphs_speedup = d.speedup;
  ASSERT_TRUE(graphs_speedup);
  EXPECT_DOUBLE_EQ(*graphs_speedup, 4.0);  // the simple-network verdict flips with graphs
  std::string sn;
  for (const auto& q : a.answers)
    if (q.id == "simple_network")
      for (const auto& x : q.sentences) sn += x + "\n";
  EXPECT_NE(sn.find("`mlp` gains nothing from the GPU in eager"), std::string::npos) << sn;
  EXPECT_NE(sn.find("with `graphs` it does gain"), std::string::npos) << sn;  // no line contradicts another
  EXPECT_NE(sn.find("`mlp [graphs]` does gain from the GPU (speed-up 4"), std::string::npos) << sn;
  // the CPU cell of the GPU-only variant is not applicable, not failed (found in the H200 report)
  for (const auto& c : a.cells)
    if (c.device == "cpu" && c.model == "mlp [graphs]") {
      EXPECT_EQ(c.runs_failed, 0);
      EXPECT_EQ(c.runs_not_applicable, 1);
    }
  const std::string md = render_markdown(in, a);
  EXPECT_EQ(md.find("its run failed"), std::string::npos) << md;
  EXPECT_NE(md.find("not applicable on cpu: graphs needs a CUDA device"), std::string::npos) << md;
}

// Issue 16: the summary compares devices on time (and energy) to the target accuracy as well as
// on samples/s; a run that never reached it says so.
TEST(VariantAdvice, SummaryHasTimeAndEnergyToTheTargetAccuracy) {
  ReportInput in;
  RunRecord cpu = ok_run("cpu", "mlp", 128, "eager", 100), gpu = ok_run("cuda:0", "mlp", 128, "eager", 400),
            slow = ok_run("cuda:0", "cnn", 128, "eager", 50);
  for (RunRecord* r : {&cpu, &gpu, &slow}) r->time_to_accuracy = TimeToAccuracy{};
  cpu.time_to_accuracy->target_pct = gpu.time_to_accuracy->target_pct = slow.time_to_accuracy->target_pct = 85;
  cpu.time_to_accuracy->reached = gpu.time_to_accuracy->reached = true;
  cpu.time_to_accuracy->time_s = 12.5;
  gpu.time_to_accuracy->time_s = 3.25;
  gpu.time_to_accuracy->energy_j = 650;
  in.runs = {cpu, gpu, slow};
  const Analysis a = analyze(in);
  const std::string md = render_markdown(in, a);
  EXPECT_NE(md.find("time, energy to 85.0 % test accuracy"), std::string::npos) << md;
  EXPECT_NE(md.find("| 12.5 s |"), std::string::npos) << md;
  EXPECT_NE(md.find("3.25 s, 0.65 kJ"), std::string::npos) << md;
  EXPECT_NE(md.find("not reached"), std::string::npos) << md;
}

// Issue 15: the report shows a data-parallel run's per-rank table (the console's), with its
// imbalance ratios and communication share.
TEST(VariantAdvice, ReportHasTheDataParallelRankTable) {
  ReportInput in;
  RunRecord r = ok_run("cpu", "mlp", 64, "eager", 900);
  DistributedSection d;
  d.backend = "gloo";
  d.world_size = 2;
  for (int k = 0; k < 2; ++k) {
    RankSummary s;
    s.rank = k;
    s.device = "cpu";
    s.status = "ok";
    s.steady_samples_per_s = 450;
    s.step_ms = k == 0 ? 10.0 : 12.5;
    d.ranks.push_back(s);
  }
  d.step_time_imbalance = 1.25;
  r.distributed = d;
  in.runs = {r};
  const Analysis a = analyze(in);
  const std::string md = render_markdown(in, a);
  EXPECT_NE(md.find("## Data-parallel ranks"), std::string::npos) << md;
  EXPECT_NE(md.find("gloo, 2 rank(s)"), std::string::npos) << md;
  EXPECT_NE(md.find("1.25"), std::string::npos) << md;
  const std::string html = render_html(in, a, {}, "");
  EXPECT_NE(html.find("<h2>Data-parallel ranks</h2>"), std::string::npos);
  in.runs[0].distributed.reset();
  EXPECT_EQ(render_markdown(in, analyze(in)).find("Data-parallel ranks"), std::string::npos);
}

// RQ4's time sentence agrees in number: "1 epoch takes", "2 epochs take".
TEST(VariantAdvice, EpochTimeSentenceAgreesInNumber) {
  for (int64_t epochs : {1, 2}) {
    ReportInput in;
    RunRecord cpu = ok_run("cpu", "mlp", 64, "eager", 100), gpu = ok_run("cuda:0", "mlp", 64, "eager", 400);
    for (RunRecord* r : {&cpu, &gpu}) {
      r->epochs_requested = epochs;
      r->time_for_requested_epochs_s = 10.0 * static_cast<double>(epochs);
    }
    in.runs = {cpu, gpu};
    const std::string md = render_markdown(in, analyze(in));
    EXPECT_NE(md.find(epochs == 1 ? "; 1 epoch takes " : "; 2 epochs take "), std::string::npos) << md;
    EXPECT_EQ(md.find(epochs == 1 ? "1 epoch take " : "2 epochs takes"), std::string::npos) << md;
  }
}

// Found by a walkthrough: a report over folders that asked for different epoch counts put a
// 1-epoch time under a "2 epochs" header; each cell now names its own count.
TEST(VariantAdvice, SummaryNamesEachCellsEpochsWhenTheyDiffer) {
  ReportInput in;
  RunRecord one = ok_run("cpu", "mlp", 64, "eager", 100), two = ok_run("cuda:0", "mlp", 64, "eager", 400);
  one.epochs_requested = 1;
  one.time_for_requested_epochs_s = 10.0;
  two.epochs_requested = 2;
  two.time_for_requested_epochs_s = 5.0;
  in.runs = {one, two};
  std::string md = render_markdown(in, analyze(in));
  EXPECT_NE(md.find("time, energy for the requested epochs"), std::string::npos) << md;
  EXPECT_NE(md.find("10.0 s for 1 epoch |"), std::string::npos) << md;
  EXPECT_NE(md.find("for 2 epochs"), std::string::npos) << md;
  in.runs[1].epochs_requested = 1;
  md = render_markdown(in, analyze(in));
  EXPECT_NE(md.find("time, energy for 1 epoch"), std::string::npos) << md;
  EXPECT_EQ(md.find("for 1 epochs"), std::string::npos) << md;  // singular
  EXPECT_EQ(md.find("epoch(s)"), std::string::npos) << md;
}

// Found by a new user: a batch whose runs finished ok with every step inside the warm-up read
// "b128 failed" in the report's batch scaling while the table said ok.
TEST(VariantAdvice, BatchScalingSaysNoSteadyStepsNotFailed) {
  ReportInput in;
  RunRecord small = ok_run("cpu", "mlp", 64, "eager", 7761), big = ok_run("cpu", "mlp", 128, "eager", 0);
  big.steady_samples_per_s.reset();  // ok, but no step after the warm-up
  in.runs = {small, big};
  const Analysis a = analyze(in);
  ASSERT_EQ(a.batch_scaling.size(), 1u);
  EXPECT_EQ(a.batch_scaling[0].absent, (std::vector<std::string>{"", "no steady steps"}));
  const std::string md = render_markdown(in, a);
  EXPECT_NE(md.find("b64 7761, b128 — (no steady steps)"), std::string::npos) << md;
  EXPECT_EQ(md.find("(failed)"), std::string::npos) << md;
  EXPECT_EQ(md.find("batch 128 failed"), std::string::npos) << md;
}

// "Train on the CPU" rests on the best variant measured on each side: the H200's eager mlp is
// slower than its CPU, its whole-step graph is not, so no cpu_faster; a GPU measured in eager
// alone gets the verdict qualified as resting on eager; a CPU faster than the GPU's graph keeps it.
TEST(VariantAdvice, CpuFasterRestsOnTheBestVariantOfEachDevice) {
  auto cpu_faster = [](const std::vector<RunRecord>& runs) {
    ReportInput in;
    in.runs = runs;
    std::vector<Advice> out;
    for (const auto& x : analyze(in).advice)
      if (x.rule == "cpu_faster") out.push_back(x);
    return out;
  };
  const auto cpu = ok_run("cpu", "mlp", 128, "eager", 208816), gpu = ok_run("cuda:0", "mlp", 128, "eager", 150972);
  EXPECT_TRUE(cpu_faster({cpu, gpu, ok_run("cuda:0", "mlp", 128, "graphs", 620000)}).empty());
  const auto eager_only = cpu_faster({cpu, gpu});
  ASSERT_EQ(eager_only.size(), 1u);
  EXPECT_NE(eager_only[0].advice.find("as measured in eager on the GPU"), std::string::npos) << eager_only[0].advice;
  EXPECT_NE(eager_only[0].advice.find("--variants eager,graphs"), std::string::npos) << eager_only[0].advice;
  const auto slow_graph = cpu_faster({cpu, gpu, ok_run("cuda:0", "mlp", 128, "graphs", 190000)});
  ASSERT_EQ(slow_graph.size(), 1u);  // one verdict per model and batch, not one per GPU variant
  EXPECT_NE(slow_graph[0].advice.find("CUDA graphs included"), std::string::npos) << slow_graph[0].advice;
  EXPECT_NE(slow_graph[0].evidence.find("`mlp [graphs]`"), std::string::npos) << slow_graph[0].evidence;
}

// The default variants: eager, plus the whole-step graph where the matrix has a GPU, so that the
// default job's CPU-vs-GPU verdict rests on each device's best recipe and not on eager alone.
TEST(Variants, DefaultSetIsEagerPlusGraphsWithAGpu) {
  EXPECT_EQ(default_variants({"cpu"}), (std::vector<std::string>{"eager"}));
  EXPECT_EQ(default_variants({"cpu", "cuda:0"}), (std::vector<std::string>{"eager", "graphs"}));
  EXPECT_EQ(default_variants({"cuda:1"}), (std::vector<std::string>{"eager", "graphs"}));
}

// The summary names, per model, each device's fastest measured recipe: the verdict's basis.
TEST(VariantAdvice, SummaryNamesEachDevicesFastestRecipe) {
  ReportInput in;
  in.runs = {ok_run("cpu", "mlp", 128, "eager", 235628), ok_run("cuda:0", "mlp", 128, "eager", 185860),
             ok_run("cuda:0", "mlp", 128, "graphs", 789896), ok_run("cuda:0", "mlp", 64, "graphs", 617201)};
  const std::string md = render_markdown(in, analyze(in));
  EXPECT_NE(md.find("`mlp`, fastest measured recipe per device: cpu `mlp` b128 235628 samples/s; cuda:0 "
                    "`mlp [graphs]` b128 789896 samples/s (3.35× the CPU's)."),
            std::string::npos)
      << md;
}

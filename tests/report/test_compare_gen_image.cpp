// An image classifier's inference.json (`trainscope infer` on a checkpoint: single-stream and
// offline scenarios, no generation) is a run set compare accepts: compared on the inference
// metrics, inference_samples_per_s by default; a file whose measurements all failed is refused
// with that reason, not "holds no runs".
#include <gtest/gtest.h>

#include <string>

#include "gen_fixtures.h"
#include "report_helpers.h"
#include "trainscope/compare.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/history.h"

using namespace trainscope;
using namespace gen_fixture;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A folder `infer -o` wrote: inference.json only.
std::string image_folder(const std::string& name, double p99_ms, double samples_per_s) {
  const std::string dir = report_test::tmpdir(name);
  const auto d = doc({image_run("cpu", p99_ms, samples_per_s)});
  write_file_atomic(dir + "/inference.json", inference_json(d.provenance, d.runs));
  return dir;
}

}  // namespace

TEST(CompareGenImage, AnImageModelsInferenceJsonIsCompared) {
  const std::string da = image_folder("img_a", 2.0, 10000), db = image_folder("img_b", 2.1, 8000);
  const ReportInput a = resolve_runs(da, da + "/none.sqlite"), b = resolve_runs(db, db + "/none.sqlite");
  EXPECT_NO_THROW(require_runs(a, da));
  EXPECT_EQ(inference_records(a.inference).size(), 1u);
  EXPECT_EQ(default_compare_metric(a, b), "inference_samples_per_s");
  const CompareResult c = compare_inputs(a, b, default_compare_metric(a, b), 5);
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].model, "mlp");
  EXPECT_EQ(c.rows[0].device, "cpu");
  EXPECT_EQ(c.rows[0].batch_label, "offline best");
  EXPECT_NEAR(*c.rows[0].delta_pct, -20, 1e-9);
  EXPECT_TRUE(c.rows[0].regression);
  EXPECT_TRUE(c.rows[0].single_repeat);
  EXPECT_TRUE(c.regressed);
  EXPECT_TRUE(has(c.host_a, "h200-host")) << c.host_a;
  // Single-stream latency p99: lower is better; 5 % worse is within a 10 % threshold.
  const CompareResult p99 = compare_inputs(a, b, "inference_p99_ms", 10);
  ASSERT_EQ(p99.rows.size(), 1u);
  EXPECT_EQ(p99.rows[0].batch_label, "1");
  EXPECT_NEAR(*p99.rows[0].delta_pct, 5, 1e-9);
  EXPECT_FALSE(p99.regressed);
  EXPECT_TRUE(has(render_compare(p99, da, db), "within threshold"));
}

TEST(CompareGenImage, AFileOfFailedMeasurementsSaysSo) {
  const std::string dir = report_test::tmpdir("img_failed");
  InferenceRun failed = image_run("cuda:0", 1, 1);
  failed.inference.reset();
  failed.error_kind = "out_of_memory";
  failed.error = "CUDA out of memory";
  const auto d = doc({failed});
  write_file_atomic(dir + "/inference.json", inference_json(d.provenance, d.runs));
  const ReportInput in = resolve_runs(dir, dir + "/none.sqlite");
  try {
    require_runs(in, dir);
    ADD_FAILURE() << "a file of failed measurements was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kDataFormat);
    EXPECT_TRUE(has(e.what(), "holds no measured runs")) << e.what();
    EXPECT_TRUE(has(e.what(), "out_of_memory")) << e.what();
    EXPECT_FALSE(has(e.what(), "empty \"runs\" array")) << e.what();
  }
}

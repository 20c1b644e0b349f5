// Cell identity: variant, world size, host allocator and thread count named in the record, `compare`,
// `history` and --resume.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "../test_helpers.h"
#include "cli_helpers.h"
#include "common/text.h"
#include "trainscope/config.h"
#include "trainscope/cpu_budget.h"
#include "trainscope/fs.h"
#include "trainscope/inference_reporter.h"
#include "trainscope/provenance.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace cli_test;

namespace {

// A run folder `dir/name` holding the healthy fixture's CPU run, edited by `edit` (one record in,
// any number out), with its own provenance date (history import keys a folder on host and date).
std::string identity_folder(const std::string& dir, const std::string& name,
                            const std::function<json(const json&)>& edit) {
  auto doc = json::parse(std::ifstream(std::string(TS_FIXTURES_DIR) + "/report/healthy/results.json"));
  json cpu;
  for (const auto& r : doc["runs"])
    if (r["device"] == "cpu") cpu = r;
  doc["runs"] = edit(cpu);
  doc["provenance"]["date_utc"] = "2026-12-01T10:00:0" + std::to_string(name.size()) + "Z";
  fs::create_directories(dir + "/" + name);
  std::ofstream(dir + "/" + name + "/results.json") << doc.dump();
  return dir + "/" + name;
}

}  // namespace

TEST(CliIdentity, CompareAndHistoryNameTheVariantAndTheWorldSize) {
  std::string dir = test_path("cli_identity");
  trainscope::remove_tree(dir);
  auto one = identity_folder(dir, "one", [](const json& r) { return json::array({r}); });
  auto dp2 = identity_folder(dir, "dp2x", [](const json& r) {
    json d = r;
    d["world_size"] = 2;
    d["steady_samples_per_s"] = 0.5 * d["steady_samples_per_s"].get<double>();
    return json::array({d});
  });
  auto vars = identity_folder(dir, "variants", [](const json& r) {
    json out = json::array({r});
    for (const char* v : {"bf16", "channels_last"}) {
      json x = r;
      x["variant"] = v;
      x["run_id"] = r["run_id"].get<std::string>() + "-" + v;
      out.push_back(x);
    }
    return out;
  });
  std::string db = dir + "/h.sqlite", out;
  // one process vs 2 ranks: never paired, so no regression (was: -50 % REGRESSION, exit 4)
  EXPECT_EQ(run({"compare", one, dp2, "--db", db}, &out), 2) << out;
  EXPECT_EQ(out.find("REGRESSION"), std::string::npos) << out;
  EXPECT_NE(out.find("only in B (no ok run of this workload in A; not comparable): cpu `cnn ×2 ranks` b128"),
            std::string::npos) << out;
  EXPECT_NE(out.find("is in both A and B"), std::string::npos) << out;
  // variants: one row each, named
  EXPECT_EQ(run({"compare", vars, vars, "--db", db}, &out), 0) << out;
  EXPECT_NE(out.find("cpu        cnn [bf16]"), std::string::npos) << out;
  EXPECT_NE(out.find("cpu        cnn [channels_last]"), std::string::npos) << out;
  // history: the model as the report names it
  ASSERT_EQ(run({"history", "import", vars, "--db", db}, &out), 0) << out;
  ASSERT_EQ(run({"history", "import", dp2, "--db", db}, &out), 0) << out;
  ASSERT_EQ(run({"history", "--db", db, "-n", "0"}, &out), 0) << out;
  EXPECT_NE(out.find(" cnn [bf16] "), std::string::npos) << out;
  EXPECT_NE(out.find(" cnn [channels_last] "), std::string::npos) << out;
  EXPECT_NE(out.find(" cnn ×2 ranks "), std::string::npos) << out;
}

// `report` on a data-parallel folder whose rank 0 died (0 runs) exited 0 with an empty summary.
TEST(CliIdentity, ReportAndCompareRefuseAFolderWithoutRuns) {
  std::string dir = test_path("cli_no_runs");
  trainscope::remove_tree(dir);
  auto empty = identity_folder(dir, "empty", [](const json&) { return json::array(); });
  fs::create_directories(empty + "/ranks/rank1");
  std::ofstream(empty + "/ranks/rank1/results.json") << R"({"runs": []})";
  std::string out;
  EXPECT_EQ(run({"report", empty, "--db", dir + "/none.sqlite"}, &out), 2) << out;
  EXPECT_NE(out.find("holds no runs"), std::string::npos) << out;
  EXPECT_NE(out.find(empty + "/ranks/rank1/results.json"), std::string::npos) << out;
  EXPECT_EQ(out.find("RQ2"), std::string::npos) << out;  // no report of nothing
  EXPECT_FALSE(fs::exists(empty + "/report.md"));
  EXPECT_EQ(run({"compare", empty, empty, "--db", dir + "/none.sqlite"}, &out), 2) << out;
  EXPECT_NE(out.find("holds no runs"), std::string::npos) << out;
}

// --resume names a kept variant's cell as the report does ("cpu mlp [bf16] b8").
TEST(CliIdentity, ResumeNamesTheVariantOfAKeptRun) {
  std::string dir = test_path("cli_resume_variant");
  trainscope::remove_tree(dir);
  auto args = small_matrix(dir, "v");
  args[6] = "8";                      // --batch-sizes
  args[10] = "1";                     // --epochs
  args.insert(args.end(), {"--variants", "eager,bf16", "--max-steps", "4"});
  std::string out;
  ASSERT_EQ(run(args, &out), 0) << out;
  ASSERT_EQ(run({"run", "--resume", dir + "/v", "--no-progress"}, &out), 0) << out;
  EXPECT_NE(out.find("cpu mlp [bf16] b8: already measured, kept (resume)"), std::string::npos) << out;
  EXPECT_NE(out.find("cpu mlp b8: already measured, kept (resume)"), std::string::npos) << out;
}

// The host allocator (docs/configuration.md#host-memory-allocator): the record names it and how
// it was set, by default, with --no-malloc-tuning and with a threshold from the environment.
TEST(CliIdentity, RecordNamesTheHostAllocatorAndHowItWasSet) {
  std::string dir = test_path("cli_host_malloc");
  trainscope::remove_tree(dir);
  auto allocator = [&](const std::string& name, std::vector<std::string> extra) {
    auto args = small_matrix(dir, name);
    args[6] = "32";   // --batch-sizes
    args[10] = "1";   // --epochs
    args.insert(args.end(), {"--max-steps", "3"});
    args.insert(args.end(), extra.begin(), extra.end());
    std::string out;
    EXPECT_EQ(run(args, &out), 0) << out;
    return json::parse(std::ifstream(dir + "/" + name + "/results.json"))["provenance"]["host_allocator"].get<std::string>();
  };
  const std::string tuned = allocator("tuned", {});
  if (tuned.find("replaces glibc malloc") != std::string::npos) GTEST_SKIP() << tuned;  // e.g. an ASan build
  EXPECT_NE(tuned.find("glibc "), std::string::npos) << tuned;
  EXPECT_NE(tuned.find("malloc, fixed thresholds: mmap 1024 MiB, trimming off"), std::string::npos) << tuned;
  EXPECT_NE(allocator("dynamic", {"--no-malloc-tuning"}).find("dynamic thresholds (malloc tuning off)"),
            std::string::npos);
  struct Env {  // the child inherits it; unset however the test ends
    Env() { setenv("MALLOC_MMAP_THRESHOLD_", "67108864", 1); }
    ~Env() { unsetenv("MALLOC_MMAP_THRESHOLD_"); }
  } env_guard;
  const std::string env = allocator("env", {});
  EXPECT_NE(env.find("as MALLOC_MMAP_THRESHOLD_ sets it (malloc tuning leaves it)"), std::string::npos) << env;
}

// --variants eager,threads1: the threads1 run trains (and infers) on one intra-op thread, the eager
// run on the invocation's --threads; each run records its own count, and `infer --run` on the
// threads1 checkpoint takes that run's count, not the invocation's.
TEST(CliIdentity, ThreadsVariantSetsEachRunsIntraOpThreads) {
  cpu_set_t mask;
  ASSERT_EQ(sched_getaffinity(0, sizeof mask, &mask), 0);
  if (CPU_COUNT(&mask) < 2) GTEST_SKIP() << "needs 2 usable CPUs to tell 1 thread from --threads 2";
  std::string dir = test_path("cli_threads_variant");
  trainscope::remove_tree(dir);
  auto args = small_matrix(dir, "t");
  args[6] = "32";    // --batch-sizes
  args[10] = "1";    // --epochs
  args[18] = "2";    // --threads
  args.insert(args.end(), {"--variants", "eager,threads1", "--max-steps", "6"});
  std::string out;
  ASSERT_EQ(run(args, &out), 0) << out;
  const json j = json::parse(std::ifstream(dir + "/t/results.json"));
  std::map<std::string, int64_t> threads;
  // .at: a record without a field fails the test showing the record, rather than crashing
  // before printing anything
  for (const auto& r : j.at("runs")) {
    ASSERT_NO_THROW(threads[r.at("run_id").get<std::string>()] = r.at("intra_op_threads").get<int64_t>())
        << r.dump().substr(0, 2000) << out;
  }
  EXPECT_EQ(threads["cpu-mlp-b32-r0"], 2);
  EXPECT_EQ(threads["cpu-mlp-b32-r0-threads1"], 1);
  EXPECT_EQ(j.at("provenance").at("intra_op_threads").get<int64_t>(), 2);
  // infer on the threads1 checkpoint runs as its training run did: one thread
  const std::string json_out = dir + "/infer.json";
  ASSERT_EQ(run({"infer", "--checkpoint", dir + "/t/checkpoints/cpu-mlp-b32-r0-threads1.pt", "--devices", "cpu",
                 "--budget", "0.2", "--batch-sizes", "8", "--limit", "128", "--no-telemetry", "--out", json_out},
                &out),
            0)
      << out;
  // .at: a record without the field fails the test with the record, not a crash (the H200 ran
  // this test into a segfault once, its output lost with it)
  const json one = json::parse(std::ifstream(json_out));
  ASSERT_NO_THROW(one.at("runs").at(0).at("inference").at("intra_op_threads")) << one.dump().substr(0, 2000) << out;
  EXPECT_EQ(one["runs"][0]["inference"]["intra_op_threads"].get<int64_t>(), 1) << out;
  // infer --run: each checkpoint at its own run's count
  ASSERT_EQ(run({"infer", "--run", dir + "/t", "--devices", "cpu", "--budget", "0.2", "--batch-sizes", "8", "--limit",
                 "128", "--no-telemetry", "--out", json_out},
                &out),
            0)
      << out;
  std::map<std::string, int64_t> infer_threads;
  const json measured = json::parse(std::ifstream(json_out));
  for (const auto& r : measured["runs"]) {
    ASSERT_NO_THROW(r.at("inference").at("intra_op_threads")) << r.dump().substr(0, 2000) << out;
    infer_threads[fs::path(r.at("checkpoint").get<std::string>()).stem().string()] =
        r["inference"]["intra_op_threads"].get<int64_t>();
  }
  EXPECT_EQ(infer_threads["cpu-mlp-b32-r0"], 2) << out;
  EXPECT_EQ(infer_threads["cpu-mlp-b32-r0-threads1"], 1) << out;
  // a thread count above the usable CPUs is measured, with a note saying it oversubscribes them
  trainscope::remove_tree(dir);
  args[args.size() - 3] = "threads64";
  ASSERT_EQ(run(args, &out), 0) << out;
  EXPECT_NE(out.find("variant threads64: 64 intra-op threads on "), std::string::npos) << out;
}

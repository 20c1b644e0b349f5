// Profiler overhead: one training run whose schedule alternates unprofiled and profiled steps
// (skip_first, then cycles of wait / warmup / active, repeated until the run ends); prints the
// mean and median host step time inside the active windows against the steps outside them.
//
//   profile_overhead [--device cpu|cuda:0] [--model cnn] [--batch 128] [--steps 200]
//                    [--threads N] [--shapes] [--no-memory] [--data DIR|synthetic]
//
// The figure is recorded in bench/RESULTS.md. On a GPU the steps are host-paced (launch queue
// full after warm-up), so host step time tracks device throughput.
#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "results/record_json.h"
#include "trainscope/profile.h"
#include "trainscope/runner.h"

using namespace trainscope;

int main(int argc, char** argv) {
  MatrixConfig m;
  m.devices = {"cpu"};
  m.models = {"cnn"};
  m.batch_sizes = {128};
  m.train.max_steps = 200;
  m.train.warmup_steps = 10;
  m.progress = false;
  m.telemetry.enabled = false;
  m.inference.enabled = false;
  m.profile.skip_first = 10;
  m.profile.wait = 10;
  m.profile.warmup = 2;
  m.profile.active = 8;
  m.profile.repeat = 0;  // repeat the cycle: windows interleave with unprofiled steps
  m.profile.profile_memory = true;
  m.profile.record_shapes = false;
  std::string data = "/usr/share/datasets/fashion-mnist";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "profile_overhead: {} needs a value\n", a);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--device") m.devices = {next()};
    else if (a == "--model") m.models = {next()};
    else if (a == "--batch") m.batch_sizes = {std::stoll(next())};
    else if (a == "--steps") m.train.max_steps = std::stoll(next());
    else if (a == "--threads") m.train.threads = std::stoll(next());
    else if (a == "--shapes") m.profile.record_shapes = true;
    else if (a == "--no-memory") m.profile.profile_memory = false;
    else if (a == "--data") data = next();
    else {
      fmt::print(stderr, "profile_overhead: unknown option {} (see the comment at the top of bench/profile_overhead.cpp)\n", a);
      return 2;
    }
  }
  if (data == "synthetic" || !std::filesystem::exists(data)) {
    m.data.format = "synthetic";
    m.data.synthetic_train = 60000;
  } else {
    m.data.path = data;
  }
  m.out_dir = (std::filesystem::temp_directory_path() / "trainscope-profile-overhead").string();
  auto res = run_matrix(m, {}, nullptr);
  if (res.runs.empty() || res.runs[0].status != RunStatus::kOk) {
    fmt::print(stderr, "profile_overhead: the run failed: {}\n", res.runs.empty() ? "no run" : res.runs[0].failure_reason);
    return 1;
  }
  const auto& r = res.runs[0];
  if (!r.profile) {
    fmt::print(stderr, "profile_overhead: the run has no profile section\n");
    return 1;
  }
  const ProfilerOverhead& o = r.profile->overhead;
  fmt::print("device {} ({}), model {}, batch {}, {} steps, {} intra-op threads, backend {}, shapes {}, memory {}\n",
             r.device, r.device_name, r.model, r.batch_size, r.steps_completed, r.intra_op_threads,
             r.profile->backend, m.profile.record_shapes, m.profile.profile_memory);
  fmt::print("{}\n", to_json(*r.profile)["overhead"].dump(2));
  if (o.overhead_pct)
    fmt::print("window overhead: {:.1f} % (mean), median {:.3f} ms vs {:.3f} ms\n", *o.overhead_pct,
               o.window_step_ms_median.value_or(0), o.outside_step_ms_median.value_or(0));
  fmt::print("\n{}", format_op_table(*r.profile, 10));
  return 0;
}

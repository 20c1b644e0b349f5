// Streaming input pipeline throughput (docs/input-pipeline.md, bench/input_pipeline.sh): reads,
// decodes and transforms the images of an image folder through ImageStream, as a training epoch
// does, and prints one JSON object: images/s in all and per worker, and per CPU second (the
// process' CPU time from start of the epoch: a per-core rate even on a loaded machine).
// Usage: input_bench FOLDER [size=64] [workers=1] [batch=64] [images=0 (all)] [augment=auto]
#include <fmt/core.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "data/stream_defaults.h"
#include "trainscope/host_malloc.h"
#include "trainscope/input_pipeline.h"
#include "trainscope/provenance.h"

using namespace trainscope;

int main(int argc, char** argv) {
  trainscope::set_host_malloc(true);  // as `trainscope run` does (docs/configuration.md#host-memory-allocator)
  if (argc < 2) {
    fmt::print(stderr, "usage: input_bench FOLDER [size=64] [workers=1] [batch=64] [images=0] [augment=auto]\n");
    return 2;
  }
  const std::string root = argv[1];
  const int64_t size = argc > 2 ? std::atoll(argv[2]) : 64, workers = argc > 3 ? std::atoll(argv[3]) : 1;
  const int64_t batch = argc > 4 ? std::atoll(argv[4]) : 64, limit = argc > 5 ? std::atoll(argv[5]) : 0;
  const std::string aug = argc > 6 ? argv[6] : "auto";
  try {
    auto files = index_image_folder(root, nullptr);
    if (limit > 0 && limit < static_cast<int64_t>(files.size())) {
      std::mt19937_64 rng(1);
      std::shuffle(files.begin(), files.end(), rng);  // every class, not the first ones
      files.resize(static_cast<size_t>(limit));
    }
    StreamOptions opt;
    opt.workers = workers;
    opt.prefetch_batches = default_prefetch_batches(workers, batch);
    opt.batch_size = batch;
    opt.transform = {.size = size, .channels = 3,
                     .augment = aug == "auto" ? (size >= 128 ? Augment::kRandomResizedCrop : Augment::kPadCrop)
                                              : augment_from_string(aug),
                     .mean = {0.5f, 0.5f, 0.5f}, .std = {0.25f, 0.25f, 0.25f}};
    const int64_t numel = 3 * size * size;
    std::vector<std::vector<float>> xs(static_cast<size_t>(opt.prefetch_batches + 1));
    std::vector<std::vector<int64_t>> ys(xs.size());
    std::vector<BatchSlot> slots;
    for (size_t k = 0; k < xs.size(); ++k) {
      xs[k].resize(static_cast<size_t>(batch * numel));
      ys[k].resize(static_cast<size_t>(batch));
      slots.push_back({xs[k].data(), ys[k].data()});
    }
    ImageStream s(files, opt, slots);
    std::vector<int64_t> order(files.size());
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(2);
    std::shuffle(order.begin(), order.end(), rng);
    rusage ru0{};
    getrusage(RUSAGE_SELF, &ru0);
    const double cpu0 = static_cast<double>(ru0.ru_utime.tv_sec + ru0.ru_stime.tv_sec) +
                        static_cast<double>(ru0.ru_utime.tv_usec + ru0.ru_stime.tv_usec) * 1e-6;
    const auto t0 = std::chrono::steady_clock::now();
    s.begin_epoch(1, order);
    int64_t images = 0;
    const int64_t batches = (static_cast<int64_t>(order.size()) + batch - 1) / batch;
    for (int64_t j = 0; j < batches; ++j) images += s.next().count;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto st = s.stats();
    // The workers' CPU time (CLOCK_THREAD_CPUTIME_ID) and the process' (getrusage), whichever is larger.
    const double workers_cpu = std::accumulate(st.worker_cpu_s.begin(), st.worker_cpu_s.end(), 0.0);
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    const double process_cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                               static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6 - cpu0;
    const double cpu = std::max(workers_cpu, process_cpu);
    fmt::print("{{\"impl\": \"trainscope\", \"folder\": \"{}\", \"size\": {}, \"augment\": \"{}\", \"workers\": {}, "
               "\"batch\": {}, \"images\": {}, \"wall_s\": {:.3f}, \"images_per_s\": {:.1f}, "
               "\"images_per_s_per_worker\": {:.1f}, \"cpu_s\": {:.3f}, \"images_per_cpu_s\": {:.1f}, \"jpeg_libjpeg\": {}}}\n",
               root, size, to_string(opt.transform.augment), workers, batch, images, wall,
               static_cast<double>(images) / wall, static_cast<double>(images) / wall / static_cast<double>(workers),
               cpu, static_cast<double>(images) / cpu, jpeg_through_libjpeg() ? "true" : "false");
  } catch (const std::exception& e) {
    fmt::print(stderr, "input_bench: {}\n", e.what());
    return 2;
  }
  return 0;
}

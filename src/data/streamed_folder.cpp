// Image folders whose training set is streamed (trainscope/dataset.h: stream_folder,
// load_streamed_folder; docs/input-pipeline.md).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>
#include <thread>

#include "trainscope/cpu_budget.h"
#include "trainscope/dataset.h"
#include "trainscope/error.h"
#include "trainscope/provenance.h"

namespace trainscope {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kPreview = 256;  // training images decoded for the normalisation and model checks

// Decodes files[i] for i in idx with `spec` into a normalised Dataset (threads share the work;
// each image's result depends only on its file). skip_bad: an image that fails is left out
// (the stream reports it in its epoch), unless every image fails; else the first failure throws.
Dataset decode_set(const std::vector<ImageFile>& files, const std::vector<int64_t>& idx, const TransformSpec& spec,
                   const std::string& name, int64_t classes, bool skip_bad = false) {
  Dataset d;
  d.name = name;
  d.channels = spec.channels;
  d.height = d.width = spec.size;
  d.num_classes = classes;
  const auto n = static_cast<int64_t>(idx.size());
  d.images.resize(static_cast<size_t>(n * d.sample_numel()));
  d.labels.resize(idx.size());
  std::vector<std::string> errors(idx.size());
  const int64_t T = std::clamp<int64_t>(usable_cpus(), 1, 16);
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < T; ++t)
    pool.emplace_back([&, t] {
      for (int64_t k = t; k < n; k += T) {
        const auto& f = files[static_cast<size_t>(idx[static_cast<size_t>(k)])];
        try {
          load_sample(f, spec, 0, d.images.data() + k * d.sample_numel());
          d.labels[static_cast<size_t>(k)] = f.label;
        } catch (const std::exception& e) {
          errors[static_cast<size_t>(k)] = e.what();
        }
      }
    });
  for (auto& th : pool) th.join();
  for (int64_t k = 0; k < n; ++k) {  // compact the good images to the front
    if (!errors[static_cast<size_t>(k)].empty()) {
      if (!skip_bad) throw_error(ErrorKind::kDataFormat, errors[static_cast<size_t>(k)]);
      continue;
    }
    std::copy_n(d.images.begin() + k * d.sample_numel(), d.sample_numel(), d.images.begin() + d.count * d.sample_numel());
    d.labels[static_cast<size_t>(d.count++)] = d.labels[static_cast<size_t>(k)];
  }
  if (d.count == 0 && n > 0) throw_error(ErrorKind::kDataFormat, errors[0]);
  d.images.resize(static_cast<size_t>(d.count * d.sample_numel()));
  d.labels.resize(static_cast<size_t>(d.count));
  return d;
}

// Channel mean/std of an unnormalised (mean 0, std 1) Dataset of pixel values in [0,1].
void preview_stats(const Dataset& d, std::vector<float>& mean, std::vector<float>& stdv) {
  RawImages raw;
  raw.count = d.count;
  raw.channels = d.channels;
  raw.height = d.height;
  raw.width = d.width;
  raw.pixels.resize(d.images.size());
  for (size_t i = 0; i < d.images.size(); ++i)
    raw.pixels[i] = static_cast<uint8_t>(std::clamp(std::lround(d.images[i] * 255.f), 0L, 255L));
  channel_stats(raw, mean, stdv);
}

Augment resolve_augment(const DataConfig& cfg) {
  if (cfg.augment != "auto") return augment_from_string(cfg.augment);
  return cfg.image_size >= 128 ? Augment::kRandomResizedCrop : Augment::kPadCrop;
}

}  // namespace

int64_t default_data_workers(int64_t cores, int64_t intra_op_threads, std::string* reason) {
  const int64_t left = cores - intra_op_threads;
  if (left >= 1) {
    if (reason) *reason = fmt::format("{} core(s) left after the trainer's {} intra-op thread(s) of {} core(s)", left,
                                      intra_op_threads, cores);
    return left;
  }
  if (reason)
    *reason = fmt::format("no core left after the trainer's {} intra-op thread(s) of {} core(s): 1 worker sharing "
                          "them (set --data-workers, or --threads to leave cores to the loader)",
                          intra_op_threads, cores);
  return 1;
}

bool stream_folder(const DataConfig& cfg, int64_t images, int64_t* decoded_bytes, std::string* reason) {
  const int64_t bytes = images * cfg.image_channels * cfg.image_size * cfg.image_size * 4;
  const auto budget = static_cast<int64_t>(cfg.cache_budget_gib * double(int64_t{1} << 30));
  if (decoded_bytes) *decoded_bytes = bytes;
  const double gib = static_cast<double>(bytes) / double(int64_t{1} << 30);
  if (cfg.cache_data == "on") {
    if (reason) *reason = fmt::format("--cache-data on: {:.2f} GiB decoded into memory", gib);
    return false;
  }
  if (cfg.cache_data == "off") {
    if (reason) *reason = fmt::format("--cache-data off: streamed ({:.2f} GiB if decoded)", gib);
    return true;
  }
  if (cfg.cache_data != "auto")
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("unknown data.cache_data '{}'; use auto, on or off", cfg.cache_data));
  const bool fits = bytes <= budget;
  if (reason)
    *reason = fmt::format("--cache-data auto: {} images decode to {:.2f} GiB, {} the {:g} GiB budget "
                          "(data.cache_budget_gib): {}",
                          images, gib, fits ? "within" : "over", cfg.cache_budget_gib,
                          fits ? "decoded into memory" : "streamed");
  return !fits;
}

DatasetPair load_streamed_folder(const DataConfig& cfg, uint64_t seed) {
  DatasetPair out;
  out.format = "folder";
  out.source = cfg.path;
  auto plan = std::make_shared<StreamPlan>();
  std::vector<std::string> names;
  std::vector<ImageFile> test_files;
  std::error_code ec;
  const auto tr = fs::path(cfg.path) / "train", te = fs::path(cfg.path) / "test";
  if (fs::is_directory(tr, ec) && fs::is_directory(te, ec)) {
    std::vector<std::string> test_names;
    plan->root = tr.string();
    plan->files = index_image_folder(plan->root, &names);
    test_files = index_image_folder(te.string(), &test_names);
    if (test_names != names)
      throw_error(ErrorKind::kDataFormat,
                  fmt::format("'{}' and '{}' have different class folders; they must match", tr.string(), te.string()));
  } else {
    plan->root = cfg.path;
    auto all = index_image_folder(cfg.path, &names);
    if (all.size() < 2)
      throw_error(ErrorKind::kDataFormat,
                  fmt::format("image folder '{}' has {} image; at least 2 are needed to hold some out for testing",
                              cfg.path, all.size()));
    // The same split as load_datasets' in-memory path.
    std::vector<int64_t> idx(all.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::mt19937_64 rng(seed);
    std::shuffle(idx.begin(), idx.end(), rng);
    const auto n = static_cast<int64_t>(all.size());
    const auto n_test = std::clamp<int64_t>(static_cast<int64_t>(std::llround(cfg.test_fraction * static_cast<double>(n))), 1, n - 1);
    for (int64_t k = 0; k < n; ++k)
      (k < n_test ? test_files : plan->files).push_back(all[static_cast<size_t>(idx[static_cast<size_t>(k)])]);
  }
  if (cfg.limit_train > 0 && cfg.limit_train < static_cast<int64_t>(plan->files.size())) plan->files.resize(static_cast<size_t>(cfg.limit_train));
  if (cfg.limit_test > 0 && cfg.limit_test < static_cast<int64_t>(test_files.size())) test_files.resize(static_cast<size_t>(cfg.limit_test));
  const auto classes = static_cast<int64_t>(names.size());
  if (classes < 2)
    throw_error(ErrorKind::kDataFormat,
                fmt::format("data in '{}' has {} class; at least 2 are needed for classification", cfg.path, classes));
  // Normalisation from a preview of the training set (the whole image, as the in-memory path).
  TransformSpec raw{.size = cfg.image_size, .channels = cfg.image_channels, .augment = Augment::kNone, .mean = {}, .std = {}};
  std::vector<int64_t> preview(static_cast<size_t>(std::min<int64_t>(kPreview, static_cast<int64_t>(plan->files.size()))));
  std::iota(preview.begin(), preview.end(), 0);
  Dataset pre = decode_set(plan->files, preview, raw, "preview", classes, /*skip_bad=*/true);
  preview_stats(pre, out.mean, out.std);
  raw.mean = out.mean;
  raw.std = out.std;
  out.train = decode_set(plan->files, preview, raw, "folder train", classes, /*skip_bad=*/true);
  out.train.count = static_cast<int64_t>(plan->files.size());
  out.train.labels.clear();
  for (const auto& f : plan->files) out.train.labels.push_back(f.label);
  TransformSpec eval = raw;
  eval.augment = Augment::kEval;
  std::vector<int64_t> all_test(test_files.size());
  std::iota(all_test.begin(), all_test.end(), 0);
  out.test = decode_set(test_files, all_test, eval, "folder test", classes);
  out.train.class_names = out.test.class_names = names;
  plan->transform = raw;
  plan->transform.augment = resolve_augment(cfg);
  plan->workers = cfg.data_workers;
  plan->prefetch_batches = cfg.prefetch_batches;
  plan->skip_bad_images = cfg.on_bad_image == "skip";
  plan->preview = static_cast<int64_t>(preview.size());
  plan->budget_bytes = static_cast<int64_t>(cfg.cache_budget_gib * double(int64_t{1} << 30));
  stream_folder(cfg, static_cast<int64_t>(plan->files.size() + test_files.size()), &plan->decoded_bytes,
                &plan->cache_reason);
  out.cache_reason = plan->cache_reason;
  out.stream = std::move(plan);
  return out;
}

}  // namespace trainscope

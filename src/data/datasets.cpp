#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>

#include "trainscope/dataset.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"

namespace trainscope {

namespace fs = std::filesystem;

void channel_stats(const RawImages& raw, std::vector<float>& mean, std::vector<float>& stdv) {
  mean.assign(static_cast<size_t>(raw.channels), 0.f);
  stdv.assign(static_cast<size_t>(raw.channels), 1.f);
  int64_t plane = raw.height * raw.width;
  for (int64_t c = 0; c < raw.channels; ++c) {
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < raw.count; ++i) {
      const uint8_t* p = raw.pixels.data() + (i * raw.channels + c) * plane;
      for (int64_t k = 0; k < plane; ++k) {
        double v = p[k] / 255.0;
        s += v;
        s2 += v * v;
      }
    }
    double n = static_cast<double>(raw.count * plane);
    double m = s / n;
    double var = std::max(s2 / n - m * m, 0.0);
    mean[static_cast<size_t>(c)] = static_cast<float>(m);
    stdv[static_cast<size_t>(c)] = static_cast<float>(std::sqrt(var) > 1e-6 ? std::sqrt(var) : 1.0);
  }
}

Dataset normalise(const RawImages& raw, const std::vector<float>& mean, const std::vector<float>& stdv,
                  const std::string& name, int64_t num_classes) {
  Dataset d;
  d.name = name;
  d.count = raw.count;
  d.channels = raw.channels;
  d.height = raw.height;
  d.width = raw.width;
  d.num_classes = num_classes;
  d.labels = raw.labels;
  d.images.resize(raw.pixels.size());
  int64_t plane = raw.height * raw.width;
  for (int64_t i = 0; i < raw.count; ++i)
    for (int64_t c = 0; c < raw.channels; ++c) {
      float m = mean[static_cast<size_t>(c)], inv = 1.f / stdv[static_cast<size_t>(c)];
      size_t base = static_cast<size_t>((i * raw.channels + c) * plane);
      for (int64_t k = 0; k < plane; ++k)
        d.images[base + static_cast<size_t>(k)] = (raw.pixels[base + static_cast<size_t>(k)] / 255.f - m) * inv;
    }
  return d;
}

namespace {

// The IDX file `stem` in `dir`: raw first, then .gz, in the "train-images-idx3-ubyte" spelling,
// then in the original MNIST mirror's "train-images.idx3-ubyte". When both the raw and the .gz
// file are there, the raw one is read and `both` gets the name of the one left unread.
std::string find_idx(const std::string& dir, const std::string& stem, std::vector<std::string>& both) {
  std::string alt = stem;
  if (auto pos = alt.find("-idx"); pos != std::string::npos) alt[pos] = '.';
  for (const std::string& name : {stem, alt}) {
    const auto raw = (fs::path(dir) / name).string();
    if (file_exists(raw)) {
      if (file_exists(raw + ".gz")) both.push_back(name + ".gz");
      return raw;
    }
    if (file_exists(raw + ".gz")) return raw + ".gz";
  }
  throw_error(ErrorKind::kIo,
              fmt::format("IDX data folder '{}' has no {} (or {}.gz); give the folder holding the MNIST-format files "
                          "with --data, or install Debian's dataset-fashion-mnist",
                          dir, stem, stem));
}

// <dir>/<name> of the CIFAR-10 binary version (cifar-10-batches-bin), or an error naming the
// setting, the layout expected and the fix.
std::string cifar_file(const std::string& dir, const std::string& name) {
  auto p = (fs::path(dir) / name).string();
  if (file_exists(p)) return p;
  throw_error(ErrorKind::kIo,
              fmt::format("'{}' does not exist: the CIFAR-10 data folder '{}' (--data / data.path) must hold the "
                          "binary version's data_batch_1.bin .. data_batch_5.bin and test_batch.bin; give with --data "
                          "the cifar-10-batches-bin folder of cifar-10-binary.tar.gz",
                          p, dir));
}

RawImages take(const RawImages& r, const std::vector<int64_t>& idx) {
  RawImages o;
  o.channels = r.channels;
  o.height = r.height;
  o.width = r.width;
  o.count = static_cast<int64_t>(idx.size());
  int64_t sb = r.sample_bytes();
  o.pixels.resize(static_cast<size_t>(o.count * sb));
  o.labels.resize(idx.size());
  for (size_t k = 0; k < idx.size(); ++k) {
    std::copy_n(r.pixels.begin() + idx[k] * sb, sb, o.pixels.begin() + static_cast<int64_t>(k) * sb);
    o.labels[k] = r.labels[static_cast<size_t>(idx[k])];
  }
  return o;
}

void limit(RawImages& r, int64_t n) {
  if (n <= 0 || n >= r.count) return;
  r.count = n;
  r.pixels.resize(static_cast<size_t>(n * r.sample_bytes()));
  r.labels.resize(static_cast<size_t>(n));
}

// Whether an image folder's training set is streamed (stream_folder), from a listing of its images.
bool folder_is_streamed(const DataConfig& cfg, std::string* reason) {
  std::error_code ec;
  auto tr = fs::path(cfg.path) / "train", te = fs::path(cfg.path) / "test";
  int64_t n = 0;
  if (fs::is_directory(tr, ec) && fs::is_directory(te, ec))
    n = static_cast<int64_t>(index_image_folder(tr.string(), nullptr).size() + index_image_folder(te.string(), nullptr).size());
  else
    n = static_cast<int64_t>(index_image_folder(cfg.path, nullptr).size());
  if (cfg.limit_train > 0) n = std::min(n, cfg.limit_train + (cfg.limit_test > 0 ? cfg.limit_test : n));
  return stream_folder(cfg, n, nullptr, reason);
}

}  // namespace

DatasetPair load_datasets(const DataConfig& cfg, uint64_t seed) {
  if (is_lm_data_format(cfg.format)) return load_lm_datasets(cfg, seed);
  DatasetPair out;
  out.format = cfg.format;
  RawImages train, test;
  int64_t classes = 0;
  std::vector<std::string> class_names;
  if (cfg.format == "idx") {
    std::vector<std::string> unread;  // .gz files beside the raw files read
    const auto train_labels = find_idx(cfg.path, "train-labels-idx1-ubyte", unread);
    const auto test_labels = find_idx(cfg.path, "t10k-labels-idx1-ubyte", unread);
    train = read_idx(find_idx(cfg.path, "train-images-idx3-ubyte", unread), train_labels);
    test = read_idx(find_idx(cfg.path, "t10k-images-idx3-ubyte", unread), test_labels);
    if (!unread.empty())
      out.notes.push_back(fmt::format("IDX data folder '{}' holds both the uncompressed and the .gz form of its files: "
                                      "the uncompressed ones are read, not {}; remove the form you do not mean",
                                      cfg.path, fmt::join(unread, ", ")));
    if (train.height != test.height || train.width != test.width)
      throw_error(ErrorKind::kDataFormat, fmt::format("{}: training images are {}x{} but test images are {}x{}",
                                                      cfg.path, train.height, train.width, test.height, test.width));
    classes = idx_classes(train.labels, train_labels, test.labels, test_labels);
    out.source = cfg.path;
  } else if (cfg.format == "cifar10") {
    for (int b = 1; b <= 5; ++b) {
      auto p = cifar_file(cfg.path, fmt::format("data_batch_{}.bin", b));
      auto r = parse_cifar10_batch(read_file_bytes(p, uint64_t{1} << 30), p);
      if (train.count == 0) train = std::move(r);
      else {
        train.pixels.insert(train.pixels.end(), r.pixels.begin(), r.pixels.end());
        train.labels.insert(train.labels.end(), r.labels.begin(), r.labels.end());
        train.count += r.count;
      }
    }
    auto tp = cifar_file(cfg.path, "test_batch.bin");
    test = parse_cifar10_batch(read_file_bytes(tp, uint64_t{1} << 30), tp);
    classes = 10;
    class_names = {"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
    out.source = cfg.path;
  } else if (cfg.format == "folder") {
    std::error_code ec;
    auto tr = fs::path(cfg.path) / "train", te = fs::path(cfg.path) / "test";
    if (folder_is_streamed(cfg, &out.cache_reason)) return load_streamed_folder(cfg, seed);
    if (fs::is_directory(tr, ec) && fs::is_directory(te, ec)) {
      std::vector<std::string> test_names;
      train = read_image_folder(tr.string(), cfg.image_size, cfg.image_channels, &class_names);
      test = read_image_folder(te.string(), cfg.image_size, cfg.image_channels, &test_names);
      if (test_names != class_names)
        throw_error(ErrorKind::kDataFormat,
                    fmt::format("'{}' and '{}' have different class folders; they must match", tr.string(), te.string()));
    } else {
      RawImages all = read_image_folder(cfg.path, cfg.image_size, cfg.image_channels, &class_names);
      if (all.count < 2)
        throw_error(ErrorKind::kDataFormat,
                    fmt::format("image folder '{}' has {} image; at least 2 are needed to hold some out for testing",
                                cfg.path, all.count));
      std::vector<int64_t> idx(static_cast<size_t>(all.count));
      std::iota(idx.begin(), idx.end(), 0);
      std::mt19937_64 rng(seed);
      std::shuffle(idx.begin(), idx.end(), rng);
      auto n_test = std::clamp<int64_t>(static_cast<int64_t>(std::llround(cfg.test_fraction * all.count)), 1, all.count - 1);
      test = take(all, std::vector<int64_t>(idx.begin(), idx.begin() + n_test));
      train = take(all, std::vector<int64_t>(idx.begin() + n_test, idx.end()));
    }
    classes = static_cast<int64_t>(class_names.size());
    out.source = cfg.path;
  } else if (cfg.format == "synthetic") {
    train = make_synthetic(cfg.synthetic_train, cfg.synthetic_channels, cfg.synthetic_size, cfg.synthetic_classes, seed);
    test = make_synthetic(cfg.synthetic_test, cfg.synthetic_channels, cfg.synthetic_size, cfg.synthetic_classes,
                          seed ^ 0x9E3779B97F4A7C15ull);
    classes = cfg.synthetic_classes;
    out.source = fmt::format("synthetic (seed {})", seed);
  } else {
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("unknown data format '{}'; use idx, cifar10, folder, synthetic, text or tokens", cfg.format));
  }
  limit(train, cfg.limit_train);
  limit(test, cfg.limit_test);
  if (classes < 2)
    throw_error(ErrorKind::kDataFormat,
                fmt::format("data in '{}' has {} class; at least 2 are needed for classification", cfg.path, classes));
  channel_stats(train, out.mean, out.std);
  std::string base = cfg.format == "idx" ? fs::path(cfg.path).filename().string() : cfg.format;
  if (base.empty()) base = cfg.format;
  out.train = normalise(train, out.mean, out.std, base + " train", classes);
  out.test = normalise(test, out.mean, out.std, base + " test", classes);
  out.train.class_names = class_names;
  out.test.class_names = class_names;
  return out;
}

}  // namespace trainscope

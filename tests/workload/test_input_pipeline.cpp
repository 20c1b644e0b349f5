// The streaming input pipeline (trainscope/input_pipeline.h, docs/input-pipeline.md): decoding,
// seeded transforms, the worker pool's order, coverage, bound and bad-image policy.
#include <gtest/gtest.h>

#include "trainscope/fs.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <thread>

#include "trainscope/console_table.h"
#include "trainscope/dataset.h"
#include "trainscope/error.h"
#include "trainscope/input_pipeline.h"
#include "trainscope/report.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>

using namespace trainscope;
namespace fs = std::filesystem;

namespace {

// <root>/<class>/<i>.png: n grey images of 12x10 pixels whose every pixel is i (the image's id).
std::string id_folder(const std::string& name, int n, int classes = 2) {
  const std::string root = ::testing::TempDir() + name + "/";
  trainscope::remove_tree(root);
  for (int c = 0; c < classes; ++c) fs::create_directories(root + "c" + std::to_string(c));
  for (int i = 0; i < n; ++i) {
    std::vector<uint8_t> px(12 * 10, static_cast<uint8_t>(i));
    char file[64];
    std::snprintf(file, sizeof file, "c%d/%03d.png", i % classes, i);
    stbi_write_png((root + file).c_str(), 10, 12, 1, px.data(), 10);
  }
  return root;
}

// A textured RGB JPEG (so crops and flips change the pixels), written with stb_image_write.
std::vector<uint8_t> jpeg_bytes(int w, int h) {
  std::vector<uint8_t> px(static_cast<size_t>(w * h * 3));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) px[static_cast<size_t>((y * w + x) * 3 + c)] = static_cast<uint8_t>((x * 7 + y * 3 + c * 50) % 256);
  std::vector<uint8_t> out;
  stbi_write_jpg_to_func([](void* ctx, void* data, int size) {
    auto* o = static_cast<std::vector<uint8_t>*>(ctx);
    o->insert(o->end(), static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + size);
  }, &out, w, h, 3, px.data(), 90);
  return out;
}

struct Streamed {
  std::vector<std::vector<float>> x;
  std::vector<std::vector<int64_t>> y;
  std::vector<BatchSlot> slots;
  explicit Streamed(int n, int64_t batch, int64_t numel) : x(static_cast<size_t>(n)), y(static_cast<size_t>(n)) {
    for (int k = 0; k < n; ++k) {
      x[static_cast<size_t>(k)].resize(static_cast<size_t>(batch * numel));
      y[static_cast<size_t>(k)].resize(static_cast<size_t>(batch));
      slots.push_back({x[static_cast<size_t>(k)].data(), y[static_cast<size_t>(k)].data()});
    }
  }
};

StreamOptions options(int64_t workers, int64_t batch, int64_t size, Augment a) {
  StreamOptions o;
  o.workers = workers;
  o.prefetch_batches = 3;
  o.hold_batches = 1;
  o.batch_size = batch;
  o.transform = {.size = size, .channels = 1, .augment = a, .mean = {}, .std = {}};
  o.seed = 11;
  return o;
}

// Every batch of one epoch, copied out: the samples' floats.
std::vector<std::vector<float>> run_epoch(ImageStream& s, Streamed& buf, int64_t epoch, const std::vector<int64_t>& order,
                                          int64_t batch, int64_t numel) {
  s.begin_epoch(epoch, order);
  std::vector<std::vector<float>> out;
  const int64_t batches = (static_cast<int64_t>(order.size()) + batch - 1) / batch;
  for (int64_t j = 0; j < batches; ++j) {
    auto b = s.next();
    const float* p = buf.x[static_cast<size_t>(b.slot)].data();
    for (int64_t i = 0; i < b.count; ++i) out.emplace_back(p + i * numel, p + (i + 1) * numel);
  }
  return out;
}

std::vector<int64_t> shuffled(int64_t n, uint64_t seed) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

}  // namespace

TEST(Decode, JpegThroughLibjpegWithDctScaling) {
  auto bytes = jpeg_bytes(64, 48);
  auto full = decode_pixels(bytes, "a.jpg", 3);
  EXPECT_EQ(full.width, 64);
  EXPECT_EQ(full.height, 48);
  EXPECT_EQ(full.channels, 3);
  EXPECT_NEAR(full.pixels[(10 * 64 + 20) * 3 + 1], (20 * 7 + 10 * 3 + 50) % 256, 12);
  auto grey = decode_pixels(bytes, "a.jpg", 1);
  EXPECT_EQ(grey.channels, 1);
  auto small = decode_pixels(bytes, "a.jpg", 3, 12);  // shorter side 48: 1/4 still >= 12
  EXPECT_EQ(small.width, 16);
  EXPECT_EQ(small.height, 12);
  auto half = decode_pixels(bytes, "a.jpg", 3, 13);   // 1/4 would be 12 < 13: 1/2
  EXPECT_EQ(half.width, 32);
}

TEST(Decode, TruncatedOrCorruptJpegNamesTheFile) {
  auto bytes = jpeg_bytes(64, 48);
  bytes.resize(bytes.size() / 2);
  try {
    decode_pixels(bytes, "half.jpg", 3);
    FAIL() << "a truncated JPEG decoded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kDataFormat);
    EXPECT_NE(std::string(e.what()).find("half.jpg"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot decode image"), std::string::npos) << e.what();
  }
  std::vector<uint8_t> junk = {0xFF, 0xD8, 0xFF, 0x00, 0x12, 0x34};
  EXPECT_THROW(decode_pixels(junk, "junk.jpg", 3), Error);
}

TEST(Transforms, DeterministicForASeedAndVaryingAcrossSeeds) {
  auto img = decode_pixels(jpeg_bytes(80, 60), "t.jpg", 3);
  for (Augment a : {Augment::kRandomResizedCrop, Augment::kPadCrop}) {
    TransformSpec spec{.size = 32, .channels = 3, .augment = a, .mean = {0.5f, 0.5f, 0.5f}, .std = {0.25f, 0.25f, 0.25f}};
    std::vector<float> a1(3 * 32 * 32), a2(a1.size()), b(a1.size());
    transform_sample(img, spec, sample_seed(7, 1, 5), a1.data());
    transform_sample(img, spec, sample_seed(7, 1, 5), a2.data());
    EXPECT_EQ(a1, a2) << to_string(a);
    int differ = 0;
    for (int64_t idx = 6; idx < 14; ++idx) {
      transform_sample(img, spec, sample_seed(7, 1, idx), b.data());
      differ += b != a1;
    }
    EXPECT_GE(differ, 6) << to_string(a) << ": other samples' seeds give other crops";
  }
  EXPECT_NE(sample_seed(7, 1, 5), sample_seed(7, 2, 5));
  EXPECT_NE(sample_seed(7, 1, 5), sample_seed(8, 1, 5));
}

TEST(Transforms, EvalCentreCropsAndNormalises) {
  // 20 wide x 10 high: left half 0, right half 200; the centre crop is columns 5..14.
  DecodedImage img{.width = 20, .height = 10, .channels = 1, .pixels = std::vector<uint8_t>(200)};
  for (int y = 0; y < 10; ++y)
    for (int x = 10; x < 20; ++x) img.pixels[static_cast<size_t>(y * 20 + x)] = 200;
  TransformSpec spec{.size = 10, .channels = 1, .augment = Augment::kEval, .mean = {0.1f}, .std = {0.5f}};
  std::vector<float> out(100);
  transform_sample(img, spec, 0, out.data());
  EXPECT_NEAR(out[0], (0 - 0.1f) / 0.5f, 1e-5);
  EXPECT_NEAR(out[9], (200 / 255.f - 0.1f) / 0.5f, 1e-5);
  EXPECT_THROW(augment_from_string("mixup"), Error);
}

TEST(ImageStream, EveryImageOnceInOrderAndIndependentOfWorkerCount) {
  const int n = 53;
  auto root = id_folder("stream_ids", n);
  auto files = index_image_folder(root, nullptr);
  ASSERT_EQ(files.size(), static_cast<size_t>(n));
  const int64_t B = 19, S = 6, numel = S * S;  // 3 chunks per batch, the last batch short
  std::vector<std::vector<std::vector<float>>> per_workers;
  for (int64_t workers : {1, 3}) {
    Streamed buf(4, B, numel);
    ImageStream s(files, options(workers, B, S, Augment::kNone), buf.slots);
    std::vector<std::vector<float>> all;
    for (int64_t epoch = 1; epoch <= 2; ++epoch) {
      auto order = shuffled(n, static_cast<uint64_t>(epoch));
      auto got = run_epoch(s, buf, epoch, order, B, numel);
      ASSERT_EQ(got.size(), static_cast<size_t>(n));
      std::vector<int> seen(n, 0);
      for (size_t k = 0; k < got.size(); ++k) {
        const int id = static_cast<int>(std::lround(got[k][0] * 255));  // every pixel of image i is i
        ASSERT_GE(id, 0);
        ASSERT_LT(id, n);
        const int expected = std::stoi(fs::path(files[static_cast<size_t>(order[k])].path).stem().string());
        EXPECT_EQ(id, expected) << "sample " << k << " of epoch " << epoch << " with " << workers << " workers";
        ++seen[static_cast<size_t>(id)];
        all.push_back(got[k]);
      }
      for (int i = 0; i < n; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)], 1) << "image " << i;
    }
    auto st = s.stats();
    EXPECT_EQ(st.images, 2 * n);
    EXPECT_EQ(st.bad_images, 0);
    EXPECT_EQ(std::accumulate(st.worker_images.begin(), st.worker_images.end(), int64_t{0}), 2 * n);
    per_workers.push_back(std::move(all));
  }
  EXPECT_EQ(per_workers[0], per_workers[1]);
}

TEST(ImageStream, AugmentedBatchesIndependentOfWorkerCount) {
  const int n = 20;
  auto root = id_folder("stream_aug", n);
  auto files = index_image_folder(root, nullptr);
  const int64_t B = 6, S = 8, numel = S * S;
  std::vector<std::vector<std::vector<float>>> results;
  for (int64_t workers : {1, 2, 4}) {
    Streamed buf(5, B, numel);
    ImageStream s(files, options(workers, B, S, Augment::kRandomResizedCrop), buf.slots);
    results.push_back(run_epoch(s, buf, 3, shuffled(n, 9), B, numel));
  }
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
}

TEST(ImageStream, AnEpochLeftHalfwayReleasesItsBatches) {
  const int n = 40;
  auto root = id_folder("stream_abandon", n);
  auto files = index_image_folder(root, nullptr);
  const int64_t B = 10, S = 4, numel = S * S;
  Streamed buf(4, B, numel);
  ImageStream s(files, options(3, B, S, Augment::kNone), buf.slots);
  for (int64_t epoch = 1; epoch <= 6; ++epoch) {  // a leaked slot would stall a later epoch
    s.begin_epoch(epoch, shuffled(n, static_cast<uint64_t>(epoch)));
    s.next();  // then leave the epoch, as a run stopped by --max-steps does
  }
  auto all = run_epoch(s, buf, 7, shuffled(n, 7), B, numel);
  EXPECT_EQ(all.size(), static_cast<size_t>(n));
}

TEST(ImageStream, QueueNeverHoldsMoreThanItsBound) {
  const int n = 60;
  auto root = id_folder("stream_bound", n);
  auto files = index_image_folder(root, nullptr);
  const int64_t B = 2, S = 4;
  Streamed buf(5, B, S * S);
  auto opt = options(3, B, S, Augment::kNone);
  opt.prefetch_batches = 4;
  ImageStream s(files, opt, buf.slots);
  s.begin_epoch(1, shuffled(n, 1));
  for (int j = 0; j < 30; ++j) {
    if (j % 10 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the workers fill the queue
    s.next();
  }
  auto st = s.stats();
  EXPECT_LE(st.max_depth, 4);
  EXPECT_GE(st.max_depth, 1);
  for (auto d : st.depth) EXPECT_LE(d, 4);
  EXPECT_EQ(st.depth.size(), 30u);
  // Too few slots for the bound plus the held batches is refused.
  Streamed few(4, B, S * S);
  EXPECT_THROW(ImageStream(files, opt, few.slots), Error);
}

// As torchvision's ImageFolder: images in nested folders of a class belong to it, and a class
// folder without any image is refused (it would be a class the model never sees).
TEST(ImageFolderIndex, NestedImagesCountAndEmptyClassFoldersAreRefused) {
  auto root = id_folder("nested_classes", 8);  // c0: 4 images, c1: 4 images
  fs::create_directories(root + "c1/sub/deeper");
  fs::copy_file(root + "c1/001.png", root + "c1/sub/deeper/nested.png");
  std::vector<std::string> names;
  auto files = index_image_folder(root, &names);
  EXPECT_EQ(files.size(), 9u);
  EXPECT_EQ(std::count_if(files.begin(), files.end(), [](const ImageFile& f) { return f.label == 1; }), 5);
  fs::create_directories(root + "zz_empty");
  try {
    index_image_folder(root, nullptr);
    ADD_FAILURE() << "an empty class folder was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kDataFormat);
    EXPECT_NE(std::string(e.what()).find("zz_empty"), std::string::npos) << e.what();
  }
}

TEST(ImageStream, CorruptImageFailsByDefaultNamingPathAndFlag) {
  auto root = id_folder("stream_bad", 12);
  std::ofstream(root + "c1/005.png", std::ios::trunc) << "\x89PNG not really";
  auto files = index_image_folder(root, nullptr);
  const int64_t B = 4, S = 4;
  std::vector<int64_t> order(12);
  std::iota(order.begin(), order.end(), 0);
  {
    Streamed buf(4, B, S * S);
    ImageStream s(files, options(2, B, S, Augment::kNone), buf.slots);
    s.begin_epoch(1, order);
    bool thrown = false;
    try {
      for (int j = 0; j < 3; ++j) s.next();
    } catch (const Error& e) {
      thrown = true;
      EXPECT_EQ(e.kind(), ErrorKind::kDataFormat);
      EXPECT_NE(std::string(e.what()).find("005.png"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--on-bad-image skip"), std::string::npos) << e.what();
      // one fix, the stream's: not the in-memory one ("stream the training set"), already done
      EXPECT_EQ(std::string(e.what()).find("stream the training set"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(thrown);
  }
  Streamed buf(4, B, S * S);
  auto opt = options(2, B, S, Augment::kNone);
  opt.skip_bad_images = true;
  ImageStream s(files, opt, buf.slots);
  s.begin_epoch(1, order);
  int64_t total = 0;
  for (int j = 0; j < 3; ++j) total += s.next().count;
  EXPECT_EQ(total, 11);
  auto st = s.stats();
  EXPECT_EQ(st.bad_images, 1);
  ASSERT_FALSE(st.problems.empty());
  EXPECT_NE(st.problems[0].find("005.png"), std::string::npos);
}

TEST(ImageStream, FolderChangesAreDetected) {
  auto root = id_folder("stream_change", 6);
  auto files = index_image_folder(root, nullptr);
  const int64_t B = 3, S = 4;
  Streamed buf(4, B, S * S);
  ImageStream s(files, options(1, B, S, Augment::kNone), buf.slots);
  EXPECT_EQ(s.folder_changes(root), "");
  // Rewrite one image with other bytes and add one.
  std::vector<uint8_t> px(5 * 5, 77);
  stbi_write_png(files[2].path.c_str(), 5, 5, 1, px.data(), 5);
  stbi_write_png((root + "c0/new.png").c_str(), 5, 5, 1, px.data(), 5);
  auto c = s.folder_changes(root);
  EXPECT_NE(c.find("1 file(s) added"), std::string::npos) << c;
  EXPECT_NE(c.find("1 modified"), std::string::npos) << c;
  s.begin_epoch(1, {0, 1, 2, 3, 4, 5});
  s.next();
  s.next();
  auto st = s.stats();
  EXPECT_EQ(st.changed_files, 1);
}

TEST(StreamedFolder, CacheDecisionAndWorkers) {
  DataConfig cfg;
  cfg.format = "folder";
  cfg.image_size = 64;
  cfg.image_channels = 3;
  cfg.cache_budget_gib = 1;
  std::string why;
  int64_t bytes = 0;
  EXPECT_FALSE(stream_folder(cfg, 1000, &bytes, &why));  // 1000 x 3 x 64 x 64 x 4 = 49 MB
  EXPECT_EQ(bytes, 1000 * 3 * 64 * 64 * 4);
  EXPECT_NE(why.find("within"), std::string::npos) << why;
  EXPECT_TRUE(stream_folder(cfg, 100000, &bytes, &why));  // 4.9 GB
  EXPECT_NE(why.find("over"), std::string::npos) << why;
  cfg.cache_data = "off";
  EXPECT_TRUE(stream_folder(cfg, 10, nullptr, nullptr));
  cfg.cache_data = "on";
  EXPECT_FALSE(stream_folder(cfg, 100000, nullptr, nullptr));
  EXPECT_EQ(default_data_workers(16, 4, &why), 12);
  EXPECT_EQ(default_data_workers(2, 2, &why), 1);
  EXPECT_NE(why.find("no core left"), std::string::npos);
}

TEST(StreamedFolder, LoadsAPlanAndTheTestSetInMemory) {
  auto root = id_folder("stream_load", 30, 3);
  DataConfig cfg;
  cfg.format = "folder";
  cfg.path = root;
  cfg.image_size = 8;
  cfg.image_channels = 1;
  cfg.cache_data = "off";
  cfg.on_bad_image = "skip";
  auto ds = load_datasets(cfg, 4);
  ASSERT_TRUE(ds.stream);
  EXPECT_EQ(ds.train.count + ds.test.count, 30);
  EXPECT_EQ(ds.stream->files.size(), static_cast<size_t>(ds.train.count));
  EXPECT_EQ(ds.train.labels.size(), static_cast<size_t>(ds.train.count));
  EXPECT_EQ(ds.test.images.size(), static_cast<size_t>(ds.test.count * 64));
  EXPECT_TRUE(ds.stream->skip_bad_images);
  EXPECT_EQ(ds.stream->transform.augment, Augment::kPadCrop);  // auto below 128 px
  EXPECT_EQ(ds.train.class_names.size(), 3u);
  cfg.cache_data = "auto";  // 30 tiny images fit the default budget
  auto mem = load_datasets(cfg, 4);
  EXPECT_FALSE(mem.stream);
  EXPECT_NE(mem.cache_reason.find("decoded into memory"), std::string::npos) << mem.cache_reason;
  EXPECT_EQ(mem.train.count, ds.train.count);  // the same split
}

// ------------------------------------------------------------------------------ advice and console

namespace {

// The healthy fixture's GPU run as if streamed: 100 ms steps of batch 128, 60 ms of them waiting
// for data, 2 workers decoding 500 images/s each, on `cores` cores with the trainer using 1.
ReportInput streamed_fixture(int64_t cores) {
  auto in = load_run_folder(std::string(TS_FIXTURES_DIR) + "/report/healthy");
  for (auto& r : in.runs) {
    if (r.device == "cpu") continue;
    r.phases.emplace();
    r.phases->step_ms = 100;
    r.phases->data_ms = 60;
    InputPipelineSection p;
    p.mode = "stream";
    p.workers = 2;
    p.cores = cores;
    p.decode_per_s_per_worker = 500;
    p.trainer_cpu_pct = 100;
    p.loader_cpu_pct = 195;
    r.input_pipeline = p;
    break;
  }
  return in;
}

std::vector<const Advice*> fired(const Analysis& a, const std::string& rule) {
  std::vector<const Advice*> out;
  for (const auto& x : a.advice)
    if (x.rule == rule) out.push_back(&x);
  return out;
}

}  // namespace

TEST(StreamAdvice, CitesDecodeRateAndWorkersNeeded) {
  // 128 samples in 40 ms = 3200 samples/s; at 500 images/s per worker: 7 workers.
  auto a = analyze(streamed_fixture(64));
  auto v = fired(a, "stream_input");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0]->advice.find("--data-workers 7"), std::string::npos) << v[0]->advice;
  EXPECT_NE(v[0]->evidence.find("decoded 500 images/s"), std::string::npos) << v[0]->evidence;
  EXPECT_NE(v[0]->evidence.find("data phase 60.0 %"), std::string::npos) << v[0]->evidence;
  // on 4 cores, with the trainer on one of them, 7 workers cannot run
  const Analysis busy_analysis = analyze(streamed_fixture(4));  // fired() points into it
  auto busy = fired(busy_analysis, "stream_input");
  ASSERT_EQ(busy.size(), 1u);
  EXPECT_NE(busy[0]->advice.find("more workers cannot help"), std::string::npos) << busy[0]->advice;
  // a run whose data phase is small gets no such advice
  auto fast = streamed_fixture(64);
  for (auto& r : fast.runs)
    if (r.input_pipeline) r.phases->data_ms = 5;
  EXPECT_TRUE(fired(analyze(fast), "stream_input").empty());
}

// On a GPU the device's own time (CUDA-event phases) bounds the rate when it exceeds the host's
// non-data time: 128 samples in 64 ms of device work = 2000 samples/s: 4 workers, not 7.
TEST(StreamAdvice, DeviceTimeBoundsTheRateTheWorkersMustFeed) {
  auto in = streamed_fixture(64);
  for (auto& r : in.runs)
    if (r.input_pipeline) r.phases->forward_ms = 20, r.phases->backward_ms = 40, r.phases->optimizer_ms = 4;
  auto a = analyze(in);
  auto v = fired(a, "stream_input");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0]->advice.find("--data-workers 4"), std::string::npos) << v[0]->advice;
  EXPECT_NE(v[0]->evidence.find("2000 samples/s when not waiting"), std::string::npos) << v[0]->evidence;
}

TEST(StreamAdvice, ConsoleLineForStreamedRunsOnly) {
  auto in = streamed_fixture(8);
  int lines = 0;
  for (const auto& r : in.runs) {
    auto s = format_input_pipeline(r);
    if (r.input_pipeline) {
      EXPECT_NE(s.find("2 workers ("), std::string::npos) << s;
      EXPECT_NE(s.find("500 images/s per worker"), std::string::npos) << s;
      ++lines;
    } else {
      EXPECT_EQ(s, "");
    }
  }
  EXPECT_EQ(lines, 1);
}

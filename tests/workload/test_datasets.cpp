#include <gtest/gtest.h>

#include "trainscope/fs.h"

#include <filesystem>
#include <fstream>

#include "trainscope/dataset.h"
#include "trainscope/error.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>

using namespace trainscope;
namespace fs = std::filesystem;

namespace {

void put_be32(std::vector<uint8_t>& v, uint32_t x) {
  v.push_back(static_cast<uint8_t>(x >> 24));
  v.push_back(static_cast<uint8_t>(x >> 16));
  v.push_back(static_cast<uint8_t>(x >> 8));
  v.push_back(static_cast<uint8_t>(x));
}

std::vector<uint8_t> idx_images(uint32_t n, uint32_t rows, uint32_t cols, uint32_t magic = 0x803) {
  std::vector<uint8_t> v;
  put_be32(v, magic);
  put_be32(v, n);
  put_be32(v, rows);
  put_be32(v, cols);
  for (uint32_t i = 0; i < n * rows * cols; ++i) v.push_back(static_cast<uint8_t>(i % 251));
  return v;
}

std::vector<uint8_t> idx_labels(uint32_t n, uint8_t max_label = 9) {
  std::vector<uint8_t> v;
  put_be32(v, 0x801);
  put_be32(v, n);
  for (uint32_t i = 0; i < n; ++i) v.push_back(static_cast<uint8_t>(i % (max_label + 1)));
  return v;
}

struct Caught {
  ErrorKind kind;
  std::string what;
};
Caught catch_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.kind(), e.what()};
  }
  return {ErrorKind::kInternal, "no error thrown"};
}

void write_bytes(const std::string& p, const std::vector<uint8_t>& v) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size()));
}

}  // namespace

TEST(Idx, ParsesGoodFiles) {
  auto img = idx_images(3, 4, 5);
  auto r = parse_idx_images(img, "img");
  EXPECT_EQ(r.count, 3);
  EXPECT_EQ(r.height, 4);
  EXPECT_EQ(r.width, 5);
  EXPECT_EQ(r.pixels.size(), 60u);
  EXPECT_EQ(r.pixels[7], 7);
  auto lab = parse_idx_labels(idx_labels(3), "lab");
  EXPECT_EQ(lab, (std::vector<int64_t>{0, 1, 2}));
}

TEST(Idx, CorruptFilesNameOffsetAndProblem) {
  auto img = idx_images(3, 4, 5);
  img[3] = 0x04;  // wrong magic
  auto c = catch_error([&] { parse_idx_images(img, "images.idx"); });
  EXPECT_EQ(c.kind, ErrorKind::kDataFormat);
  EXPECT_NE(c.what.find("images.idx"), std::string::npos);
  EXPECT_NE(c.what.find("offset 0"), std::string::npos);
  EXPECT_NE(c.what.find("magic"), std::string::npos);

  auto trunc = idx_images(3, 4, 5);
  trunc.resize(trunc.size() - 10);
  c = catch_error([&] { parse_idx_images(trunc, "t.idx"); });
  EXPECT_EQ(c.kind, ErrorKind::kDataFormat);
  EXPECT_NE(c.what.find("truncated"), std::string::npos);

  // huge declared size is rejected from the header, before allocation
  auto huge = idx_images(1, 4, 4);
  huge[4] = 0xFF;
  c = catch_error([&] { parse_idx_images(huge, "huge.idx"); });
  EXPECT_EQ(c.kind, ErrorKind::kDataFormat);

  auto zero = idx_images(0, 4, 4);
  c = catch_error([&] { parse_idx_images(zero, "zero.idx"); });
  EXPECT_NE(c.what.find("zero images"), std::string::npos);

  std::vector<uint8_t> tiny = {0, 0, 8};
  EXPECT_EQ(catch_error([&] { parse_idx_images(tiny, "tiny"); }).kind, ErrorKind::kDataFormat);

  auto swapped = catch_error([&] { parse_idx_images(idx_labels(3), "labels-as-images"); });
  EXPECT_NE(swapped.what.find("label file"), std::string::npos);
}

TEST(Idx, LabelOutOfRange) {
  auto lab = idx_labels(5);
  lab[8 + 3] = 200;
  auto c = catch_error([&] { parse_idx_labels(lab, "l.idx", 10); });
  EXPECT_EQ(c.kind, ErrorKind::kDataFormat);
  EXPECT_NE(c.what.find("offset 11"), std::string::npos);
}

TEST(Idx, MismatchedCountsBetweenFiles) {
  std::string d = ::testing::TempDir() + "idx_mismatch/";
  fs::create_directories(d);
  write_bytes(d + "i", idx_images(4, 2, 2));
  write_bytes(d + "l", idx_labels(3));
  auto c = catch_error([&] { read_idx(d + "i", d + "l"); });
  EXPECT_EQ(c.kind, ErrorKind::kDataFormat);
  EXPECT_NE(c.what.find("belong together"), std::string::npos);
}

TEST(Idx, LoadsFolderAndNormalises) {
  std::string d = ::testing::TempDir() + "idx_ok/";
  fs::create_directories(d);
  write_bytes(d + "train-images-idx3-ubyte", idx_images(20, 6, 6));
  write_bytes(d + "train-labels-idx1-ubyte", idx_labels(20, 3));
  write_bytes(d + "t10k-images-idx3-ubyte", idx_images(8, 6, 6));
  write_bytes(d + "t10k-labels-idx1-ubyte", idx_labels(8, 3));
  DataConfig cfg;
  cfg.path = d;
  auto ds = load_datasets(cfg, 1);
  EXPECT_EQ(ds.train.count, 20);
  EXPECT_EQ(ds.test.count, 8);
  EXPECT_EQ(ds.train.num_classes, 4);
  ASSERT_EQ(ds.train.images.size(), 20u * 36);
  // the training set is normalised to mean 0, std 1
  double s = 0, s2 = 0;
  for (float v : ds.train.images) {
    s += v;
    s2 += v * v;
  }
  double n = static_cast<double>(ds.train.images.size());
  EXPECT_NEAR(s / n, 0.0, 1e-4);
  EXPECT_NEAR(s2 / n, 1.0, 1e-3);
}

// Labels are the classes 0..K-1 (K = largest training label + 1), every one present: a stray
// label 200 used to make a 201-class model silently. Each error names the file and the byte
// offset of the first offending label (header 8 bytes + sample index).
TEST(Idx, StrayLabelIsAnErrorNotNewClasses) {
  auto folder = [](const std::string& tag, std::vector<uint8_t> train_labels, std::vector<uint8_t> test_labels) {
    std::string d = ::testing::TempDir() + "idx_labels_" + tag + "/";
    fs::create_directories(d);
    write_bytes(d + "train-images-idx3-ubyte", idx_images(20, 6, 6));
    write_bytes(d + "train-labels-idx1-ubyte", train_labels);
    write_bytes(d + "t10k-images-idx3-ubyte", idx_images(8, 6, 6));
    write_bytes(d + "t10k-labels-idx1-ubyte", test_labels);
    DataConfig cfg;
    cfg.path = d;
    return cfg;
  };
  auto stray = idx_labels(20, 3);  // 0,1,2,3,0,...
  stray[8 + 5] = 200;
  auto cfg = folder("stray", stray, idx_labels(8, 3));
  auto c = catch_error([&] { load_datasets(cfg, 1); });
  EXPECT_EQ(c.kind, ErrorKind::kDataFormat) << c.what;
  EXPECT_NE(c.what.find(cfg.path + "train-labels-idx1-ubyte"), std::string::npos) << c.what;
  EXPECT_NE(c.what.find("offset 13"), std::string::npos) << c.what;
  EXPECT_NE(c.what.find("label 200"), std::string::npos) << c.what;

  auto gap = idx_labels(20, 3);  // class 2 never occurs: the first label past it (3) is sample 3
  for (size_t i = 8; i < gap.size(); ++i)
    if (gap[i] == 2) gap[i] = 1;
  cfg = folder("gap", gap, idx_labels(8, 3));
  c = catch_error([&] { load_datasets(cfg, 1); });
  EXPECT_EQ(c.kind, ErrorKind::kDataFormat) << c.what;
  EXPECT_NE(c.what.find("offset 11"), std::string::npos) << c.what;
  EXPECT_NE(c.what.find("class 2"), std::string::npos) << c.what;

  auto test_over = idx_labels(8, 3);
  test_over[8 + 2] = 4;  // the training labels make 4 classes (0..3)
  cfg = folder("test", idx_labels(20, 3), test_over);
  c = catch_error([&] { load_datasets(cfg, 1); });
  EXPECT_EQ(c.kind, ErrorKind::kDataFormat) << c.what;
  EXPECT_NE(c.what.find(cfg.path + "t10k-labels-idx1-ubyte"), std::string::npos) << c.what;
  EXPECT_NE(c.what.find("offset 10"), std::string::npos) << c.what;
}

// A folder holding both train-images-idx3-ubyte and train-images-idx3-ubyte.gz (a download
// unpacked beside its archive, or two data sets mixed): the raw files are read, and a note
// says so, naming the .gz files left unread.
TEST(Idx, RawAndGzBesideEachOtherSayWhichIsRead) {
  std::string d = ::testing::TempDir() + "idx_raw_and_gz/";
  trainscope::remove_tree(d);
  fs::create_directories(d);
  write_bytes(d + "train-images-idx3-ubyte", idx_images(20, 6, 6));
  write_bytes(d + "train-labels-idx1-ubyte", idx_labels(20, 3));
  write_bytes(d + "t10k-images-idx3-ubyte", idx_images(8, 6, 6));
  write_bytes(d + "t10k-labels-idx1-ubyte", idx_labels(8, 3));
  const auto other = idx_images(30, 6, 6);  // another data set's images, compressed
  std::ofstream(d + "train-images-idx3-ubyte.gz", std::ios::binary)
      << gzip_compress(std::string(other.begin(), other.end()));
  DataConfig cfg;
  cfg.path = d;
  auto ds = load_datasets(cfg, 1);
  EXPECT_EQ(ds.train.count, 20) << "the uncompressed file is read";
  ASSERT_EQ(ds.notes.size(), 1u);
  EXPECT_NE(ds.notes[0].find("IDX data folder '" + d + "' holds both the uncompressed and the .gz form"),
            std::string::npos)
      << ds.notes[0];
  EXPECT_NE(ds.notes[0].find("not train-images-idx3-ubyte.gz"), std::string::npos) << ds.notes[0];
  fs::remove(d + "train-images-idx3-ubyte.gz");
  EXPECT_TRUE(load_datasets(cfg, 1).notes.empty()) << "one form of each file: nothing to say";
}

// A .gz data file whose gzip trailer (CRC-32 of the data) does not match what it decompresses
// to is corrupt: a data-format error naming the file and the checksum, not a silent load.
TEST(Idx, AGzipFileWhoseChecksumDoesNotMatchIsCorruptNamingIt) {
  std::string d = ::testing::TempDir() + "idx_bad_crc/";
  trainscope::remove_tree(d);
  fs::create_directories(d);
  const auto images = idx_images(20, 6, 6);
  std::string gz = gzip_compress(std::string(images.begin(), images.end()));
  gz[gz.size() - 8] = static_cast<char>(gz[gz.size() - 8] ^ 0x5A);  // the trailer's CRC-32 (RFC 1952 2.3.1)
  std::ofstream(d + "train-images-idx3-ubyte.gz", std::ios::binary) << gz;
  write_bytes(d + "train-labels-idx1-ubyte", idx_labels(20, 3));
  write_bytes(d + "t10k-images-idx3-ubyte", idx_images(8, 6, 6));
  write_bytes(d + "t10k-labels-idx1-ubyte", idx_labels(8, 3));
  DataConfig cfg;
  cfg.path = d;
  auto c = catch_error([&] { load_datasets(cfg, 1); });
  EXPECT_EQ(c.kind, ErrorKind::kDataFormat) << c.what;
  EXPECT_NE(c.what.find("'" + d + "train-images-idx3-ubyte.gz' is corrupt: its gzip checksum (the CRC-32"),
            std::string::npos)
      << c.what;
  EXPECT_NE(c.what.find("re-download it"), std::string::npos) << c.what;
}

TEST(Idx, MissingFolderSaysWhatToDo) {
  DataConfig cfg;
  cfg.path = "/nonexistent-data";
  auto c = catch_error([&] { load_datasets(cfg, 1); });
  EXPECT_EQ(c.kind, ErrorKind::kIo);
  EXPECT_NE(c.what.find("--data"), std::string::npos);
}

TEST(Idx, RealFashionMnistIfInstalled) {
  const std::string d = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(d + "/train-images-idx3-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  DataConfig cfg;
  cfg.path = d;
  auto ds = load_datasets(cfg, 1);
  EXPECT_EQ(ds.train.count, 60000);
  EXPECT_EQ(ds.test.count, 10000);
  EXPECT_EQ(ds.train.height, 28);
  EXPECT_EQ(ds.train.num_classes, 10);
}

TEST(Cifar, ParsesAndRejects) {
  std::vector<uint8_t> b(3073 * 2, 7);
  b[0] = 3;
  b[3073] = 9;
  auto r = parse_cifar10_batch(b, "batch");
  EXPECT_EQ(r.count, 2);
  EXPECT_EQ(r.labels, (std::vector<int64_t>{3, 9}));
  EXPECT_EQ(r.channels, 3);
  auto bad = b;
  bad[3073] = 10;
  auto c = catch_error([&] { parse_cifar10_batch(bad, "bad.bin"); });
  EXPECT_EQ(c.kind, ErrorKind::kDataFormat);
  EXPECT_NE(c.what.find("offset 3073"), std::string::npos);
  auto trunc = b;
  trunc.pop_back();
  EXPECT_EQ(catch_error([&] { parse_cifar10_batch(trunc, "t.bin"); }).kind, ErrorKind::kDataFormat);
  EXPECT_EQ(catch_error([&] { parse_cifar10_batch({}, "empty.bin"); }).kind, ErrorKind::kDataFormat);
}

TEST(ImageFolder, DecodesResizesAndSplits) {
  std::string root = ::testing::TempDir() + "imgfolder/";
  trainscope::remove_tree(root);
  for (const char* cls : {"cat", "dog"}) {
    fs::create_directories(root + cls);
    for (int i = 0; i < 5; ++i) {
      std::vector<uint8_t> px(10 * 12 * 3, static_cast<uint8_t>(std::string(cls) == "cat" ? 20 : 220));
      stbi_write_png((root + cls + "/" + std::to_string(i) + ".png").c_str(), 10, 12, 3, px.data(), 10 * 3);
    }
  }
  std::ofstream(root + "cat/readme.txt") << "not an image";
  std::vector<std::string> names;
  auto r = read_image_folder(root, 8, 1, &names);
  EXPECT_EQ(r.count, 10);
  EXPECT_EQ(names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(r.pixels.size(), 10u * 64);
  EXPECT_LT(r.pixels[0], 60);        // cat: dark
  EXPECT_GT(r.pixels[9 * 64], 180);  // dog: bright
  DataConfig cfg;
  cfg.format = "folder";
  cfg.path = root;
  cfg.image_size = 8;
  cfg.image_channels = 3;
  cfg.test_fraction = 0.2;
  auto ds = load_datasets(cfg, 3);
  EXPECT_EQ(ds.train.count + ds.test.count, 10);
  EXPECT_EQ(ds.test.count, 2);
  EXPECT_EQ(ds.train.channels, 3);
  // a corrupt image names the file
  std::ofstream(root + "dog/broken.png") << "\x89PNG garbage";
  auto c = catch_error([&] { read_image_folder(root, 8, 1, nullptr); });
  EXPECT_EQ(c.kind, ErrorKind::kDataFormat);
  EXPECT_NE(c.what.find("broken.png"), std::string::npos);
}

// A symbolic link to itself in an image folder used to end in "internal error" (an uncaught
// filesystem_error): bad data naming the link, in the class list and inside a class alike.
TEST(ImageFolder, ASelfReferencingLinkIsBadDataNamingIt) {
  for (const std::string where : {"", "cat/"}) {
    std::string root = ::testing::TempDir() + "imgloop/";
    trainscope::remove_tree(root);
    fs::create_directories(root + "cat");
    std::vector<uint8_t> px(8 * 8, 100);
    stbi_write_png((root + "cat/0.png").c_str(), 8, 8, 1, px.data(), 8);
    fs::create_symlink("loop", root + where + "loop");  // loop -> loop
    auto c = catch_error([&] { read_image_folder(root, 8, 1, nullptr); });
    EXPECT_EQ(c.kind, ErrorKind::kDataFormat) << where << ": " << c.what;
    EXPECT_NE(c.what.find("cannot tell what '" + root + where + "loop' is"), std::string::npos) << c.what;
  }
}

TEST(Synthetic, SeededAndLearnable) {
  auto a = make_synthetic(50, 1, 8, 4, 7), b = make_synthetic(50, 1, 8, 4, 7), c = make_synthetic(50, 1, 8, 4, 8);
  EXPECT_EQ(a.pixels, b.pixels);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_NE(a.pixels, c.pixels);
  // the class is recoverable: the brightest band of rows is the label's band
  for (int i = 0; i < 50; ++i) {
    int best = -1;
    double best_v = -1;
    for (int band = 0; band < 4; ++band) {
      double s = 0;
      for (int y = band * 2; y < band * 2 + 2; ++y)
        for (int x = 0; x < 8; ++x) s += a.pixels[static_cast<size_t>(i * 64 + y * 8 + x)];
      if (s > best_v) best_v = s, best = band;
    }
    EXPECT_EQ(best, a.labels[static_cast<size_t>(i)]);
  }
}

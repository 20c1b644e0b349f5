// The bad-input table (CONTRIBUTING.md#the-bad-input-table): every row builds one bad input in a fresh temporary folder,
// feeds it to the public reader that would see it in a run, and expects exactly one outcome:
//
//  * readers that throw (config, data sets, files): trainscope::Error of the listed kind whose
//    message names the input (the file, key or value) and, where listed, says what was wrong;
//  * telemetry sources and /proc, sysfs parsers, which never throw: "unavailable" or "dropped"
//    with a reason (SourceProbe::reason, SampleBatch::Drop::reason) or an empty optional.
//
// Anything else (a different kind, another exception type, silent acceptance) fails the row.
// "Nothing crashed or leaked" is checked by running this binary under ASan+UBSan (LeakSanitizer
// at exit), see CONTRIBUTING.md#sanitizer-builds; the table is torch-free so it builds there.
// Every crash the fuzzers (tests/fuzz) find is added here as a row.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "telemetry/proc_parse.h"
#include "telemetry/source.h"
#include "trainscope/config.h"
#include "trainscope/dataset.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"

using namespace trainscope;
namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------------------------------
// Input builders
// ---------------------------------------------------------------------------------------

using Bytes = std::vector<uint8_t>;

void put_be32(Bytes& v, uint32_t x) {
  for (int s = 24; s >= 0; s -= 8) v.push_back(static_cast<uint8_t>(x >> s));
}

/// IDX image file: magic, count, rows, cols, then `body` pixel bytes (not necessarily n*r*c).
Bytes idx_images(uint32_t n, uint32_t rows, uint32_t cols, size_t body, uint32_t magic = 0x803) {
  Bytes v;
  put_be32(v, magic);
  put_be32(v, n);
  put_be32(v, rows);
  put_be32(v, cols);
  for (size_t i = 0; i < body; ++i) v.push_back(static_cast<uint8_t>(i % 251));
  return v;
}
Bytes idx_images_ok(uint32_t n) { return idx_images(n, 4, 4, size_t{n} * 16); }

Bytes idx_labels(uint32_t n, size_t body, uint8_t value = 3) {
  Bytes v;
  put_be32(v, 0x801);
  put_be32(v, n);
  for (size_t i = 0; i < body; ++i) v.push_back(value);
  return v;
}

Bytes cifar(size_t records, uint8_t label = 1, size_t extra = 0) {
  Bytes v(records * 3073 + extra, 7);  // sized up front (GCC 12 misreports push_back + insert)
  for (size_t r = 0; r < records; ++r) {
    auto rec = v.begin() + static_cast<std::ptrdiff_t>(r * 3073);
    *rec = label;
    std::fill(rec + 1, rec + 3073, static_cast<uint8_t>(r));
  }
  return v;
}

/// 2x2 24-bit BMP (stb_image decodes it); the smallest valid image we can write by hand.
Bytes tiny_bmp() {
  Bytes v = {'B', 'M'};
  auto le32 = [&](uint32_t x) {
    for (int s = 0; s < 32; s += 8) v.push_back(static_cast<uint8_t>(x >> s));
  };
  auto le16 = [&](uint16_t x) {
    v.push_back(static_cast<uint8_t>(x));
    v.push_back(static_cast<uint8_t>(x >> 8));
  };
  le32(14 + 40 + 16);  // file size: rows are padded to 4 bytes (2*3 -> 8)
  le32(0);
  le32(14 + 40);
  le32(40);  // BITMAPINFOHEADER
  le32(2);
  le32(2);
  le16(1);
  le16(24);
  le32(0);
  le32(16);
  le32(2835);
  le32(2835);
  le32(0);
  le32(0);
  for (int row = 0; row < 2; ++row) {
    for (int px = 0; px < 6; ++px) v.push_back(static_cast<uint8_t>(40 * row + px));
    v.push_back(0);
    v.push_back(0);
  }
  return v;
}

fs::path write_bytes(const fs::path& p, const Bytes& b) {
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  return p;
}
fs::path write_text(const fs::path& p, const std::string& s) {
  return write_bytes(p, Bytes(s.begin(), s.end()));
}
fs::path write_gzip(const fs::path& p, const Bytes& b) {
  fs::create_directories(p.parent_path());
  gzFile f = gzopen(p.c_str(), "wb");
  gzwrite(f, b.data(), static_cast<unsigned>(b.size()));
  gzclose(f);
  return p;
}
Bytes read_back(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), {});
}

std::string load_toml(const fs::path& dir, const std::string& text) {
  auto p = write_text(dir / "bad.toml", text);
  MatrixConfig m;
  load_toml_config(p.string(), m);
  return {};
}
std::string load_toml_then_validate(const fs::path& dir, const std::string& text) {
  auto p = write_text(dir / "bad.toml", text);
  MatrixConfig m;
  load_toml_config(p.string(), m);
  validate(m);
  return {};
}

/// A copy of the telemetry fixture tree (tests/fixtures/telemetry: proc/ and sys/) in `dir`.
fs::path telemetry_tree(const fs::path& dir) {
  fs::copy(fs::path(TS_FIXTURES_DIR) / "telemetry", dir / "t", fs::copy_options::recursive);
  return dir / "t";
}

/// Reasons of the drops one poll of `src` recorded, "device/metric:reason; ...".
std::string drops_of(telemetry::TelemetrySource& src) {
  telemetry::SampleBatch b;
  src.sample(1'000'000'000, b);
  std::string out;
  for (const auto& d : b.drops) out += d.device + "/" + d.metric + ":" + d.reason + "; ";
  return out;
}
std::string probe_failure(telemetry::TelemetrySource& src) {
  auto p = src.probe();
  return p.available ? std::string() : "unavailable: " + p.reason;
}

// ---------------------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------------------

struct Row {
  std::string name;
  /// Writes the input under the row's folder and returns what the message must name
  /// (usually the file path; a key or value for config rows; "" for bare parsers).
  std::function<std::string(const fs::path& dir)> build;
  /// Feeds the input to the reader. Throwing readers throw; non-throwing ones return the
  /// "unavailable/dropped" reason ("" = the input was accepted, which fails the row).
  std::function<std::string(const fs::path& dir, const std::string& input)> call;
  /// Expected error kind; nullopt = no exception, a non-empty reason instead.
  std::optional<ErrorKind> kind;
  /// Further text the message or reason must contain ("" = none).
  std::string also;
  /// Non-empty: a fuzzer finding whose fix has not landed yet; the row is skipped with this note.
  std::string pending = {};
};

using D = const fs::path&;
using S = const std::string&;
std::optional<ErrorKind> K(ErrorKind k) { return k; }
const std::optional<ErrorKind> kSoft;  // telemetry: unavailable/dropped with a reason

// Rows: TOML configuration files.
void add_toml_rows(std::vector<Row>& t) {
  // --- TOML configuration files (load_toml_config, validate, apply_preset) ---
  auto toml_row = [&](std::string name, std::string text, std::string mention, ErrorKind kind, std::string also) {
    t.push_back({name, [mention](D) { return mention; },
                 [text, kind](D d, S) { return kind == ErrorKind::kInvalidConfig ? load_toml(d, text)
                                                                                 : load_toml_then_validate(d, text); },
                 kind, also});
  };
  toml_row("toml_unknown_top_level_key", "epochz = 3\n", "epochz", ErrorKind::kInvalidConfig, "bad.toml");
  toml_row("toml_unknown_train_key", "[train]\noptimiser = \"adam\"\n", "train.optimiser", ErrorKind::kInvalidConfig,
           "bad.toml");
  toml_row("toml_unknown_data_key", "[data]\nfromat = \"idx\"\n", "data.fromat", ErrorKind::kInvalidConfig, "bad.toml");
  toml_row("toml_wrong_type_string_for_int", "repeats = \"two\"\n", "repeats", ErrorKind::kInvalidConfig, "must be an integer, not a string");
  toml_row("toml_wrong_type_in_list", "batch_sizes = [64, \"128\"]\n", "batch_sizes", ErrorKind::kInvalidConfig,
           "must be an integer, not a string");
  toml_row("toml_wrong_type_float_for_int", "[train]\nepochs = 2.5\n", "train.epochs", ErrorKind::kInvalidConfig,
           "must be an integer, not a float");
  toml_row("toml_data_not_a_table", "data = 3\n", "data", ErrorKind::kInvalidConfig, "table");
  toml_row("toml_syntax_error_unclosed_array", "models = [\"mlp\", \n", "bad.toml", ErrorKind::kInvalidConfig,
           "syntax error");
  toml_row("toml_syntax_error_bare_word", "[train]\noptimizer = adam\n", "bad.toml", ErrorKind::kInvalidConfig,
           "syntax error");
  toml_row("toml_syntax_error_integer_overflow", "repeats = 99999999999999999999999\n", "bad.toml",
           ErrorKind::kInvalidConfig, "syntax error");
  toml_row("toml_unknown_preset", "preset = \"fastest\"\n", "fastest", ErrorKind::kInvalidConfig, "bad.toml");
  toml_row("toml_batch_size_zero", "batch_sizes = [0]\n", "batch size 0", ErrorKind::kInvalidArgument, "out of range");
  toml_row("toml_batch_size_negative", "batch_sizes = [64, -8]\n", "batch size -8", ErrorKind::kInvalidArgument,
           "out of range");
  toml_row("toml_unknown_optimizer", "[train]\noptimizer = \"adamw\"\n", "adamw", ErrorKind::kInvalidArgument,
           "adam or sgd");
  toml_row("toml_unknown_data_format", "[data]\nformat = \"hdf5\"\n", "hdf5", ErrorKind::kInvalidArgument,
           "idx, cifar10");
  toml_row("toml_learning_rate_zero", "[train]\nlearning_rate = 0.0\n", "learning rate 0", ErrorKind::kInvalidArgument,
           "out of range");
  toml_row("toml_epochs_zero", "[train]\nepochs = 0\n", "epochs 0", ErrorKind::kInvalidArgument, "out of range");
  toml_row("toml_repeats_too_many", "repeats = 5000\n", "repeats 5000", ErrorKind::kInvalidArgument, "1..1000");
  toml_row("toml_threads_negative", "[train]\nthreads = -1\n", "threads -1", ErrorKind::kInvalidArgument,
           "out of range");
  toml_row("toml_folder_channels_two", "[data]\nformat = \"folder\"\nimage_channels = 2\n", "image channels 2",
           ErrorKind::kInvalidArgument, "1 or 3");
  toml_row("toml_folder_test_fraction_one", "[data]\nformat = \"folder\"\ntest_fraction = 1.0\n", "test fraction 1",
           ErrorKind::kInvalidArgument, "(0, 1)");
  toml_row("toml_empty_models_list", "models = []\n", "model", ErrorKind::kInvalidArgument, "--models");
  // Range errors come from the settings table: they name the value, the flag, the TOML key and the range.
  toml_row("toml_profile_active_zero", "[profile]\nactive = 0\n", "profile.active 0", ErrorKind::kInvalidArgument,
           "use 1..1000000000 steps (--profile-steps; TOML key profile.active)");
  toml_row("toml_eval_batch_size_zero", "[train]\neval_batch_size = 0\n", "evaluation batch size 0",
           ErrorKind::kInvalidArgument, "use 1..1048576 samples (--eval-batch-size; TOML key train.eval_batch_size)");
  toml_row("toml_inference_budget_over_an_hour", "[inference]\noffline_budget_s = 7200\n",
           "inference.offline_budget_s 7200", ErrorKind::kInvalidArgument, "use (0, 3600] s");
  // run_name (--name) is one folder under out_dir: never a path that leaves it.
  toml_row("toml_run_name_parent", "run_name = \"../escaped\"\n", "'../escaped'", ErrorKind::kInvalidArgument,
           "is not one safe folder name");
  toml_row("toml_run_name_absolute", "run_name = \"/abs/path\"\n", "'/abs/path'", ErrorKind::kInvalidArgument,
           "is not one safe folder name");
  toml_row("toml_run_name_dot", "run_name = \".\"\n", "'.'", ErrorKind::kInvalidArgument, "is not one safe folder name");
  toml_row("toml_run_name_two_parts", "run_name = \"a/b\"\n", "'a/b'", ErrorKind::kInvalidArgument,
           "is not one safe folder name");
  toml_row("toml_run_name_leading_dash", "run_name = \"-rf\"\n", "'-rf'", ErrorKind::kInvalidArgument, "--name");
  t.push_back({"toml_missing_file", [](D d) { return (d / "nowhere.toml").string(); },
               [](D, S in) {
                 MatrixConfig m;
                 load_toml_config(in, m);
                 return std::string();
               },
               K(ErrorKind::kIo), ""});
  t.push_back({"preset_unknown_name", [](D) { return std::string("turbo"); },
               [](D, S in) {
                 MatrixConfig m;
                 apply_preset(in, m);
                 return std::string();
               },
               K(ErrorKind::kInvalidArgument), "paper, quick"});
}

// Rows: IDX files: headers and sizes.
void add_idx_headers_rows(std::vector<Row>& t) {
  // --- IDX (MNIST family) ---
  auto idx_row = [&](std::string name, std::function<std::pair<Bytes, Bytes>()> files, ErrorKind kind,
                     std::string also, bool mention_labels = false) {
    t.push_back({name,
                 [files, mention_labels](D d) {
                   auto [img, lab] = files();
                   auto ip = write_bytes(d / "images-idx3-ubyte", img);
                   auto lp = write_bytes(d / "labels-idx1-ubyte", lab);
                   return (mention_labels ? lp : ip).string();
                 },
                 [](D d, S) {
                   read_idx((d / "images-idx3-ubyte").string(), (d / "labels-idx1-ubyte").string());
                   return std::string();
                 },
                 K(kind), also});
  };
  idx_row("idx_wrong_magic", [] { return std::pair(idx_images(2, 4, 4, 32, 0x12345678), idx_labels(2, 2)); },
          ErrorKind::kDataFormat, "wrong magic");
  idx_row("idx_labels_given_as_images", [] { return std::pair(idx_labels(2, 2), idx_labels(2, 2)); },
          ErrorKind::kDataFormat, "label file");
  idx_row("idx_images_given_as_labels", [] { return std::pair(idx_images_ok(2), idx_images_ok(2)); },
          ErrorKind::kDataFormat, "image file", true);
  idx_row("idx_truncated_header_10_bytes",
          [] {
            auto b = idx_images_ok(1);
            b.resize(10);
            return std::pair(b, idx_labels(1, 1));
          },
          ErrorKind::kDataFormat, "16-byte");
  idx_row("idx_truncated_header_2_bytes", [] { return std::pair(Bytes{0, 0}, idx_labels(1, 1)); },
          ErrorKind::kDataFormat, "16-byte");
  idx_row("idx_labels_truncated_header", [] { return std::pair(idx_images_ok(1), Bytes{0, 0, 8, 1, 0}); },
          ErrorKind::kDataFormat, "8-byte", true);
  idx_row("idx_truncated_body", [] { return std::pair(idx_images(3, 4, 4, 40), idx_labels(3, 3)); },
          ErrorKind::kDataFormat, "truncated");
  idx_row("idx_trailing_bytes", [] { return std::pair(idx_images(2, 4, 4, 33), idx_labels(2, 2)); },
          ErrorKind::kDataFormat, "trailing bytes");
  idx_row("idx_labels_truncated_body", [] { return std::pair(idx_images_ok(3), idx_labels(3, 2)); },
          ErrorKind::kDataFormat, "truncated", true);
  idx_row("idx_zero_images", [] { return std::pair(idx_images(0, 4, 4, 0), idx_labels(0, 0)); },
          ErrorKind::kDataFormat, "zero images");
  idx_row("idx_zero_labels", [] { return std::pair(idx_images_ok(1), idx_labels(0, 0)); }, ErrorKind::kDataFormat,
          "zero labels", true);
  // 4 billion images of 4096x4096 = 2^56 bytes declared by a 16-byte file: must be refused from
  // the header (an attempt to allocate would abort under ASan, or take the machine down).
  idx_row("idx_huge_declared_size", [] { return std::pair(idx_images(0xFFFFFFFFu, 4096, 4096, 16), idx_labels(1, 1)); },
          ErrorKind::kDataFormat, "header declares 4294967295 images of 4096x4096");
  idx_row("idx_implausible_image_side", [] { return std::pair(idx_images(1, 100000, 1, 0), idx_labels(1, 1)); },
          ErrorKind::kDataFormat, "implausible image size");
  idx_row("idx_image_label_count_mismatch", [] { return std::pair(idx_images_ok(3), idx_labels(2, 2)); },
          ErrorKind::kDataFormat, "must belong together");
}

// Rows: IDX files: labels, gzip and folders.
void add_idx_contents_rows(std::vector<Row>& t) {
  t.push_back({"idx_label_out_of_range",
               [](D d) { return write_bytes(d / "labels-idx1-ubyte", idx_labels(4, 4, 200)).string(); },
               [](D, S in) {
                 auto b = read_file_bytes(in);
                 parse_idx_labels(b, in, 10);
                 return std::string();
               },
               K(ErrorKind::kDataFormat), "label 200 of sample 0 is out of range"});
  t.push_back({"idx_corrupt_gzip",
               [](D d) {
                 // gzip magic and header, then bytes that are not a deflate stream.
                 Bytes b = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0xff, 0x00, 0x12, 0x34, 0x56};
                 return write_bytes(d / "train-images-idx3-ubyte.gz", b).string();
               },
               [](D, S in) {
                 read_file_bytes(in);
                 return std::string();
               },
               K(ErrorKind::kDataFormat), "not a valid gzip file"});
  t.push_back({"idx_truncated_gzip",
               [](D d) {
                 auto p = write_gzip(d / "full.gz", idx_images_ok(64));
                 auto b = read_back(p);
                 b.resize(b.size() / 2);
                 return write_bytes(d / "train-images-idx3-ubyte.gz", b).string();
               },
               [](D, S in) {
                 read_idx(in, in);
                 return std::string();
               },
               K(ErrorKind::kDataFormat), "truncated"});
  t.push_back({"idx_folder_without_files", [](D d) { fs::create_directories(d / "mnist"); return (d / "mnist").string(); },
               [](D, S in) {
                 DataConfig c;
                 c.format = "idx";
                 c.path = in;
                 load_datasets(c, 1);
                 return std::string();
               },
               K(ErrorKind::kIo), "-ubyte (or "});
  t.push_back({"idx_missing_file", [](D d) { return (d / "absent-idx3-ubyte").string(); },
               [](D, S in) {
                 read_idx(in, in);
                 return std::string();
               },
               K(ErrorKind::kIo), "No such file"});

  // Labels are the classes 0..K-1 of the training file (K = largest label + 1, every class
  // present); the error names the labels file and the byte offset of the first offending label.
  auto idx_classes_row = [&](std::string name, Bytes train_labels, Bytes test_labels, bool name_test,
                             std::string also) {
    t.push_back({name,
                 [=](D d) {
                   write_bytes(d / "train-images-idx3-ubyte", idx_images_ok(4));
                   auto tr = write_bytes(d / "train-labels-idx1-ubyte", train_labels);
                   write_bytes(d / "t10k-images-idx3-ubyte", idx_images_ok(2));
                   auto te = write_bytes(d / "t10k-labels-idx1-ubyte", test_labels);
                   return (name_test ? te : tr).string();
                 },
                 [](D d, S) {
                   DataConfig c;
                   c.format = "idx";
                   c.path = d.string();
                   load_datasets(c, 1);
                   return std::string();
                 },
                 K(ErrorKind::kDataFormat), also});
  };
  auto labels = [](std::initializer_list<uint8_t> values) {
    Bytes v = idx_labels(static_cast<uint32_t>(values.size()), 0);
    v.insert(v.end(), values);
    return v;
  };
  idx_classes_row("idx_stray_label_is_not_a_new_class", labels({0, 1, 200, 1}), labels({0, 1}), false,
                  "offset 10: label 200");
  idx_classes_row("idx_missing_class_is_a_gap", labels({0, 2, 2, 0}), labels({0, 2}), false, "class 1");
  idx_classes_row("idx_test_label_beyond_training_classes", labels({0, 1, 1, 0}), labels({0, 2}), true,
                  "offset 9: label 2");
}

// Rows: CIFAR-10 binary.
void add_cifar_rows(std::vector<Row>& t) {
  // --- CIFAR-10 binary ---
  auto cifar_row = [&](std::string name, Bytes b, std::string also) {
    t.push_back({name, [b](D d) { return write_bytes(d / "data_batch_1.bin", b).string(); },
                 [](D, S in) {
                   parse_cifar10_batch(read_file_bytes(in), in);
                   return std::string();
                 },
                 K(ErrorKind::kDataFormat), also});
  };
  cifar_row("cifar_size_not_multiple_of_record", cifar(2, 1, 5), "not a multiple of the 3073-byte");
  cifar_row("cifar_single_short_record", Bytes(3072, 1), "not a multiple of the 3073-byte");
  cifar_row("cifar_label_ten", cifar(3, 10), "label 10 of record 0 is out of range");
  cifar_row("cifar_label_255", cifar(1, 255), "label 255");
  cifar_row("cifar_empty_file", Bytes{}, "empty");
  t.push_back({"cifar_missing_batch",
               [](D d) {
                 write_bytes(d / "cifar" / "data_batch_1.bin", cifar(1));
                 return (d / "cifar" / "data_batch_2.bin").string();
               },
               [](D d, S) {
                 DataConfig c;
                 c.format = "cifar10";
                 c.path = (d / "cifar").string();
                 load_datasets(c, 1);
                 return std::string();
               },
               K(ErrorKind::kIo), ""});
}

// Rows: image folders.
void add_image_folder_rows(std::vector<Row>& t) {
  // --- image folders ---
  auto folder_call = [](D, S in) {
    std::vector<std::string> names;
    read_image_folder(in, 8, 3, &names);
    return std::string();
  };
  t.push_back({"folder_missing", [](D d) { return (d / "no-such-folder").string(); }, folder_call, K(ErrorKind::kIo),
               "does not exist"});
  t.push_back({"folder_is_a_file", [](D d) { return write_text(d / "a-file", "x").string(); }, folder_call,
               K(ErrorKind::kIo), "not a folder"});
  t.push_back({"folder_no_class_folders",
               [](D d) {
                 write_bytes(d / "imgs" / "loose.bmp", tiny_bmp());
                 return (d / "imgs").string();
               },
               folder_call, K(ErrorKind::kDataFormat), "no class sub-folders"});
  t.push_back({"folder_no_images",
               [](D d) {
                 write_text(d / "imgs" / "cat" / "notes.txt", "not an image");
                 fs::create_directories(d / "imgs" / "dog");
                 return (d / "imgs").string();
               },
               folder_call, K(ErrorKind::kDataFormat), "no .png/.jpg/.jpeg/.bmp images"});
  t.push_back({"folder_undecodable_image_named",
               [](D d) {
                 write_bytes(d / "imgs" / "cat" / "a.bmp", tiny_bmp());
                 return write_text(d / "imgs" / "dog" / "broken.png", "this is not a PNG").string();
               },
               [](D d, S) {
                 read_image_folder((d / "imgs").string(), 8, 3, nullptr);
                 return std::string();
               },
               K(ErrorKind::kDataFormat), "cannot decode image"});
  t.push_back({"folder_truncated_png",
               [](D d) {
                 Bytes b = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R', 0, 0, 0, 2};
                 return write_bytes(d / "imgs" / "cat" / "cut.png", b).string();
               },
               [](D d, S) {
                 read_image_folder((d / "imgs").string(), 8, 1, nullptr);
                 return std::string();
               },
               K(ErrorKind::kDataFormat), "truncated"});
  t.push_back({"image_empty_bytes", [](D) { return std::string("empty.jpg"); },
               [](D, S in) {
                 decode_image({}, in, 8, 3);
                 return std::string();
               },
               K(ErrorKind::kDataFormat), "empty image file"});
}

// Rows: files.
void add_files_rows(std::vector<Row>& t) {
  // --- files ---
  t.push_back({"file_over_size_limit", [](D d) { return write_bytes(d / "big.bin", Bytes(4096, 0)).string(); },
               [](D, S in) {
                 read_file_bytes(in, 1024);
                 return std::string();
               },
               K(ErrorKind::kDataFormat), "more than the limit"});
  t.push_back({"file_is_a_folder", [](D d) { fs::create_directories(d / "dir.bin"); return (d / "dir.bin").string(); },
               [](D, S in) {
                 read_file_bytes(in);
                 return std::string();
               },
               K(ErrorKind::kIo), "not a regular file"});
  t.push_back({"gzip_bomb_over_limit", [](D d) { return write_gzip(d / "bomb.gz", Bytes(1 << 20, 0)).string(); },
               [](D, S in) {
                 read_file_bytes(in, 4096);
                 return std::string();
               },
               K(ErrorKind::kDataFormat), "decompresses to more than"});
}

// Rows: /proc and sysfs.
void add_telemetry_rows(std::vector<Row>& t) {
  // --- /proc and sysfs (telemetry): never throw; unavailable or dropped with a reason ---
  t.push_back({"proc_stat_garbage_probe",
               [](D d) { return write_text(telemetry_tree(d) / "proc" / "stat", "intr 1 2 3\nbogus\n").string(); },
               [](D d, S) {
                 auto s = telemetry::make_proc_source((d / "t/proc").string(), (d / "t/sys").string(), {});
                 return probe_failure(*s);
               },
               kSoft, "no 'cpu' line"});
  t.push_back({"proc_stat_empty_probe", [](D d) { return write_text(telemetry_tree(d) / "proc" / "stat", "").string(); },
               [](D d, S) {
                 auto s = telemetry::make_proc_source((d / "t/proc").string(), (d / "t/sys").string(), {});
                 return probe_failure(*s);
               },
               kSoft, "no 'cpu' line"});
  t.push_back({"proc_missing_root", [](D d) { return (d / "noproc").string(); },
               [](D d, S in) {
                 auto s = telemetry::make_proc_source(in, (d / "sys").string(), {});
                 return probe_failure(*s);
               },
               kSoft, "ENOENT"});
  t.push_back({"proc_stat_garbage_while_sampling", [](D d) { telemetry_tree(d); return std::string("util_pct"); },
               [](D d, S) {
                 auto s = telemetry::make_proc_source((d / "t/proc").string(), (d / "t/sys").string(), {});
                 if (!s->probe().available) return std::string();
                 write_text(d / "t/proc/stat", "cpu x y z\n\0\0garbage");
                 write_text(d / "t/proc/self/status", "VmRSS:\t-12 kB\n");
                 return drops_of(*s);
               },
               kSoft, "parse_error"});
  t.push_back({"proc_files_vanish_while_sampling", [](D d) { telemetry_tree(d); return std::string("util_pct"); },
               [](D d, S) {
                 auto s = telemetry::make_proc_source((d / "t/proc").string(), (d / "t/sys").string(), {});
                 if (!s->probe().available) return std::string();
                 trainscope::remove_tree(d / "t/proc");
                 return drops_of(*s);
               },
               kSoft, "unreadable"});
  t.push_back({"rapl_range_garbage_probe",
               [](D d) {
                 auto root = telemetry_tree(d) / "sys/class/powercap";
                 for (const auto& e : fs::directory_iterator(root))
                   write_text(e.path() / "max_energy_range_uj", "lots\n");
                 return std::string("max_energy_range_uj");
               },
               [](D d, S) {
                 auto s = telemetry::make_rapl_source((d / "t/sys").string(), {});
                 return probe_failure(*s);
               },
               kSoft, "unreadable or zero"});
  t.push_back({"rapl_missing_powercap", [](D d) { return (d / "nosys/class/powercap").string(); },
               [](D d, S) {
                 auto s = telemetry::make_rapl_source((d / "nosys").string(), {});
                 return probe_failure(*s);
               },
               kSoft, "does not exist"});
  t.push_back({"rapl_energy_garbage_while_sampling", [](D d) { telemetry_tree(d); return std::string("energy_j"); },
               [](D d, S) {
                 auto s = telemetry::make_rapl_source((d / "t/sys").string(), {});
                 if (!s->probe().available) return std::string();
                 for (const auto& e : fs::directory_iterator(d / "t/sys/class/powercap"))
                   write_text(e.path() / "energy_uj", "-5\n");
                 return drops_of(*s);
               },
               kSoft, "parse_error"});
  t.push_back({"hwmon_temp_garbage_while_sampling", [](D d) { telemetry_tree(d); return std::string("temp_c"); },
               [](D d, S) {
                 auto s = telemetry::make_hwmon_source((d / "t/sys").string(), {});
                 if (!s->probe().available) return std::string();
                 write_text(d / "t/sys/class/hwmon/hwmon0/temp1_input", "hot\n");
                 write_text(d / "t/sys/class/thermal/thermal_zone0/temp", "");
                 return drops_of(*s);
               },
               kSoft, "parse_error"});
  t.push_back({"hwmon_missing_sys", [](D d) { return (d / "nosys/class/hwmon").string(); },
               [](D d, S) {
                 auto s = telemetry::make_hwmon_source((d / "nosys").string(), {});
                 return probe_failure(*s);
               },
               kSoft, "no temperature sensor"});
  // Bare parsers: garbage gives an empty optional / nothing (the sources turn it into a drop).
  auto parser_row = [&](std::string name, std::function<bool()> rejected) {
    t.push_back({name, [](D) { return std::string(); },
                 [rejected](D, S) { return rejected() ? std::string("rejected") : std::string(); }, kSoft, ""});
  };
  parser_row("parse_u64_garbage_empty_negative_overflow", [] {
    return !telemetry::parse_u64("12ab") && !telemetry::parse_u64("") && !telemetry::parse_u64("-1") &&
           !telemetry::parse_u64("99999999999999999999999");
  });
  parser_row("parse_self_stat_garbage", [] {
    return !telemetry::parse_self_stat("") && !telemetry::parse_self_stat("123 (cat) R 1 2") &&
           !telemetry::parse_self_stat("no parenthesis at all");
  });
  parser_row("parse_proc_stat_garbage", [] {
    return telemetry::parse_proc_stat("cpu\ncpu0 a b c d\ncpux 1\n\n\n").empty() && telemetry::parse_proc_stat("").empty();
  });
  parser_row("parse_kb_field_garbage", [] {
    return !telemetry::parse_kb_field("VmRSS: many kB\n", "VmRSS") && !telemetry::parse_kb_field("VmRSS:", "VmRSS") &&
           !telemetry::parse_kb_field("VmRSS: 12 MB\n", "VmRSS") && !telemetry::parse_kb_field("", "MemTotal");
  });
}

// Rows: fuzzer findings.
void add_fuzz_findings_rows(std::vector<Row>& t) {
  // --- fuzzer findings (tests/fuzz/crashes/, bench/RESULTS.md "Fuzzing") ---
  // fuzz_decode_image: a PNG whose first IDAT chunk is empty makes stb_image (Debian libstb)
  // call memcpy(NULL, src, 0), which UBSan reports (nonnull-attribute).
  t.push_back({"fuzz_png_zero_length_idat", [](D) { return std::string("zero-idat.png"); },
               [](D, S in) {
                 auto b = read_file_bytes(std::string(TS_FIXTURES_DIR) + "/../fuzz/crashes/decode_image_png_zero_length_idat");
                 decode_image(std::span<const uint8_t>(b).subspan(1), in, 8, 3);
                 return std::string();
               },
               K(ErrorKind::kDataFormat), ""});
  // fuzz_toml_config: U+FEEF (bytes EF BB AF) inside a bare key reaches TOML_UNREACHABLE in toml++'s
  // unicode tables (Debian's toml++): undefined behaviour, not a parse error.
  t.push_back({"fuzz_toml_non_ascii_in_bare_key", [](D) { return std::string("bad.toml"); },
               [](D d, S) { return load_toml(d, "\nrep\xEF\xBB\xAFwre = 2T\n"); }, K(ErrorKind::kInvalidConfig), ""});

  // fuzz_toml_config (second run): a backslash followed by a non-ASCII character inside a
  // multi-line string also reaches toml++'s TOML_UNREACHABLE; rejected by the pre-check.
  t.push_back({"fuzz_toml_escape_non_ascii", [](D) { return std::string("bad.toml"); },
               [](D d, S) { return load_toml(d, "[data]\nformat = \"\"\"\\\xC9\x97 x\"\"\"\n"); },
               K(ErrorKind::kInvalidConfig), ""});
  // fuzz_toml_config (third run): a control character inside a string sends toml++'s error path
  // into undefined behaviour; control characters and malformed UTF-8 are rejected first.
  t.push_back({"fuzz_toml_control_char", [](D) { return std::string("bad.toml"); },
               [](D d, S) { return load_toml(d, "models = \"ml\x12p\"\n"); }, K(ErrorKind::kInvalidConfig), ""});
  // fuzz_toml_config (fourth run): a non-ASCII letter after a malformed value, which toml++ scans
  // as a possible value terminator: TOML_UNREACHABLE in toml++ 3.3 (issue #190/#295), fixed by
  // src/config/toml_patched.h. Now an ordinary syntax error.
  t.push_back({"fuzz_toml_u_fef7_after_bad_value", [](D) { return std::string("bad.toml"); },
               [](D d, S) { return load_toml(d, "badch_ =5555m'\xEF\xBB\xB7" "c.l"); }, K(ErrorKind::kInvalidConfig), ""});
  // fuzz_toml_config (fifth run): a float too large for int64 where an integer belongs; toml++'s
  // value<int64_t>() converted it with undefined behaviour. Integers are now read exactly.
  t.push_back({"fuzz_toml_huge_float_for_integer", [](D) { return std::string("bad.toml"); },
               [](D d, S) { return load_toml(d, "[data]\nformat = \"fole\"\nimage_size = 8888888888888888888881.2\n"); },
               K(ErrorKind::kInvalidConfig), "must be an integer, not a float"});
  t.push_back({"toml_invalid_utf8", [](D) { return std::string("bad.toml"); },
               [](D d, S) { return load_toml(d, "# caf\xE9\nmodels = [\"mlp\"]\n"); }, K(ErrorKind::kInvalidConfig), ""});
  // fuzz_decode_image (second run): a ~100-byte PNG whose chunks make stb_image realloc 2 GiB.
  t.push_back({"fuzz_png_huge_declared", [](D) { return std::string("huge.png"); },
               [](D, S in) {
                 auto b = read_file_bytes(std::string(TS_FIXTURES_DIR) + "/../fuzz/crashes/decode_image_png_huge_declared");
                 decode_image(std::span<const uint8_t>(b).subspan(1), in, 8, 3);
                 return std::string();
               },
               K(ErrorKind::kDataFormat), ""});
}

std::vector<Row> rows() {
  std::vector<Row> t;
  add_toml_rows(t);
  add_idx_headers_rows(t);
  add_idx_contents_rows(t);
  add_cifar_rows(t);
  add_image_folder_rows(t);
  add_files_rows(t);
  add_telemetry_rows(t);
  add_fuzz_findings_rows(t);
  // Checkpoint descriptions: read_checkpoint_description (src/infer/checkpoint.h) needs LibTorch,
  // so the malformed-description row lives with the inference tests, not in this torch-free table.
  return t;
}

// gtest prints a failing parameter; show the row name, not its bytes.
void PrintTo(const Row& row, std::ostream* os) { *os << row.name; }

class BadInput : public ::testing::TestWithParam<Row> {};

TEST_P(BadInput, FailsWithTheExpectedKindAndNamesTheInput) {
  const Row& row = GetParam();
  if (!row.pending.empty()) GTEST_SKIP() << "pending fix: " << row.pending;
  fs::path dir = fs::temp_directory_path() / ("ts_bad_inputs_" + std::to_string(::getpid())) / row.name;
  trainscope::remove_tree(dir);
  fs::create_directories(dir);
  std::string input = row.build(dir);

  std::optional<ErrorKind> got_kind;
  std::string message;
  try {
    message = row.call(dir, input);
  } catch (const Error& e) {
    got_kind = e.kind();
    message = e.what();
  } catch (const std::exception& e) {
    FAIL() << row.name << ": expected trainscope::Error, got " << typeid(e).name() << ": " << e.what();
  }

  if (row.kind) {
    ASSERT_TRUE(got_kind) << row.name << ": the bad input was accepted (expected Error("
                          << to_string(*row.kind) << "))";
    EXPECT_EQ(to_string(*got_kind), to_string(*row.kind)) << row.name << ": " << message;
  } else {
    ASSERT_FALSE(got_kind) << row.name << ": a telemetry reader threw (" << message << "); it must report instead";
    EXPECT_FALSE(message.empty()) << row.name << ": the bad input was accepted without a reason";
  }
  if (!input.empty()) EXPECT_NE(message.find(input), std::string::npos) << "message does not name '" << input << "': " << message;
  if (!row.also.empty()) EXPECT_NE(message.find(row.also), std::string::npos) << "message lacks '" << row.also << "': " << message;
  trainscope::remove_tree(dir);
}

INSTANTIATE_TEST_SUITE_P(Table, BadInput, ::testing::ValuesIn(rows()),
                         [](const ::testing::TestParamInfo<Row>& i) { return i.param.name; });

TEST(BadInputTable, HasAtLeastThirtyRows) { EXPECT_GE(rows().size(), 30u); }

}  // namespace

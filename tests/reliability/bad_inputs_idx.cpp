// Bad-input rows: IDX files (the MNIST family): headers and sizes; labels, gzip and folders.
#include <initializer_list>
#include <utility>

#include "reliability/bad_input_table.h"
#include "trainscope/config.h"
#include "trainscope/dataset.h"
#include "trainscope/fs.h"

namespace trainscope::bad_inputs {

namespace {

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

}  // namespace

// Rows: IDX files: headers and sizes.
void add_idx_headers_rows(std::vector<Row>& t) {
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

}  // namespace trainscope::bad_inputs

// Bad-input rows: CIFAR-10 binary batches.
#include <algorithm>

#include "reliability/bad_input_table.h"
#include "trainscope/config.h"
#include "trainscope/dataset.h"
#include "trainscope/fs.h"

namespace trainscope::bad_inputs {

namespace {

/// CIFAR-10 batch: `records` 3073-byte records (label, 3072 pixel bytes), then `extra` bytes.
Bytes cifar(size_t records, uint8_t label = 1, size_t extra = 0) {
  Bytes v(records * 3073 + extra, 7);  // sized up front (GCC 12 misreports push_back + insert)
  for (size_t r = 0; r < records; ++r) {
    auto rec = v.begin() + static_cast<std::ptrdiff_t>(r * 3073);
    *rec = label;
    std::fill(rec + 1, rec + 3073, static_cast<uint8_t>(r));
  }
  return v;
}

}  // namespace

// Rows: CIFAR-10 binary.
void add_cifar_rows(std::vector<Row>& t) {
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

}  // namespace trainscope::bad_inputs

// libFuzzer target: IDX label parser (parse_idx_labels) with a class limit taken from the input.
#include <cstdlib>

#include "trainscope/dataset.h"
#include "trainscope/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  int64_t max_classes = 1 + data[0];  // 1..256
  try {
    auto labels = trainscope::parse_idx_labels({data + 1, size - 1}, "fuzz-labels", max_classes);
    for (auto l : labels)
      if (l < 0 || l >= max_classes) std::abort();
  } catch (const trainscope::Error& e) {
    if (e.kind() != trainscope::ErrorKind::kDataFormat) std::abort();
  }
  return 0;
}

// libFuzzer target: CIFAR-10 binary batch parser (parse_cifar10_batch).
#include <cstdlib>

#include "trainscope/dataset.h"
#include "trainscope/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto r = trainscope::parse_cifar10_batch({data, size}, "fuzz-cifar");
    if (r.count * 3073 != static_cast<int64_t>(size)) std::abort();
    for (auto l : r.labels)
      if (l < 0 || l >= 10) std::abort();
  } catch (const trainscope::Error& e) {
    if (e.kind() != trainscope::ErrorKind::kDataFormat) std::abort();
  }
  return 0;
}

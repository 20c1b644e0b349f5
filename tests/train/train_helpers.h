// Helpers shared by the trainer's test suites (LibTorch; one copy of each).
#pragma once

#include <cstdint>

#include "train/trainer.h"
#include "trainscope/dataset.h"

namespace trainscope::test {

/// An in-memory synthetic workload: n_train / n_test samples of 1 x size x size, data seed 5.
inline Workload synthetic_workload(int64_t n_train, int64_t n_test, int64_t size = 16) {
  DataConfig d;
  d.format = "synthetic";
  d.synthetic_train = n_train;
  d.synthetic_test = n_test;
  d.synthetic_size = size;
  return make_workload(load_datasets(d, 5));
}

}  // namespace trainscope::test

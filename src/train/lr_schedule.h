// The learning rate of each optimizer step (docs/language-models.md#the-training-recipe): constant,
// or a linear warm-up followed by a cosine decay to a minimum, nanoGPT's get_lr (train.py):
//   step < warmup:                lr x (step + 1) / (warmup + 1)
//   step >= decay_steps (> 0):    lr_min
//   otherwise:                    lr_min + 0.5 (1 + cos(pi r)) (lr - lr_min),
//                                 r = (step - warmup) / (decay_steps - warmup), 0 <= r <= 1
// With decay_steps = 0 the rate stays at lr after the warm-up (warm-up alone). Steps count optimizer
// steps from 0 (a step of --grad-accum N micro-batches is one step). Internal to src/train/.
#pragma once

#include <cstdint>
#include <string>

#include "trainscope/config.h"

namespace trainscope {

struct LrSchedule {
  double lr = 1e-3;          // peak (and constant) learning rate
  double lr_min = 0;         // the rate the cosine ends at
  int64_t warmup_steps = 0;  // linear warm-up steps (0: none)
  int64_t decay_steps = 0;   // the step the cosine reaches lr_min (0: no decay)

  /// The schedule of cfg (learning_rate, lr_warmup_steps, lr_decay_steps, lr_min).
  static LrSchedule of(const TrainConfig& cfg);
  /// True when the rate changes from step to step (a warm-up or a decay).
  bool varies() const { return warmup_steps > 0 || decay_steps > 0; }
  /// The learning rate of optimizer step `step` (0-based), by the formula above.
  double at(int64_t step) const;
  /// "constant 0.001", "warm-up 100 steps to 0.0006, cosine to 6e-05 at step 5000".
  std::string describe() const;
};

}  // namespace trainscope

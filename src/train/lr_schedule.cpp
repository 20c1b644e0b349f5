#include "train/lr_schedule.h"

#include <fmt/format.h>

#include <cmath>

namespace trainscope {

LrSchedule LrSchedule::of(const TrainConfig& cfg) {
  return {.lr = cfg.learning_rate, .lr_min = cfg.lr_min, .warmup_steps = cfg.lr_warmup_steps,
          .decay_steps = cfg.lr_decay_steps};
}

double LrSchedule::at(int64_t step) const {
  if (step < warmup_steps) return lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps + 1);
  if (decay_steps <= 0) return lr;
  if (step >= decay_steps) return lr_min;
  const double r = static_cast<double>(step - warmup_steps) / static_cast<double>(decay_steps - warmup_steps);
  return lr_min + 0.5 * (1.0 + std::cos(M_PI * r)) * (lr - lr_min);
}

std::string LrSchedule::describe() const {
  if (!varies()) return fmt::format("constant {}", lr);
  std::string s = warmup_steps > 0 ? fmt::format("linear warm-up over {} steps to {}", warmup_steps, lr)
                                   : fmt::format("{} from step 0", lr);
  if (decay_steps > 0) s += fmt::format(", cosine decay to {} at step {}", lr_min, decay_steps);
  return s;
}

}  // namespace trainscope

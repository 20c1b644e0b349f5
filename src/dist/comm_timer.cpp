#include "dist/comm_timer.h"

#include <stdexcept>

namespace trainscope {
namespace dist {

namespace {
constexpr unsigned kAllMarks = 0b111;
}

CommTimer::CommTimer(std::unique_ptr<PhaseClock> clock, int64_t slots, int64_t warmup_steps)
    : clock_(std::move(clock)), slots_(slots), warmup_(warmup_steps),
      step_of_(static_cast<size_t>(slots), -1), marks_(static_cast<size_t>(slots), 0) {
  if (!clock_ || slots_ < 1) throw std::invalid_argument("CommTimer needs a clock and at least one slot");
}

void CommTimer::begin_step(int64_t step) {
  slot_ = step % slots_;
  if (step_of_[static_cast<size_t>(slot_)] >= 0) read(slot_);
  step_of_[static_cast<size_t>(slot_)] = step;
  marks_[static_cast<size_t>(slot_)] = 0;
}

void CommTimer::bucket0_launched() {
  if (slot_ < 0) return;
  clock_->mark(slot_, 0);
  marks_[static_cast<size_t>(slot_)] |= 1u;
}

void CommTimer::backward_ended() {
  if (slot_ < 0) return;
  clock_->mark(slot_, 1);
  marks_[static_cast<size_t>(slot_)] |= 2u;
}

void CommTimer::comm_done() {
  if (slot_ < 0) return;
  clock_->mark(slot_, 2);
  marks_[static_cast<size_t>(slot_)] |= 4u;
}

// Adds the slot's step to the sums when it is counted and complete, and frees the slot.
void CommTimer::read(int64_t slot) {
  const auto i = static_cast<size_t>(slot);
  if (marks_[i] == kAllMarks && step_of_[i] >= warmup_) {
    clock_->wait(slot, 2);  // the step's last mark: on the device long since, in a ring of steps
    const double overlap = clock_->elapsed_ms(slot, 0), exposed = clock_->elapsed_ms(slot, 1);
    overlap_ms_ += overlap;
    comm_ms_ += overlap + exposed;
    ++counted_;
  }
  step_of_[i] = -1;
  marks_[i] = 0;
}

std::optional<CommTimer::Means> CommTimer::finish() {
  for (int64_t s = 0; s < slots_; ++s)
    if (step_of_[static_cast<size_t>(s)] >= 0) read(s);
  slot_ = -1;
  if (counted_ == 0) return std::nullopt;
  return Means{comm_ms_ / static_cast<double>(counted_), overlap_ms_ / static_cast<double>(counted_), counted_};
}

}  // namespace dist
}  // namespace trainscope

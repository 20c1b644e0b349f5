#include "dist/stop_vote.h"

#include <stdexcept>

namespace trainscope {
namespace dist {

StopVote::StopVote(const torch::Device& dev, int64_t delay) : delay_(dev.is_cuda() ? delay : 0) {
  if (delay < 0) throw std::invalid_argument("StopVote: delay must be >= 0");
  if (delay_ == 0) return;
  clock_ = make_phase_clock(dev, delay_ + 1);
  make_ring(/*pinned=*/true);
}

StopVote::StopVote(std::unique_ptr<PhaseClock> clock, int64_t delay) : delay_(delay), clock_(std::move(clock)) {
  if (delay < 0) throw std::invalid_argument("StopVote: delay must be >= 0");
  if (delay_ > 0) make_ring(/*pinned=*/false);
}

void StopVote::make_ring(bool pinned) {
  const int64_t ring = delay_ + 1;
  for (int64_t i = 0; i < ring; ++i)
    host_.push_back(torch::zeros({kElements}, torch::TensorOptions().dtype(torch::kFloat).pinned_memory(pinned)));
  step_of_.assign(static_cast<size_t>(ring), -1);
}

void StopVote::cast(const StopWish& wish, torch::Tensor slot) {
  torch::NoGradGuard ng;
  slot.select(0, 0).fill_(wish.signal ? 1 : 0);
  slot.select(0, 1).fill_(wish.budget ? 1 : 0);
}

StopWish StopVote::decode(const torch::Tensor& host_pair) {
  auto v = host_pair.to(torch::kFloat).contiguous();
  const float* p = v.data_ptr<float>();
  return {.signal = p[0] > 0, .budget = p[1] > 0};
}

StopWish StopVote::read(int64_t step, const torch::Tensor& summed) {
  if (delay_ == 0) return decode(summed.detach().to(torch::kCPU));
  const int64_t ring = delay_ + 1;
  const auto slot = static_cast<size_t>(step % ring);
  host_[slot].copy_(summed.detach(), /*non_blocking=*/true);
  clock_->mark(static_cast<int64_t>(slot), 0);
  step_of_[slot] = step;
  const auto old = static_cast<size_t>((step + 1) % ring);  // step - delay's slot
  if (step < delay_ || step_of_[old] != step - delay_) return {};  // no vote that old yet, or none was cast then
  clock_->wait(static_cast<int64_t>(old), 0);
  step_of_[old] = -1;
  return decode(host_[old]);
}

StopWish StopVote::drain() {
  StopWish any;
  for (size_t i = 0; i < step_of_.size(); ++i) {
    if (step_of_[i] < 0) continue;
    clock_->wait(static_cast<int64_t>(i), 0);
    any |= decode(host_[i]);
    step_of_[i] = -1;
  }
  return any;
}

}  // namespace dist
}  // namespace trainscope

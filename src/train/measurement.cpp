// The measurement protocol (docs/profiling.md#measurement-protocol): the role of each step (warm-up,
// headline, profiled, after the profiler), the headline window that opens and closes around the
// steps it times, and what is kept of it when a step fails.
#include <fmt/format.h>

#include <algorithm>

#include "train/train_loop.h"
#include "trainscope/profile.h"

namespace trainscope {

void TrainLoop::plan_windows() {
  auto& m = r_.measurement;
  if (!spec_.profile) return;
  m.profile_skip_first = spec_.profile->skip_first;
  m.profile_skip_first_auto = spec_.profile_skip_first_auto;
  const int64_t first = profile_first_touched_step(*spec_.profile);
  if (first >= 0) first_touched_ = first;
  if (first_touched_ <= cfg_.warmup_steps)
    r_.notes.push_back(fmt::format("the profiler starts at step {}, inside the {} warm-up steps: no step is left for "
                                   "the headline figures; use --profile-skip -1 (auto) or a larger value",
                                   first_touched_, cfg_.warmup_steps));
}

StepRole TrainLoop::role(int64_t step) const {
  if (step >= first_touched_) {
    auto st = profile_step_state(*spec_.profile, step);
    return st == ProfileStepState::kWarmup || st == ProfileStepState::kActive ? StepRole::kProfiled
                                                                                : StepRole::kAfterProfile;
  }
  return step < cfg_.warmup_steps ? StepRole::kWarmup : StepRole::kHeadline;
}

void TrainLoop::open_headline() {
  device_synchronize(dev_);  // once per run: the start of the headline window
  if (hooks_.on_window_edge) hooks_.on_window_edge();
  segment_start_ = Clock::now();
  headline_open_ = true;
  r_.measurement.headline_start_ns = ns_since(spec_.origin, segment_start_);
}

void TrainLoop::close_headline(Clock::time_point t) {
  auto& m = r_.measurement;
  m.headline_time_s += seconds(segment_start_, t);
  m.headline_end_ns = ns_since(spec_.origin, t);
  headline_open_ = false;
}

// Books the step into its protocol window, feeds the hooks, opens/closes the headline window.
void TrainLoop::after_step(EpochState& e, int64_t s, int64_t m, Clock::time_point t0, Clock::time_point t_data,
                           const Clock::time_point* host_marks) {
  const int64_t step = global_step_ - 1;
  const auto t_end = Clock::now();
  last_step_end_ = t_end;
  const double step_ms = std::chrono::duration<double, std::milli>(t_end - t0).count();
  auto& mw = r_.measurement;
  switch (role(step)) {
    case StepRole::kHeadline:
      e.counted[static_cast<size_t>(s)] = 1;
      e.headline_samples += m;
      e.host_data_ms[static_cast<size_t>(s)] = std::chrono::duration<double, std::milli>(t_data - t0).count();
      e.host_step_ms[static_cast<size_t>(s)] = step_ms;
      headline_ms_.add(step_ms);
      if (mw.headline_first_step < 0) mw.headline_first_step = step;
      mw.headline_last_step = step;
      ++mw.headline_steps;
      mw.headline_samples += m;
      break;
    case StepRole::kProfiled:
      profiled_ms_.add(step_ms);
      ++e.profiled_steps;
      if (mw.profiled_first_step < 0) mw.profiled_first_step = step;
      mw.profiled_last_step = step;
      ++mw.profiled_steps;
      break;
    case StepRole::kAfterProfile: after_ms_.add(step_ms); break;
    case StepRole::kWarmup: break;
  }
  if (hooks_.on_phase_span) phase_spans(step, t0, t_data, host_marks);
  if (hooks_.on_step_end) hooks_.on_step_end(step);
  if (!headline_open_ && !headline_closed_ && global_step_ == cfg_.warmup_steps && global_step_ < first_touched_)
    open_headline();
  if (headline_open_ && global_step_ == first_touched_) {
    device_synchronize(dev_);  // once per run: the end of the headline window, before the profiler starts
    close_headline(Clock::now());
    headline_closed_ = true;
  }
}

// After a step failed (an exception leaves run()): keeps what was measured up to the last
// completed step — the headline window and its steady samples/s, the phases, the training time —
// so a failed run's record holds them like an interrupted one's (docs/results.md). Best effort:
// a device that failed may refuse to synchronise, and then what could not be read stays absent.
void TrainLoop::salvage_after_failure(const EpochState* e) noexcept {
  try {
    if (headline_open_) close_headline(last_step_end_);
    headline_open_ = false;
    if (e) {
      train_time_ += std::max(0.0, seconds(e->start, last_step_end_) - epoch_paused_s_);
      add_epoch_phases(*e);
    }
    r_.train_time_s = train_time_;
  } catch (...) {
  }
  try {
    figures();
  } catch (...) {
  }
}

}  // namespace trainscope

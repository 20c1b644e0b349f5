#include "dist/stall.h"

#include <fmt/format.h>

namespace trainscope {
namespace dist {

using Clock = std::chrono::steady_clock;

StallWatch::StallWatch(std::string run_id, double timeout_s, std::function<std::string()> telemetry_now,
                       std::function<void(const std::string&)> report)
    : run_id_(std::move(run_id)),
      timeout_(static_cast<int64_t>(timeout_s * 1000)),
      telemetry_now_(std::move(telemetry_now)),
      report_(std::move(report)) {
  thread_ = std::thread([this] { watch(); });
}

StallWatch::~StallWatch() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void StallWatch::step_begin(int64_t step) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    step_ = step;
    in_step_ = true;
    reported_ = false;
    since_ = Clock::now();
  }
  if (step == inject_step_)  // testing: a step that takes 2.5 timeouts
    std::this_thread::sleep_for(timeout_ * 5 / 2);
}

void StallWatch::step_end(int64_t step) {
  std::lock_guard<std::mutex> lk(mu_);
  if (reported_ && step == step_)
    notes_.back() += fmt::format("; it finished after {:.1f} s",
                                 std::chrono::duration<double>(Clock::now() - since_).count());
  in_step_ = false;
}

std::vector<std::string> StallWatch::notes() const {
  std::lock_guard<std::mutex> lk(mu_);
  return notes_;
}

void StallWatch::watch() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    cv_.wait_for(lk, std::chrono::milliseconds(250));
    if (stop_ || !in_step_ || reported_ || Clock::now() - since_ < timeout_) continue;
    reported_ = true;
    const int64_t step = step_;
    const size_t idx = notes_.size();
    notes_.emplace_back();  // step_end may append "it finished after" before the message is in
    lk.unlock();  // telemetry and printing happen outside the lock: the step may end meanwhile
    const std::string tel = telemetry_now_ ? telemetry_now_() : "";
    const std::string msg = fmt::format(
        "{}: {} stalled: no progress for {:.0f} s (--dist-timeout){}; a hung collective or model keeps it "
        "there (Ctrl-C stops the matrix; when the work does not return within --dist-timeout after it, the process "
        "exits, keeping the runs finished before: --resume runs the rest)",
        run_id_, what_.empty() ? fmt::format("step {}", step) : what_, static_cast<double>(timeout_.count()) / 1000.0,
        tel.empty() ? "" : "; telemetry of the last 5 s: " + tel);
    if (report_) report_(msg);
    lk.lock();
    notes_[idx] = msg + notes_[idx];
  }
}

}  // namespace dist
}  // namespace trainscope

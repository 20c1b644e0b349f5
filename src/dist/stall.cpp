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
  if (step == step_) close_stall_locked("finished");
  in_step_ = false;
}

void StallWatch::work_begin(std::string what) {
  std::lock_guard<std::mutex> lk(mu_);
  what_ = std::move(what);
  step_ = -1;
  in_step_ = true;
  reported_ = false;
  since_ = Clock::now();
}

void StallWatch::progress() {
  std::lock_guard<std::mutex> lk(mu_);
  close_stall_locked("went on");
  reported_ = false;
  since_ = Clock::now();
}

void StallWatch::work_end() {
  std::lock_guard<std::mutex> lk(mu_);
  close_stall_locked("finished");
  in_step_ = false;
  what_.clear();
}

void StallWatch::close_stall_locked(const char* how) {
  if (reported_ && in_step_)
    notes_.back() += fmt::format("; it {} after {:.1f} s", how, std::chrono::duration<double>(Clock::now() - since_).count());
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
    const std::string what = what_;  // work_end() may clear it once the lock is released
    const size_t idx = notes_.size();
    notes_.emplace_back();  // step_end may append "it finished after" before the message is in
    lk.unlock();  // telemetry and printing happen outside the lock: the step may end meanwhile
    const std::string tel = telemetry_now_ ? telemetry_now_() : "";
    const std::string msg = fmt::format(
        "{}: {} stalled: no progress for {:.0f} s (--dist-timeout){}; a hung collective or model keeps it "
        "there ({})",
        run_id_, what.empty() ? fmt::format("step {}", step) : what, static_cast<double>(timeout_.count()) / 1000.0,
        tel.empty() ? "" : "; telemetry of the last 5 s: " + tel, advice_);
    if (report_) report_(msg);
    lk.lock();
    notes_[idx] = msg + notes_[idx];
  }
}

}  // namespace dist
}  // namespace trainscope

#include "interrupt.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>

#include "commands.h"

namespace trainscope::cli {

namespace {

std::atomic<bool> g_stop{false};
std::atomic<const char*> g_message{""};

extern "C" void on_interrupt(int) {
  if (g_stop.exchange(true)) _exit(kExitInterrupted);  // second Ctrl-C: exit at once
  const char* m = g_message.load();
  ssize_t ignored = ::write(STDERR_FILENO, m, std::strlen(m));
  (void)ignored;
}

}  // namespace

const std::atomic<bool>& install_interrupt_handler(const char* message) {
  g_message = message;
  g_stop = false;
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  return g_stop;
}

StopDeadline::StopDeadline(const std::atomic<bool>& stop, double seconds, std::string message,
                           std::function<void()> before_exit)
    : message_(std::move(message)), before_exit_(std::move(before_exit)) {
  thread_ = std::thread([this, &stop, seconds] { watch(stop, seconds); });
}

StopDeadline::~StopDeadline() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void StopDeadline::watch(const std::atomic<bool>& stop, double seconds) {
  std::unique_lock<std::mutex> lk(mu_);
  while (!done_ && !stop.load()) cv_.wait_for(lk, std::chrono::milliseconds(100));
  if (done_) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  if (cv_.wait_until(lk, deadline, [this] { return done_; })) return;
  std::fputs(message_.c_str(), stderr);
  lk.unlock();
  run_before_exit();
  _exit(kExitInterrupted);
}

// before_exit_ on a thread of its own, waited for kBeforeExitSeconds at most (it may block on a
// device or a file system that hangs as well).
void StopDeadline::run_before_exit() {
  if (!before_exit_) return;
  auto finished = std::make_shared<std::atomic<bool>>(false);
  std::thread([f = before_exit_, finished] {
    try {
      f();
    } catch (...) {
    }
    finished->store(true);
  }).detach();
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(kBeforeExitSeconds);
  while (!finished->load() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::fflush(stdout);
  std::fflush(stderr);
}

void restore_interrupt_defaults() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

}  // namespace trainscope::cli

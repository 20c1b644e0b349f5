#include "interrupt.h"

#include <unistd.h>

#include <csignal>
#include <cstring>

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

void restore_interrupt_defaults() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

}  // namespace trainscope::cli

// The one Ctrl-C / SIGTERM policy of every sub-command (README.md#exit-status): the first signal
// sets the flag returned here and prints `message` ("finishing the current step ..."); the
// command then stops after the work in progress, keeps what was measured and exits 130. A second
// signal exits at once with 130.
#pragma once

#include <atomic>

namespace trainscope::cli {

/// Installs the handler for SIGINT and SIGTERM; `message` must outlive the command (a literal).
const std::atomic<bool>& install_interrupt_handler(const char* message);
/// Puts the default handlers back (the command is done).
void restore_interrupt_defaults();

}  // namespace trainscope::cli

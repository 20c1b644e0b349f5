// `trainscope run --nproc-per-node N`: this process becomes the launcher of N local ranks,
// like torchrun's agent (docs/distributed.md#launching).
#pragma once

#include <string>

#include "trainscope/config.h"

namespace trainscope {
namespace dist {

/// Hosts the rendezvous TCPStore on 127.0.0.1 (MASTER_PORT, or a free port), starts
/// m.dist.nproc_per_node copies of this executable with this process's arguments and the
/// torchrun variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
/// MASTER_PORT) plus TRAINSCOPE_LAUNCHER=1, and waits for them. A rank that dies (a signal, or
/// an exit status other than 0, 3 and 130) is written to the store ("exit/<rank>") so the others
/// name it; the others are killed when they have not exited 2 x dist.timeout_s + 10 s after
/// such a failure, or 5 s after rank 0 ended (its record is written then). Returns rank 0's exit status (6 when rank 0 itself died).
/// The ranks run in their own process group: each SIGINT/SIGTERM the launcher receives is
/// passed on to the ranks still running (they stop after the current step and write their
/// results, exit 130), so a Ctrl-C at the terminal reaches each rank once.
/// Throws Error(kDevice) before starting anything when GPU ranks outnumber the GPUs, and
/// Error(kInvalidArgument) naming MASTER_PORT when it is no port or busy.
int launch_local(const MatrixConfig& m);

}  // namespace dist
}  // namespace trainscope

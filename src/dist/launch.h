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
/// name it; once a rank has failed, or rank 0 has finished, the rest get dist.timeout_s + 10 s to
/// exit before they are killed. Returns rank 0's exit status (6 when rank 0 itself died).
/// Throws Error(kDevice) before starting anything when GPU ranks outnumber the GPUs.
int launch_local(const MatrixConfig& m);

}  // namespace dist
}  // namespace trainscope

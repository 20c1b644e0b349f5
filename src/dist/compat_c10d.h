// Every difference between the c10d (torch.distributed C++) APIs of the LibTorch versions
// trainscope builds against lives here: Debian's 1.13 (CPU, Gloo from libgloo-dev) and the
// PyTorch 2.x wheel (CUDA, NCCL; its wheel ships no Gloo headers).
//   1.13: ProcessGroupGloo derives from c10d::ProcessGroup; Options::create(timeout) needs a
//         device pushed into `devices`; no NCCL in the CPU build.
//   2.x:  ProcessGroupGloo and ProcessGroupNCCL derive from c10d::Backend;
//         ProcessGroupNCCL(store, rank, size, Options::create()) with `timeout`.
// Both: c10d::Work (wait, getFuture), TCPStore(host, TCPStoreOptions), PrefixStore,
// torch::autograd::FunctionPostHook::operator()(outputs, inputs).
#pragma once

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <c10/util/Logging.h>
#include <torch/version.h>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

#if __has_include(<gloo/algorithm.h>) && defined(USE_C10D_GLOO)
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#define TRAINSCOPE_HAVE_GLOO 1
#endif
#if defined(TRAINSCOPE_WITH_CUDA) && defined(USE_C10D_NCCL) && __has_include(<nccl.h>)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#define TRAINSCOPE_HAVE_NCCL 1
#endif

#include <chrono>
#include <string>

namespace trainscope {
namespace compat {

#if TORCH_VERSION_MAJOR >= 2
using CommBackend = c10d::Backend;  // what ProcessGroupGloo/NCCL derive from
#else
using CommBackend = c10d::ProcessGroup;
#endif

/// Gloo over TCP on the interface that `host` resolves to (127.0.0.1 for loopback runs).
inline c10::intrusive_ptr<CommBackend> make_gloo(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                 const std::string& host, std::chrono::milliseconds timeout) {
#ifdef TRAINSCOPE_HAVE_GLOO
  auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
  opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(host));
  opts->threads = 2;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, opts);
#else
  (void)store, (void)rank, (void)size, (void)host, (void)timeout;
  return {};
#endif
}

/// Shuts the process group down before the process exits: NCCL's communicators must be
/// destroyed while the CUDA driver is still up (a ProcessGroupNCCL left to static destruction
/// aborts the process with "driver shutting down", seen with torchrun on the H200 host). What
/// Python's destroy_process_group does; nothing for Gloo.
inline void shutdown_group(const c10::intrusive_ptr<CommBackend>& pg) {
#ifdef TRAINSCOPE_HAVE_NCCL
  if (auto* nccl = dynamic_cast<c10d::ProcessGroupNCCL*>(pg.get())) nccl->shutdown();
#else
  (void)pg;
#endif
}

/// NCCL (2.x CUDA builds only). The collectives run on NCCL's own stream; Work::wait makes the
/// current stream wait (it does not block the host).
inline c10::intrusive_ptr<CommBackend> make_nccl(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                 std::chrono::milliseconds timeout) {
#ifdef TRAINSCOPE_HAVE_NCCL
  auto opts = c10d::ProcessGroupNCCL::Options::create();
  opts->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, opts);
#else
  (void)store, (void)rank, (void)size, (void)timeout;
  return {};
#endif
}

/// While alive, c10's log level is FATAL, so c10d's own warnings (TCPStore's connection retries,
/// which PyTorch 2.x prints with C++ stack frames, "frame #0: c10::Error::Error...") stay off
/// the console; trainscope reports the failure itself, in one message naming the input. c10d
/// logs through c10's logger (torch/csrc/distributed/c10d/logging.cpp, isLogLevelEnabled reads
/// FLAGS_caffe2_log_level) on both LibTorch versions; TORCH_CPP_LOG_LEVEL sets the same flag.
class QuietC10dLog {
 public:
  QuietC10dLog() : saved_(FLAGS_caffe2_log_level) { FLAGS_caffe2_log_level = 3; }  // 3: FATAL
  ~QuietC10dLog() { FLAGS_caffe2_log_level = saved_; }
  QuietC10dLog(const QuietC10dLog&) = delete;
  QuietC10dLog& operator=(const QuietC10dLog&) = delete;

 private:
  decltype(FLAGS_caffe2_log_level) saved_;
};

/// TCPStore options: a server (isServer) or a client; port 0 picks a free port (server only).
inline c10d::TCPStoreOptions tcp_store_options(int port, bool server, int world, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<std::uint16_t>(port);
  o.isServer = server;
  o.numWorkers = {};         // no join barrier: a launcher-hosted store sees ranks come and go
  o.waitWorkers = false;
  o.timeout = timeout;
  (void)world;
  return o;
}

}  // namespace compat
}  // namespace trainscope

#include "dist/launch.h"

#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include "common/text.h"
#include "dist/compat_c10d.h"
#include "dist/env.h"
#include "dist/context.h"
#include "dist/rank.h"
#include "train/device.h"
#include "trainscope/cpu_budget.h"
#include "trainscope/error.h"
#include "trainscope/variants.h"

namespace trainscope {
namespace dist {

namespace {

using Clock = std::chrono::steady_clock;

// SIGINT/SIGTERM the launcher received and has not yet passed on to its ranks (supervise does).
std::atomic<int> g_received{0};
std::atomic<int> g_last_signal{0};

extern "C" void on_launcher_signal(int sig) {
  g_last_signal = sig;
  ++g_received;
}

// This process's own arguments (/proc/self/cmdline: NUL-separated).
std::vector<std::string> own_arguments() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  size_t start = 0;
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i] == '\0') args.push_back(all.substr(start, i - start)), start = i + 1;
  return args;
}

// The environment of rank `rank`: this process's, with the torchrun variables set.
std::vector<std::string> rank_environment(int rank, int world, int port) {
  std::vector<std::string> env;
  const std::vector<std::pair<std::string, std::string>> set = {
      {"RANK", std::to_string(rank)},        {"WORLD_SIZE", std::to_string(world)},
      {"LOCAL_RANK", std::to_string(rank)},  {"LOCAL_WORLD_SIZE", std::to_string(world)},
      {"MASTER_ADDR", "127.0.0.1"},          {"MASTER_PORT", std::to_string(port)},
      {"TRAINSCOPE_LAUNCHER", "1"}};
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    bool replaced = false;
    for (const auto& [k, v] : set) replaced = replaced || kv.rfind(k + "=", 0) == 0;
    if (!replaced) env.push_back(kv);
  }
  for (const auto& [k, v] : set) env.push_back(k + "=" + v);
  return env;
}

// Everything is built before fork: the child only calls async-signal-safe functions.
pid_t start_rank(int rank, int world, int port, const std::vector<std::string>& args) {
  const auto env = rank_environment(rank, world, port);
  std::vector<char*> argv, envp;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) throw_error(ErrorKind::kIo, fmt::format("cannot start rank {}: fork failed: {}", rank, std::strerror(errno)));
  if (pid > 0) return pid;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the ranks die with the launcher
  ::setpgid(0, 0);  // Ctrl-C and `kill -- -<group>` reach the launcher alone; it passes them on once
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  ::execve("/proc/self/exe", argv.data(), envp.data());
  ::_exit(127);
}

// "exited with status 1", "was killed by signal 9 (Killed)"; "" for a clean end (0, 3, 130).
std::string abnormal_end(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  const int code = WEXITSTATUS(status);
  return code == 0 || code == 3 || code == 130 ? "" : fmt::format("exited with status {}", code);
}

struct Ranks {
  std::vector<pid_t> pids;
  std::vector<int> status;
  std::vector<bool> done;
  int rank_of(pid_t p) const {
    for (size_t i = 0; i < pids.size(); ++i)
      if (pids[i] == p) return static_cast<int>(i);
    return -1;
  }
};

// Passes each SIGINT/SIGTERM received since the last call on to the ranks still running.
void forward_signals(const Ranks& r, int& forwarded) {
  for (; forwarded < g_received.load(); ++forwarded) {
    const int sig = g_last_signal.load();
    fmt::print(stderr, "trainscope: {} received; passing it on to the ranks (they finish the current step and keep "
                       "what was measured; a second signal stops them at once)\n",
               sig == SIGTERM ? "SIGTERM" : "SIGINT");
    for (size_t k = 0; k < r.pids.size(); ++k)
      if (!r.done[k]) ::kill(r.pids[k], sig);
  }
}

// Waits for every rank; writes abnormal ends to the store; kills stragglers (launch.h says when).
void supervise(Ranks& r, c10d::Store& store, std::chrono::milliseconds timeout) {
  Clock::time_point deadline = Clock::time_point::max();  // set by the first failure or rank 0's end
  size_t left = r.pids.size();
  int forwarded = 0;
  while (left > 0) {
    forward_signals(r, forwarded);
    int st = 0;
    pid_t p = ::waitpid(-1, &st, WNOHANG);
    if (p > 0) {
      int k = r.rank_of(p);
      if (k < 0) continue;
      r.done[k] = true, r.status[k] = st, --left;
      auto why = abnormal_end(st);
      if (!why.empty()) {
        std::string v = why;
        store.set(fmt::format("trainscope/exit/{}", k), std::vector<uint8_t>(v.begin(), v.end()));
        fmt::print(stderr, "trainscope: rank {} {}\n", k, why);
      }
      // After a failure the others need up to two timeouts (the collective, then rank 0's gather);
      // after rank 0's end (the record is written) a few seconds.
      if (!why.empty()) deadline = std::min(deadline, Clock::now() + 2 * timeout + std::chrono::seconds(10));
      if (k == 0) deadline = std::min(deadline, Clock::now() + std::chrono::seconds(5));
      continue;
    }
    if (Clock::now() > deadline) {
      for (size_t k = 0; k < r.pids.size(); ++k)
        if (!r.done[k]) {
          fmt::print(stderr, "trainscope: rank {} did not exit after rank 0's end or a failure; killing it\n", k);
          ::kill(r.pids[k], SIGKILL);
        }
      deadline = Clock::time_point::max();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// The rendezvous store on 127.0.0.1:MASTER_PORT (a free port when unset); a port that is
// busy or no port is bad input naming MASTER_PORT.
c10::intrusive_ptr<c10d::TCPStore> host_store(int world, std::chrono::milliseconds timeout) {
  const char* port_env = std::getenv("MASTER_PORT");
  const std::string given = port_env ? port_env : "";
  char* end = nullptr;
  const long want = given.empty() ? 0 : std::strtol(given.c_str(), &end, 10);
  if (!given.empty() && (*end != '\0' || want < 1 || want > 65535))
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("MASTER_PORT='{}' is not a TCP port (1..65535); set a free port, or unset MASTER_PORT to "
                            "let trainscope pick one",
                            given));
  try {
    const compat::QuietC10dLog quiet;  // c10d's retry warnings: the error below says it once
    return c10::make_intrusive<c10d::TCPStore>(
        "127.0.0.1", compat::tcp_store_options(static_cast<int>(want), true, world, timeout));
  } catch (const std::exception& ex) {
    std::string why = error_first_line(ex);
    while (!why.empty() && (why.back() == '.' || why.back() == ' ')) why.pop_back();
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("the launcher cannot host the rendezvous store at 127.0.0.1 MASTER_PORT={}: {}; the port "
                            "is probably busy (another program listens on it): set MASTER_PORT to a free port, or "
                            "unset MASTER_PORT to let trainscope pick one",
                            want, why));
  }
}

}  // namespace

// CPU ranks whose threads together outnumber the usable CPUs (more ranks than CPUs with
// --threads 0, an explicit --threads per rank, or a threadsN variant, which is per rank too):
// each rank's steps wait for cores.
static void warn_if_ranks_oversubscribe(int world, const MatrixConfig& m) {
  const CpuBudget b = read_cpu_budget();
  DistEnv env;  // what each rank of this launcher will compute for --threads 0
  env.launcher = "trainscope";
  env.local_world_size = world;
  int64_t per_rank = m.train.threads > 0 ? m.train.threads : default_rank_threads(env, b);
  for (const auto& v : m.train.variants) per_rank = std::max(per_rank, parse_variant(v, "--variants").threads);
  if (per_rank * world <= b.usable) return;
  fmt::print(stderr,
             "trainscope: warning: {} ranks x {} = {} threads on {} ({}): the ranks oversubscribe the cores and each "
             "step waits for them; use fewer ranks or a smaller --threads, or give the job more CPUs\n",
             world, count_of(per_rank, "intra-op thread"), per_rank * world, count_of(b.usable, "usable CPU"),
             b.limit_words());
}

// Bytes of memory available to new processes (/proc/meminfo MemAvailable); 0 when unknown.
static int64_t available_memory_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (f >> key >> kb) {
    std::getline(f, unit);
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

// Ranks this machine cannot hold are refused before one starts (the store errors they end in
// name neither the flag nor the cause). Each rank is a copy of this process, so its resident
// memory now, before any data is loaded, is the least a rank needs; a CPU rank with less than an
// eighth of a usable CPU measures waiting, not training.
static void check_ranks_fit(int world, bool gpu) {
  constexpr int64_t kRanksPerCpu = 8;
  const int64_t cpus = usable_cpus();
  if (!gpu && world > kRanksPerCpu * cpus)
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("--nproc-per-node {} starts {} CPU ranks on {}: each would get less than an eighth of a "
                            "CPU; use --nproc-per-node <= {} (at most one rank per usable CPU measures well)",
                            world, world, count_of(cpus, "usable CPU"), cpus));
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  const int64_t rank_bytes = resident * ::sysconf(_SC_PAGESIZE), available = available_memory_bytes();
  if (rank_bytes > 0 && available > 0 && rank_bytes * world > available)
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("--nproc-per-node {} starts {} copies of this process, each needing at least {:.0f} MiB "
                            "(its memory before any data), and {:.0f} MiB are available; use --nproc-per-node <= {}",
                            world, world, rank_bytes / 1048576.0, available / 1048576.0,
                            std::max<int64_t>(1, available / rank_bytes)));
}

int launch_local(const MatrixConfig& m) {
  const int world = static_cast<int>(m.dist.nproc_per_node);
  bool gpu = !m.devices.empty() && m.devices.front().rfind("cuda", 0) == 0;
  if (m.devices.empty()) gpu = visible_devices().size() > 1;
  const int gpus = static_cast<int>(visible_devices().size()) - 1;
  if (gpu && world > gpus)
    throw_error(ErrorKind::kDevice, fmt::format("--nproc-per-node {} asks for more GPU ranks than this host's {} "
                                                "GPU(s); use --nproc-per-node <= {} (one GPU per rank)",
                                                world, gpus, gpus));
  if (!m.run_name.empty())  // refused once, here, rather than by every rank
    if (auto refusal = run_folder_refusal(m, m.run_name); !refusal.empty())
      throw_error(ErrorKind::kInvalidArgument, refusal);
  check_ranks_fit(world, gpu);
  if (!gpu) warn_if_ranks_oversubscribe(world, m);
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(m.dist.timeout_s * 1000));
  auto store = host_store(world, timeout);
  const int port = store->getPort();
  g_received = 0;
  ::signal(SIGINT, on_launcher_signal);  // passed on to the ranks (supervise); they write their results
  ::signal(SIGTERM, on_launcher_signal);
  Ranks r;
  const auto args = own_arguments();
  for (int k = 0; k < world; ++k) r.pids.push_back(start_rank(k, world, port, args));
  r.status.assign(world, 0);
  r.done.assign(world, false);
  supervise(r, *store, timeout);
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  const int st0 = r.status[0];
  return WIFEXITED(st0) ? WEXITSTATUS(st0) : 6;
}

}  // namespace dist
}  // namespace trainscope

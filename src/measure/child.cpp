// The child process of `trainscope measure` (child.h): fork + execve with an environment built
// before the fork (the telemetry thread runs, so the child calls only async-signal-safe
// functions), one poll loop over its stdout, stderr and step pipe, signals forwarded.
#include "measure/child.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>

#include "trainscope/error.h"

extern char** environ;

namespace trainscope::measure {
namespace {

volatile sig_atomic_t g_child_pid = 0;

// A signal sent to trainscope by a process goes on to the program. A terminal's (si_code > 0,
// SI_KERNEL) reached the program already: it shares our process group.
void forward_signal(int sig, siginfo_t* info, void*) {
  if (info && info->si_code > 0) return;
  if (g_child_pid > 0) kill(static_cast<pid_t>(g_child_pid), sig);
}

class SignalForwarding {
 public:
  SignalForwarding() {
    struct sigaction sa {};
    sa.sa_sigaction = forward_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &sa, &old_[i]);
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;  // an echo to a closed stdout must not kill us
    sigaction(SIGPIPE, &ign, &old_pipe_);
  }
  ~SignalForwarding() {
    g_child_pid = 0;
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &old_[i], nullptr);
    sigaction(SIGPIPE, &old_pipe_, nullptr);
  }
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;

 private:
  static constexpr std::array<int, 4> kSignals{SIGINT, SIGTERM, SIGHUP, SIGQUIT};
  std::array<struct sigaction, 4> old_{};
  struct sigaction old_pipe_ {};
};

struct Pipe {
  int r = -1, w = -1;
  Pipe() {
    int fd[2];
    if (pipe2(fd, O_CLOEXEC) != 0) throw_error(ErrorKind::kIo, fmt::format("cannot create a pipe: {}", std::strerror(errno)));
    r = fd[0], w = fd[1];
  }
  ~Pipe() { close_both(); }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  void close_w() {
    if (w >= 0) ::close(w), w = -1;
  }
  void close_both() {
    close_w();
    if (r >= 0) ::close(r), r = -1;
  }
};

int open_output(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw_error(ErrorKind::kIo, fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  return fd;
}

// Our environment with `extra` ("NAME=value") replacing or adding entries.
std::vector<std::string> child_environment(const std::vector<std::string>& extra) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string s = *e;
    env[s.substr(0, s.find('='))] = s;
  }
  for (const std::string& s : extra) env[s.substr(0, s.find('='))] = s;
  std::vector<std::string> out;
  for (auto& [k, v] : env) out.push_back(v);
  return out;
}

void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // our stdout gone or a full disk: the program goes on
    p += w, n -= static_cast<size_t>(w);
  }
}

[[noreturn]] void exec_child(const ChildSpec& spec, std::vector<char*>& argv, std::vector<char*>& envp, int out_w,
                             int err_w, int step_w, int fail_w) {
  ::dup2(out_w, 1);
  ::dup2(err_w, 2);
  if (step_w >= 0) ::fcntl(step_w, F_SETFD, 0);  // the one pipe the program inherits
  ::execve(spec.argv[0].c_str(), argv.data(), envp.data());
  const int e = errno;
  (void)!::write(fail_w, &e, sizeof e);
  ::_exit(127);
}

}  // namespace

std::string resolve_command(const std::string& name) {
  if (name.empty()) throw_error(ErrorKind::kInvalidArgument, "measure: no command given; write it after --: trainscope measure -- python3 train.py");
  auto runnable = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) {
    if (!runnable(name))
      throw_error(ErrorKind::kInvalidArgument, fmt::format("measure: '{}' is not an executable file", name));
    return name;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t b = 0, e = 0; b <= dirs.size(); b = e + 1) {
    e = std::min(dirs.find(':', b), dirs.size());
    const std::string dir = e > b ? dirs.substr(b, e - b) : ".";
    if (runnable(dir + "/" + name)) return dir + "/" + name;
  }
  throw_error(ErrorKind::kInvalidArgument, fmt::format("measure: command '{}' not found on PATH ({})", name, dirs));
}

namespace {

struct Running {
  pid_t pid = -1;
  Pipe out, err, steps, fail;
};

// Forks and execs; the parent's write ends are closed. An exec failure comes back on `fail`.
void spawn(const ChildSpec& spec, Running& run) {
  std::vector<std::string> extra = spec.env;
  if (spec.step_pipe) extra.push_back(fmt::format("TRAINSCOPE_STEP_FD={}", run.steps.w));
  std::vector<std::string> env = child_environment(extra);
  std::vector<char*> argv, envp;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  run.pid = ::fork();
  if (run.pid < 0) throw_error(ErrorKind::kIo, fmt::format("cannot start '{}': fork: {}", spec.argv[0], std::strerror(errno)));
  if (run.pid == 0) exec_child(spec, argv, envp, run.out.w, run.err.w, spec.step_pipe ? run.steps.w : -1, run.fail.w);
  g_child_pid = run.pid;
  run.out.close_w(), run.err.close_w(), run.steps.close_w(), run.fail.close_w();
}

// Copies what is readable on `fd` to `file` (and `echo`); false at end of file.
bool pump(int fd, int file, int echo, const std::function<void(const std::string&)>& sink) {
  char buf[1 << 16];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  if (file >= 0) write_all(file, buf, static_cast<size_t>(n));
  if (echo >= 0) write_all(echo, buf, static_cast<size_t>(n));
  if (sink) sink(std::string(buf, static_cast<size_t>(n)));
  return true;
}

ChildExit exit_of(int status) {
  ChildExit x;
  if (WIFSIGNALED(status)) x.signal = WTERMSIG(status), x.exit_code = 128 + WTERMSIG(status);
  else x.exit_code = WEXITSTATUS(status);
  return x;
}

}  // namespace

ChildExit run_child(const ChildSpec& spec, const ChildEvents& events) {
  using clock = std::chrono::steady_clock;
  const int out_file = open_output(spec.stdout_path), err_file = open_output(spec.stderr_path);
  SignalForwarding forwarding;
  Running run;
  spawn(spec, run);
  int exec_errno = 0;
  const bool exec_failed = ::read(run.fail.r, &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  if (!exec_failed && events.on_start) events.on_start(run.pid);
  std::array<pollfd, 3> fds{{{run.out.r, POLLIN, 0}, {run.err.r, POLLIN, 0}, {run.steps.r, POLLIN, 0}}};
  const std::array<int, 3> files{out_file, err_file, -1}, echoes{spec.echo ? 1 : -1, spec.echo ? 2 : -1, -1};
  std::optional<int> status;
  std::optional<clock::time_point> exited_at, term_at;
  auto last_tick = clock::now();
  while (true) {
    int open_fds = 0;
    for (auto& p : fds) open_fds += p.fd >= 0;
    if (open_fds == 0 && status) break;
    if (exited_at && clock::now() - *exited_at > std::chrono::seconds(2)) break;  // a grandchild holds a pipe
    ::poll(fds.data(), fds.size(), events.tick_ms);
    for (size_t i = 0; i < fds.size(); ++i)
      if (fds[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
          !pump(fds[i].fd, files[i], echoes[i], i == 2 ? events.on_steps : nullptr))
        fds[i].fd = -1;
    if (!status) {
      int st = 0;
      if (::waitpid(run.pid, &st, WNOHANG) == run.pid) {
        status = st, exited_at = clock::now();
        g_child_pid = 0;
      }
    }
    if (clock::now() - last_tick >= std::chrono::milliseconds(events.tick_ms)) {
      last_tick = clock::now();
      if (events.on_tick) events.on_tick();
      if (!status && !term_at && events.should_stop && events.should_stop()) ::kill(run.pid, SIGTERM), term_at = clock::now();
      if (!status && term_at && clock::now() - *term_at > std::chrono::seconds(5)) ::kill(run.pid, SIGKILL);
    }
  }
  if (!status) {
    int st = 0;
    ::waitpid(run.pid, &st, 0);
    status = st;
  }
  ::close(out_file), ::close(err_file);
  ChildExit x = exit_of(*status);
  if (exec_failed) x.exec_error = std::strerror(exec_errno);
  return x;
}

}  // namespace trainscope::measure

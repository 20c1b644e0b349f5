// Data-parallel training end to end (docs/distributed.md): the built binary on loopback Gloo
// ranks. Each test trains a tiny synthetic mlp for a few steps with one intra-op thread.
#include <gtest/gtest.h>

#include "trainscope/fs.h"
#include <nlohmann/json.hpp>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <unistd.h>

#include "dist/compat_c10d.h"
#include "test_helpers.h"
#include "trainscope/cpu_budget.h"
#include "trainscope/provenance.h"

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>

#include <fstream>
#include <map>
#include <sstream>
#include <thread>


// Loopback CPU ranks need c10d's Gloo backend, which a LibTorch without Gloo headers (the PyTorch
// wheel's; docs/distributed.md#building) cannot build: such tests are skipped there, with why.
#ifdef TRAINSCOPE_HAVE_GLOO
#define REQUIRE_GLOO() (void)0
#else
#define REQUIRE_GLOO() \
  GTEST_SKIP() << "this LibTorch has no c10d Gloo backend (docs/distributed.md#building): CPU ranks cannot train"
#endif

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

// Starts the binary with `args` and extra environment variables; output goes to `log`.
pid_t start(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
            const std::string& log) {
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = fopen(log.c_str(), "w");
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    trainscope::test::exec_trainscope(args, fileno(f), fileno(f));
  }
  return pid;
}

int finish(pid_t pid) {
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string root() {
  static const std::string r = [] {
    auto d = ::testing::TempDir() + "dist_e2e_" + std::to_string(getpid());
    trainscope::remove_tree(d);
    fs::create_directories(d);
    return d;
  }();
  return r;
}

// A tiny deterministic matrix: synthetic data, mlp, SGD, 6 steps, evaluation after them.
std::vector<std::string> matrix_args(const std::string& name, int64_t batch, std::vector<std::string> extra = {}) {
  std::vector<std::string> a{"run", "--devices", "cpu", "--models", "mlp", "--batch-sizes", std::to_string(batch),
                             "--data-format", "synthetic", "--limit-train", "512", "--limit-test", "256",
                             "--epochs", "1", "--max-steps", "6", "--warmup-steps", "2", "--optimizer", "sgd",
                             "--lr", "0.05", "--threads", "1", "--no-telemetry", "--no-profile", "--no-inference",
                             "--no-progress", "--out", root(), "--name", name};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

json run_record(const std::string& name) {
  auto j = json::parse(slurp(root() + "/" + name + "/results.json"));
  return j.at("runs").at(0);
}

// One rank at batch 32 (the reference, computed once per test process).
const json& single_rank() {
  static const json r = [] {
    const std::string log = root() + "/single.log";
    EXPECT_EQ(finish(start(matrix_args("single", 32), {}, log)), 0) << slurp(log);
    return run_record("single");
  }();
  return r;
}

// The test-set loss after the same 6 steps: all ranks held the same averaged gradients.
void expect_same_curve(const json& ddp, const json& one) {
  const double a = ddp.at("epochs").at(0).at("test_loss").get<double>();
  const double b = one.at("epochs").at(0).at("test_loss").get<double>();
  EXPECT_NEAR(a, b, 1e-4 * std::abs(b)) << "test loss after 6 steps: data-parallel " << a << ", one rank " << b;
  EXPECT_EQ(ddp.at("test_accuracy_pct"), one.at("test_accuracy_pct"));
  EXPECT_EQ(ddp.at("steps_completed"), one.at("steps_completed"));
}

// finish(), given up after `seconds` (the process is killed then): -2 for a process that hung.
int finish_within(pid_t pid, int seconds) {
  for (int i = 0; i < seconds * 10; ++i) {
    int st = 0;
    if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    ::usleep(100000);
  }
  ::kill(pid, SIGKILL);
  finish(pid);
  return -2;
}

// A socket listening on 127.0.0.1 that accepts connections (the kernel's backlog) and never
// answers unless a test serves `fd` itself; its port is `port`. Closed when the object goes.
struct SilentListener {
  int fd = -1, port = 0;
  SilentListener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(::listen(fd, 16), 0);
    socklen_t len = sizeof(a);
    EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
    port = ntohs(a.sin_port);
  }
  ~SilentListener() { ::close(fd); }
};

int free_port() {
  c10d::TCPStoreOptions o;
  o.port = 0;
  o.isServer = true;
  o.waitWorkers = false;
  c10d::TCPStore probe("127.0.0.1", o);
  return probe.getPort();  // closed again when probe goes; a race with other programs is unlikely
}

// The language-model pair of the tests below: a corpus of two files of 120 lines (`line` and
// i % `period`) under root()/TAG_corpus, then gpt-mini (1 layer, width 32) trained 6 steps by
// one process at batch 8 (run TAG_one) and by the data-parallel job `extra` at `batch` (run
// TAG_two); their records in `one` and `two`.
void train_lm_alone_and_data_parallel(const std::string& tag, const std::string& line, int period, int64_t batch,
                                      const std::vector<std::string>& extra, json& one, json& two) {
  const std::string corpus = root() + "/" + tag + "_corpus";
  fs::create_directories(corpus);
  for (int f = 0; f < 2; ++f) {
    std::ofstream o(corpus + "/part" + std::to_string(f) + ".txt");
    for (int i = 0; i < 120; ++i) o << line << i % period << ".\n";
  }
  auto lm_args = [&](const std::string& name, int64_t b, const std::vector<std::string>& more) {
    std::vector<std::string> a{"run", "--devices", "cpu", "--models", "gpt-mini", "--lm-layers", "1", "--lm-width",
                               "32", "--lm-heads", "2", "--data-format", "text", "--data", corpus, "--seq-len", "16",
                               "--batch-sizes", std::to_string(b), "--limit-train", "64", "--eval-windows", "8",
                               "--epochs", "1", "--max-steps", "6", "--warmup-steps", "2", "--optimizer", "sgd",
                               "--lr", "0.05", "--threads", "1", "--no-telemetry", "--no-profile", "--no-inference",
                               "--no-progress", "--out", root(), "--name", name};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const std::string one_log = root() + "/" + tag + "_one.log", two_log = root() + "/" + tag + "_two.log";
  ASSERT_EQ(finish(start(lm_args(tag + "_one", 8, {}), {}, one_log)), 0) << slurp(one_log);
  ASSERT_EQ(finish(start(lm_args(tag + "_two", batch, extra), {}, two_log)), 0) << slurp(two_log);
  one = run_record(tag + "_one");
  two = run_record(tag + "_two");
}

}  // namespace

TEST(DistE2E, TwoRanksTrainLikeOneRankWithTheCombinedBatch) {
  REQUIRE_GLOO();
  const std::string base_log = root() + "/single16.log";  // the scaling baseline: one process, batch 16
  ASSERT_EQ(finish(start(matrix_args("single16", 16), {}, base_log)), 0) << slurp(base_log);
  const std::string log = root() + "/two.log";
  ASSERT_EQ(finish(start(matrix_args("two", 16, {"--nproc-per-node", "2"}), {}, log)), 0) << slurp(log);
  const json r = run_record("two");
  expect_same_curve(r, single_rank());
  EXPECT_NE(slurp(log).find("samples/s, epoch and times are rank 0's"), std::string::npos) << slurp(log);
  EXPECT_EQ(r.at("world_size"), 2);
  const json& d = r.at("distributed");
  EXPECT_EQ(d.at("backend"), "gloo");
  EXPECT_EQ(d.at("launcher"), "trainscope");
  EXPECT_EQ(d.at("shard_samples"), 256);
  ASSERT_EQ(d.at("ranks").size(), 2u);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(d.at("ranks").at(k).at("rank"), k);
    EXPECT_EQ(d.at("ranks").at(k).at("status"), "ok");
    EXPECT_GT(d.at("ranks").at(k).at("comm_ms").get<double>(), 0.0);
  }
  EXPECT_TRUE(d.at("step_time_imbalance").is_number());
  EXPECT_TRUE(d.at("comm_share_pct").is_number());
  EXPECT_TRUE(d.at("scaling_efficiency_pct").is_number());
  EXPECT_NE(d.at("scaling_baseline").get<std::string>().find("single16: cpu-mlp-b16-r0"), std::string::npos)
      << d.at("scaling_baseline");
  // One results folder: rank 1 writes only under ranks/rank1.
  EXPECT_TRUE(fs::exists(root() + "/two/ranks/rank1/results.json"));
  EXPECT_FALSE(fs::exists(root() + "/two/ranks/rank0"));
}

TEST(DistE2E, FourRanksTrainLikeOneRankWithTheCombinedBatch) {
  REQUIRE_GLOO();
  const std::string log = root() + "/four.log";
  ASSERT_EQ(finish(start(matrix_args("four", 8, {"--nproc-per-node", "4", "--bucket-mb", "0.01"}), {}, log)), 0)
      << slurp(log);
  const json r = run_record("four");
  expect_same_curve(r, single_rank());
  EXPECT_EQ(r.at("distributed").at("ranks").size(), 4u);
  EXPECT_GT(r.at("distributed").at("buckets").get<int>(), 1) << "a 10 kB cap splits the mlp's gradients";
  // 4 ranks x 1 thread: the launcher warns exactly when that outnumbers the usable CPUs
  const bool over = trainscope::usable_cpus() < 4;
  EXPECT_EQ(slurp(log).find("4 ranks x 1 intra-op thread = 4 threads on ") != std::string::npos, over) << slurp(log);
}

// A threadsN variant is each rank's count: the launcher counts it among the ranks' threads, and
// each rank's record holds it.
TEST(DistE2E, ThreadsVariantIsPerRankAndCountedByTheLauncher) {
  REQUIRE_GLOO();
  const std::string log = root() + "/thr.log";
  ASSERT_EQ(finish(start(matrix_args("thr", 16, {"--nproc-per-node", "2", "--variants", "threads4"}), {}, log)), 0)
      << slurp(log);
  const bool over = trainscope::usable_cpus() < 8;
  EXPECT_EQ(slurp(log).find("2 ranks x 4 intra-op threads = 8 threads on ") != std::string::npos, over) << slurp(log);
  EXPECT_EQ(run_record("thr").at("intra_op_threads").get<int64_t>(), 4);
}

// torchrun's contract: its agent hosts the TCPStore; every rank is a client under
// "/worker/attempt_<restart count>".
TEST(DistE2E, TorchrunEnvironmentWithAgentStore) {
  REQUIRE_GLOO();
  const int port = free_port();
  c10d::TCPStoreOptions o;
  o.port = static_cast<std::uint16_t>(port);
  o.isServer = true;
  o.waitWorkers = false;
  c10d::TCPStore agent("127.0.0.1", o);
  std::vector<pid_t> ranks;
  for (int k = 0; k < 2; ++k)
    ranks.push_back(start(matrix_args("torchrun", 16),
                          {{"RANK", std::to_string(k)}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", std::to_string(k)},
                           {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(port)},
                           {"TORCHELASTIC_RUN_ID", "test"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                           {"TORCHELASTIC_RESTART_COUNT", "0"}},
                          root() + "/torchrun" + std::to_string(k) + ".log"));
  for (int k = 0; k < 2; ++k) EXPECT_EQ(finish(ranks[k]), 0) << slurp(root() + "/torchrun" + std::to_string(k) + ".log");
  EXPECT_TRUE(agent.check({"/worker/attempt_0/trainscope/run_name"})) << "the ranks used the agent's store and prefix";
  const json r = run_record("torchrun");
  EXPECT_EQ(r.at("distributed").at("launcher"), "torchrun");
  EXPECT_EQ(r.at("distributed").at("ranks").size(), 2u);
  expect_same_curve(r, single_rank());
}

TEST(DistE2E, AKilledRankStopsTheOthersWithAnErrorNamingIt) {
  REQUIRE_GLOO();
  const std::string log = root() + "/killed.log";
  const int rc = finish(start(matrix_args("killed", 16, {"--nproc-per-node", "2", "--dist-timeout", "10",
                                                         "--inject-fault-rank", "1", "--inject-fault-step", "3"}),
                              {}, log));
  EXPECT_EQ(rc, 3) << slurp(log);  // some runs failed; results written
  const json r = run_record("killed");
  EXPECT_EQ(r.at("status"), "failed");
  EXPECT_EQ(r.at("error_kind"), "distributed");
  const std::string why = r.at("failure_reason");
  EXPECT_NE(why.find("rank 1 was killed by signal 9"), std::string::npos) << why;
  EXPECT_EQ(r.at("steps_completed"), 3) << "what rank 0 measured is kept";
  EXPECT_EQ(r.at("distributed").at("ranks").at(1).at("status"), "missing");
}

TEST(DistE2E, AHungRankIsNamedAfterTheTimeout) {
  REQUIRE_GLOO();
  const std::string log = root() + "/hung.log";
  const int rc = finish(start(matrix_args("hung", 16, {"--nproc-per-node", "2", "--dist-timeout", "3",
                                                       "--inject-fault-rank", "1", "--inject-fault-step", "3",
                                                       "--inject-fault", "hang"}),
                              {}, log));
  EXPECT_EQ(rc, 3) << slurp(log);
  const json r = run_record("hung");
  EXPECT_EQ(r.at("status"), "failed");
  const std::string why = r.at("failure_reason");
  EXPECT_NE(why.find("rank 1 "), std::string::npos) << why;
  EXPECT_NE(why.find("stopped making progress"), std::string::npos) << why;
}

TEST(DistE2E, RanksWithDifferentSettingsAreRefusedBeforeTraining) {
  REQUIRE_GLOO();
  const int port = free_port();
  std::vector<pid_t> ranks;
  for (int k = 0; k < 2; ++k)
    ranks.push_back(start(matrix_args("differ", 16, {"--seed", k == 0 ? "1" : "2", "--dist-timeout", "20"}),
                          {{"RANK", std::to_string(k)}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"},
                           {"MASTER_PORT", std::to_string(port)}},
                          root() + "/differ" + std::to_string(k) + ".log"));
  for (int k = 0; k < 2; ++k) {
    const std::string out = slurp(root() + "/differ" + std::to_string(k) + ".log");
    EXPECT_EQ(finish(ranks[k]), 2) << out;
  }
  const std::string out = slurp(root() + "/differ1.log");
  EXPECT_NE(out.find("rank 1's settings differ from rank 0's (first at 'train.seed')"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(root() + "/differ/results.json"));
}

// Found by a walkthrough: a reused run folder was refused by every rank (the message twice, then
// each rank's exit); the launcher now refuses it once, before any rank starts.
TEST(DistE2E, TheLauncherRefusesAFolderWithResultsOnceBeforeStartingRanks) {
  fs::create_directories(root() + "/taken");
  std::ofstream(root() + "/taken/results.json") << "{}\n";
  const std::string log = root() + "/taken.log";
  const int rc = finish(start(matrix_args("taken", 16, {"--nproc-per-node", "2"}), {}, log));
  const std::string out = slurp(log);
  EXPECT_EQ(rc, 2) << out;
  const auto first = out.find("already holds results");
  ASSERT_NE(first, std::string::npos) << out;
  EXPECT_EQ(out.find("already holds results", first + 1), std::string::npos) << out;  // once
  EXPECT_EQ(out.find("rank 0 exited"), std::string::npos) << out;                    // no rank started
}

// `--nproc-per-node 1024` on a small machine used to start 1024 processes and end in store
// errors naming neither the flag nor the cause: refused before any rank starts.
TEST(DistE2E, MoreRanksThanTheMachineHoldsAreRefusedBeforeOneStarts) {
  if (trainscope::usable_cpus() * 8 >= 1024) GTEST_SKIP() << "this host could hold 1024 CPU ranks";
  const std::string log = root() + "/many.log";
  const int rc = finish(start(matrix_args("many", 16, {"--nproc-per-node", "1024"}), {}, log));
  const std::string out = slurp(log);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("--nproc-per-node 1024 starts 1024 CPU ranks on"), std::string::npos) << out;
  EXPECT_NE(out.find("use --nproc-per-node <= "), std::string::npos) << out;
  EXPECT_EQ(out.find("rank 0 exited"), std::string::npos) << out;  // no rank started
}

TEST(DistE2E, AnUnreachableMasterIsBadInputNamingIt) {
  const std::string log = root() + "/unreachable.log";
  const int rc = finish(start(matrix_args("unreachable", 16, {"--dist-timeout", "2"}),
                              {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"},
                               {"MASTER_PORT", std::to_string(free_port())}},
                              log));
  EXPECT_EQ(rc, 2) << slurp(log);
  EXPECT_NE(slurp(log).find("MASTER_ADDR=127.0.0.1"), std::string::npos) << slurp(log);
}

// A port that accepts connections but answers as no c10d store (another service) is the same
// bad input, with the store's one-line reason and no C++ stack trace.
TEST(DistE2E, AMasterPortThatIsNotAStoreIsBadInputNamingIt) {
  const SilentListener listener;  // its socket; the thread below answers on it
  ASSERT_GE(listener.fd, 0);
  ASSERT_GT(listener.port, 0);
  const int srv = listener.fd;
  std::thread service([srv] {  // answers every connection with bytes that are no store reply
    for (int i = 0; i < 4; ++i) {
      const int c = ::accept(srv, nullptr, nullptr);
      if (c < 0) return;
      const char junk[] = "HTTP/1.0 400 Bad Request\r\n\r\n";
      (void)!::write(c, junk, sizeof(junk));
      ::usleep(200000);
      ::close(c);
    }
  });
  const std::string log = root() + "/not_a_store.log";
  const int rc = finish(start(matrix_args("not_a_store", 16, {"--dist-timeout", "2"}),
                              {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"},
                               {"MASTER_PORT", std::to_string(listener.port)}},
                              log));
  ::shutdown(srv, SHUT_RDWR);  // ends the thread's accept(); the listener closes the socket
  service.join();
  const std::string out = slurp(log);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("rendezvous store at MASTER_ADDR=127.0.0.1"), std::string::npos) << out;
  EXPECT_EQ(out.find("frame #"), std::string::npos) << out;
}

// One process: a step that makes no progress for --dist-timeout is reported as stalled (here the
// injected slow step ends after 2.5 timeouts, so the run finishes and keeps the note).
TEST(DistE2E, ASingleProcessStepWithoutProgressIsReportedAsStalled) {
  const std::string log = root() + "/stalled.log";
  ASSERT_EQ(finish(start(matrix_args("stalled", 16, {"--dist-timeout", "1", "--inject-fault", "hang",
                                                     "--inject-fault-rank", "0", "--inject-fault-step", "2"}),
                         {}, log)),
            0)
      << slurp(log);
  EXPECT_NE(slurp(log).find("cpu-mlp-b16-r0: step 2 stalled: no progress for 1 s"), std::string::npos) << slurp(log);
  const json r = run_record("stalled");
  bool noted = false;
  for (const auto& n : r.at("notes"))
    noted = noted || (n.get<std::string>().find("step 2 stalled") != std::string::npos &&
                      n.get<std::string>().find("it finished after") != std::string::npos);
  EXPECT_TRUE(noted) << r.at("notes");
  EXPECT_TRUE(r.at("distributed").is_null());
}

// Found by a tester: a MASTER_PORT that accepts the connection and never answers (a silent
// listener, an HTTP server) left the rank blocked for ever in the store client's read.
TEST(DistE2E, AMasterThatNeverAnswersIsBadInputAfterTheTimeout) {
  SilentListener silent;
  const std::string log = root() + "/silent.log";
  const int rc = finish_within(start(matrix_args("silent", 16, {"--dist-timeout", "2"}),
                                     {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"},
                                      {"MASTER_PORT", std::to_string(silent.port)}},
                                     log),
                               120);
  const std::string out = slurp(log);
  EXPECT_EQ(rc, 2) << "(-2: hung, killed after 120 s)\n" << out;
  EXPECT_NE(out.find("MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(silent.port)), std::string::npos) << out;
  EXPECT_NE(out.find("sent no c10d store reply"), std::string::npos) << out;
}

// Found by a tester: a busy MASTER_PORT under --nproc-per-node was an internal error (exit 6).
TEST(DistE2E, TheLauncherNamesABusyMasterPortAsBadInput) {
  SilentListener busy;
  const std::string log = root() + "/busy.log";
  const int rc = finish_within(start(matrix_args("busy", 16, {"--nproc-per-node", "2", "--dist-timeout", "5"}),
                                     {{"MASTER_PORT", std::to_string(busy.port)}}, log),
                               120);
  const std::string out = slurp(log);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("MASTER_PORT=" + std::to_string(busy.port)), std::string::npos) << out;
  EXPECT_NE(out.find("unset MASTER_PORT to let trainscope pick one"), std::string::npos) << out;
  EXPECT_EQ(out.find("internal error"), std::string::npos) << out;
  EXPECT_EQ(out.find("rank 0 exited"), std::string::npos) << out;  // no rank started
}

// Found by a tester: WORLD_SIZE without RANK trained silently as one process.
TEST(DistE2E, WorldSizeWithoutRankIsBadInputNamingRank) {
  const std::string log = root() + "/partial.log";
  const int rc = finish_within(start(matrix_args("partial", 16), {{"WORLD_SIZE", "2"}}, log), 120);
  const std::string out = slurp(log);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("WORLD_SIZE is set but RANK is not"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(root() + "/partial/results.json"));
}

// A 2-rank matrix long enough to be interrupted (epochs and steps 100000): its time budget or a
// signal ends it.
std::vector<std::string> open_ended_args(const std::string& name, std::vector<std::string> extra) {
  extra.insert(extra.begin(), {"--nproc-per-node", "2"});
  auto args = matrix_args(name, 16, std::move(extra));
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--epochs" || args[i] == "--max-steps") args[i + 1] = "100000";
  return args;
}

// Returns once the ranks of `launcher` train: past the rendezvous (rank 1's folder exists) and 2 s
// on, so their signal handlers are in place. Fails (fatally) when the launcher ends first.
void wait_until_training(pid_t launcher, const std::string& name, const std::string& log) {
  bool training = false;
  int st = 0;
  for (int i = 0; i < 1200 && !training; ++i) {
    ::usleep(100000);
    ASSERT_EQ(waitpid(launcher, &st, WNOHANG), 0) << "the launcher ended early\n" << slurp(log);
    training = fs::exists(root() + "/" + name + "/ranks/rank1");
  }
  ASSERT_TRUE(training) << slurp(log);
  ::sleep(2);
}

// Found by a tester: SIGTERM to the launcher killed it and (through the death signal) its ranks
// with no results; SIGINT to the launcher alone was ignored. Both now reach the ranks, which
// stop after the current step and keep what they measured; the launcher exits with rank 0's 130.
void interrupt_launcher(int sig, const std::string& name) {
  const std::string log = root() + "/" + name + ".log";
  const pid_t launcher = start(open_ended_args(name, {"--time-budget", "300", "--dist-timeout", "60"}), {}, log);
  ASSERT_NO_FATAL_FAILURE(wait_until_training(launcher, name, log));
  ::kill(launcher, sig);
  const int rc = finish_within(launcher, 240);
  const std::string out = slurp(log);
  ASSERT_EQ(rc, 130) << out;
  EXPECT_NE(out.find("passing it on to the ranks"), std::string::npos) << out;
  const json r = run_record(name);
  // The ranks agree on the step to stop at (src/dist/stop_vote.h): whichever saw the signal
  // first, both stop after the same step, interrupted, with what they measured.
  EXPECT_EQ(r.at("status"), "interrupted") << r.dump();
  EXPECT_NE(r.at("failure_reason").get<std::string>().find("interrupted (SIGINT/SIGTERM) after step"),
            std::string::npos)
      << r.dump();
  EXPECT_GT(r.at("steps_completed").get<int64_t>(), 0) << r.dump();
  EXPECT_TRUE(r.at("steady_samples_per_s").is_number()) << r.dump();  // measured, kept
  EXPECT_EQ(r.at("distributed").at("ranks").size(), 2u);
  const auto rank1 = json::parse(slurp(root() + "/" + name + "/ranks/rank1/results.json"));
  ASSERT_EQ(rank1.at("runs").size(), 1u) << rank1.dump();
  EXPECT_EQ(rank1.at("runs").at(0).at("status"), "interrupted") << rank1.dump();
  EXPECT_EQ(rank1.at("runs").at(0).at("steps_completed"), r.at("steps_completed")) << rank1.dump();
}

// A signal that reaches one rank after the last step the ranks voted on (here: as its first run
// ends) still stops every rank before the next cell: the ranks ask each other before each cell.
// Without that, rank 0 would start the second run alone and fail in its broadcast.
TEST(DistE2E, ASignalToOneRankBetweenRunsStopsEveryRankBeforeTheNextCell) {
  REQUIRE_GLOO();
  const std::string log = root() + "/between.log";
  auto args = matrix_args("between", 16, {"--nproc-per-node", "2", "--dist-timeout", "20", "--inject-fault-rank", "1",
                                          "--inject-fault", "sigterm-after-run"});
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--batch-sizes") args[i + 1] = "16,32";
  const int rc = finish_within(start(args, {}, log), 120);
  const std::string out = slurp(log);
  EXPECT_EQ(rc, 130) << out;
  const auto runs = json::parse(slurp(root() + "/between/results.json")).at("runs");
  ASSERT_EQ(runs.size(), 1u) << "the second cell must not start\n" << runs.dump() << out;
  EXPECT_EQ(runs.at(0).at("status"), "ok") << runs.dump();
  EXPECT_EQ(runs.at(0).at("batch_size"), 16);
}

// --batch-sizes auto on 2 ranks: each rank measures its own samples/s, so ranks deciding alone
// could choose different next batch sizes and run different cells. Every rank acts on rank 0's
// sweep point, so both run the same batches. (This data set usually ends the sweep the same way
// on both ranks even without that; the test guards the agreement, it does not force a split.)
TEST(DistE2E, ABatchSweepRunsTheSameBatchesOnEveryRank) {
  REQUIRE_GLOO();
  const std::string log = root() + "/sweep.log";
  auto args = matrix_args("sweep", 8, {"--nproc-per-node", "2", "--dist-timeout", "20"});
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--batch-sizes") args[i + 1] = "8,auto";
  ASSERT_EQ(finish_within(start(args, {}, log), 300), 0) << slurp(log);
  auto batches = [](const json& runs) {
    std::vector<int64_t> b;
    for (const auto& r : runs) {
      EXPECT_EQ(r.at("status"), "ok") << r.dump();
      b.push_back(r.at("batch_size").get<int64_t>());
    }
    return b;
  };
  const auto b0 = batches(json::parse(slurp(root() + "/sweep/results.json")).at("runs"));
  const auto b1 = batches(json::parse(slurp(root() + "/sweep/ranks/rank1/results.json")).at("runs"));
  ASSERT_GE(b0.size(), 2u) << slurp(log);
  EXPECT_EQ(b0, b1);
  for (size_t i = 0; i < b0.size(); ++i) EXPECT_EQ(b0[i], int64_t{8} << i);
}

// Found by a new user: a GPU-only variant on CPU devices was refused by every rank, so the same
// error printed once per rank. The launcher now refuses it once, before starting any rank.
TEST(DistE2E, TheLauncherRefusesAGpuOnlyVariantOnCpuOnceBeforeStartingRanks) {
  const std::string log = root() + "/gpu_only.log";
  ASSERT_EQ(finish(start(matrix_args("gpu_only", 16, {"--nproc-per-node", "2", "--variants", "graphs"}), {}, log)), 2)
      << slurp(log);
  const std::string out = slurp(log);
  const std::string what = "variant 'graphs' needs a CUDA device";
  const auto first = out.find(what);
  ASSERT_NE(first, std::string::npos) << out;
  EXPECT_EQ(out.find(what, first + 1), std::string::npos) << "printed more than once:\n" << out;
  EXPECT_EQ(out.find("exited with status"), std::string::npos) << "no rank should have started:\n" << out;
}

// Each rank starts its clock at its own moment and evaluates for its own time, so each would
// spend a time budget after a different step; the stop vote makes them stop after the same one.
TEST(DistE2E, RanksSpendATimeBudgetAfterTheSameStep) {
  REQUIRE_GLOO();
  const std::string log = root() + "/budget.log";
  ASSERT_EQ(finish(start(open_ended_args("budget", {"--time-budget", "1.5"}), {}, log)), 0) << slurp(log);
  const json r = run_record("budget");
  EXPECT_EQ(r.at("status"), "ok") << r.dump();
  EXPECT_EQ(r.at("stop_reason"), "time_budget") << r.dump();
  const auto rank1 = json::parse(slurp(root() + "/budget/ranks/rank1/results.json")).at("runs").at(0);
  EXPECT_EQ(rank1.at("status"), "ok") << rank1.dump();
  EXPECT_EQ(rank1.at("stop_reason"), "time_budget") << rank1.dump();
  EXPECT_EQ(rank1.at("steps_completed"), r.at("steps_completed"));
  EXPECT_GT(r.at("steps_completed").get<int64_t>(), 16) << "more than one epoch in 1.5 s";
}

TEST(DistE2E, SigtermToTheLauncherReachesTheRanksAndKeepsTheRun) {
  REQUIRE_GLOO();
  interrupt_launcher(SIGTERM, "sigterm");
}

// The launcher's child whose environment has RANK=<rank> (0 when none).
pid_t rank_pid(pid_t launcher, int rank) {
  std::istringstream kids(slurp(fmt::format("/proc/{}/task/{}/children", launcher, launcher)));
  const std::string want = fmt::format("RANK={}", rank);
  for (pid_t k = 0; kids >> k;) {
    const std::string env = slurp(fmt::format("/proc/{}/environ", k));
    for (size_t a = 0, z; a < env.size(); a = z + 1) {
      z = env.find('\0', a);
      if (z == std::string::npos) z = env.size();
      if (env.compare(a, z - a, want) == 0) return k;
    }
  }
  return 0;
}

// A signal that reaches one rank only (an operator's kill, a node's OOM notice): without an
// agreement that rank would leave the step loop and its peer would wait in an all-reduce
// nobody joins. With the stop vote (src/dist/stop_vote.h) both stop after the same step.
TEST(DistE2E, ASignalToOneRankStopsEveryRankAfterTheSameStep) {
  REQUIRE_GLOO();
  const std::string name = "one_signal", log = root() + "/" + name + ".log";
  const pid_t launcher = start(open_ended_args(name, {"--time-budget", "300", "--dist-timeout", "20"}), {}, log);
  ASSERT_NO_FATAL_FAILURE(wait_until_training(launcher, name, log));
  const pid_t r1 = rank_pid(launcher, 1);
  ASSERT_GT(r1, 0) << "rank 1's process not found among the launcher's children";
  ::kill(r1, SIGTERM);
  const int rc = finish_within(launcher, 120);
  const std::string out = slurp(log);
  EXPECT_EQ(rc, 130) << out;
  const json r = run_record(name);
  EXPECT_EQ(r.at("status"), "interrupted") << r.dump() << out;
  const auto rank1 = json::parse(slurp(root() + "/" + name + "/ranks/rank1/results.json")).at("runs").at(0);
  EXPECT_EQ(rank1.at("status"), "interrupted") << rank1.dump();
  EXPECT_EQ(rank1.at("steps_completed"), r.at("steps_completed"));
  EXPECT_TRUE(r.at("steady_samples_per_s").is_number()) << r.dump();
}
TEST(DistE2E, SigintToTheLauncherAloneReachesTheRanks) {
  REQUIRE_GLOO();
  interrupt_launcher(SIGINT, "sigint");
}

// A language model data-parallel (docs/language-models.md): 2 ranks at batch 4 hold the same
// averaged gradients as one process at batch 8, so the validation loss after the same 6 steps is
// the same.
TEST(DistE2E, TwoRanksTrainALanguageModelLikeOneRankWithTheCombinedBatch) {
  REQUIRE_GLOO();
  json one, two;
  ASSERT_NO_FATAL_FAILURE(train_lm_alone_and_data_parallel(
      "lm", "a data-parallel language model sees every window once ", 5, 4, {"--nproc-per-node", "2"}, one, two));
  EXPECT_EQ(two.at("task"), "causal_lm");
  EXPECT_EQ(two.at("world_size"), 2);
  EXPECT_EQ(two.at("steps_completed"), one.at("steps_completed"));
  const double a = two.at("language_model").at("val_loss").get<double>();
  const double b = one.at("language_model").at("val_loss").get<double>();
  EXPECT_NEAR(a, b, 1e-4 * std::abs(b)) << "validation loss after 6 steps: 2 ranks " << a << ", one rank " << b;
}

// --grad-accum on the data-parallel path: two ranks of 2 micro-batches of 2 windows each train as
// one process at batch 8 (the all-reduce after the last micro-batch, once per optimizer step;
// docs/language-models.md#the-training-recipe). An all-reduce per micro-batch would average the
// partial sums twice and change the weights.
TEST(DistE2E, TwoRanksWithGradientAccumulationTrainLikeOneRankWithTheCombinedBatch) {
  REQUIRE_GLOO();
  json one, two;
  ASSERT_NO_FATAL_FAILURE(train_lm_alone_and_data_parallel("accum",
                                                           "micro-batches add up to the step's batch on every rank ",
                                                           7, 2, {"--nproc-per-node", "2", "--grad-accum", "2"}, one, two));
  EXPECT_EQ(two.at("grad_accum"), 2);
  EXPECT_EQ(two.at("steps_completed"), one.at("steps_completed"));
  const double a = two.at("language_model").at("val_loss").get<double>();
  const double b = one.at("language_model").at("val_loss").get<double>();
  EXPECT_NEAR(a, b, 1e-4 * std::abs(b)) << "validation loss after 6 steps: 2 ranks x 2 micro-batches " << a
                                         << ", one rank " << b;
}

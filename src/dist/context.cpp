#include "dist/context.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/text.h"
#include "results/record_json.h"
#include "trainscope/error.h"
#include "train/error_text.h"
#include "trainscope/fs.h"

namespace trainscope {
namespace dist {

namespace {

using Clock = std::chrono::steady_clock;
std::unique_ptr<Context> g_context;

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string to_string(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }
std::vector<uint8_t> to_bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

c10::intrusive_ptr<c10d::Store> open_store(const DistEnv& e, bool server, std::chrono::milliseconds timeout) {
  auto tcp = c10::make_intrusive<c10d::TCPStore>(
      e.master_addr, compat::tcp_store_options(e.port, server, static_cast<int>(e.world_size), timeout));
  c10::intrusive_ptr<c10d::Store> s = tcp;
  if (!e.store_prefix.empty()) s = c10::make_intrusive<c10d::PrefixStore>(e.store_prefix, s);
  auto store = c10::make_intrusive<c10d::PrefixStore>("trainscope", s);
  // A round trip now: a port that accepts connections but is not a c10d store (another
  // service) fails here, with the message of connect_store, instead of at the first heartbeat.
  (void)store->check({fmt::format("probe/{}", e.rank)});
  return store;
}

// open_store, given up after `timeout` + 1 s (c10d's own errors come first when it has one): the
// TCPStore client reads with no timeout, so a peer that accepts the connection and never answers
// would block it forever. It runs on a thread left behind on time-out, with the store it may
// still build: joining it or destroying that store could block too.
c10::intrusive_ptr<c10d::Store> open_store_within(const DistEnv& e, bool server, std::chrono::milliseconds timeout) {
  using Store = c10::intrusive_ptr<c10d::Store>;
  auto done = std::make_shared<std::promise<Store>>();
  auto result = done->get_future();
  std::thread([done, e, server, timeout] {
    try {
      // quiet while it connects; a thread left behind on time-out stays quiet (the process exits)
      auto quiet = std::make_unique<compat::QuietC10dLog>();
      auto store = open_store(e, server, timeout);
      quiet.reset();
      done->set_value(std::move(store));
    } catch (...) {
      done->set_exception(std::current_exception());
    }
  }).detach();
  if (result.wait_for(timeout + std::chrono::seconds(1)) != std::future_status::ready)
    throw std::runtime_error("the port accepted the connection but sent no c10d store reply (another service, or "
                             "a process that stopped answering)");
  return result.get();
}

c10::intrusive_ptr<c10d::Store> connect_store(const DistEnv& e, std::chrono::milliseconds timeout) {
  const bool server = !e.agent_store && e.rank == 0;
  try {
    return open_store_within(e, server, timeout);
  } catch (const std::exception& ex) {
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("rank {} cannot {} the rendezvous store at MASTER_ADDR={} MASTER_PORT={} within {} s "
                            "({} environment): {}; check that the address is reachable from this host and the "
                            "port is {} (--dist-timeout sets the wait)",
                            e.rank, server ? "host" : "reach", e.master_addr, e.port, timeout.count() / 1000,
                            e.launcher, error_first_line(ex), server ? "free" : "the one rank 0 or the launcher listens on"));
  }
}

// The first key (a/b/c path) where two JSON values differ, "" when equal.
std::string first_difference(const nlohmann::json& a, const nlohmann::json& b, const std::string& path) {
  if (a.is_object() && b.is_object()) {
    for (const auto& [k, v] : a.items()) {
      if (!b.contains(k)) return path + k;
      if (auto d = first_difference(v, b.at(k), path + k + "."); !d.empty()) return d;
    }
    for (const auto& [k, v] : b.items())
      if (!a.contains(k)) return path + k;
    return "";
  }
  return a == b ? "" : (path.empty() ? "(value)" : path.substr(0, path.size() - (path.back() == '.')));
}

}  // namespace

std::string error_first_line(const std::exception& ex) {
  const std::string w = error_without_backtrace(ex);
  return w.substr(0, w.find('\n'));
}

std::unique_ptr<Context>& context_slot() { return g_context; }
Context* current() { return g_context.get(); }

void Context::close() {
  if (pg_) compat::shutdown_group(pg_);
  pg_.reset();
}

void shut_down() {
  if (g_context) g_context->close();
  g_context.reset();
}
int current_rank() { return g_context ? g_context->rank() : -1; }

std::string rank0_decides(const std::string& text) {
  static int64_t decisions = 0;  // the same count on every rank: each calls in the same order
  Context* c = g_context.get();
  return c ? c->from_rank0(fmt::format("rank0-decides/{}", ++decisions), text) : text;
}

bool any_rank_stops(bool mine) {
  static int64_t cells = 0;  // the same count on every rank: each calls once per cell
  Context* c = g_context.get();
  if (!c || !c->broken().empty()) return mine;
  try {
    return c->any_rank(fmt::format("stop-before-cell/{}", ++cells), mine);
  } catch (const std::exception& e) {
    c->mark_broken(e.what());
    return mine;
  }
}

Context::Context(DistEnv env, const DistConfig& cfg)
    : env_(std::move(env)), cfg_(cfg), timeout_(static_cast<int64_t>(cfg.timeout_s * 1000)) {
  store_ = connect_store(env_, timeout_);
  heartbeat(-1, "setup", true);
}

void Context::connect(const std::string& backend) {
  backend_ = backend;
  const bool loopback = env_.master_addr == "127.0.0.1" || env_.master_addr == "localhost";
  char host[256] = "127.0.0.1";
  if (!loopback) ::gethostname(host, sizeof(host));
  auto pg_store = c10::make_intrusive<c10d::PrefixStore>("pg", store_);
  pg_ = backend == "nccl" ? compat::make_nccl(pg_store, rank(), world(), timeout_)
                          : compat::make_gloo(pg_store, rank(), world(), host, timeout_);
  if (!pg_)
    throw_error(ErrorKind::kDevice, fmt::format("this trainscope was built without the {} backend (see "
                                                "docs/distributed.md#building); use --devices {}",
                                                backend, backend == "nccl" ? "cpu" : "cuda"));
}

bool Context::key_ready(const std::string& key, std::chrono::milliseconds within) {
  const auto deadline = Clock::now() + within;
  for (;;) {
    if (store_->check({key})) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string Context::from_rank0(const std::string& key, const std::string& value) {
  if (rank() == 0) {
    store_->set(key, to_bytes(value));
    return value;
  }
  if (!key_ready(key, timeout_))
    throw_error(ErrorKind::kDistributed,
                fmt::format("rank {} waited {} s for rank 0's '{}': {}", rank(), cfg_.timeout_s, key,
                            explain_failure("rank 0 did not publish it")));
  return to_string(store_->get(key));
}

bool Context::any_rank(const std::string& key, bool mine) {
  store_->set(fmt::format("{}/{}", key, rank()), to_bytes(mine ? "1" : "0"));
  bool any = false;
  for (int r = 0; r < world(); ++r) {
    const std::string k = fmt::format("{}/{}", key, r);
    if (!key_ready(k, timeout_))
      throw_error(ErrorKind::kDistributed, fmt::format("rank {} did not answer '{}' within {} s: {}", r, key,
                                                       cfg_.timeout_s, explain_failure("no answer")));
    any = any || to_string(store_->get(k)) == "1";
  }
  return any;
}

void Context::check_same(const std::string& key, const std::string& json_text) {
  store_->set(fmt::format("{}/{}", key, rank()), to_bytes(json_text));
  std::string verdict;
  if (rank() == 0) {
    const auto mine = nlohmann::json::parse(json_text);
    for (int r = 1; r < world() && verdict.empty(); ++r) {
      const std::string k = fmt::format("{}/{}", key, r);
      if (!key_ready(k, timeout_)) {
        verdict = fmt::format("rank {} did not start within {} s (--dist-timeout); start every rank (WORLD_SIZE={})",
                              r, cfg_.timeout_s, world());
        break;
      }
      auto diff = first_difference(mine, nlohmann::json::parse(to_string(store_->get(k))), "");
      if (!diff.empty())
        verdict = fmt::format("rank {}'s settings differ from rank 0's (first at '{}'); start every rank with the "
                              "same command line and configuration file",
                              r, diff);
    }
  }
  verdict = from_rank0(key + "/verdict", verdict);
  if (!verdict.empty()) {
    // Rank 0 may host the store: it stays until every rank has read the verdict.
    store_->set(fmt::format("{}/verdict-read/{}", key, rank()), to_bytes("1"));
    for (int r = 1; rank() == 0 && r < world(); ++r) key_ready(fmt::format("{}/verdict-read/{}", key, r), timeout_);
    throw_error(ErrorKind::kInvalidArgument, verdict);
  }
}

void Context::heartbeat(int64_t step, const char* phase, bool force) {
  const auto now = Clock::now();
  if (!force && now - last_beat_ < std::chrono::seconds(1)) return;
  last_beat_ = now;
  try {
    store_->set(fmt::format("hb/{}", rank()), to_bytes(fmt::format("{} {} {}", step, unix_ms(), phase)));
  } catch (const std::exception&) {
    // the store is gone: the collective that follows reports the failure
  }
}

// "exited with status 1" (from the launcher), "at step 5 (backward) 12 s ago", or "never reported".
std::string Context::rank_state(int r) {
  if (store_->check({fmt::format("exit/{}", r)})) return to_string(store_->get(fmt::format("exit/{}", r)));
  if (!store_->check({fmt::format("hb/{}", r)})) return "never reported";
  auto hb = to_string(store_->get(fmt::format("hb/{}", r)));
  long long step = -1, ms = 0;
  char phase[64] = "";
  std::sscanf(hb.c_str(), "%lld %lld %63[^\n]", &step, &ms, phase);
  return fmt::format("was last seen at step {} ({}) {:.0f} s ago", step, phase,
                     static_cast<double>(unix_ms() - ms) / 1000.0);
}

// Each rank whose collective fails writes "failed/<rank>"; the rank named is one that neither
// failed that way nor ended through the launcher (dead or hung), after up to 2 s for the
// others' keys (they time out at about the same moment).
std::string Context::explain_failure(const std::string& what) {
  try {
    store_->set(fmt::format("failed/{}", rank()), to_bytes(what));
    const auto until = Clock::now() + std::chrono::seconds(2);
    int culprit = -1;
    for (;;) {
      culprit = -1;
      for (int r = world() - 1; r >= 0; --r) {
        if (r == rank()) continue;
        if (store_->check({fmt::format("exit/{}", r)}))
          return fmt::format("rank {} {}; rank {} stopped: {}", r, rank_state(r), rank(), what);
        if (!store_->check({fmt::format("failed/{}", r)})) culprit = r;
      }
      if (Clock::now() >= until) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (culprit < 0) return what;
    return fmt::format("rank {} {} and stopped making progress or died; rank {} stopped after waiting up to {} s "
                       "(--dist-timeout): {}",
                       culprit, rank_state(culprit), rank(), cfg_.timeout_s, what);
  } catch (const std::exception& e) {
    return fmt::format("{} (the rendezvous store is unreachable too: {}; the rank hosting it, rank 0 or the "
                       "launcher, probably died)",
                       what, e.what());
  }
}

std::vector<RankSummary> Context::gather(const std::string& run_id, const RankSummary& mine) {
  const std::string base = "rec/" + run_id + "/";
  if (rank() != 0) {
    store_->set(base + std::to_string(rank()), to_bytes(record_json::write(mine).dump()));
    return {mine};
  }
  std::vector<RankSummary> all{mine};
  for (int r = 1; r < world(); ++r) {
    const auto deadline = Clock::now() + timeout_;
    bool got = false;
    while (!got && Clock::now() < deadline && !store_->check({fmt::format("exit/{}", r)}))
      got = key_ready(base + std::to_string(r), std::chrono::milliseconds(200));
    if (got) got = key_ready(base + std::to_string(r), std::chrono::milliseconds(0));
    RankSummary s;
    if (got) {
      if (auto p = record_json::section_from_json<RankSummary>(nlohmann::json::parse(to_string(store_->get(base + std::to_string(r))))))
        s = *p;
    } else {
      s.rank = r;
      s.status = "missing";
      s.failure_reason = fmt::format("no record from rank {} within {} s: it {}", r, cfg_.timeout_s, rank_state(r));
    }
    all.push_back(s);
  }
  return all;
}

}  // namespace dist
}  // namespace trainscope

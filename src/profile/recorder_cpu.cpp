// RecordFunction recorder: operator start/end callbacks (all scopes) on every thread, and a
// c10 memory reporter on the training thread. Works on LibTorch 1.13 and 2.x without Kineto.
#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <fmt/format.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

#include "profile/recorder.h"
#include "train/compat.h"
#include "workload/model.h"

namespace trainscope::profile {

namespace {

using Clock = std::chrono::steady_clock;

uint64_t sys_tid() {
  thread_local uint64_t t = static_cast<uint64_t>(::syscall(SYS_gettid));
  return t;
}

struct ThreadBuf {
  std::mutex mu;  // uncontended except while the window closes
  std::vector<OpEvent> ops;
  std::vector<MemEvent> mem;
  uint64_t tid = 0;
};

// Process-wide state the plain-function callbacks reach. Never freed (callbacks on other threads
// may still run briefly after removal); a generation number separates windows.
struct State {
  std::mutex mu;
  std::vector<std::shared_ptr<ThreadBuf>> bufs;
  std::atomic<bool> on{false}, keep{false};
  std::atomic<uint64_t> generation{0};
  Clock::time_point origin;
  bool shapes = false, flops = false;
};
State& state() {
  static State* s = new State;
  return *s;
}

int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - state().origin).count(); }

ThreadBuf& buf() {
  thread_local std::shared_ptr<ThreadBuf> b;
  thread_local uint64_t gen = ~0ull;
  auto& s = state();
  uint64_t g = s.generation.load(std::memory_order_acquire);
  if (!b || gen != g) {
    b = std::make_shared<ThreadBuf>();
    b->tid = sys_tid();
    gen = g;
    std::lock_guard<std::mutex> lk(s.mu);
    s.bufs.push_back(b);
  }
  return *b;
}

struct OpCtx : at::ObserverContext {
  int64_t t0 = 0;
  double flops = 0;
  std::string shapes;
};

std::string shapes_of(const at::RecordFunction& fn) {
  std::string s = "[";
  bool first = true;
  for (const auto& v : fn.inputs()) {
    if (!first) s += ", ";
    first = false;
    if (v.isTensor() && v.toTensor().defined()) {
      s += "[";
      auto sz = v.toTensor().sizes();
      for (size_t i = 0; i < sz.size(); ++i) s += (i ? ", " : "") + std::to_string(sz[i]);
      s += "]";
    } else {
      s += "[]";
    }
  }
  return s + "]";
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  auto& s = state();
  if (!s.on.load(std::memory_order_relaxed)) return nullptr;
  auto ctx = std::make_unique<OpCtx>();
  if (s.flops || s.shapes) {
    try {
      if (s.flops) ctx->flops = op_flops(fn);
      if (s.shapes) ctx->shapes = shapes_of(fn);
    } catch (...) {  // never let bookkeeping break training
    }
  }
  ctx->t0 = now_ns();
  return ctx;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* c) {
  auto& s = state();
  if (!c || !s.keep.load(std::memory_order_relaxed)) return;
  int64_t t1 = now_ns();
  auto* ctx = static_cast<OpCtx*>(c);
  auto& b = buf();
  OpEvent e;
  e.name = compat::op_name(fn);
  e.t0_ns = ctx->t0;
  e.t1_ns = t1;
  e.tid = b.tid;
  e.flops = ctx->flops;
  e.shapes = std::move(ctx->shapes);
  if (fn.scope() == at::RecordScope::USER_SCOPE) e.category = "user_annotation";
  std::lock_guard<std::mutex> lk(b.mu);
  b.ops.push_back(std::move(e));
}

// The allocators report to whatever MemoryReportingInfoBase is pushed as PROFILER_STATE on the
// allocating thread (c10/core/Allocator.h, reportMemoryUsageToProfiler); frees come as negative sizes.
class MemReporter final : public c10::MemoryReportingInfoBase {
 public:
  bool memoryProfilingEnabled() const override { return true; }
  void reportMemoryUsage(void* /*ptr*/, int64_t alloc_size, compat::MemTotal /*total_allocated*/,
                         compat::MemTotal /*total_reserved*/, c10::Device device) override {
    auto& s = state();
    if (!s.keep.load(std::memory_order_relaxed) || alloc_size == 0) return;
    int64_t t = now_ns();
    auto& b = buf();
    std::lock_guard<std::mutex> lk(b.mu);
    b.mem.push_back({t, b.tid, alloc_size, device.str()});
  }
};

class RecordFunctionRecorder final : public Recorder {
 public:
  RecordFunctionRecorder(const ProfileConfig& c, Clock::time_point origin) : cfg_(c) { state().origin = origin; }
  ~RecordFunctionRecorder() override { off(); }

  void warmup() override {
    if (handle_) return;
    auto& s = state();
    s.generation.fetch_add(1, std::memory_order_acq_rel);
    {
      std::lock_guard<std::mutex> lk(s.mu);
      s.bufs.clear();
    }
    s.shapes = cfg_.record_shapes;
    s.flops = cfg_.with_flops;
    s.keep = false;
    s.on = true;
    handle_ = at::addGlobalCallback(at::RecordFunctionCallback(&on_start, &on_end).needsInputs(cfg_.record_shapes || cfg_.with_flops));
    if (cfg_.profile_memory && !c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE)) {
      c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, std::make_shared<MemReporter>());
      pushed_ = true;
    }
  }
  void activate() override {
    if (!handle_) warmup();
    state().keep = true;
  }
  std::string deactivate(ProfileData& out) override {
    off();
    auto& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    for (auto& b : s.bufs) {
      std::lock_guard<std::mutex> bl(b->mu);
      for (auto& e : b->ops) out.ops.push_back(std::move(e));
      for (auto& m : b->mem) out.mem_events.push_back(std::move(m));
      b->ops.clear();
      b->mem.clear();
    }
    s.bufs.clear();
    return {};
  }
  uint64_t current_tid() const override { return sys_tid(); }
  const char* backend() const override { return "record_function"; }

 private:
  void off() {
    auto& s = state();
    s.keep = false;
    s.on = false;
    if (handle_) {
      at::removeCallback(handle_);
      handle_ = 0;
    }
    if (pushed_) {
      try {
        c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
      } catch (const c10::Error&) {  // someone pushed on top; leave it (reporter then ignores, keep=false)
      }
      pushed_ = false;
    }
  }
  ProfileConfig cfg_;
  at::CallbackHandle handle_ = 0;
  bool pushed_ = false;
};

}  // namespace

std::unique_ptr<Recorder> make_record_function_recorder(const ProfileConfig& c, Clock::time_point origin) {
  return std::make_unique<RecordFunctionRecorder>(c, origin);
}

}  // namespace trainscope::profile

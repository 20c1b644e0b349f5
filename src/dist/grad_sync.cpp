#include "dist/grad_sync.h"

#include <fmt/format.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <csignal>
#include <thread>

#include "dist/context.h"
#include "train/device.h"
#include "train/error_text.h"
#include "trainscope/error.h"

namespace trainscope {
namespace dist {

using Clock = std::chrono::steady_clock;

struct RunSync::Bucket {
  std::vector<size_t> params;
  std::vector<int64_t> offsets;
  torch::Tensor flat;
  size_t ready = 0;
  bool launched = false;
  c10::intrusive_ptr<c10d::Work> work;
  Clock::time_point launched_at;
  std::shared_ptr<std::atomic<int64_t>> done_ns = std::make_shared<std::atomic<int64_t>>(0);
};

namespace {

int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count(); }
double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

// Runs after autograd accumulated a parameter's gradient (the hook c10d::Reducer installs).
class ReadyHook final : public torch::autograd::FunctionPostHook {
 public:
  ReadyHook(RunSync* s, size_t i) : s_(s), i_(i) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& /*inputs*/) override {
    s_->ready(i_);
    return outputs;
  }

 private:
  RunSync* s_;
  size_t i_;
};

void broadcast_from_rank0(Context& c, const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard ng;
  for (const auto& p : params) {
    std::vector<at::Tensor> t{p.detach()};
    c10d::BroadcastOptions o;
    o.rootRank = 0;
    auto w = c.group()->broadcast(t, o);
    w->wait(c.timeout());
  }
}

}  // namespace

std::unique_ptr<RunSync> RunSync::attach(Model& model, const torch::Device& dev, int64_t warmup_steps, RunRecord& rec) {
  Context* c = current();
  if (!c) return nullptr;
  if (!c->broken().empty())
    throw_error(ErrorKind::kDistributed, fmt::format("skipped: an earlier run broke the process group ({})", c->broken()));
  auto params = model.parameters();
  try {
    c->heartbeat(-1, "broadcast of rank 0's weights", true);
    broadcast_from_rank0(*c, params);
  } catch (const c10::Error& e) {
    c->mark_broken(e.what_without_backtrace());
    throw_error(ErrorKind::kDistributed, c->explain_failure(fmt::format("broadcast of rank 0's weights failed: {}",
                                                                        e.what_without_backtrace())));
  }
  return std::make_unique<RunSync>(*c, std::move(params), dev, warmup_steps, rec);
}

RunSync::RunSync(Context& c, std::vector<torch::Tensor> params, const torch::Device& dev, int64_t warmup_steps,
                 RunRecord& rec)
    : c_(c), params_(std::move(params)), warmup_(warmup_steps), rec_(rec) {
  if (c.backend() == "nccl") {  // the host never sees an NCCL collective end: time it on the device
    constexpr int64_t kRing = 64;  // steps between a step's marks and their reading
    device_timer_ = std::make_unique<CommTimer>(make_phase_clock(dev, kRing), kRing, warmup_steps);
  }
  const double cap = c.config().bucket_mb * 1e6;
  bucket_of_.assign(params_.size(), 0);
  double bytes = 0;
  for (size_t k = params_.size(); k-- > 0;) {  // reverse order: the last layers' gradients come first
    const auto& p = params_[k];
    const double pb = static_cast<double>(p.numel() * p.element_size());
    Bucket* b = buckets_.empty() ? nullptr : buckets_.back().get();
    if (!b || bytes + pb > cap || b->flat.scalar_type() != p.scalar_type() || b->flat.device() != p.device()) {
      buckets_.push_back(std::make_unique<Bucket>());
      b = buckets_.back().get();
      b->flat = torch::empty({0}, p.options());
      bytes = 0;
    }
    b->offsets.push_back(b->flat.numel());
    b->params.push_back(k);
    b->flat = torch::empty({b->flat.numel() + p.numel()}, p.options());
    bytes += pb;
    bucket_of_[k] = buckets_.size() - 1;
  }
  if (!buckets_.empty()) {  // the last bucket also carries the ranks' stop vote
    auto& last = buckets_.back()->flat;
    vote_at_ = last.numel();
    last = torch::empty({vote_at_ + StopVote::kElements}, last.options());
    vote_ = std::make_unique<StopVote>(dev, kVoteDelaySteps);
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    auto acc = torch::autograd::impl::grad_accumulator(params_[i]);
    if (!acc) continue;  // no gradient: counted as zeros in after_backward
    acc->add_post_hook(std::make_unique<ReadyHook>(this, i));
    accumulators_.push_back(std::move(acc));
  }
  DistributedSection d;
  d.buckets = static_cast<int64_t>(buckets_.size());
  d.ranks.emplace_back();
  rec_.distributed = d;
}

RunSync::~RunSync() {
  // testing: a signal that arrives after the last step the ranks voted on (src/matrix's
  // stop_before_cell must still stop every rank before the next cell)
  if (c_.config().inject_fault == "sigterm-after-run" && c_.config().inject_fault_rank == c_.rank()) std::raise(SIGTERM);
  // The hooks point at this object: a later backward of the same parameters must not call it.
  for (auto& acc : accumulators_) {
    auto& hooks = acc->post_hooks();
    hooks.clear();
  }
  auto& me = rec_.distributed->ranks.front();
  if (timed_steps_ > 0) me.comm_wait_ms = wait_ms_ / static_cast<double>(timed_steps_);
  if (device_timer_) {
    try {
      if (auto m = device_timer_->finish()) me.comm_ms = m->comm_ms, me.comm_overlap_ms = m->overlap_ms;
    } catch (const std::exception&) {
      // a broken device (the run failed): the figures stay null
    }
    return;
  }
  if (comm_steps_ > 0) {
    me.comm_ms = comm_ms_ / static_cast<double>(comm_steps_);
    me.comm_overlap_ms = overlap_ms_ / static_cast<double>(comm_steps_);
  }
}

int64_t RunSync::per_rank(int64_t n) const { return (n + c_.world() - 1) / c_.world(); }

int64_t RunSync::shard_size(int64_t n) {
  const int64_t k = per_rank(n);
  rec_.distributed->shard_samples = k;
  if (k * c_.world() != n)
    rec_.notes.push_back(fmt::format("the {} training samples do not divide among {} ranks: each rank trains {} per "
                                     "epoch, {} sample(s) of each epoch's permutation twice (DistributedSampler's "
                                     "padding)",
                                     n, c_.world(), k, k * c_.world() - n));
  return k;
}

torch::Tensor RunSync::shard(const torch::Tensor& perm) const {
  const int64_t n = perm.size(0), total = per_rank(n) * c_.world();
  auto padded = total > n ? torch::cat({perm, perm.narrow(0, 0, total - n)}) : perm;
  return padded.slice(0, c_.rank(), total, c_.world()).contiguous();
}

void RunSync::inject_fault(int64_t step) {
  const auto& cfg = c_.config();
  if (cfg.inject_fault_rank != c_.rank() || cfg.inject_fault_step != step || cfg.inject_fault == "sigterm-after-run")
    return;
  if (cfg.inject_fault == "exit") std::raise(SIGKILL);
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // "hang": until someone kills us
}

void RunSync::before_backward(int64_t step, const StopWish& wish) {
  step_ = step;
  wish_ = wish;
  if (device_timer_) device_timer_->begin_step(step);
  c_.heartbeat(step, "forward/backward");
  inject_fault(step);
  std::lock_guard<std::mutex> lk(mu_);
  next_ = 0;
  for (auto& b : buckets_) {
    b->ready = 0;
    b->launched = false;
    b->work.reset();
    b->done_ns->store(0);
  }
}

void RunSync::ready(size_t i) {
  if (accumulating_) return;
  std::lock_guard<std::mutex> lk(mu_);
  ++buckets_[bucket_of_[i]]->ready;
  launch_in_order();
}

// Buckets go out in index order on every rank (collectives must match across ranks).
void RunSync::launch_in_order() {
  while (next_ < buckets_.size() && buckets_[next_]->ready == buckets_[next_]->params.size()) launch(*buckets_[next_++]);
}

void RunSync::launch(Bucket& b) {
  torch::NoGradGuard ng;
  for (size_t j = 0; j < b.params.size(); ++j) {
    const auto& p = params_[b.params[j]];
    auto seg = b.flat.narrow(0, b.offsets[j], p.numel());
    if (p.grad().defined()) seg.copy_(p.grad().reshape({-1}));
    else seg.zero_();
  }
  if (vote_ && &b == buckets_.back().get()) StopVote::cast(wish_, vote_slot());
  std::vector<at::Tensor> t{b.flat};
  b.launched_at = Clock::now();
  if (device_timer_ && &b == buckets_.front().get()) device_timer_->bucket0_launched();
  b.work = c_.group()->allreduce(t);
  b.launched = true;
  if (c_.backend() == "gloo") {  // NCCL futures complete at enqueue: the host never sees the end
    auto done = b.done_ns;
    b.work->getFuture()->addCallback([done](c10::ivalue::Future&) { done->store(now_ns()); });
  }
}

void RunSync::wait_all() {
  c_.heartbeat(step_, "all-reduce wait");
  torch::NoGradGuard ng;
  for (auto& b : buckets_) {
    try {
      // NCCL: wait() makes the current stream wait (the host goes on); a timed wait would block
      // the host every step. A hung NCCL collective is ended by NCCL's watchdog after the
      // process group's timeout (--dist-timeout) instead.
      if (c_.backend() == "nccl") b->work->wait();
      else b->work->wait(c_.timeout());
    } catch (const std::exception& e) {
      const auto msg = c_.explain_failure(
          fmt::format("gradient all-reduce of step {} failed: {}", step_, error_without_backtrace(e)));
      c_.mark_broken(msg);
      throw_error(ErrorKind::kDistributed, msg);
    }
    b->flat.div_(c_.world());
    for (size_t j = 0; j < b->params.size(); ++j) {
      auto& p = params_[b->params[j]];
      auto seg = b->flat.narrow(0, b->offsets[j], p.numel()).view(p.sizes());
      if (p.grad().defined()) p.mutable_grad().copy_(seg);
      else p.mutable_grad() = seg.clone();
    }
  }
}

torch::Tensor RunSync::vote_slot() const { return buckets_.back()->flat.narrow(0, vote_at_, StopVote::kElements); }

StopWish RunSync::drain_stop_votes() {
  if (vote_) agreed_ |= vote_->drain();
  return agreed_;
}

void RunSync::after_backward() {
  const auto t_end = Clock::now();
  if (device_timer_) device_timer_->backward_ended();
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& b : buckets_) b->ready = b->params.size();  // parameters without a gradient: zeros
    launch_in_order();
  }
  wait_all();
  agreed_ = vote_ ? vote_->read(step_, vote_slot()) : wish_;
  if (device_timer_) device_timer_->comm_done();
  if (step_ < warmup_) return;
  wait_ms_ += ms_between(t_end, Clock::now());
  ++timed_steps_;
  int64_t last = 0;
  for (auto& b : buckets_) last = std::max(last, b->done_ns->load());
  if (last == 0) return;  // NCCL, or a callback that did not run
  const auto first = buckets_.front()->launched_at;  // bucket 0 goes out first
  const auto last_tp = Clock::time_point(std::chrono::nanoseconds(last));
  comm_ms_ += ms_between(first, last_tp);
  overlap_ms_ += std::max(0.0, ms_between(first, std::min(t_end, last_tp)));
  ++comm_steps_;
}

}  // namespace dist
}  // namespace trainscope

// Each step's time split into the profiler plugin's categories (kineto tb_plugin,
// torch_tb_profiler/profiler/overall_parser.py: a moment belongs to the first category active
// then) and the communication overlap (its StepCommunicationCosts), in one sweep over time:
// each category's merged ranges come in order from its sorter, and only those that a later
// step may still need are kept (none when steps do not overlap).
#include <deque>

#include "trace/streams.h"

namespace trainscope::trace {
namespace {

using Range = std::pair<int64_t, int64_t>;

// One category's ranges, merged as merge_ranges does (touching ranges join), in order.
class RoleWindow {
 public:
  explicit RoleWindow(RangeSorter& sorter) : in_(sorter.read()) {}

  // The first range ending after t, or nullptr when none is left; ranges ending at or before
  // the floor are dropped as they are read.
  const Range* at(int64_t t) {
    for (size_t k = 0;; ++k) {
      if (k == buf_.size() && !pull()) return nullptr;
      if (buf_[k].second > t) return &buf_[k];
    }
  }
  // No step will ask about moments before `t` again.
  void drop_before(int64_t t) {
    floor_ = std::max(floor_, t);
    while (!buf_.empty() && buf_.front().second <= floor_) buf_.pop_front();
  }

 private:
  bool pull() {
    for (Range r; merged(r);)
      if (r.second > floor_) {
        buf_.push_back(r);
        return true;
      }
    return false;
  }
  bool merged(Range& out) {
    if (!has_next_ && !in_.next(next_)) return false;
    out = {next_.start, next_.end};
    has_next_ = false;
    while (in_.next(next_)) {
      if (next_.start > out.second) {
        has_next_ = true;
        return true;
      }
      out.second = std::max(out.second, next_.end);
    }
    return true;
  }

  RangeSorter::Reader in_;
  RangeRec next_{};
  bool has_next_ = false;
  int64_t floor_ = LLONG_MIN;
  std::deque<Range> buf_;
};

using Windows = std::vector<RoleWindow>;
constexpr size_t kKernel = static_cast<size_t>(Category::kKernel);
constexpr size_t kComm = static_cast<size_t>(Category::kCommunication);

// What is active from t on, and until when: the first active category (Other when none), the
// next moment any category starts or ends (at most `end`), kernels and communication active.
struct Moment {
  size_t first = static_cast<size_t>(Category::kOther);
  int64_t until;
  bool kernel = false, comm = false;
};

Moment moment_at(Windows& w, int64_t t, int64_t end) {
  Moment m{static_cast<size_t>(Category::kOther), end};
  for (size_t c = 0; c < w.size(); ++c) {
    const Range* r = w[c].at(t);
    if (!r) continue;
    if (r->first > t) {
      m.until = std::min(m.until, r->first);
      continue;
    }
    m.until = std::min(m.until, r->second);
    m.first = std::min(m.first, c);
    m.kernel = m.kernel || c == kKernel, m.comm = m.comm || c == kComm;
  }
  return m;
}

// One step's categories and its share of the overlap; `next_start`: the next step's start.
void sweep_step(Step& s, Windows& w, int64_t next_start, CommOverlap& o) {
  int64_t comp = 0, comm = 0, both = 0;
  for (RoleWindow& x : w) x.drop_before(s.start_ns);
  for (int64_t t = s.start_ns; t < s.end_ns;) {
    const Moment m = moment_at(w, t, s.end_ns);
    const int64_t len = m.until - t;
    s.category_ns[m.first] += len;
    comp += m.kernel ? len : 0, comm += m.comm ? len : 0, both += m.kernel && m.comm ? len : 0;
    t = m.until;
    for (RoleWindow& x : w) x.drop_before(std::min(t, next_start));
  }
  o.computation_ns += comp, o.communication_ns += comm, o.overlap_ns += both;
  o.other_ns += s.duration_ns() + both - comp - comm;
}

}  // namespace

std::optional<CommOverlap> break_down(std::vector<Step>& steps, TraceStreams& s) {
  Windows w;
  w.reserve(s.roles.size());
  for (auto& r : s.roles) w.emplace_back(*r);
  CommOverlap o;
  for (size_t i = 0; i < steps.size(); ++i) {
    steps[i].category_ns = {};
    sweep_step(steps[i], w, i + 1 < steps.size() ? steps[i + 1].start_ns : steps[i].end_ns, o);
  }
  if (s.communication_ranges == 0) return std::nullopt;
  return o;
}

}  // namespace trainscope::trace

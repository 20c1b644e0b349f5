// CommTimer (src/dist/comm_timer.h): the ring of step slots, warm-up and incomplete steps, and
// the comm/overlap arithmetic, with a PhaseClock whose intervals are scripted per slot.
#include <gtest/gtest.h>

#include <map>
#include <utility>

#include "dist/comm_timer.h"

using namespace trainscope;

namespace {

// elapsed_ms(slot, 0) = overlap, elapsed_ms(slot, 1) = exposed, both set per slot by the test
// before the slot is read; counts the marks and the waits.
class ScriptedClock final : public PhaseClock {
 public:
  explicit ScriptedClock(std::map<int64_t, std::pair<double, double>>* script, int* waits)
      : script_(script), waits_(waits) {}
  void mark(int64_t, int) override {}
  double elapsed_ms(int64_t slot, int k) override {
    const auto& v = script_->at(slot);
    return k == 0 ? v.first : v.second;
  }
  void synchronize() override {}
  void wait(int64_t, int k) override {
    EXPECT_EQ(k, 2);
    ++*waits_;
  }
  std::string method() const override { return "scripted"; }

 private:
  std::map<int64_t, std::pair<double, double>>* script_;
  int* waits_;
};

void full_step(dist::CommTimer& t, int64_t step) {
  t.begin_step(step);
  t.bucket0_launched();
  t.backward_ended();
  t.comm_done();
}

}  // namespace

TEST(CommTimer, MeansOverCountedCompleteStepsThroughTheRing) {
  std::map<int64_t, std::pair<double, double>> script{{0, {3.0, 1.0}}, {1, {1.0, 3.0}}};  // slot -> ms
  int waits = 0;
  dist::CommTimer t(std::make_unique<ScriptedClock>(&script, &waits), /*slots=*/2, /*warmup_steps=*/2);
  for (int64_t s = 0; s < 6; ++s) full_step(t, s);  // steps 0, 1 are warm-up; 2..5 counted
  auto m = t.finish();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->steps, 4);
  EXPECT_DOUBLE_EQ(m->comm_ms, 4.0);     // every slot: overlap + exposed = 4 ms
  EXPECT_DOUBLE_EQ(m->overlap_ms, 2.0);  // (3 + 1 + 3 + 1) / 4
  EXPECT_EQ(waits, 4);                   // only counted steps are waited for
}

TEST(CommTimer, StepWithoutALaunchedBucketIsNotCounted) {
  std::map<int64_t, std::pair<double, double>> script{{0, {2.0, 2.0}}};
  int waits = 0;
  dist::CommTimer t(std::make_unique<ScriptedClock>(&script, &waits), 1, 0);
  t.begin_step(0);  // no all-reduce went out (no mark 0)
  t.backward_ended();
  t.comm_done();
  EXPECT_FALSE(t.finish().has_value());
  EXPECT_EQ(waits, 0);
  dist::CommTimer u(std::make_unique<ScriptedClock>(&script, &waits), 1, 0);
  full_step(u, 0);
  full_step(u, 1);  // reuses the one slot: step 0 is read first
  auto m = u.finish();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->steps, 2);
  EXPECT_DOUBLE_EQ(m->comm_ms, 4.0);
}

TEST(CommTimer, NeedsAClockAndASlot) {
  EXPECT_THROW(dist::CommTimer(nullptr, 4, 0), std::invalid_argument);
}

// StopVote (src/dist/stop_vote.h): the ranks' stop wishes summed like a bucket's all-reduce,
// read at once on the CPU and `delay` steps later through a ring (scripted clock here; the
// CUDA path on a GPU host).
#include <gtest/gtest.h>

#include <vector>

#include "dist/stop_vote.h"

using namespace trainscope;
using dist::StopVote;
using dist::StopWish;

namespace {

// What the all-reduce leaves in the last bucket's tail: the ranks' casts summed, then divided
// by the world size (grad_sync.cpp averages every bucket).
torch::Tensor summed(const std::vector<StopWish>& ranks) {
  auto total = torch::zeros({StopVote::kElements});
  for (const auto& w : ranks) {
    auto tail = torch::full({StopVote::kElements}, 7.0f);  // stale contents must be overwritten
    StopVote::cast(w, tail);
    total += tail;
  }
  return total / static_cast<double>(ranks.size());
}

class CountingClock final : public PhaseClock {
 public:
  explicit CountingClock(std::vector<int64_t>* waited) : waited_(waited) {}
  void mark(int64_t, int k) override { EXPECT_EQ(k, 0); }
  double elapsed_ms(int64_t, int) override { return 0; }
  void synchronize() override {}
  void wait(int64_t slot, int k) override {
    EXPECT_EQ(k, 0);
    waited_->push_back(slot);
  }
  std::string method() const override { return "counting"; }

 private:
  std::vector<int64_t>* waited_;
};

}  // namespace

TEST(StopVote, OneRanksSignalStopsEveryRankAtTheSameStepOnTheCpu) {
  StopVote a(torch::Device("cpu"), 5), b(torch::Device("cpu"), 5);
  EXPECT_EQ(a.delay(), 0) << "the CPU reads its own step's vote: the host already waited for the all-reduce";
  const auto quiet = summed({{}, {}});
  EXPECT_FALSE(a.read(0, quiet).any());
  const auto s = summed({{.signal = true}, {}});  // rank 0 saw SIGTERM, rank 1 did not yet
  const auto ra = a.read(1, s), rb = b.read(1, s);
  EXPECT_TRUE(ra.signal && rb.signal);
  EXPECT_FALSE(ra.budget || rb.budget);
}

TEST(StopVote, ReasonsStaySeparateWhenBothArrive) {
  StopVote v(torch::Device("cpu"), 0);
  const auto both = v.read(0, summed({{.budget = true}, {.signal = true}, {}}));
  EXPECT_TRUE(both.signal);
  EXPECT_TRUE(both.budget);
  const auto budget = v.read(1, summed({{}, {.budget = true}}));
  EXPECT_TRUE(budget.budget);
  EXPECT_FALSE(budget.signal);
}

TEST(StopVote, DelayedReadingAnswersTheVoteOfDelayStepsEarlier) {
  std::vector<int64_t> waited;
  StopVote v(std::make_unique<CountingClock>(&waited), 2);
  const auto quiet = summed({{}, {}}), sig = summed({{}, {.signal = true}});
  EXPECT_FALSE(v.read(0, quiet).any());  // nothing 2 steps back yet: no wait
  EXPECT_FALSE(v.read(1, quiet).any());
  EXPECT_TRUE(waited.empty());
  EXPECT_FALSE(v.read(2, sig).any()) << "step 2's vote must not be read before step 4";
  EXPECT_FALSE(v.read(3, quiet).any());  // reads step 1's
  EXPECT_TRUE(v.read(4, quiet).signal);  // reads step 2's
  EXPECT_FALSE(v.read(5, quiet).any());
  // each reading waited for the slot of step - 2 (ring of 3): steps 0, 1, 2, 3 -> slots 0, 1, 2, 0
  EXPECT_EQ(waited, (std::vector<int64_t>{0, 1, 2, 0}));
}

TEST(StopVote, DrainReadsTheVotesStillInFlightOnce) {
  std::vector<int64_t> waited;
  StopVote v(std::make_unique<CountingClock>(&waited), 2);
  const auto quiet = summed({{}, {}}), budget = summed({{.budget = true}, {}});
  EXPECT_FALSE(v.read(0, quiet).any());
  EXPECT_FALSE(v.read(1, quiet).any());
  EXPECT_FALSE(v.read(2, quiet).any());  // reads step 0's
  EXPECT_FALSE(v.read(3, budget).any()) << "step 3's vote is read at step 5, or by a drain";
  const auto d = v.drain();                // the epoch ends after step 3: steps 2 and 3 pending
  EXPECT_TRUE(d.budget);
  EXPECT_FALSE(d.signal);
  // steps 2 and 3 read steps 0 and 1 (slots 0, 1); the drain reads step 3 (slot 0) and step 2 (slot 2)
  EXPECT_EQ(waited, (std::vector<int64_t>{0, 1, 0, 2}));
  EXPECT_FALSE(v.drain().any()) << "a drained vote is not read twice";
  StopVote cpu(torch::Device("cpu"), 2);
  EXPECT_FALSE(cpu.drain().any());
}

TEST(StopVote, DelayedReadingAfterAGapDoesNotReadAStaleSlot) {
  std::vector<int64_t> waited;
  StopVote v(std::make_unique<CountingClock>(&waited), 2);
  EXPECT_FALSE(v.read(0, summed({{.signal = true}})).any());
  // the next vote is step 5 (steps 1-4 had no all-reduce): slot of step 3 was never written
  EXPECT_FALSE(v.read(5, summed({{}})).any());
  EXPECT_TRUE(waited.empty());
}

TEST(StopVote, NegativeDelayIsRefused) {
  EXPECT_THROW(StopVote(torch::Device("cpu"), -1), std::invalid_argument);
}

TEST(StopVote, GpuReadsThroughPinnedMemory) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  StopVote v(torch::Device("cuda:0"), 2);
  EXPECT_EQ(v.delay(), 2);
  const auto sig = summed({{.signal = true}, {}}).to(torch::kCUDA);
  const auto quiet = summed({{}, {}}).to(torch::kCUDA);
  EXPECT_FALSE(v.read(0, sig).any());
  EXPECT_FALSE(v.read(1, quiet).any());
  EXPECT_TRUE(v.read(2, quiet).signal);
}

// cpu_contention_of (src/report/cpu_contention.h): the one test of CPU contention that the
// report's cpu_contention advice and `infer`'s warning both ask, on a measurement's telemetry.
#include <gtest/gtest.h>

#include "report/cpu_contention.h"

namespace trainscope {
namespace {

TelemetryHeadline busy(double process_pct, double machine_pct) {
  TelemetryHeadline h;
  h.process_cpu_pct_mean = process_pct;
  h.cpu_util_pct_mean = machine_pct;
  return h;
}

TEST(CpuContention, FiresWhenTheProcessGotFewerCoresThanItsThreadsOnABusyMachine) {
  // 2 threads, 0.9 cores used, the 2-core machine 95 % busy: others held about 1 core
  const auto c = cpu_contention_of(busy(90, 95), 2, 2);
  ASSERT_TRUE(c);
  EXPECT_NE(c->advice.find("Other processes competed for the CPU"), std::string::npos) << c->advice;
  EXPECT_NE(c->evidence.find("the process used 0.90 cores on average"), std::string::npos) << c->evidence;
  EXPECT_NE(c->evidence.find("for 2 intra-op threads"), std::string::npos) << c->evidence;
  EXPECT_NE(c->evidence.find("other processes held about 1.00 of the 2 logical cores"), std::string::npos) << c->evidence;
}

TEST(CpuContention, QuietWhenTheThreadsGotTheirCoresOrTheMachineWasNotBusy) {
  EXPECT_FALSE(cpu_contention_of(busy(190, 97), 2, 2));  // its 2 threads ran
  EXPECT_FALSE(cpu_contention_of(busy(90, 50), 2, 2));   // the machine was half idle
  EXPECT_FALSE(cpu_contention_of(busy(90, 95), 1, 2));   // one thread, and it got 0.9 of a core
  // the machine busy, but with this process's own work only (no other process held half a core)
  EXPECT_FALSE(cpu_contention_of(busy(300, 85), 8, 4));
  EXPECT_FALSE(cpu_contention_of(TelemetryHeadline{}, 2, 2));  // no utilisation read
  AdviceThresholds strict;
  strict.busy_machine_pct = 99;
  EXPECT_FALSE(cpu_contention_of(busy(90, 95), 2, 2, strict));
}

}  // namespace
}  // namespace trainscope

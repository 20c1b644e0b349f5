#include <gtest/gtest.h>

#include "trainscope/stats.h"

using namespace trainscope;

TEST(Stats, PercentileLinearInterpolation) {
  // Hand-computed with rank = p/100*(n-1): n=4 -> p50 rank 1.5 -> (2+3)/2.
  std::vector<double> v = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(*percentile(v, 50), 2.5);
  EXPECT_DOUBLE_EQ(*percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(*percentile(v, 100), 4);
  EXPECT_DOUBLE_EQ(*percentile(v, 25), 1.75);
  EXPECT_FALSE(percentile({}, 50).has_value());
}

TEST(Stats, PercentileLargeList) {
  std::vector<double> v;
  for (int i = 1000; i >= 1; --i) v.push_back(i);  // 1..1000
  // p99: rank 0.99*999 = 989.01 -> 990 + 0.01*(991-990) = 990.01
  EXPECT_NEAR(*percentile(v, 99), 990.01, 1e-9);
  EXPECT_NEAR(*percentile(v, 90), 900.1, 1e-9);
}

TEST(Stats, UnionLengthMergesOverlaps) {
  EXPECT_EQ(union_length({{0, 10}, {5, 15}, {20, 30}}), 25);
  EXPECT_EQ(union_length({{0, 10}, {0, 10}, {2, 3}}), 10);
  EXPECT_EQ(union_length({}), 0);
  EXPECT_EQ(union_length({{5, 5}, {7, 3}}), 0);
}

TEST(Stats, MeanMedian) {
  EXPECT_DOUBLE_EQ(*mean({1, 2, 3}), 2);
  EXPECT_DOUBLE_EQ(*median({5, 1, 3}), 3);
}

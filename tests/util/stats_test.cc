// Tests of the statistics and timing helpers (util/stats.h) the host
// calibrators summarize their runs with.
#include "util/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace mmsim::util {
namespace {

TEST(Summary, MedianOfAnOddCountIsTheMiddleSample) {
  EXPECT_EQ(median({5, 1, 3}), 3);
  EXPECT_EQ(summarize({5, 1, 3, 9, 7}).median, 5);
}

TEST(Summary, MedianOfAnEvenCountIsTheMeanOfTheMiddleTwo) {
  EXPECT_EQ(median({4, 1, 3, 10}), 3.5);
  EXPECT_EQ(summarize({4, 1, 3, 10}).median, 3.5);
}

TEST(Summary, HoldsTheMinimumMaximumAndCount) {
  const Summary s = summarize({2.5, -1, 8, 3});
  EXPECT_EQ(s.min, -1);
  EXPECT_EQ(s.max, 8);
  EXPECT_EQ(s.n, 4u);
}

TEST(Summary, IsAllZeroWithoutSamples) {
  const Summary s = summarize({});
  EXPECT_EQ(s.median, 0);
  EXPECT_EQ(s.min, 0);
  EXPECT_EQ(s.max, 0);
  EXPECT_EQ(s.n, 0u);
  EXPECT_EQ(s.spread(), 0);
  EXPECT_EQ(median({}), 0);
}

TEST(Summary, SpreadIsTheRangeOverTheMedian) {
  EXPECT_DOUBLE_EQ(summarize({9, 10, 12}).spread(), 0.3);
  EXPECT_DOUBLE_EQ(summarize({-12, -10, -9}).spread(), 0.3);  // over |median|
  EXPECT_EQ(summarize({4, 4, 4}).spread(), 0);
}

TEST(Summary, SpreadIsInfiniteWhenTheMedianIsZeroButTheSamplesDiffer) {
  EXPECT_TRUE(std::isinf(summarize({-1, 0, 1}).spread()));
}

TEST(Summary, PercentileIsTheSampleAtIndexFloorOfQTimesN) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // 1..100, reversed
  EXPECT_EQ(percentile(v, 0.5), 51);
  EXPECT_EQ(percentile(v, 0.9), 91);
  EXPECT_EQ(percentile(v, 0.99), 100);
  EXPECT_EQ(percentile({3, 1, 2}, 0.5), 2);
}

TEST(Summary, PercentileZeroIsTheMinimumAndOneTheMaximum) {
  EXPECT_EQ(percentile({3, 1, 2}, 0), 1);
  EXPECT_EQ(percentile({3, 1, 2}, 1), 3);
  EXPECT_EQ(percentile({3, 1, 2}, 7), 3);
  EXPECT_EQ(percentile({3, 1, 2}, -1), 1);
  EXPECT_EQ(percentile({3, 1, 2}, std::nan("")), 1);
}

TEST(Summary, PercentileOfNoSamplesIsZero) { EXPECT_EQ(percentile({}, 0.5), 0); }

TEST(NowNs, NeverGoesBackwardsAndCountsNanoseconds) {
  const int64_t t0 = now_ns();
  int64_t last = t0;
  for (int i = 0; i < 1000; ++i) {
    const int64_t t = now_ns();
    EXPECT_GE(t, last);
    last = t;
  }
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(2)) {
  }
  EXPECT_GE(now_ns() - t0, 2'000'000);
}

}  // namespace
}  // namespace mmsim::util

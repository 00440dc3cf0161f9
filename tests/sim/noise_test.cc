// The noise sources' draws: a lognormal of the mean and spread asked, user
// work stretched by its interruptions on average, nothing when off.
#include "sim/noise.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace mmsim::sim {
namespace {

struct Moments {
  double mean = 0, cv = 0;
};

template <class Draw>
Moments moments(Draw draw, int n) {
  std::vector<double> xs(static_cast<size_t>(n));
  double sum = 0;
  for (double& x : xs) sum += (x = draw());
  const double mean = sum / n;
  double sq = 0;
  for (double x : xs) sq += (x - mean) * (x - mean);
  return {mean, std::sqrt(sq / (n - 1)) / mean};
}

TEST(Noise, LognormalDrawsHaveTheMeanAndSpreadAsked) {
  const Lognormal d(5000, 1.0);
  Rng rng(7);
  const Moments m = moments([&] { return d(rng); }, 200000);
  EXPECT_NEAR(m.mean, 5000, 50);
  // The quantile table stops at the 99.95th percentile: the spread is a
  // little short of the distribution's.
  EXPECT_NEAR(m.cv, 1.0, 0.1);
}

TEST(Noise, LognormalDrawsAreNeverNegative) {
  const Lognormal d(100, 4.65);
  Rng rng(3);
  for (int i = 0; i < 100000; ++i) ASSERT_GE(d(rng), 0);
}

TEST(Noise, UserWorkIsStretchedByItsInterruptionsOnAverage) {
  NoiseConfig c;
  c.cost_jitter_cv = 0;
  c.irq_rate_hz = 1000;
  c.irq_duration_ns = 10000;
  const Noise noise(c);
  Rng rng(11);
  // 1 ms of work takes one interruption of 10 us on average: a 1% stretch.
  const Moments m = moments([&] { return noise.user_factor(rng, 1e6); }, 100000);
  EXPECT_NEAR(m.mean, 1.01, 0.0005);
}

TEST(Noise, CostJitterKeepsTheMeanAndShrinksOverLongWork) {
  NoiseConfig c;
  c.irq_rate_hz = 0;
  c.cost_jitter_cv = 0.1;
  const Noise noise(c);
  Rng rng(5);
  const Moments one = moments([&] { return noise.user_factor(rng, c.jitter_quantum_ns); }, 100000);
  const Moments hundred =
      moments([&] { return noise.user_factor(rng, 100 * c.jitter_quantum_ns); }, 100000);
  EXPECT_NEAR(one.mean, 1.0, 0.002);
  EXPECT_NEAR(one.cv, 0.1, 0.005);
  // A hundred quanta vary as their mean does: a tenth as much.
  EXPECT_NEAR(hundred.cv, 0.01, 0.0005);
}

TEST(Noise, OffAddsNothing) {
  NoiseConfig c;
  c.enabled = false;
  const Noise noise(c);
  Rng rng(1);
  EXPECT_EQ(noise.start_delay_ns(rng, true), 0);
  EXPECT_EQ(noise.wakeup_delay_ns(rng), 0);
  EXPECT_EQ(noise.kernel_op_ns(rng, 1234.5), 1234.5);
  EXPECT_EQ(noise.user_factor(rng, 1e9), 1);
}

TEST(Noise, EveryDefaultNamesItsSource) {
  for (const auto& p : noise_params()) {
    EXPECT_FALSE(p.source.empty()) << p.key;
    EXPECT_GE(NoiseConfig{}.*(p.field), p.lo) << p.key;
    EXPECT_LE(NoiseConfig{}.*(p.field), p.hi) << p.key;
  }
}

TEST(HostTurns, AtMostTheHostsCoresRunAtOnceAndEachVcpuGetsItsShare) {
  const HostTurns h(2, 4, 1000, 0, 7);
  ASSERT_TRUE(h.on());
  std::vector<int> on_time(4, 0);
  for (int t = 0; t < 100000; t += 10) {
    int running = 0;
    for (int seat = 0; seat < 4; ++seat) {
      running += h.runs(seat, t);
      on_time[seat] += h.runs(seat, t) ? 10 : 0;
    }
    EXPECT_EQ(running, 2) << "at " << t;
  }
  for (int seat = 0; seat < 4; ++seat) EXPECT_EQ(on_time[seat], 50000) << seat;
}

TEST(HostTurns, WhichVcpusRunTogetherChangesFromRoundToRound) {
  const HostTurns h(2, 4, 1000, 0, 7);
  std::vector<int> with_seat_1(4, 0);
  for (int k = 0; k < 1000; ++k) {
    const double t = k * 1000 + 500;
    if (!h.runs(0, t)) continue;
    for (int other = 1; other < 4; ++other) with_seat_1[other] += h.runs(other, t);
  }
  for (int other = 1; other < 4; ++other) EXPECT_GT(with_seat_1[other], 100) << other;
}

// When `seat` has run `work` from t, slice by slice.
double walked(const HostTurns& h, int seat, double t, double work, double slice) {
  for (;;) {
    const double end = (std::floor(t / slice) + 1) * slice;
    if (h.runs(seat, t)) {
      if (work <= end - t) return t + work;
      work -= end - t;
    }
    t = end;
  }
}

TEST(HostTurns, WorkEndsWhenItsVcpuHasRunThatLong) {
  const HostTurns h(3, 7, 700, 0, 11);
  for (int seat = 0; seat < 7; ++seat) {
    for (const double work : {100.0, 699.0, 1500.0, 20000.0, 1e6 + 31 * seat}) {
      const double start = 5000 + 97 * seat;
      EXPECT_NEAR(h.finish(seat, start, work), walked(h, seat, start, work, 700), 1e-3)
          << seat << " " << work;
    }
  }
  EXPECT_NEAR((h.finish(2, 0, 1e7) - 0) / 1e7, 7.0 / 3, 0.01) << "a share of 3/7 of the time";
}

TEST(HostTurns, AnOffTurnLastsItsMeanInSlices) {
  // Four on two: each round of 2 slices runs a seat in one of them, either.
  EXPECT_NEAR(HostTurns::offs_per_slice(2, 4), 0.375, 0.005);
  EXPECT_NEAR(HostTurns::mean_off_slices(2, 4), 4.0 / 3, 0.02);
  // Eight on two: one slice of four a round.
  EXPECT_NEAR(HostTurns::mean_off_slices(2, 8), 3.2, 0.05);
  EXPECT_EQ(HostTurns::mean_off_slices(2, 2), 0) << "no turns: each vCPU has a core";
}

TEST(HostTurns, NoMoreVcpusThanCoresIsNoTurns) {
  const HostTurns h(4, 4, 1000, 0, 1);
  EXPECT_FALSE(h.on());
  EXPECT_DOUBLE_EQ(h.finish(3, 1500, 5000), 6500);
  EXPECT_TRUE(h.runs(3, 1500));
}

TEST(Noise, TheHostKeysAreShownOnlyForAGuest) {
  const NoiseConfig real;
  NoiseConfig guest;
  guest.host_cpus = 2;
  for (const auto& p : noise_params()) {
    EXPECT_EQ(noise_param_shown(real, p), !p.key.starts_with("host_")) << p.key;
    EXPECT_TRUE(noise_param_shown(guest, p)) << p.key;
  }
}

}  // namespace
}  // namespace mmsim::sim

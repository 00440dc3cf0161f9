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

TEST(Noise, BusyVcpusBeyondTheHostsCoresShareThem) {
  NoiseConfig c;
  c.host_cpus = 2;
  const Noise noise(c);
  EXPECT_EQ(noise.host_share_factor(1), 1);
  EXPECT_EQ(noise.host_share_factor(2), 1);
  EXPECT_EQ(noise.host_share_factor(3), 1.5);
  EXPECT_EQ(noise.host_share_factor(8), 4);
}

TEST(Noise, ARealMachineOrNoNoiseSharesNoCores) {
  NoiseConfig off;
  off.host_cpus = 2;
  off.enabled = false;
  EXPECT_EQ(Noise(off).host_share_factor(8), 1);
  EXPECT_EQ(Noise(NoiseConfig{}).host_share_factor(8), 1);
}

TEST(Noise, InterruptionsOfBusyCpusGrowWithTheirNumber) {
  NoiseConfig c;
  c.cost_jitter_cv = 0;
  c.irq_rate_hz = 0;
  c.irq_busy_rate_hz = 1000;
  c.irq_busy_duration_ns = 10000;
  Noise noise(c);
  Rng rng(1);
  noise.set_busy(1);
  EXPECT_EQ(noise.user_factor(rng, 1e9), 1);
  noise.set_busy(5);  // 4,000 a second of 10 us: 4 % more
  EXPECT_NEAR(noise.user_factor(rng, 1e9), 1.04, 0.002);
}

TEST(Noise, BusyCountsPriceAlikeOnlyWhenShareAndInterruptionsAgree) {
  NoiseConfig c;
  Noise real(c);
  EXPECT_TRUE(real.prices_alike(1, 8));
  c.host_cpus = 2;
  Noise shared(c);
  EXPECT_TRUE(shared.prices_alike(1, 2));
  EXPECT_FALSE(shared.prices_alike(2, 3));
  c.irq_busy_rate_hz = 100;
  c.irq_busy_duration_ns = 1e6;
  Noise busy(c);
  EXPECT_TRUE(busy.prices_alike(0, 1));
  EXPECT_FALSE(busy.prices_alike(1, 2));
}

TEST(Noise, WithTheNoiseOffEveryBusyCountPricesAlike) {
  NoiseConfig c;
  c.enabled = false;
  c.host_cpus = 2;
  c.irq_busy_rate_hz = 100;
  c.irq_busy_duration_ns = 1e6;
  EXPECT_TRUE(Noise(c).prices_alike(1, 8));
}

TEST(Noise, TheHostKeysAreShownOnlyForAGuest) {
  const NoiseConfig real;
  NoiseConfig guest;
  guest.host_cpus = 2;
  NoiseConfig turns = guest;
  turns.host_slice_ns = 1e6;
  for (const auto& p : noise_params()) {
    EXPECT_EQ(noise_param_shown(real, p),
              !p.key.starts_with("host_") && !p.key.starts_with("irq_busy_"))
        << p.key;
    EXPECT_EQ(noise_param_shown(guest, p),
              !p.key.starts_with("irq_busy_") && !p.key.starts_with("host_slice"))
        << p.key;
    EXPECT_EQ(noise_param_shown(turns, p), !p.key.starts_with("irq_busy_")) << p.key;
  }
}

// Two host CPUs, round robin in slices of 1 ms; nothing else interrupts.
NoiseConfig round_robin() {
  NoiseConfig c;
  c.cost_jitter_cv = 0;
  c.irq_rate_hz = 0;
  c.host_cpus = 2;
  c.host_slice_ns = 1e6;
  c.host_slice_cv = 0.5;
  return c;
}

TEST(Noise, RoundRobinTheHostsShareIsLeftToItsCpus) {
  Noise noise(round_robin());
  noise.set_busy(4);
  Rng rng(3);
  EXPECT_TRUE(noise.round_robin());
  EXPECT_EQ(noise.host_share_factor(4), 1);
  EXPECT_EQ(noise.user_factor(rng, 1e9), 1);
}

TEST(Noise, RoundRobinBusyCountsPriceAlikeOnlyAtOrBelowTheHostsCpus) {
  const Noise noise(round_robin());
  EXPECT_TRUE(noise.prices_alike(1, 2));
  EXPECT_TRUE(noise.prices_alike(3, 3));
  EXPECT_FALSE(noise.prices_alike(2, 3));
  EXPECT_FALSE(noise.prices_alike(3, 4));
}

}  // namespace
}  // namespace mmsim::sim

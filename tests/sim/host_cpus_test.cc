// The guest's host as a round robin of its CPUs over the busy vCPUs.
#include "sim/host_cpus.h"

#include <gtest/gtest.h>

namespace mmsim::sim {
namespace {

// 2 host CPUs under 8 vCPUs, slices of 1 ms (cv 0.5).
HostCpus two_cpus(uint64_t seed = 1) { return HostCpus(2, 8, 1e6, 0.5, Rng(seed)); }

// How many of vCPUs 0..n-1 hold a host CPU at `at`.
int running(HostCpus& h, int n, double at) {
  int k = 0;
  for (int v = 0; v < n; ++v) k += h.running_at(v, at);
  return k;
}

TEST(HostCpus, ExactlyItsCpusRunOfMoreBusyVcpusAtAnyTime) {
  HostCpus h = two_cpus();
  for (int v = 0; v < 4; ++v) h.set_busy(v, true, 0);
  for (double at = 0.5e5; at < 1e8; at += 0.7e5) EXPECT_EQ(running(h, 4, at), 2) << at;
}

TEST(HostCpus, FewerBusyVcpusThanItsCpusRunThroughout) {
  HostCpus h = two_cpus();
  h.set_busy(3, true, 1000);
  h.set_busy(5, true, 2000);
  EXPECT_EQ(h.done_at(3, 5000, 1e9), 5000 + 1e9);
  EXPECT_TRUE(h.running_at(5, 5e8));
}

TEST(HostCpus, EachOfFourBusyVcpusOnTwoCpusGetsHalfItsTime) {
  HostCpus h = two_cpus();
  for (int v = 0; v < 4; ++v) h.set_busy(v, true, 0);
  for (int v = 0; v < 4; ++v) EXPECT_NEAR(h.done_at(v, 0, 1e9) / 2e9, 1, 0.02) << v;
}

TEST(HostCpus, WorkShorterThanWhatIsLeftOfItsSliceRunsWhole) {
  HostCpus h = two_cpus();
  for (int v = 0; v < 4; ++v) h.set_busy(v, true, 0);
  // vCPUs 0 and 1 took the host's CPUs at 0; a slice is 1 ms on average.
  EXPECT_EQ(h.done_at(0, 1000, 1000), 2000);
  EXPECT_EQ(h.done_at(2, 1000, 1000) > 2000, true);  // it waits in line first
}

TEST(HostCpus, AVcpuThatHaltsGivesItsCpuToTheFirstInLineAtOnce) {
  HostCpus h = two_cpus();
  for (int v = 0; v < 3; ++v) h.set_busy(v, true, 0);
  EXPECT_FALSE(h.running_at(2, 1000));
  h.set_busy(0, false, 1000);
  EXPECT_TRUE(h.running_at(2, 1000));
  EXPECT_EQ(h.done_at(2, 1000, 500), 1500);
}

TEST(HostCpus, ABusyChangeKeepsTheScheduleBeforeIt) {
  HostCpus h = two_cpus();
  for (int v = 0; v < 4; ++v) h.set_busy(v, true, 0);
  const double before = h.done_at(2, 0, 3e6);
  h.set_busy(5, true, 1e8);  // long after vCPU 2's work was done
  EXPECT_EQ(h.done_at(2, 0, 3e6), before);
}

TEST(HostCpus, TheScheduleDoesNotHangOnHowFarAheadItWasAsked) {
  // One host asked far ahead before each busy change, one never: the same
  // schedule after them.
  HostCpus asked = two_cpus(7), not_asked = two_cpus(7);
  for (int v = 0; v < 4; ++v) {
    asked.set_busy(v, true, 0);
    not_asked.set_busy(v, true, 0);
  }
  asked.done_at(1, 0, 5e7);
  asked.set_busy(4, true, 2e6);
  not_asked.set_busy(4, true, 2e6);
  asked.done_at(4, 2e6, 5e7);
  asked.set_busy(0, false, 9e6);
  not_asked.set_busy(0, false, 9e6);
  for (int v = 1; v < 5; ++v) EXPECT_EQ(asked.done_at(v, 1e7, 2e7), not_asked.done_at(v, 1e7, 2e7));
}

TEST(HostCpus, TwoSeedsGiveTwoSchedules) {
  HostCpus a = two_cpus(1), b = two_cpus(2);
  for (int v = 0; v < 4; ++v) {
    a.set_busy(v, true, 0);
    b.set_busy(v, true, 0);
  }
  EXPECT_NE(a.done_at(0, 0, 1e7), b.done_at(0, 0, 1e7));
}

}  // namespace
}  // namespace mmsim::sim

#include "cost/bandwidth.h"

#include <gtest/gtest.h>

#include <vector>

#include "cost/cache_model.h"
#include "cost/cost_profile.h"
#include "topo/topology.h"

namespace mmsim::cost {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// Two sockets of two CPUs, a node each; memory delivers 10 B/ns a node and
// the interconnect 4 B/ns each way.
topo::MachineSpec two_sockets() {
  topo::MachineSpec s;
  s.name = "two";
  s.sockets = 2;
  s.cores_per_socket = 2;
  s.mem_per_node = 64 * kMiB;
  s.llc_per_socket = 8 * kMiB;
  return s;
}

CostProfile limited(double mem, double link) {
  CostProfile c = default_costs("2s-16c");
  c.mem_bandwidth_gbps = mem;
  c.interconnect_gbps = link;
  return c;
}

struct Machine {
  explicit Machine(double mem = 10, double link = 4) : costs(limited(mem, link)) {}
  topo::Topology topo{two_sockets()};
  CostProfile costs;
  Bandwidth bw{topo, costs};
};

const NodeId kNode0(0), kNode1(1);

TEST(Bandwidth, ADemandWithinCapacityLeavesEveryLineAtFullSpeed) {
  Machine m;
  m.bw.set_demand(1, kNode0, std::vector<double>{6, 0});
  m.bw.settle();
  EXPECT_EQ(m.bw.factor(kNode0, kNode0), 1.0);
}

TEST(Bandwidth, StreamsAskingTwiceWhatANodeDeliversRunAtHalfSpeed) {
  Machine m;
  m.bw.set_demand(1, kNode0, std::vector<double>{10, 0});
  m.bw.set_demand(2, kNode0, std::vector<double>{10, 0});
  EXPECT_TRUE(m.bw.settle());
  EXPECT_DOUBLE_EQ(m.bw.factor(kNode0, kNode0), 2.0);
  // The other node's memory is idle.
  EXPECT_EQ(m.bw.factor(kNode1, kNode1), 1.0);
}

TEST(Bandwidth, ALineFromAnotherSocketTakesTheSaturatedInterconnectsFactor) {
  Machine m;
  // 8 B/ns from node 0 to CPUs of node 1: node 0's memory has room (8 of
  // 10), its links out do not (8 of 4).
  m.bw.set_demand(1, kNode1, std::vector<double>{8, 0});
  m.bw.settle();
  EXPECT_DOUBLE_EQ(m.bw.factor(kNode1, kNode0), 2.0);
  // Node 0's own CPUs cross no link.
  EXPECT_EQ(m.bw.factor(kNode0, kNode0), 1.0);
}

TEST(Bandwidth, AClearedDemandGivesItsShareBack) {
  Machine m;
  m.bw.set_demand(1, kNode0, std::vector<double>{10, 0});
  m.bw.set_demand(2, kNode0, std::vector<double>{10, 0});
  m.bw.settle();
  m.bw.clear_demand(2);
  EXPECT_TRUE(m.bw.settle());
  EXPECT_EQ(m.bw.factor(kNode0, kNode0), 1.0);
}

TEST(Bandwidth, AChangeWithinTheToleranceKeepsTheFactorInForce) {
  Machine m;
  m.bw.set_demand(1, kNode0, std::vector<double>{20, 0});
  m.bw.settle();
  // 1 % more asked: the factor in force stays 2.
  m.bw.set_demand(1, kNode0, std::vector<double>{20.2, 0});
  EXPECT_FALSE(m.bw.settle());
  EXPECT_DOUBLE_EQ(m.bw.factor(kNode0, kNode0), 2.0);
}

TEST(Bandwidth, AffectedNamesOnlyTasksCrossingAChangedResource) {
  Machine m;
  m.bw.set_demand(1, kNode0, std::vector<double>{5, 0});
  m.bw.set_demand(2, kNode1, std::vector<double>{0, 5});
  m.bw.settle();
  m.bw.set_demand(3, kNode0, std::vector<double>{15, 0});
  ASSERT_TRUE(m.bw.settle());
  EXPECT_TRUE(m.bw.affected(1));
  EXPECT_FALSE(m.bw.affected(2));
}

TEST(Bandwidth, ASaturationIsReportedWithItsPeakAndHowLongItLasted) {
  Machine m;
  m.bw.set_demand(1, kNode1, std::vector<double>{8, 0});
  m.bw.settle(1'000'000'000);
  m.bw.clear_demand(1);
  m.bw.settle(3'000'000'000);
  const auto s = m.bw.saturations(10'000'000'000);
  // Node 0's memory was never saturated (8 of 10); the links were, 2 s.
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].resource, "socket 0 links out");
  EXPECT_EQ(s[1].resource, "socket 1 links in");
  EXPECT_DOUBLE_EQ(s[0].peak, 2.0);
  EXPECT_DOUBLE_EQ(s[0].saturated_s, 2.0);
}

TEST(Bandwidth, TheKernelZeroesAndCopiesPagesSlowerThroughASaturatedMemory) {
  Machine m;
  CacheModel cache(m.topo, m.costs);
  const double zero = cache.page_zero_ns(kNode0, kNode0);
  const double copy = cache.page_copy_ns(kNode0, kNode1, kNode0);
  cache.set_bandwidth(&m.bw);
  m.bw.set_demand(1, kNode0, std::vector<double>{30, 0});
  m.bw.settle();
  EXPECT_DOUBLE_EQ(cache.page_zero_ns(kNode0, kNode0), 3 * zero);
  // The copy's write half is slowed; its read from node 1 is not.
  EXPECT_GT(cache.page_copy_ns(kNode0, kNode1, kNode0), copy);
  EXPECT_LT(cache.page_copy_ns(kNode0, kNode1, kNode0), 3 * copy);
}

TEST(Bandwidth, ACapacityOfZeroIsNotLimited) {
  Machine m(0, 0);
  EXPECT_FALSE(m.bw.enabled());
  m.bw.set_demand(1, kNode0, std::vector<double>{1000, 1000});
  EXPECT_FALSE(m.bw.settle());
  EXPECT_EQ(m.bw.factor(kNode1, kNode0), 1.0);
}

}  // namespace
}  // namespace mmsim::cost

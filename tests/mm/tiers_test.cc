// Memory tiers (mm/memory-tiers.c, and node_demotion before 6.1) on
// machines with CPU-less memory nodes: how the nodes are built and how far
// they are, which tier each kernel puts them in, and where demotion goes.
#include "mm/tiers.h"

#include <gtest/gtest.h>

#include "cost/cache_model.h"
#include "cost/cost_profile.h"
#include "topo/topology.h"

namespace mmsim::mm {
namespace {

// The dram-cxl preset: two sockets, each a DRAM node with CPUs and a CXL
// node (nodes 2 and 3).
topo::Topology dram_cxl(topo::MemoryOnline online = topo::MemoryOnline::kKmem) {
  topo::MachineSpec spec = *topo::preset("dram-cxl");
  spec.memory_node_online = online;
  return topo::Topology(spec);
}

TEST(MemoryNodes, AreNumberedAfterTheCpuNodesSocketBySocketAndHaveNoCpus) {
  const topo::Topology t = dram_cxl();
  ASSERT_EQ(t.nr_nodes(), 4u);
  EXPECT_FALSE(t.node(NodeId(0)).cpus.empty());
  EXPECT_FALSE(t.node(NodeId(1)).cpus.empty());
  EXPECT_TRUE(t.node(NodeId(2)).cpus.empty());
  EXPECT_TRUE(t.node(NodeId(3)).cpus.empty());
  EXPECT_EQ(t.node(NodeId(2)).socket, 0);
  EXPECT_EQ(t.node(NodeId(3)).socket, 1);
  EXPECT_EQ(t.node(NodeId(2)).mem_bytes, uint64_t{64} << 30);
  EXPECT_EQ(t.home(NodeId(2)), NodeId(0));
  EXPECT_EQ(t.home(NodeId(3)), NodeId(1));
  EXPECT_EQ(t.home(NodeId(1)), NodeId(1));
}

TEST(MemoryNodes, TheirSlitDistanceAddsTheirLatencyRatioToTheirSocketsDram) {
  // 180 ns against 100 ns of DRAM: 8 more than the socket's own distance.
  const topo::Topology t = dram_cxl();
  EXPECT_EQ(t.distance(NodeId(0), NodeId(2)), 18);
  EXPECT_EQ(t.distance(NodeId(0), NodeId(3)), 21 + 8);
  EXPECT_EQ(t.distance(NodeId(2), NodeId(3)), 21 + 16);
  EXPECT_EQ(t.distance(NodeId(3), NodeId(3)), 10);
  EXPECT_EQ(t.distance(NodeId(3), NodeId(0)), t.distance(NodeId(0), NodeId(3)));
  // The zonelist falls back to the socket's own CXL node before the other
  // socket's DRAM.
  const auto& order = t.fallback_order(NodeId(0));
  EXPECT_EQ(order[1], NodeId(2));
}

TEST(MemoryNodes, AMatrixOverEveryNodeIsTakenAsGiven) {
  topo::MachineSpec spec = *topo::preset("dram-cxl");
  spec.sockets = 1;
  spec.distance = {{10, 40}, {40, 10}};
  const topo::Topology t(spec);
  EXPECT_EQ(t.distance(NodeId(0), NodeId(1)), 40);
}

TEST(MemoryNodes, ValidationAsksForTheLatenciesTheirDistanceFollows) {
  topo::MachineSpec spec = *topo::preset("2s-16c");
  spec.memory_nodes_per_socket = 1;
  spec.memory_node_mem = uint64_t{1} << 30;
  const auto problems = topo::validate_machine_spec(spec);
  auto has = [&](const std::string& key) {
    for (const auto& p : problems) {
      if (p.starts_with(key + ":")) return true;
    }
    return false;
  };
  EXPECT_TRUE(has("memory_node_latency_ns"));
  EXPECT_TRUE(has("dram_latency_ns"));
  spec.memory_node_latency_ns = 80;
  spec.dram_latency_ns = 100;
  EXPECT_FALSE(topo::validate_machine_spec(spec).empty());  // faster than DRAM
  spec.memory_node_latency_ns = 200;
  EXPECT_TRUE(topo::validate_machine_spec(spec).empty());
}

TEST(MemoryNodes, TheMachineSizeLimitBlamesTheKeyThatBreaksIt) {
  auto keys = [](const topo::MachineSpec& spec) {
    std::vector<std::string> out;
    for (const auto& p : topo::validate_machine_spec(spec)) out.push_back(p.substr(0, p.find(':')));
    return out;
  };
  topo::MachineSpec spec = *topo::preset("dram-cxl");
  spec.memory_node_mem = uint64_t{8} << 40;  // 2 x 8 TiB beside the DRAM: past 16 TiB
  EXPECT_EQ(keys(spec), std::vector<std::string>{"memory_node_mem"});
  spec.mem_per_node = uint64_t{9} << 40;  // the DRAM alone is past it: its key only
  EXPECT_EQ(keys(spec), std::vector<std::string>{"mem_per_node"});
}

TEST(MemoryNodes, AreReachedThroughTheirHomeNodeAtTheirExtraLatency) {
  const topo::Topology t = dram_cxl();
  const cost::CostProfile costs = cost::default_costs();
  const cost::CacheModel cache(t, costs);
  const double local = cache.dram_ns(NodeId(0), NodeId(0));
  EXPECT_DOUBLE_EQ(cache.dram_ns(NodeId(0), NodeId(2)), local * 1.8);
  EXPECT_DOUBLE_EQ(cache.dram_ns(NodeId(0), NodeId(3)),
                   cache.dram_ns(NodeId(0), NodeId(1)) + costs.mem_latency_ns * 0.8);
}

TEST(MemoryTiers, WithoutTiersEveryNodeIsTopTierAndNothingIsDemoted) {
  const topo::Topology t = dram_cxl();
  const MemoryTiers tiers(t, TierRule::kNone);
  EXPECT_FALSE(tiers.tiered());
  for (NodeId n : {NodeId(0), NodeId(2)}) {
    EXPECT_TRUE(tiers.toptier(n));
    EXPECT_FALSE(tiers.demotion_target(n));
  }
}

TEST(MemoryTiers, From515ToSixZeroEveryCpuLessNodeIsTheTierBelow) {
  const MemoryTiers tiers(dram_cxl(topo::MemoryOnline::kBoot), TierRule::kCpuNodes);
  EXPECT_TRUE(tiers.toptier(NodeId(1)));
  EXPECT_FALSE(tiers.toptier(NodeId(2)));
  EXPECT_EQ(tiers.demotion_target(NodeId(0)), NodeId(2));
  EXPECT_EQ(tiers.demotion_target(NodeId(1)), NodeId(3));
  EXPECT_FALSE(tiers.demotion_target(NodeId(2)));
}

TEST(MemoryTiers, In61KmemMemoryIsTier22AndBootMemoryIsDram) {
  const MemoryTiers kmem(dram_cxl(topo::MemoryOnline::kKmem), TierRule::kKmem);
  EXPECT_EQ(kmem.adistance(NodeId(0)), 576);
  EXPECT_EQ(kmem.tier(NodeId(0)), 4);
  EXPECT_EQ(kmem.adistance(NodeId(2)), 2880);
  EXPECT_EQ(kmem.tier(NodeId(2)), 22);
  EXPECT_FALSE(kmem.toptier(NodeId(2)));
  EXPECT_EQ(kmem.describe(), "memory_tier4: 0-1\nmemory_tier22: 2-3\n");
  // Boot memory without CPUs is one more DRAM node, whatever its latency.
  const MemoryTiers boot(dram_cxl(topo::MemoryOnline::kBoot), TierRule::kKmem);
  EXPECT_FALSE(boot.tiered());
  EXPECT_TRUE(boot.toptier(NodeId(2)));
}

TEST(MemoryTiers, TheHmatRuleScalesDramsDistanceByLatencyAndInverseBandwidth) {
  // 576 x (2 x 180) / (2 x 100) = 1036, x (2 x 307200) / (2 x 36000) = 8840
  // (integer steps, left to right): tier 69.
  const MemoryTiers tiers(dram_cxl(topo::MemoryOnline::kBoot), TierRule::kHmat);
  EXPECT_EQ(tiers.adistance(NodeId(2)), 8840);
  EXPECT_EQ(tiers.tier(NodeId(3)), 69);
  EXPECT_FALSE(tiers.toptier(NodeId(3)));
  // 6.7-6.9 read the HMAT for dax/kmem memory only.
  const MemoryTiers kmem_only(dram_cxl(topo::MemoryOnline::kBoot), TierRule::kKmemHmat);
  EXPECT_TRUE(kmem_only.toptier(NodeId(2)));
  const MemoryTiers kmem(dram_cxl(topo::MemoryOnline::kKmem), TierRule::kKmemHmat);
  EXPECT_EQ(kmem.adistance(NodeId(2)), 8840);
}

TEST(MemoryTiers, WithoutHmatBandwidthBootMemoryStaysDramAndKmemTakesTheDaxDefault) {
  topo::MachineSpec spec = *topo::preset("dram-cxl");
  spec.memory_node_bandwidth_mbps = 0;
  spec.memory_node_online = topo::MemoryOnline::kBoot;
  EXPECT_TRUE(MemoryTiers(topo::Topology(spec), TierRule::kHmat).toptier(NodeId(2)));
  spec.memory_node_online = topo::MemoryOnline::kKmem;
  EXPECT_EQ(MemoryTiers(topo::Topology(spec), TierRule::kHmat).adistance(NodeId(2)), 2880);
}

TEST(MemoryTiers, ANodeDemotesToTheNearestNodeOfTheNextTierAndFallsBackToAllLowerOnes) {
  const MemoryTiers tiers(dram_cxl(), TierRule::kKmem);
  EXPECT_EQ(tiers.demotion_target(NodeId(0)), NodeId(2));
  EXPECT_EQ(tiers.demotion_target(NodeId(1)), NodeId(3));
  const auto& lower = tiers.lower_tier_nodes(NodeId(1));
  ASSERT_EQ(lower.size(), 2u);
  EXPECT_EQ(lower[0], NodeId(3));
  EXPECT_EQ(lower[1], NodeId(2));
  EXPECT_TRUE(tiers.lower_tier_nodes(NodeId(2)).empty());
}

}  // namespace
}  // namespace mmsim::mm

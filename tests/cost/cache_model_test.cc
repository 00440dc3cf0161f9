#include "cost/cache_model.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cost/cost_profile.h"
#include "scenario/simulation.h"
#include "support/fault_drop.h"
#include "topo/topology.h"

namespace mmsim::cost {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// Four nodes on a ring (0-1-2-3-0): each node has two neighbours one hop
// away (SLIT 21) and one two hops away (31). One CPU per socket, 8 MiB LLC.
topo::MachineSpec ring4() {
  topo::MachineSpec s;
  s.name = "ring4";
  s.sockets = 4;
  s.cores_per_socket = 1;
  s.mem_per_node = 64 * kMiB;
  s.llc_per_socket = 8 * kMiB;
  s.distance = {{10, 21, 31, 21}, {21, 10, 21, 31}, {31, 21, 10, 21}, {21, 31, 21, 10}};
  return s;
}

struct Model {
  topo::Topology topo{ring4()};
  CostProfile costs = default_costs("xeon-8s-144c");
  CacheModel cache{topo, costs};
};

TEST(CacheModel, AWorkingSetThatFitsTheLlcCostsLlcHits) {
  Model m;
  m.cache.add_footprint(1, CpuId(0), {1, 0}, 4 * kMiB);
  EXPECT_DOUBLE_EQ(m.cache.line_ns(4 * kMiB, CpuId(0), NodeId(0), Pattern::kDependent),
                   m.costs.llc_ns);
}

TEST(CacheModel, AWorkingSetBeyondAnLruLlcCostsDram) {
  Model m;
  m.costs.llc_adaptive = 0;
  m.cache.add_footprint(1, CpuId(0), {1, 0}, 16 * kMiB);
  EXPECT_DOUBLE_EQ(m.cache.line_ns(16 * kMiB, CpuId(0), NodeId(0), Pattern::kDependent),
                   m.costs.mem_latency_ns);
}

TEST(CacheModel, AnAdaptiveLlcKeepsACapacitySizedPartOfALargerWorkingSet) {
  Model m;
  m.costs.llc_adaptive = 1;
  m.cache.add_footprint(1, CpuId(0), {1, 0}, 16 * kMiB);
  const double half = 0.5 * m.costs.llc_ns + 0.5 * m.costs.mem_latency_ns;
  EXPECT_DOUBLE_EQ(m.cache.line_ns(16 * kMiB, CpuId(0), NodeId(0), Pattern::kDependent), half);
}

TEST(CacheModel, AWorkingSetThatFitsL1CostsL1Hits) {
  Model m;
  m.cache.add_footprint(1, CpuId(0), {1, 0}, 16 * 1024);
  EXPECT_DOUBLE_EQ(m.cache.task_line_ns(1, CpuId(0), NodeId(0), Pattern::kDependent),
                   m.costs.l1_ns);
}

TEST(CacheModel, TasksSharingMemoryCountItOnceInTheirSocketsLlc) {
  Model m;
  m.cache.add_footprint(1, CpuId(0), {1, 0}, 6 * kMiB);
  m.cache.add_footprint(2, CpuId(0), {1, 0}, 6 * kMiB);
  EXPECT_EQ(m.cache.socket_bytes(0), 6 * kMiB);
  m.cache.add_footprint(3, CpuId(0), {2, 0}, 6 * kMiB);
  EXPECT_EQ(m.cache.socket_bytes(0), 12 * kMiB);
  m.cache.drop_footprints(3);
  EXPECT_EQ(m.cache.socket_bytes(0), 6 * kMiB);
}

TEST(CacheModel, ASliceFromWhereAWholeBufferStartsIsItsOwnFootprint) {
  // main's sweep of a buffer and its first thread's slice of it start at the
  // same page: when main drops its footprint, the slice keeps its own size.
  Model m;
  m.cache.add_footprint(1, CpuId(0), {1, 0}, 64 * kMiB);
  m.cache.add_footprint(2, CpuId(0), {1, 0}, 2 * kMiB);
  m.cache.drop_footprints(1);
  EXPECT_EQ(m.cache.socket_bytes(0), 2 * kMiB);
}

TEST(CacheModel, AFootprintChangeThatMovesTheLlcHitFractionNamesItsSocket) {
  Model m;
  m.costs.llc_adaptive = 0;
  m.cache.add_footprint(1, CpuId(0), {1, 0}, kMiB);  // fits: the fraction stays 1
  EXPECT_TRUE(m.cache.take_changed_sockets().empty());
  m.cache.add_footprint(2, CpuId(0), {2, 0}, 64 * kMiB);  // no longer fits
  EXPECT_EQ(m.cache.take_changed_sockets(), std::vector<uint16_t>{0});
  EXPECT_TRUE(m.cache.take_changed_sockets().empty());
}

TEST(CacheModel, RemoteDramCostsMoreByHopCount) {
  Model m;
  const double local = m.cache.dram_ns(NodeId(0), NodeId(0));
  const double one = m.cache.dram_ns(NodeId(0), NodeId(1));
  const double two = m.cache.dram_ns(NodeId(0), NodeId(2));
  EXPECT_DOUBLE_EQ(local, m.costs.mem_latency_ns);
  EXPECT_DOUBLE_EQ(one, m.costs.mem_latency_1hop_ns);
  EXPECT_DOUBLE_EQ(two, m.costs.mem_latency_2hop_ns);
  EXPECT_LT(local, one);
  EXPECT_LT(one, two);
}

TEST(CacheModel, WithoutPerHopLatenciesRemoteDramScalesBySlitDistance) {
  Model m;
  m.costs.mem_latency_1hop_ns = 0;
  m.costs.mem_latency_2hop_ns = 0;
  EXPECT_DOUBLE_EQ(m.cache.dram_ns(NodeId(0), NodeId(2)), m.costs.mem_latency_ns * 3.1);
}

TEST(CacheModel, AnotherNodeOfTheSameSocketIsNoInterconnectHopAway) {
  topo::MachineSpec s;
  s.name = "snc";
  s.sockets = 2;
  s.cores_per_socket = 2;
  s.nodes_per_socket = 2;
  s.mem_per_node = 64 * kMiB;
  s.llc_per_socket = 8 * kMiB;
  const topo::Topology t(s);  // SLIT: 10 local, 11 within a socket, 20 across
  const CostProfile costs = default_costs("xeon-8s-144c");
  const CacheModel cache(t, costs);
  EXPECT_DOUBLE_EQ(cache.dram_ns(NodeId(0), NodeId(1)), costs.mem_latency_ns * 1.1);
  EXPECT_DOUBLE_EQ(cache.dram_ns(NodeId(0), NodeId(2)), costs.mem_latency_1hop_ns);
}

TEST(CacheModel, IndependentMissesOverlapAndAStreamIsPrefetched) {
  Model m;
  m.costs.llc_adaptive = 0;
  const uint64_t big = 64 * kMiB;
  m.cache.add_footprint(1, CpuId(0), {1, 0}, big);
  const double dep = m.cache.line_ns(big, CpuId(0), NodeId(0), Pattern::kDependent);
  const double ind = m.cache.line_ns(big, CpuId(0), NodeId(0), Pattern::kIndependent);
  const double stream = m.cache.line_ns(big, CpuId(0), NodeId(0), Pattern::kStream);
  EXPECT_DOUBLE_EQ(ind, dep / m.costs.lfb_entries);
  EXPECT_DOUBLE_EQ(stream, dep / m.costs.l2_outstanding);
}

TEST(CacheModel, ConsecutiveSmallMetadataEntriesShareALineAndStreamTheNext) {
  Model m;
  m.costs.llc_adaptive = 0;
  m.cache.add_footprint(1, CpuId(0), {1, 0}, 64 * kMiB);
  m.cache.set_current(1, CpuId(0));
  // 16-byte page_cgroup entries: four pages a line, so one lookup in four
  // misses; after the first, each missed line is the next one, prefetched.
  double total = 0;
  for (uint64_t pfn = 0; pfn < 64; ++pfn)
    total += m.cache.meta_miss_ns(Meta::kPageCgroup, 0, pfn, 16, NodeId(0));
  const double dependent = m.costs.mem_latency_ns - m.costs.l1_ns;
  const double streamed = m.costs.mem_latency_ns / m.costs.l2_outstanding - m.costs.l1_ns;
  EXPECT_DOUBLE_EQ(total, dependent + 15 * streamed);
  const auto& s = m.cache.meta_stats()[static_cast<size_t>(Meta::kPageCgroup)];
  EXPECT_EQ(s.misses, 16u);
  EXPECT_EQ(s.streamed, 15u);
  EXPECT_EQ(s.hits, 48u);
}

TEST(CacheModel, MetadataOfScatteredPagesMissesAtFullLatency) {
  Model m;
  m.costs.llc_adaptive = 0;
  m.cache.add_footprint(1, CpuId(0), {1, 0}, 64 * kMiB);
  m.cache.set_current(1, CpuId(0));
  double total = 0;
  for (uint64_t i = 0; i < 8; ++i)
    total += m.cache.meta_miss_ns(Meta::kStructPage, 0, i * 1009, kStructPageBytes, NodeId(0));
  EXPECT_DOUBLE_EQ(total, 8 * (m.costs.mem_latency_ns - m.costs.l1_ns));
}

TEST(CacheModel, ARemoteCopyCostsMoreThanALocalOne) {
  Model m;
  EXPECT_DOUBLE_EQ(m.cache.page_copy_ns(NodeId(0), NodeId(0), NodeId(0)), m.costs.page_copy_ns);
  EXPECT_GT(m.cache.page_copy_ns(NodeId(0), NodeId(1), NodeId(0)), m.costs.page_copy_ns);
  EXPECT_GT(m.cache.page_copy_ns(NodeId(0), NodeId(2), NodeId(0)),
            m.cache.page_copy_ns(NodeId(0), NodeId(1), NodeId(0)));
}

// A seed-B-like loop over a file of `mib` MiB on a machine with a 1 MiB LRU
// LLC: sys time per page and pass.
// A seed-B-like loop over a file of `mib` MiB on a machine with a 1 MiB LRU
// LLC: what a page_cgroup line miss cost on average.
double page_cgroup_ns_per_miss(uint64_t mib) {
  const std::string text = testing::fault_drop_scenario(R"(
[scenario]
name = "fault-drop"
seed = 1
[machine]
sockets = 1
cores_per_socket = 1
mem_per_node = "1GiB"
llc_per_socket = "1MiB"
[kernel]
version = "3.3"
[memcg]
stat_protocol = "begin-end-no-global"
[costs]
llc_adaptive = 0
)",
                                                        std::to_string(mib) + "MiB", true, 4);
  scenario::Source src{"fault-drop.toml", text, {}, std::nullopt, ""};
  const scenario::PrepareResult p = scenario::prepare(src);
  EXPECT_TRUE(p.run) << (p.diagnostics.empty() ? "" : p.diagnostics[0].message);
  if (!p.run) return 0;
  const workload::RunResult r = scenario::simulate(*p.run);
  for (const auto& m : r.metadata) {
    if (m.array == "page_cgroup" && m.misses > 0) return m.miss_ns / static_cast<double>(m.misses);
  }
  ADD_FAILURE() << "no page_cgroup misses";
  return 0;
}

TEST(CacheModel, PageMetadataStartsMissingTheLlcWhenTheLoopOutgrowsIt) {
  // Per page, the loop walks 64 (data) + 64 (struct page) + 8 (PTE) + 8
  // (page-cache slot) + 16 (page_cgroup) = 160 bytes: 1 MiB of LLC holds
  // those of 6,553 pages, a 25.6 MiB file. Below, a missed page_cgroup line
  // comes from the LLC; above, from DRAM.
  const double fits = page_cgroup_ns_per_miss(24);    // 0.94 MiB a pass
  const double over = page_cgroup_ns_per_miss(32);    // 1.25 MiB
  const double over2 = page_cgroup_ns_per_miss(128);  // 5 MiB
  EXPECT_GT(over, fits * 3) << "over " << over << " fits " << fits;
  // Further out the mlock's own walk (96 bytes a page) outgrows the LLC too.
  EXPECT_GE(over2, over);
  EXPECT_LT(over2, over * 1.15);
}

}  // namespace
}  // namespace mmsim::cost

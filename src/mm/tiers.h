// Models memory tiers (mm/memory-tiers.c, and before 6.1 mm/migrate.c's
// node_demotion[]): each node's abstract distance, the tiers they form,
// which nodes are top tier (node_is_toptier), and where reclaim demotes a
// node's pages (next_demotion_node, node_get_allowed_targets).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/types.h"
#include "topo/topology.h"

namespace mmsim::mm {

// How a kernel puts nodes into tiers, by version.
enum class TierRule : int64_t {
  // No tiers: every node is top tier, nothing is demoted (before 5.15).
  kNone = 0,
  // Nodes with CPUs above nodes without (5.15-6.0: node_is_toptier tests
  // N_CPU; demotion targets are the nearest CPU-less nodes).
  kCpuNodes = 1,
  // Explicit tiers (6.1-6.6): every boot node is DRAM (abstract distance
  // 576); memory onlined by dax/kmem is a slow tier (2880).
  kKmem = 2,
  // As kKmem, but dax/kmem memory's distance comes from the HMAT's latency
  // and bandwidth when both are reported (6.7-6.9).
  kKmemHmat = 3,
  // As kKmemHmat, and CPU-less boot nodes too get their distance from the
  // HMAT (memory_tier_late_init, 6.10 on).
  kHmat = 4,
};

// MEMTIER_CHUNK_BITS, MEMTIER_ADISTANCE_DRAM, the dax/kmem default.
inline constexpr int kMemtierChunkBits = 7;
inline constexpr int kAdistanceDram = 4 * (1 << kMemtierChunkBits) + (1 << (kMemtierChunkBits - 1));
inline constexpr int kAdistanceDaxDefault = kAdistanceDram * 5;

class MemoryTiers {
 public:
  MemoryTiers(const topo::Topology& topo, TierRule rule);

  // node_is_toptier.
  bool toptier(NodeId n) const { return nodes_[n.v].toptier; }
  // The node's abstract distance and tier id (adistance >> 7).
  int adistance(NodeId n) const { return nodes_[n.v].adistance; }
  int tier(NodeId n) const { return nodes_[n.v].adistance >> kMemtierChunkBits; }
  // next_demotion_node: the nearest node of the next lower tier (ties: the
  // lowest id; the kernel picks one of them at random); nullopt for the
  // last tier.
  std::optional<NodeId> demotion_target(NodeId n) const {
    const auto& t = nodes_[n.v].preferred;
    if (t.empty()) return std::nullopt;
    return t.front();
  }
  // node_get_allowed_targets: every node in a lower tier, by distance.
  const std::vector<NodeId>& lower_tier_nodes(NodeId n) const { return nodes_[n.v].lower; }
  // Whether any node is below the top tier.
  bool tiered() const { return tiered_; }
  // The tiers as /sys/devices/virtual/memory_tiering shows them, one line
  // each: "memory_tier4: 0-1".
  std::string describe() const;

 private:
  struct NodeTier {
    int adistance = kAdistanceDram;
    bool toptier = true;
    std::vector<NodeId> preferred;
    std::vector<NodeId> lower;
  };
  std::vector<NodeTier> nodes_;
  bool tiered_ = false;
};

}  // namespace mmsim::mm

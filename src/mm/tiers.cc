// Models memory tiers, in our own words: see tiers.h.
#include "mm/tiers.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace mmsim::mm {
namespace {

// mt_perf_to_adistance (6.7+): DRAM's distance scaled up by the latency
// ratio and by the inverse bandwidth ratio, in integer steps left to right
// as the kernel computes it (read and write figures are equal here, so
// their sums are twice each). nullopt when either node's figures are
// missing, as the HMAT algorithm then gives no answer.
std::optional<int> hmat_adistance(const topo::Node& n, const topo::Node& dram) {
  if (!n.latency_ns || !n.bandwidth_mbps || !dram.latency_ns || !dram.bandwidth_mbps)
    return std::nullopt;
  uint64_t a = kAdistanceDram;
  a = a * (2 * uint64_t{n.latency_ns}) / (2 * uint64_t{dram.latency_ns});
  a = a * (2 * dram.bandwidth_mbps) / (2 * n.bandwidth_mbps);
  return static_cast<int>(std::min<uint64_t>(a, INT32_MAX));
}

// "0-1,3" as the kernel prints a nodelist.
std::string nodelist(const std::vector<uint16_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", ids[i]) : fmt::format("{}-{}", ids[i], ids[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace

MemoryTiers::MemoryTiers(const topo::Topology& topo, TierRule rule) : nodes_(topo.nr_nodes()) {
  if (rule == TierRule::kNone) return;
  // The first node with CPUs gives the DRAM figures (the kernel's default
  // DRAM performance comes from the CPU nodes, which must agree).
  const topo::Node* dram = nullptr;
  for (const topo::Node& n : topo.nodes()) {
    if (!n.cpus.empty()) {
      dram = &n;
      break;
    }
  }
  for (const topo::Node& n : topo.nodes()) {
    NodeTier& t = nodes_[n.id.v];
    if (!n.cpus.empty() || !dram) continue;  // DRAM
    const auto hmat = hmat_adistance(n, *dram);
    switch (rule) {
      case TierRule::kNone:
        break;
      case TierRule::kCpuNodes:
        t.adistance = kAdistanceDram + (1 << kMemtierChunkBits);  // the tier below
        break;
      case TierRule::kKmem:
        if (n.online == topo::MemoryOnline::kKmem) t.adistance = kAdistanceDaxDefault;
        break;
      case TierRule::kKmemHmat:
        if (n.online == topo::MemoryOnline::kKmem)
          t.adistance = hmat.value_or(kAdistanceDaxDefault);
        break;
      case TierRule::kHmat:
        if (n.online == topo::MemoryOnline::kKmem) {
          t.adistance = hmat.value_or(kAdistanceDaxDefault);
        } else if (hmat) {
          t.adistance = *hmat;
        }
        break;
    }
  }
  // Tiers by id; the top tier is the slowest tier holding a node with CPUs,
  // and every tier above it (top_tier_adistance).
  std::map<int, std::vector<NodeId>> tiers;
  for (const topo::Node& n : topo.nodes())
    tiers[nodes_[n.id.v].adistance >> kMemtierChunkBits].push_back(n.id);
  int top = -1;
  for (const auto& [id, members] : tiers) {
    for (NodeId m : members) {
      if (!topo.node(m).cpus.empty()) top = std::max(top, id);
    }
  }
  for (const topo::Node& n : topo.nodes()) {
    NodeTier& t = nodes_[n.id.v];
    const int id = t.adistance >> kMemtierChunkBits;
    t.toptier = id <= top;
    if (!t.toptier) tiered_ = true;
    // establish_demotion_targets: the nearest nodes of the next tier down,
    // and every node of every lower tier as the fallback.
    auto next = tiers.upper_bound(id);
    if (next == tiers.end()) continue;
    int best = INT32_MAX;
    for (NodeId m : next->second) best = std::min(best, topo.distance(n.id, m));
    for (NodeId m : next->second) {
      if (topo.distance(n.id, m) == best) t.preferred.push_back(m);
    }
    for (auto it = next; it != tiers.end(); ++it) {
      t.lower.insert(t.lower.end(), it->second.begin(), it->second.end());
    }
    std::stable_sort(t.lower.begin(), t.lower.end(), [&](NodeId a, NodeId b) {
      return topo.distance(n.id, a) < topo.distance(n.id, b);
    });
  }
}

std::string MemoryTiers::describe() const {
  std::map<int, std::vector<uint16_t>> tiers;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    tiers[nodes_[n].adistance >> kMemtierChunkBits].push_back(static_cast<uint16_t>(n));
  }
  std::string out;
  for (const auto& [id, members] : tiers) {
    out += fmt::format("memory_tier{}: {}\n", id, nodelist(members));
  }
  return out;
}

}  // namespace mmsim::mm

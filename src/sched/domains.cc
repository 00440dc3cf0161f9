#include "sched/domains.h"

#include <algorithm>
#include <set>

namespace mmsim::sched {

int64_t adjust_numa_imbalance(NumaImbalance rule, int64_t imbalance, int64_t dst_running,
                              int64_t imb_numa_nr) {
  switch (rule) {
    case NumaImbalance::kLoad:
      return imbalance;
    case NumaImbalance::k510:
      return dst_running <= kNumaImbalanceMin ? 0 : imbalance;
    case NumaImbalance::k60:
      if (dst_running > imb_numa_nr) return imbalance;
      return imbalance <= kNumaImbalanceMin ? 0 : imbalance;
  }
  return imbalance;
}

NumaDomains::NumaDomains(const topo::Topology& topo)
    : imb_(topo.nr_nodes(), 1), top_imb_(topo.nr_nodes(), 1) {
  std::vector<NodeId> cpu_nodes;
  for (const topo::Node& n : topo.nodes()) {
    if (!n.cpus.empty()) cpu_nodes.push_back(n.id);
  }
  // The NUMA levels: the machine's distinct remote distances between nodes
  // with CPUs, ascending (sched_init_numa).
  std::set<int> levels;
  for (NodeId a : cpu_nodes) {
    for (NodeId b : cpu_nodes) {
      if (a != b) levels.insert(topo.distance(a, b));
    }
  }
  struct Span {
    int64_t cpus = 0;
    std::vector<NodeId> nodes;
  };
  for (NodeId n : cpu_nodes) {
    // The node's NUMA domains: one per level that spans more than the one
    // below (a level that adds no node is degenerate and removed).
    std::vector<Span> spans;
    for (int d : levels) {
      Span s;
      for (NodeId m : cpu_nodes) {
        if (topo.distance(n, m) > d) continue;
        s.nodes.push_back(m);
        s.cpus += static_cast<int64_t>(topo.node(m).cpus.size());
      }
      if (s.nodes.size() > 1 && (spans.empty() || s.cpus > spans.back().cpus)) {
        spans.push_back(std::move(s));
      }
    }
    if (spans.empty()) continue;
    // The first domain above the LLC is the package's (PKG): with one LLC
    // in it, its allowed imbalance is an eighth of its CPUs (at least 1).
    // Each NUMA level scales that by how many times its span holds the
    // lowest NUMA level's (build_sched_domains), so sd_numa has it as is.
    uint64_t package_cpus = 0;
    const uint16_t socket = topo.node(n).socket;
    for (const topo::Cpu& c : topo.cpus()) package_cpus += c.socket == socket ? 1 : 0;
    const int64_t imb = std::max<int64_t>(1, static_cast<int64_t>(package_cpus >> 3));
    imb_[n.v] = imb;
    top_imb_[n.v] = imb * std::max<int64_t>(1, spans.back().cpus / spans.front().cpus);
  }
}

}  // namespace mmsim::sched

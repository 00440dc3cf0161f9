// The time user code takes to access memory: a summing sweep costs its
// compute per element plus, for the share of its working set that does not
// fit the socket's last-level cache, the DRAM lines it streams, scaled by the
// SLIT distance to the page's node; a touch costs one memory latency. The
// working set of a socket is the distinct regions its tasks sweep (their
// footprints), shared between the tasks that sweep the same memory.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "cost/cost_profile.h"
#include "mm/folio.h"
#include "mm/mm_types.h"
#include "topo/topology.h"

namespace mmsim::workload {

// How one op accesses its pages.
struct AccessSpec {
  bool touch = false;      // one access per page (else a sweep over elements)
  uint32_t elem_size = 4;  // sweep: bytes per element
  double compute_ns = -1;  // sweep: per element; < 0: the profile's sweep_elem_ns
};

class AccessCost {
 public:
  AccessCost(const topo::Topology& topo, const cost::CostProfile& costs,
             const mm::FolioAllocator& folios);

  // The share of a sweep's lines that come from DRAM for task `pid` on
  // `cpu` sweeping `pages` pages of `mm` from `start`; records the sweep's
  // footprint on the CPU's socket the first time the task sweeps it there.
  double miss_fraction(uint32_t pid, CpuId cpu, const mm::Mm& mm, Vpn start, uint64_t pages);
  // Forgets the task's footprints (it exits or changes socket).
  void drop_footprints(uint32_t pid);

  // One page on `node` for a task on `task_node`.
  double page_cost(const AccessSpec& a, NodeId task_node, NodeId node, double miss) const;
  // One page as the task's page table maps it (untouched pages count as local).
  double mapped_page_cost(const AccessSpec& a, NodeId task_node, const mm::PageTable& pt, Vpn vpn,
                          double miss) const;
  // Every page of [from, to): pages per node from the page table, then one
  // cost per node. A sweep served from the LLC costs the same on every node.
  double range_cost(const AccessSpec& a, NodeId task_node, const mm::PageTable& pt, Vpn from,
                    Vpn to, double miss);

 private:
  using Key = std::pair<uint64_t, uint64_t>;
  struct Footprint {
    uint16_t socket;
    Key key;
  };
  const topo::Topology& topo_;
  const cost::CostProfile& costs_;
  const mm::FolioAllocator& folios_;
  // Per socket: footprint -> (bytes, tasks sweeping it).
  std::vector<std::map<Key, std::pair<uint64_t, uint32_t>>> llc_sets_;
  std::vector<uint64_t> llc_bytes_;              // per socket: distinct swept bytes
  std::vector<std::vector<Footprint>> by_task_;  // by pid
  std::vector<uint64_t> node_pages_;             // scratch of range_cost
};

}  // namespace mmsim::workload

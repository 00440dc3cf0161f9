// What the scheduler's NUMA domains say about balancing between nodes, as the
// kernel derives it from the SLIT at boot (kernel/sched/topology.c:
// sched_init_numa's distance levels, sd_numa_init, and build_sched_domains'
// imb_numa_nr), and the rules that use it, which changed between versions.
#pragma once

#include <cstdint>
#include <vector>

#include "topo/topology.h"

namespace mmsim::sched {

// How much NUMA imbalance the scheduler allows when it places a new task
// (fork/clone: find_idlest_group) and when NUMA balancing moves a task to an
// idle CPU of its preferred node (task_numa_find_cpu).
enum class NumaImbalance : uint8_t {
  // 3.8-5.4: a new task goes to the least-loaded node; a task moves to an
  // idle CPU only if the nodes' loads stay within imbalance_pct
  // (load_too_imbalanced).
  kLoad,
  // 5.10: a new task stays on its parent's node while that node has an idle
  // CPU (find_idlest_group, 5.5); a task moves to an idle CPU of a node with
  // spare capacity if the imbalance vanishes or at most two tasks then run
  // there (adjust_numa_imbalance's NUMA_IMBALANCE_MIN, 5.7, on the
  // destination's count since 233e7aca4c8a in 5.10).
  k510,
  // 6.0+: both decisions allow an imbalance of up to NUMA_IMBALANCE_MIN (2)
  // while the destination runs at most imb_numa_nr tasks.
  k60,
};

inline constexpr int kNumaImbalanceMin = 2;  // NUMA_IMBALANCE_MIN

// adjust_numa_imbalance: the imbalance left once a small one is allowed (0:
// allowed). `dst_running` counts the task being placed.
int64_t adjust_numa_imbalance(NumaImbalance rule, int64_t imbalance, int64_t dst_running,
                              int64_t imb_numa_nr);

class NumaDomains {
 public:
  // SIMPLIFICATION: one last-level cache per package (socket), as on the
  // Intel machines of the presets; AMD's several LLCs a package would
  // allow an imbalance of their count instead.
  explicit NumaDomains(const topo::Topology& topo);
  // imb_numa_nr of the lowest NUMA domain over the node's CPUs (sd_numa):
  // an eighth of the package's CPUs, at least 1 (the first domain above the
  // LLC is the package's; "12.5% of the node").
  int64_t imb_numa_nr(NodeId n) const { return imb_[n.v]; }
  // imb_numa_nr of the highest NUMA domain, where find_idlest_group starts
  // for a new task.
  // SIMPLIFICATION: the kernel's fork balancing stops below the levels
  // beyond RECLAIM_DISTANCE (sd_numa_init clears SD_BALANCE_FORK there) and
  // leaves the rest to the periodic load balancer; with no periodic
  // balancer modelled, a new task may be placed on any node, and the
  // domain's groups are taken to be single nodes.
  int64_t top_imb_numa_nr(NodeId n) const { return top_imb_[n.v]; }

 private:
  std::vector<int64_t> imb_;
  std::vector<int64_t> top_imb_;
};

}  // namespace mmsim::sched

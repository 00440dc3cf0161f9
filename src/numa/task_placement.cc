#include "numa/task_placement.h"

#include <vector>

namespace mmsim::numa {

TaskMove task_numa_migrate(const Balancer& balancer, const sched::Scheduler& sched, uint32_t pid,
                           NodeId node, const std::function<bool(uint32_t)>& movable) {
  const topo::Topology& topo = balancer.topology();
  const sched::Task& t = sched.task(pid);
  const std::vector<uint32_t> homed = sched.homed();  // live tasks whose CPU it is
  const NodeId src = t.node;
  auto node_tasks = [&](NodeId n) {
    uint64_t sum = 0;
    for (CpuId c : topo.node(n).cpus) sum += homed[c.v];
    return sum;
  };
  const uint64_t src_cpus = topo.node(src).cpus.size(), dst_cpus = topo.node(node).cpus.size();
  const uint64_t src_after = node_tasks(src) - 1, dst_after = node_tasks(node) + 1;
  TaskMove mv;
  // An idle CPU there, if the capacity-normalised imbalance stays within
  // imbalance_pct.
  if (dst_after * src_cpus * 100 <= src_after * dst_cpus * static_cast<uint64_t>(kImbalancePct)) {
    for (CpuId c : topo.node(node).cpus) {
      if (homed[c.v] == 0 && t.allowed(c)) {
        mv.kind = TaskMove::Kind::kIdleCpu;
        mv.cpu = c;
        return mv;
      }
    }
  }
  // Else a swap with the task that gains most, beyond SMALLIMP.
  int64_t best_gain = kSmallImp;
  uint32_t best = 0;
  for (CpuId c : topo.node(node).cpus) {
    const uint32_t other = sched.current(c);
    if (!other || homed[c.v] != 1) continue;
    // Each must be allowed on the other's CPU (task_numa_find_cpu,
    // task_numa_compare).
    if (!t.allowed(c) || !sched.task(other).allowed(t.cpu)) continue;
    if (!movable(other)) continue;
    const int64_t gain = balancer.task_weight(pid, node) - balancer.task_weight(pid, src) +
                         balancer.task_weight(other, src) - balancer.task_weight(other, node);
    if (gain > best_gain) {
      best_gain = gain;
      best = other;
    }
  }
  if (!best || homed[t.cpu.v] != 1) return mv;
  mv.kind = TaskMove::Kind::kSwap;
  mv.other = best;
  return mv;
}

}  // namespace mmsim::numa

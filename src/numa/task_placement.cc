#include "numa/task_placement.h"

#include <algorithm>
#include <optional>
#include <vector>

namespace mmsim::numa {

TaskMove task_numa_migrate(const Balancer& balancer, const sched::Scheduler& sched, uint32_t pid,
                           NodeId node, const std::function<bool(uint32_t)>& movable) {
  const topo::Topology& topo = balancer.topology();
  const sched::Task& t = sched.task(pid);
  const NodeId src = t.node;
  // update_numa_stats: the runnable tasks on a node's CPUs (the task itself
  // among its own node's), and its idle CPUs.
  auto running = [&](NodeId n) {
    int64_t sum = 0;
    for (CpuId c : topo.node(n).cpus) sum += sched.nr_running(c);
    return sum;
  };
  auto idle_cpu = [&]() -> std::optional<CpuId> {
    for (CpuId c : topo.node(node).cpus) {
      if (sched.nr_running(c) == 0 && t.allowed(c)) return c;
    }
    return std::nullopt;
  };
  const auto src_cpus = static_cast<int64_t>(topo.node(src).cpus.size());
  const auto dst_cpus = static_cast<int64_t>(topo.node(node).cpus.size());
  const int64_t src_running = running(src) - 1, dst_running = running(node) + 1;
  TaskMove mv;
  const sched::NumaImbalance rule = balancer.config().numa_imbalance;
  bool may_idle = false;
  if (rule == sched::NumaImbalance::kLoad) {
    // load_too_imbalanced: the capacity-normalised imbalance stays within
    // imbalance_pct.
    may_idle = dst_running * src_cpus * 100 <= src_running * dst_cpus * kImbalancePct;
  } else {
    // task_numa_find_cpu: into a node with spare capacity (fewer runnable
    // tasks than CPUs: numa_classify, by count) if the version allows the
    // imbalance the move makes.
    may_idle = dst_running - 1 < dst_cpus &&
               sched::adjust_numa_imbalance(rule, std::max<int64_t>(0, dst_running - src_running),
                                            dst_running, sched.domains().imb_numa_nr(src)) == 0;
  }
  if (may_idle) {
    if (const auto c = idle_cpu()) {
      mv.kind = TaskMove::Kind::kIdleCpu;
      mv.cpu = *c;
      return mv;
    }
  }
  // Else a swap with the task that gains most, beyond SMALLIMP.
  int64_t best_gain = kSmallImp;
  uint32_t best = 0;
  for (CpuId c : topo.node(node).cpus) {
    const uint32_t other = sched.current(c);
    if (!other || sched.nr_running(c) != 1) continue;  // alone on its CPU
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
  if (!best || sched.nr_running(t.cpu) != 1) return mv;
  mv.kind = TaskMove::Kind::kSwap;
  mv.other = best;
  return mv;
}

}  // namespace mmsim::numa

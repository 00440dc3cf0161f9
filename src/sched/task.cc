#include "sched/task.h"

#include <algorithm>
#include <bit>

namespace mmsim::sched {

SliceConfig SliceConfig::for_cpus(size_t ncpus) {
  const size_t capped = std::min<size_t>(std::max<size_t>(ncpus, 1), 8);
  const int64_t factor = 1 + (std::bit_width(capped) - 1);
  return SliceConfig{Tick(6'000'000 * factor), Tick(750'000 * factor)};
}

Tick SliceConfig::slice(size_t nr_running) const {
  if (nr_running <= 1) return latency;
  return std::max(min_granularity, Tick(latency.ns / static_cast<int64_t>(nr_running)));
}

RunQueues::RunQueues(const topo::Topology& topo)
    : topo_(topo),
      nr_(topo.nr_cpus(), 0),
      queues_(topo.nr_cpus()),
      current_(topo.nr_cpus(), 0),
      slice_end_(topo.nr_cpus()) {}

CpuId RunQueues::select_cpu_for_new_task(NodeId parent_node) const {
  // Load of a node: tasks per CPU, compared as cross products to stay exact.
  const topo::Node* best = nullptr;
  uint64_t best_tasks = 0;
  auto node_tasks = [&](const topo::Node& n) {
    uint64_t t = 0;
    for (CpuId c : n.cpus) t += nr_[c.v];
    return t;
  };
  auto better = [&](uint64_t ta, size_t ca, uint64_t tb, size_t cb) { return ta * cb < tb * ca; };
  const topo::Node& parent = topo_.node(parent_node);
  best = &parent;
  best_tasks = node_tasks(parent);
  for (const auto& n : topo_.nodes()) {
    if (n.cpus.empty()) continue;
    const uint64_t t = node_tasks(n);
    if (best->cpus.empty() || better(t, n.cpus.size(), best_tasks, best->cpus.size())) {
      best = &n;
      best_tasks = t;
    }
  }
  // In the node: prefer an idle CPU whose SMT siblings are idle too.
  auto core_busy = [&](const topo::Cpu& c) {
    for (CpuId o : best->cpus) {
      const topo::Cpu& oc = topo_.cpu(o);
      if (oc.socket == c.socket && oc.core == c.core && nr_[o.v] > 0) return true;
    }
    return false;
  };
  for (CpuId c : best->cpus) {
    if (nr_[c.v] == 0 && !core_busy(topo_.cpu(c))) return c;
  }
  CpuId pick = best->cpus.front();
  for (CpuId c : best->cpus) {
    if (nr_[c.v] < nr_[pick.v]) pick = c;
  }
  return pick;
}

}  // namespace mmsim::sched

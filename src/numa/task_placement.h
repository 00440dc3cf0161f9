// Moving a task to its preferred node (kernel/sched/fair.c task_numa_migrate,
// reduced): an idle CPU there if the version's NUMA imbalance rule allows it
// (numa_imbalance: the nodes' loads within imbalance_pct, or a small
// imbalance while the destination is lightly loaded), else a swap with the running task there that
// gains most, if the gain beats SMALLIMP. A pure decision; the caller carries it out. Only CPUs the
// task may run on are tried, and only swaps with a task that may run on the task's own CPU
// (cpus_ptr, as task_numa_find_cpu and task_numa_compare).
#pragma once

#include <cstdint>
#include <functional>

#include "numa/balancer.h"
#include "sched/task.h"

namespace mmsim::numa {

struct TaskMove {
  enum class Kind : uint8_t { kNone, kIdleCpu, kSwap };
  Kind kind = Kind::kNone;
  CpuId cpu;           // kIdleCpu: where to
  uint32_t other = 0;  // kSwap: the task to trade CPUs with
};

// SIMPLIFICATION: no task_numa_compare over all candidate
// nodes, no load balancer; one node (the preferred one) is tried.
// `movable(pid)`: whether another task may be swapped now (not blocked on a
// migration entry, not in the kernel migrating a page).
TaskMove task_numa_migrate(const Balancer& balancer, const sched::Scheduler& sched, uint32_t pid,
                           NodeId node, const std::function<bool(uint32_t)>& movable);

}  // namespace mmsim::numa

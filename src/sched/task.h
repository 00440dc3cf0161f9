// Models the scheduler's view of work: task_struct (state, CPU, runtime
// accounting as in /proc/<pid>/stat and /proc/<pid>/sched) and per-CPU run
// queues with CFS-like time slices and fork-time placement across nodes.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "sim/types.h"
#include "topo/topology.h"

namespace mmsim::sched {

enum class TaskState : uint8_t {
  kRunning,          // R, on a CPU
  kRunnable,         // R, waiting in a run queue
  kSleeping,         // S, interruptible (wait, sleep)
  kUninterruptible,  // D, waiting for I/O or a page lock: counted as iowait
  kDead,             // exited
};

// Where a task's time went, in ns.
struct TaskTimes {
  double user_ns = 0;
  double sys_ns = 0;
  double iowait_ns = 0;  // D state
  double sleep_ns = 0;   // S state
  double wait_ns = 0;    // runnable but not running (/proc/<pid>/sched wait_sum)
};

struct Task {
  uint32_t pid = 0;
  uint32_t tgid = 0;
  std::string comm;
  CpuId cpu;
  NodeId node;
  TaskState state = TaskState::kRunnable;
  Tick state_since;   // when the task entered its current state
  Tick start_time;
  Tick exit_time;
  TaskTimes times;
  uint64_t min_flt = 0;
  uint64_t maj_flt = 0;
  uint64_t nvcsw = 0;   // voluntary context switches
  uint64_t nivcsw = 0;  // involuntary (preemptions)
  double sum_exec_runtime_ns() const { return times.user_ns + times.sys_ns; }
};

// CFS defaults for a machine of `ncpus` CPUs with logarithmic tunable scaling
// (kernel/sched/fair.c: sysctl_sched_latency 6 ms and min_granularity 0.75 ms,
// each times 1 + ilog2(min(ncpus, 8))).
struct SliceConfig {
  Tick latency;
  Tick min_granularity;
  static SliceConfig for_cpus(size_t ncpus);
  Tick slice(size_t nr_running) const;
};

// Per-CPU run queues. Holds task ids; the caller owns the tasks.
class RunQueues {
 public:
  explicit RunQueues(const topo::Topology& topo);
  // select_task_rq at fork/clone: the least-loaded node (ties: the parent's
  // node, then the lowest id), then in it an idle CPU on an idle core, an idle
  // CPU, or the CPU with the fewest tasks (ties: lowest id).
  CpuId select_cpu_for_new_task(NodeId parent_node) const;
  // Accounting of tasks placed on each CPU (running or runnable).
  void add(CpuId cpu) { ++nr_[cpu.v]; }
  void remove(CpuId cpu) { --nr_[cpu.v]; }
  uint32_t nr_running(CpuId cpu) const { return nr_[cpu.v]; }
  std::deque<uint32_t>& queue(CpuId cpu) { return queues_[cpu.v]; }
  // The task on the CPU, or 0 if idle.
  uint32_t& current(CpuId cpu) { return current_[cpu.v]; }
  uint32_t current_const(CpuId cpu) const { return current_[cpu.v]; }
  Tick& slice_end(CpuId cpu) { return slice_end_[cpu.v]; }

 private:
  const topo::Topology& topo_;
  std::vector<uint32_t> nr_;
  std::vector<std::deque<uint32_t>> queues_;
  std::vector<uint32_t> current_;
  std::vector<Tick> slice_end_;
};

}  // namespace mmsim::sched

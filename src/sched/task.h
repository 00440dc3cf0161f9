// Models the scheduler's view of work: task_struct (state, CPU, runtime
// accounting as in /proc/<pid>/stat and /proc/<pid>/sched) and per-CPU run
// queues with CFS-like time slices and fork-time placement across nodes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mm/mm_types.h"
#include "sched/domains.h"
#include "sim/trace.h"
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
  uint32_t ppid = 0;
  std::string comm;
  mm::Mm* mm = nullptr;  // task_struct->mm: its CPUs go into mm_cpumask
  CpuId cpu;
  NodeId node;
  TaskState state = TaskState::kRunnable;
  Tick state_since;  // when the task entered its current state
  Tick start_time;
  Tick exit_time;
  TaskTimes times;
  uint64_t min_flt = 0;
  uint64_t maj_flt = 0;
  uint64_t nvcsw = 0;   // voluntary context switches
  uint64_t nivcsw = 0;  // involuntary (preemptions)
  // What a task in D state waits on, for a trace ("migration entry at ...").
  std::string wait_detail;
  // task_struct->cpus_mask (sched_setaffinity): the CPUs the task may run on,
  // ascending; empty: every CPU. fork and clone copy it.
  std::vector<CpuId> cpus_allowed;
  double sum_exec_runtime_ns() const { return times.user_ns + times.sys_ns; }
  // Whether the task may run on `cpu` (cpumask_test_cpu(cpu, p->cpus_ptr)).
  bool allowed(CpuId cpu) const {
    return cpus_allowed.empty() ||
           std::binary_search(cpus_allowed.begin(), cpus_allowed.end(), cpu);
  }
};

// kernel/sched/fair.c, before scaling by CPU count.
inline constexpr int64_t kSchedLatencyNs = 6'000'000;       // sysctl_sched_latency
inline constexpr int64_t kSchedMinGranularityNs = 750'000;  // sysctl_sched_min_granularity
inline constexpr size_t kSchedTunableScalingMaxCpus = 8;    // SCHED_TUNABLESCALING_LOG cap

// CFS defaults for a machine of `ncpus` CPUs with logarithmic tunable scaling
// (kernel/sched/fair.c: sysctl_sched_latency 6 ms and min_granularity 0.75 ms,
// each times 1 + ilog2(min(ncpus, 8))).
struct SliceConfig {
  Tick latency;
  Tick min_granularity;
  static SliceConfig for_cpus(size_t ncpus);
  Tick slice(size_t nr_running) const;
};

// Per-CPU run queues. Holds task ids; the Scheduler owns the tasks.
class RunQueues {
 public:
  explicit RunQueues(const topo::Topology& topo);
  // select_task_rq at fork/clone: a node by the version's rule
  // (find_idlest_group; see NumaImbalance and NumaDomains::top_imb_numa_nr),
  // then in it an idle CPU on an idle core, an idle CPU, or the CPU with the
  // fewest tasks (ties: lowest id). Only CPUs of `allowed` count (empty:
  // every CPU), as find_idlest_group and find_idlest_group_cpu look only at
  // the task's cpus_ptr. `outside_parent`: a parent that is no task here
  // (mmsim-exec's collector) runs on that CPU at the fork, a task there.
  // REQUIRES: `allowed` names CPUs of the machine.
  CpuId select_cpu_for_new_task(NodeId parent_node, const std::vector<CpuId>& allowed = {},
                                std::optional<CpuId> outside_parent = {}) const;
  // Where a program started by `mmsim native` from a shell on `shell_cpu`
  // runs once it has exec'd, before any task of the run exists. The shell
  // forks mmsim native (placed as any fork) and waits; mmsim native forks
  // the program's process, which blocks reading a pipe, and wakes it with a
  // write to it: a sync wakeup, which wake_affine_idle sends to the
  // waker's CPU and select_idle_sibling on to an idle CPU of an idle core
  // beside it (the first after the waker's, wrapping; else an idle CPU,
  // else the waker's own). Guest traces (6.1 and 6.12, 2 nodes of 2 CPUs,
  // sched_switch): mmsim native on the node the shell was not on, the
  // program on mmsim native's, in all 18 runs.
  CpuId launched_cpu(CpuId shell_cpu) const;
  void set_numa_imbalance(NumaImbalance rule) { rule_ = rule; }
  NumaImbalance numa_imbalance() const { return rule_; }
  const NumaDomains& domains() const { return domains_; }
  // Accounting of tasks placed on each CPU (running or runnable).
  void add(CpuId cpu) { ++nr_[cpu.v]; }
  void remove(CpuId cpu) { --nr_[cpu.v]; }
  uint32_t nr_running(CpuId cpu) const { return nr_[cpu.v]; }
  std::deque<uint32_t>& queue(CpuId cpu) { return queues_[cpu.v]; }
  // A runnable task joins the CPU's queue / leaves it (the front, or
  // wherever newidle balancing takes it from).
  void enqueue(CpuId cpu, uint32_t pid) {
    queues_[cpu.v].push_back(pid);
    ++queued_;
  }
  uint32_t dequeue_front(CpuId cpu) {
    const uint32_t pid = queues_[cpu.v].front();
    queues_[cpu.v].pop_front();
    --queued_;
    return pid;
  }
  uint32_t dequeue_at(CpuId cpu, size_t index) {
    auto& q = queues_[cpu.v];
    const uint32_t pid = q[index];
    q.erase(q.begin() + static_cast<std::ptrdiff_t>(index));
    --queued_;
    return pid;
  }
  // Runnable tasks waiting in all queues.
  size_t queued() const { return queued_; }
  const std::deque<uint32_t>& queue_const(CpuId cpu) const { return queues_[cpu.v]; }
  // The task on the CPU, or 0 if idle.
  uint32_t& current(CpuId cpu) { return current_[cpu.v]; }
  uint32_t current_const(CpuId cpu) const { return current_[cpu.v]; }
  Tick& slice_end(CpuId cpu) { return slice_end_[cpu.v]; }
  Tick slice_end_const(CpuId cpu) const { return slice_end_[cpu.v]; }
  // When the CPU's last task left it. A task runs ahead of the event queue
  // (to its own clock), so it may leave its CPU later than the time of the
  // next event: a task woken by that event waits until then.
  Tick& free_from(CpuId cpu) { return free_from_[cpu.v]; }

 private:
  const topo::Topology& topo_;
  NumaDomains domains_;
  NumaImbalance rule_ = NumaImbalance::kLoad;
  std::vector<uint32_t> nr_;
  std::vector<std::deque<uint32_t>> queues_;
  std::vector<uint32_t> current_;
  std::vector<Tick> slice_end_;
  std::vector<Tick> free_from_;
  size_t queued_ = 0;
};

}  // namespace mmsim::sched

namespace mmsim::sched {

// What the scheduler tells the executor that runs the tasks' programs.
class Executor {
 public:
  virtual ~Executor() = default;
  // The task runs on its CPU from `at` on: resume its program then. A later
  // call for the same task replaces an earlier one (after a context switch
  // the scheduler calls again with the time the switch ends).
  virtual void run_from(Task& task, Tick at) = 0;
  // A task woke on the CPU `current` runs on, whose slice ends at
  // `slice_end`: a task running ahead past it must stop by max(slice_end, at).
  virtual void preempt(Task& current, Tick slice_end, Tick at) = 0;
  // A runnable task was moved to another CPU by the scheduler's own
  // balancing (wakeup or newidle), before it runs there.
  virtual void moved(Task& task) = 0;
  // The CPU went from no task to one (busy) or from one to none at `at`:
  // what its SMT sibling's task was priced with has changed.
  virtual void occupancy_changed(CpuId /*cpu*/, bool /*busy*/, Tick /*at*/) {}
};

// The CPUs' run queues and the tasks on them: fork placement, switching,
// waking, slices (kernel/sched/core.c, kernel/sched/fair.c; CFS reduced to
// FIFO run queues with CFS's slice lengths). Owns every task's sched state.
class Scheduler {
 public:
  Scheduler(const topo::Topology& topo, double context_switch_ns, Executor& executor);

  // A new task (fork/clone) of `mm`, given its pid (the next one) and placed
  // on a CPU by select_task_rq from the parent's node. tgid 0: its own pid.
  // It inherits `cpus_allowed` (the parent's mask; empty: every CPU).
  // `outside_parent`: ppid is 0 and the parent, no task of the run, runs
  // on that CPU (see RunQueues::select_cpu_for_new_task).
  Task& new_task(uint32_t tgid, uint32_t ppid, std::string comm, mm::Mm& mm, NodeId parent_node,
                 Tick at, std::vector<CpuId> cpus_allowed = {},
                 std::optional<CpuId> outside_parent = {});
  // wake_up_new_task: the new task runs at once if its CPU is idle, else it
  // queues there.
  void wake_up_new_task(Task& t, Tick at);
  // Each task state that ends from now on goes to `trace` (nullptr: none).
  void set_trace(sim::Trace* trace) { trace_ = trace; }
  // The version's NUMA imbalance rule for placing new tasks (kLoad unless set).
  void set_numa_imbalance(NumaImbalance rule) { rq_.set_numa_imbalance(rule); }
  const NumaDomains& domains() const { return rq_.domains(); }
  CpuId launched_cpu(CpuId shell_cpu) const { return rq_.launched_cpu(shell_cpu); }
  // Counts every change of a task's CPU, and every exit: whoever watches
  // where tasks are re-reads only when it has moved on.
  uint64_t placements() const { return placements_; }
  // Tells the trace that t's current state lasted from state_since to `at`
  // (the caller then starts its next one at `at`).
  void trace_state(const Task& t, Tick at) const;
  Task& task(uint32_t pid) { return *tasks_[pid]; }
  const Task& task(uint32_t pid) const { return *tasks_[pid]; }
  // Tasks by pid; [0] is the idle task's empty slot.
  size_t nr_tasks() const { return tasks_.size(); }

  // The task leaves its CPU at `at` into `state` (runnable: preempted, back
  // of the queue); the next queued task starts, paying the context switch.
  void leave_cpu(Task& t, TaskState state, Tick at);
  // The task wakes at `at` from S or D state. On an idle CPU it runs from
  // `at`, or from when the CPU's last task left it if that is later.
  void wake(Task& t, Tick at);
  // Tasks waiting for the task's CPU.
  bool others_waiting(const Task& t) const { return !rq_.queue_const(t.cpu).empty(); }
  Tick slice_end(CpuId cpu) const { return rq_.slice_end_const(cpu); }
  // A new slice for the CPU's current task, from `at`.
  void renew_slice(CpuId cpu, Tick at) {
    rq_.slice_end(cpu) = at + slices_.slice(rq_.nr_running(cpu));
  }
  uint32_t current(CpuId cpu) const { return rq_.current_const(cpu); }
  uint32_t nr_running(CpuId cpu) const { return rq_.nr_running(cpu); }

  // Moves a running task that is alone on its CPU to the idle `cpu`
  // (migrate_task_to); `at` starts its slice there. False if it is not alone,
  // or `cpu` is not free yet at `at`.
  bool move_to_idle_cpu(Task& t, CpuId cpu, Tick at);
  // Swaps the CPUs of two running tasks (migrate_swap); each one's time on
  // its old CPU ends at its `_at`.
  void swap_cpus(Task& a, Tick a_at, Task& b, Tick b_at);

  // sched_setaffinity(0, mask) by the running task `t` at `at`: from now on it
  // runs only on `cpus` (ascending, non-empty, CPUs of the machine). If its
  // CPU is not among them it leaves it at once (the next queued task runs
  // there) for the allowed CPU with the fewest tasks, ties broken by the
  // nearest node (SLIT distance from its node), then the lowest id, where it
  // runs at once if that CPU is idle, else queues (and may preempt).
  // Returns whether the task moved (it is then no longer running here).
  // SIMPLIFICATION: the kernel's __set_cpus_allowed_ptr picks any allowed
  // CPU (cpumask_any_and_distribute) and leaves balance to the load
  // balancer, which is not modelled; the least loaded CPU stands for both.
  bool set_cpus_allowed(Task& t, std::vector<CpuId> cpus, Tick at);

 private:
  void start_running(Task& t, Tick at);
  // A runnable task placed on its idle CPU at `at` runs from when the CPU is
  // free.
  void start_on_idle(Task& t, Tick at) { start_running(t, std::max(at, rq_.free_from(t.cpu))); }
  // select_idle_sibling at a wakeup: the task's CPU if idle, else the first
  // idle CPU of its node after it (wrapping) that its mask allows, else its
  // CPU. SIMPLIFICATION: the node stands for the LLC domain.
  CpuId wake_cpu(const Task& t) const;
  // newidle balancing (newidle_balance, load_balance): `cpu` has just gone
  // idle; it takes the most recently queued task that may run on it from
  // the CPU with the most tasks, the nearest first (its node, then by SLIT
  // distance; ties: the lower CPU id). SIMPLIFICATION: one task, at once
  // (no avg_idle versus max_newidle_lb_cost test, no NUMA imbalance
  // allowance: a queued task is always worth pulling to an idle CPU).
  void pull_to_idle(CpuId cpu, Tick at);
  // The CPU's next queued task, if any, starts at `at` paying the switch.
  void run_next(CpuId cpu, Tick at);
  // A task is placed on / taken off `cpu` at `at` (rq_.add, rq_.remove),
  // telling the executor when the CPU becomes busy or idle.
  void place(CpuId cpu, Tick at);
  void unplace(CpuId cpu, Tick at);
  void mm_cpumask_add(Task& t);
  void mm_cpumask_remove(Task& t);

  const topo::Topology& topo_;
  double context_switch_ns_;
  Executor& executor_;
  sim::Trace* trace_ = nullptr;
  RunQueues rq_;
  SliceConfig slices_;
  std::vector<std::unique_ptr<Task>> tasks_;
  uint64_t placements_ = 0;
};

}  // namespace mmsim::sched

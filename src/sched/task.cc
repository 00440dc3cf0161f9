#include "sched/task.h"

#include <algorithm>
#include <bit>
#include <optional>
#include <tuple>

#include "sim/check.h"

namespace mmsim::sched {

SliceConfig SliceConfig::for_cpus(size_t ncpus) {
  const size_t capped = std::min<size_t>(std::max<size_t>(ncpus, 1), kSchedTunableScalingMaxCpus);
  const int64_t factor = 1 + (std::bit_width(capped) - 1);
  return SliceConfig{Tick(kSchedLatencyNs * factor), Tick(kSchedMinGranularityNs * factor)};
}

Tick SliceConfig::slice(size_t nr_running) const {
  if (nr_running <= 1) return latency;
  return std::max(min_granularity, Tick(latency.ns / static_cast<int64_t>(nr_running)));
}

RunQueues::RunQueues(const topo::Topology& topo)
    : topo_(topo),
      domains_(topo),
      nr_(topo.nr_cpus(), 0),
      queues_(topo.nr_cpus()),
      current_(topo.nr_cpus(), 0),
      slice_end_(topo.nr_cpus()),
      free_from_(topo.nr_cpus()) {}

namespace {
// Whether a CPU of `cpus` on c's core (c itself included) is busy.
template <typename Busy>
bool core_busy(const topo::Topology& topo, const std::vector<CpuId>& cpus, CpuId c, Busy busy) {
  const topo::Cpu& tc = topo.cpu(c);
  for (CpuId o : cpus) {
    const topo::Cpu& oc = topo.cpu(o);
    if (oc.socket == tc.socket && oc.core == tc.core && busy(o)) return true;
  }
  return false;
}
}  // namespace

CpuId RunQueues::select_cpu_for_new_task(NodeId parent_node, const std::vector<CpuId>& allowed,
                                         std::optional<CpuId> outside_parent) const {
  auto ok = [&](CpuId c) {
    return allowed.empty() || std::binary_search(allowed.begin(), allowed.end(), c);
  };
  auto nr = [&](CpuId c) { return nr_[c.v] + (outside_parent == c ? 1 : 0); };
  // A node's statistics over the CPUs the task may use
  // (update_sg_wakeup_stats): tasks, CPUs, idle CPUs.
  struct Stats {
    const topo::Node* node = nullptr;
    uint64_t tasks = 0, cpus = 0, idle = 0;
    bool spare() const { return tasks < cpus; }  // group_has_spare, by count
  };
  auto stats = [&](const topo::Node& n) {
    Stats s{.node = &n};
    for (CpuId c : n.cpus) {
      if (!ok(c)) continue;
      ++s.cpus;
      s.tasks += nr(c);
      if (nr(c) == 0) ++s.idle;
    }
    return s;
  };
  // Less loaded: fewer tasks per CPU, compared as cross products to stay exact.
  auto lighter = [](const Stats& a, const Stats& b) { return a.tasks * b.cpus < b.tasks * a.cpus; };
  std::vector<Stats> candidates;
  // The parent's node first, then the others by id.
  if (Stats s = stats(topo_.node(parent_node)); s.cpus > 0) candidates.push_back(s);
  const bool has_local = !candidates.empty();
  for (const topo::Node& n : topo_.nodes()) {
    if (n.id == parent_node) continue;
    if (Stats s = stats(n); s.cpus > 0) candidates.push_back(s);
  }
  check(!candidates.empty(), "select_cpu_for_new_task: no allowed CPU");
  const topo::Node* best = nullptr;
  if (rule_ == NumaImbalance::kLoad) {
    // The least-loaded node; ties: the parent's (listed first), then the
    // lowest id.
    const Stats* pick = &candidates.front();
    for (const Stats& s : candidates) {
      if (lighter(s, *pick)) pick = &s;
    }
    best = pick->node;
  } else {
    // find_idlest_group: the idlest other node (spare capacity first, then
    // the most idle CPUs, or the lightest load), against the parent's.
    const Stats* idlest = nullptr;
    for (size_t i = has_local ? 1 : 0; i < candidates.size(); ++i) {
      const Stats& s = candidates[i];
      if (!idlest || (s.spare() && !idlest->spare()) ||
          (s.spare() == idlest->spare() &&
           (s.spare() ? s.idle > idlest->idle : lighter(s, *idlest)))) {
        idlest = &s;
      }
    }
    const Stats* local = has_local ? &candidates.front() : nullptr;
    if (!idlest) {
      best = local->node;
    } else if (!local) {
      best = idlest->node;
    } else if (local->spare() != idlest->spare()) {
      best = local->spare() ? local->node : idlest->node;
    } else if (!local->spare()) {
      best = lighter(*idlest, *local) ? idlest->node : local->node;
    } else {
      // Both have spare capacity: the parent's node keeps the task while the
      // version allows the imbalance, else the one with more idle CPUs.
      bool stay = false;
      if (rule_ == NumaImbalance::k510) {
        stay = local->idle > 0;
      } else {
        // Capped by the task's CPUs on the parent's node: the kernel tests
        // nr_cpus_allowed against NR_CPUS (8192 in distribution kernels),
        // not the CPUs present, so every task takes the pinned path.
        const int64_t imb = std::min<int64_t>(domains_.top_imb_numa_nr(parent_node),
                                              static_cast<int64_t>(local->cpus));
        const auto imbalance = static_cast<int64_t>(
            local->idle > idlest->idle ? local->idle - idlest->idle : idlest->idle - local->idle);
        stay = adjust_numa_imbalance(rule_, imbalance, static_cast<int64_t>(local->tasks) + 1,
                                     imb) == 0;
      }
      best = stay || local->idle >= idlest->idle ? local->node : idlest->node;
    }
  }
  // In the node: prefer an idle allowed CPU whose SMT siblings are idle too.
  auto busy = [&](CpuId c) { return nr(c) > 0; };
  for (CpuId c : best->cpus) {
    if (ok(c) && !core_busy(topo_, best->cpus, c, busy)) return c;
  }
  std::optional<CpuId> pick;
  for (CpuId c : best->cpus) {
    if (ok(c) && (!pick || nr(c) < nr(*pick))) pick = c;
  }
  return *pick;
}

CpuId RunQueues::launched_cpu(CpuId shell_cpu) const {
  const CpuId waker = select_cpu_for_new_task(topo_.cpu_to_node(shell_cpu), {}, shell_cpu);
  // The shell now sleeps in wait(); the waker runs.
  auto busy = [&](CpuId c) { return c == waker || nr_[c.v] > 0; };
  const std::vector<CpuId>& cpus = topo_.node(topo_.cpu_to_node(waker)).cpus;
  const auto at = std::find(cpus.begin(), cpus.end(), waker);
  const size_t start = static_cast<size_t>(at - cpus.begin());
  std::optional<CpuId> idle;
  for (size_t i = 1; i < cpus.size(); ++i) {
    const CpuId c = cpus[(start + i) % cpus.size()];
    if (busy(c)) continue;
    if (!core_busy(topo_, cpus, c, busy)) return c;
    if (!idle) idle = c;
  }
  return idle.value_or(waker);
}

}  // namespace mmsim::sched

namespace mmsim::sched {

Scheduler::Scheduler(const topo::Topology& topo, double context_switch_ns, Executor& executor)
    : topo_(topo),
      context_switch_ns_(context_switch_ns),
      executor_(executor),
      rq_(topo),
      slices_(SliceConfig::for_cpus(topo.nr_cpus())) {
  tasks_.emplace_back();  // pid 0 is the idle task
}

Task& Scheduler::new_task(uint32_t tgid, uint32_t ppid, std::string comm, mm::Mm& mm,
                          NodeId parent_node, Tick at, std::vector<CpuId> cpus_allowed,
                          std::optional<CpuId> outside_parent) {
  auto owned = std::make_unique<Task>();
  Task& t = *owned;
  t.pid = static_cast<uint32_t>(tasks_.size());
  tasks_.push_back(std::move(owned));
  t.tgid = tgid ? tgid : t.pid;
  t.ppid = ppid;
  t.comm = std::move(comm);
  t.mm = &mm;
  t.cpus_allowed = std::move(cpus_allowed);
  t.cpu = rq_.select_cpu_for_new_task(parent_node, t.cpus_allowed, outside_parent);
  ++placements_;
  t.node = topo_.cpu_to_node(t.cpu);
  t.start_time = at;
  return t;
}

void Scheduler::wake_up_new_task(Task& t, Tick at) {
  place(t.cpu, at);
  t.state = TaskState::kRunnable;
  t.state_since = at;
  if (rq_.current(t.cpu) == 0) {
    start_on_idle(t, at);
  } else {
    rq_.enqueue(t.cpu, t.pid);
  }
}

void Scheduler::place(CpuId cpu, Tick at) {
  rq_.add(cpu);
  if (rq_.nr_running(cpu) == 1) executor_.occupancy_changed(cpu, true, at);
}

void Scheduler::unplace(CpuId cpu, Tick at) {
  rq_.remove(cpu);
  if (rq_.nr_running(cpu) == 0) executor_.occupancy_changed(cpu, false, at);
}

void Scheduler::mm_cpumask_add(Task& t) {
  auto& mask = t.mm->cpumask();
  if (std::find(mask.begin(), mask.end(), t.cpu) == mask.end()) mask.push_back(t.cpu);
}

void Scheduler::mm_cpumask_remove(Task& t) {
  auto& mask = t.mm->cpumask();
  mask.erase(std::remove(mask.begin(), mask.end(), t.cpu), mask.end());
}

void Scheduler::trace_state(const Task& t, Tick at) const {
  if (!trace_) return;
  static constexpr const char* kNames[] = {"running", "runnable", "sleeping", "D", "dead"};
  trace_->task_state(t.pid, t.tgid, t.cpu.v, t.comm, kNames[static_cast<int>(t.state)],
                     t.state_since, at,
                     t.state == TaskState::kUninterruptible ? t.wait_detail : std::string());
}

void Scheduler::start_running(Task& t, Tick at) {
  const CpuId cpu = t.cpu;
  trace_state(t, at);
  rq_.current(cpu) = t.pid;
  if (t.state == TaskState::kRunnable)
    t.times.wait_ns += static_cast<double>((at - t.state_since).ns);
  t.state = TaskState::kRunning;
  t.state_since = at;
  rq_.slice_end(cpu) = at + slices_.slice(rq_.nr_running(cpu));
  mm_cpumask_add(t);
  executor_.run_from(t, at);
}

void Scheduler::leave_cpu(Task& t, TaskState state, Tick at) {
  const CpuId cpu = t.cpu;
  check(rq_.current(cpu) == t.pid, "leave_cpu of a task not on its CPU");
  trace_state(t, at);
  mm_cpumask_remove(t);
  if (state == TaskState::kDead) ++placements_;
  t.state = state;
  t.state_since = at;
  rq_.current(cpu) = 0;
  rq_.free_from(cpu) = at;
  if (state == TaskState::kRunnable) {
    ++t.nivcsw;
    rq_.enqueue(cpu, t.pid);
  } else {
    ++t.nvcsw;
    unplace(cpu, at);
  }
  run_next(cpu, at);
}

void Scheduler::run_next(CpuId cpu, Tick at) {
  if (rq_.queue(cpu).empty()) {
    if (rq_.queued() > 0) pull_to_idle(cpu, at);
    return;
  }
  Task& next = task(rq_.dequeue_front(cpu));
  // The switch costs the incoming task system time.
  start_running(next, at);
  next.times.sys_ns += context_switch_ns_;
  executor_.run_from(next, at + to_tick(context_switch_ns_));
}

void Scheduler::wake(Task& t, Tick at) {
  check(at >= t.state_since, "a task woken before it went to sleep");
  trace_state(t, at);
  const double slept = static_cast<double>((at - t.state_since).ns);
  if (t.state == TaskState::kUninterruptible) {
    t.times.iowait_ns += slept;
  } else {
    t.times.sleep_ns += slept;
  }
  if (const CpuId c = wake_cpu(t); c != t.cpu) {
    t.cpu = c;
    ++placements_;
    executor_.moved(t);
  }
  place(t.cpu, at);
  t.state = TaskState::kRunnable;
  t.state_since = at;
  if (rq_.current(t.cpu) == 0) {
    start_on_idle(t, at);
  } else {
    rq_.enqueue(t.cpu, t.pid);
    // A woken task preempts a current one that has used up its slice.
    executor_.preempt(task(rq_.current(t.cpu)), rq_.slice_end(t.cpu), at);
  }
}

CpuId Scheduler::wake_cpu(const Task& t) const {
  if (rq_.nr_running(t.cpu) == 0) return t.cpu;
  const std::vector<CpuId>& cpus = topo_.node(t.node).cpus;
  const auto at = std::find(cpus.begin(), cpus.end(), t.cpu);
  const size_t start = at == cpus.end() ? 0 : static_cast<size_t>(at - cpus.begin());
  for (size_t i = 1; i < cpus.size(); ++i) {
    const CpuId c = cpus[(start + i) % cpus.size()];
    if (rq_.nr_running(c) == 0 && t.allowed(c)) return c;
  }
  return t.cpu;
}

void Scheduler::pull_to_idle(CpuId cpu, Tick at) {
  const NodeId here = topo_.cpu_to_node(cpu);
  // The donor: a CPU with a queued task that may run here, nearest first,
  // then the busiest, then the lowest id.
  std::optional<CpuId> donor;
  std::tuple<int, uint32_t, uint16_t> best{0, 0, 0};
  for (size_t i = 0; i < topo_.nr_cpus(); ++i) {
    const CpuId c(static_cast<uint16_t>(i));
    const auto& q = rq_.queue_const(c);
    if (c == cpu || q.empty()) continue;
    if (!std::any_of(q.begin(), q.end(), [&](uint32_t pid) { return task(pid).allowed(cpu); }))
      continue;
    const auto key =
        std::tuple(topo_.distance(here, topo_.cpu_to_node(c)), UINT32_MAX - rq_.nr_running(c), i);
    if (!donor || key < best) {
      donor = c;
      best = key;
    }
  }
  if (!donor) return;
  // The most recently queued task the mask lets run here.
  const auto& q = rq_.queue_const(*donor);
  size_t index = q.size() - 1;
  while (!task(q[index]).allowed(cpu)) --index;  // one is (the donor test)
  Task& t = task(rq_.dequeue_at(*donor, index));
  unplace(*donor, at);
  t.cpu = cpu;
  ++placements_;
  t.node = here;
  place(cpu, at);
  executor_.moved(t);
  const Tick from = std::max(at, rq_.free_from(cpu));
  start_running(t, from);
  t.times.sys_ns += context_switch_ns_;
  executor_.run_from(t, from + to_tick(context_switch_ns_));
}

bool Scheduler::move_to_idle_cpu(Task& t, CpuId cpu, Tick at) {
  const CpuId old = t.cpu;
  if (rq_.nr_running(old) != 1) return false;  // only a task alone on its CPU moves here
  if (rq_.free_from(cpu) > at) return false;   // its last task runs there until later
  trace_state(t, at);                          // its time on the old CPU
  t.state_since = at;
  mm_cpumask_remove(t);
  rq_.current(old) = 0;
  rq_.free_from(old) = at;
  unplace(old, at);
  t.cpu = cpu;
  ++placements_;
  t.node = topo_.cpu_to_node(cpu);
  place(cpu, at);
  rq_.current(cpu) = t.pid;
  rq_.slice_end(cpu) = at + slices_.slice(1);
  mm_cpumask_add(t);
  ++t.nivcsw;
  return true;
}

void Scheduler::swap_cpus(Task& a, Tick a_at, Task& b, Tick b_at) {
  // Each one's time on its old CPU ends at its own clock.
  trace_state(a, a_at);
  a.state_since = a_at;
  trace_state(b, b_at);
  b.state_since = b_at;
  mm_cpumask_remove(a);
  mm_cpumask_remove(b);
  std::swap(a.cpu, b.cpu);
  ++placements_;
  for (Task* x : {&a, &b}) {
    x->node = topo_.cpu_to_node(x->cpu);
    rq_.current(x->cpu) = x->pid;
    mm_cpumask_add(*x);
    ++x->nivcsw;
  }
}

bool Scheduler::set_cpus_allowed(Task& t, std::vector<CpuId> cpus, Tick at) {
  check(!cpus.empty(), "set_cpus_allowed with no CPU");
  t.cpus_allowed = std::move(cpus);
  if (t.allowed(t.cpu)) return false;
  check(t.state == TaskState::kRunning && rq_.current(t.cpu) == t.pid,
        "set_cpus_allowed of a task not running on its CPU");
  // The destination: fewest tasks, then nearest node, then lowest id.
  const NodeId from = t.node;
  CpuId dest = t.cpus_allowed.front();
  auto key = [&](CpuId c) {
    return std::tuple(rq_.nr_running(c), topo_.distance(from, topo_.cpu_to_node(c)), c.v);
  };
  for (CpuId c : t.cpus_allowed) {
    if (key(c) < key(dest)) dest = c;
  }
  // The stopper preempts it on the old CPU (an involuntary switch); the next
  // queued task runs there.
  const CpuId old = t.cpu;
  trace_state(t, at);
  mm_cpumask_remove(t);
  rq_.current(old) = 0;
  rq_.free_from(old) = at;
  unplace(old, at);
  ++t.nivcsw;
  t.cpu = dest;
  ++placements_;
  t.node = topo_.cpu_to_node(dest);
  t.state = TaskState::kRunnable;
  t.state_since = at;
  place(dest, at);
  if (rq_.current(dest) == 0) {
    start_on_idle(t, at);
  } else {
    rq_.enqueue(dest, t.pid);
    executor_.preempt(task(rq_.current(dest)), rq_.slice_end(dest), at);
  }
  run_next(old, at);
  return true;
}

}  // namespace mmsim::sched

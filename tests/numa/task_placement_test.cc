// task_numa_migrate's decision against the tasks' affinity (cpus_ptr): it
// moves a task only to a CPU it may run on, and swaps it only with a task
// that may run on its CPU (kernel/sched/fair.c task_numa_find_cpu,
// task_numa_compare). A real Scheduler places the tasks.
#include "numa/task_placement.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "numa/balancer.h"
#include "sched/task.h"
#include "support/mm_fixture.h"

namespace mmsim::numa {
namespace {

using testing::MmWorld;

NumaConfig balancing_on(sched::NumaImbalance rule = sched::NumaImbalance::kLoad) {
  NumaConfig c;
  c.enabled = true;
  c.placement_every_fault = true;
  c.numa_imbalance = rule;
  return c;
}

// The 2-node, 4-CPU test machine (CPUs 0, 1 on node 0; 2, 3 on node 1) with
// a scheduler and a balancer that sees the scheduler's tasks.
struct PlacementWorld final : sched::Executor, TaskView {
  explicit PlacementWorld(sched::NumaImbalance rule = sched::NumaImbalance::kLoad)
      : sched(w.topo, 0.0, *this), balancer(balancing_on(rule), w.topo, w.mgr, *this) {}

  // sched::Executor: nothing runs programs here.
  void run_from(sched::Task&, Tick) override {}
  void preempt(sched::Task&, Tick, Tick) override {}
  void moved(sched::Task&) override {}
  // TaskView
  uint32_t current_pid(CpuId cpu) const override { return sched.current(cpu); }
  uint32_t mm_id(uint32_t pid) const override { return sched.task(pid).mm->id(); }
  NodeId task_node(uint32_t pid) const override { return sched.task(pid).node; }

  // A new process, placed by fork placement among `allowed` (empty: all).
  sched::Task& spawn(std::vector<CpuId> allowed = {}) {
    mms.push_back(w.mgr.mm_alloc());
    mm::Mm& mm = *mms.back();
    ++mm.users;
    sched::Task& t = sched.new_task(0, 0, "t", mm, NodeId(0), Tick(0), std::move(allowed));
    balancer.task_init(t.pid, mm, true, Tick(0));
    sched.wake_up_new_task(t, Tick(0));
    return t;
  }
  // Hinting faults of the task on memory of `node`, made its MEM faults.
  void faults_on(const sched::Task& t, NodeId node) {
    mm::Mm& mm = *t.mm;
    for (int i = 0; i < 6; ++i)
      balancer.task_numa_fault(t.pid, t.cpu, mm, kCpupidUnset, node, t.node, 1, 0, seconds(1), 0);
    ++mm.numa_scan_seq;
    balancer.task_numa_fault(t.pid, t.cpu, mm, kCpupidUnset, node, t.node, 1, 0, seconds(2), 0);
  }
  TaskMove migrate(const sched::Task& t, NodeId to) {
    return task_numa_migrate(balancer, sched, t.pid, to, [](uint32_t) { return true; });
  }

  MmWorld w;
  sched::Scheduler sched;
  Balancer balancer;
  std::vector<std::shared_ptr<mm::Mm>> mms;
};

std::vector<CpuId> cpus(std::initializer_list<uint16_t> ids) {
  std::vector<CpuId> v;
  for (const uint16_t c : ids) v.push_back(CpuId(c));
  return v;
}

TEST(TaskPlacementAffinity, ATaskMayMoveToAnIdleCpuOfItsPreferredNode) {
  PlacementWorld p;
  sched::Task& a = p.spawn();
  p.spawn(cpus({1}));  // node 0 as loaded as a move leaves node 1
  ASSERT_EQ(a.cpu, CpuId(0));
  p.faults_on(a, NodeId(1));
  const TaskMove mv = p.migrate(a, NodeId(1));
  EXPECT_EQ(mv.kind, TaskMove::Kind::kIdleCpu);
  EXPECT_EQ(p.w.topo.cpu_to_node(mv.cpu), NodeId(1));
}

TEST(TaskPlacementAffinity, ATaskIsNeverMovedToACpuOutsideItsMask) {
  PlacementWorld p;
  sched::Task& a = p.spawn(cpus({0, 1, 3}));
  p.spawn(cpus({1}));
  p.faults_on(a, NodeId(1));
  const TaskMove mv = p.migrate(a, NodeId(1));
  ASSERT_EQ(mv.kind, TaskMove::Kind::kIdleCpu);
  EXPECT_EQ(mv.cpu, CpuId(3));  // CPU 2 is idle too, but not allowed

  PlacementWorld q;
  sched::Task& b = q.spawn(cpus({0, 1}));
  q.spawn(cpus({1}));
  q.faults_on(b, NodeId(1));
  EXPECT_EQ(q.migrate(b, NodeId(1)).kind, TaskMove::Kind::kNone);
}

TEST(TaskPlacementAffinity, ASwapNeedsEachTaskAllowedOnTheOthersCpu) {
  // a on CPU 0 wants node 1; c and d fill node 1 and want node 0.
  auto setup = [](PlacementWorld& p, std::vector<CpuId> a_mask, bool pin_cd) -> sched::Task& {
    sched::Task& a = p.spawn(std::move(a_mask));
    sched::Task& c = p.spawn(cpus({2}));
    sched::Task& d = p.spawn(cpus({3}));
    if (!pin_cd) {
      p.sched.set_cpus_allowed(c, cpus({0, 1, 2, 3}), Tick(0));
      p.sched.set_cpus_allowed(d, cpus({0, 1, 2, 3}), Tick(0));
    }
    p.faults_on(a, NodeId(1));
    p.faults_on(c, NodeId(0));
    p.faults_on(d, NodeId(0));
    return a;
  };
  {
    PlacementWorld p;
    sched::Task& a = setup(p, {}, false);
    const TaskMove mv = p.migrate(a, NodeId(1));
    EXPECT_EQ(mv.kind, TaskMove::Kind::kSwap);
  }
  {
    PlacementWorld p;  // c and d may not run on CPU 0
    sched::Task& a = setup(p, {}, true);
    EXPECT_EQ(p.migrate(a, NodeId(1)).kind, TaskMove::Kind::kNone);
  }
  {
    PlacementWorld p;  // a may run only on node 0
    sched::Task& a = setup(p, cpus({0, 1}), false);
    EXPECT_EQ(p.migrate(a, NodeId(1)).kind, TaskMove::Kind::kNone);
  }
  {
    PlacementWorld p;  // a may run on CPU 3 only of node 1: a swap with d
    sched::Task& a = setup(p, cpus({0, 3}), false);
    const TaskMove mv = p.migrate(a, NodeId(1));
    ASSERT_EQ(mv.kind, TaskMove::Kind::kSwap);
    EXPECT_EQ(p.sched.task(mv.other).cpu, CpuId(3));
  }
}

// a alone on node 0 wants node 1, where b runs and CPU 3 is idle: the move
// leaves node 1 two tasks ahead.
TaskMove move_beside_one(sched::NumaImbalance rule) {
  PlacementWorld p(rule);
  sched::Task& a = p.spawn();
  p.spawn();  // node 1 (fork placement by load)
  p.faults_on(a, NodeId(1));
  return p.migrate(a, NodeId(1));
}

TEST(TaskPlacementImbalance, BeforeFiveSevenAMoveThatUnbalancesTheNodesIsASwapInstead) {
  EXPECT_EQ(move_beside_one(sched::NumaImbalance::kLoad).kind, TaskMove::Kind::kSwap);
}

TEST(TaskPlacementImbalance, InFiveTenAnImbalanceIsAllowedWhileAtMostTwoTasksRunThere) {
  const TaskMove mv = move_beside_one(sched::NumaImbalance::k510);
  EXPECT_EQ(mv.kind, TaskMove::Kind::kIdleCpu);
  EXPECT_EQ(mv.cpu, CpuId(3));
}

TEST(TaskPlacementImbalance, FromSixZeroTwoCpuPackagesAllowNoImbalanceSoTheMoveIsASwap) {
  // imb_numa_nr is 1: two tasks running at the destination is already too
  // many (the validation guest's case).
  EXPECT_EQ(move_beside_one(sched::NumaImbalance::k60).kind, TaskMove::Kind::kSwap);
}

TEST(SchedAffinity, ForkPlacementKeepsToTheAllowedCpus) {
  PlacementWorld p;
  p.spawn();
  sched::Task& b = p.spawn(cpus({1}));
  EXPECT_EQ(b.cpu, CpuId(1));  // not node 1, where fork placement would go
  sched::Task& c = p.spawn(cpus({0, 1}));
  EXPECT_EQ(p.w.topo.cpu_to_node(c.cpu), NodeId(0));
}

TEST(SchedAffinity, SetCpusAllowedMovesARunningTaskToTheLeastLoadedAllowedCpu) {
  PlacementWorld p;
  sched::Task& a = p.spawn();  // CPU 0
  sched::Task& b = p.spawn();  // node 1: CPU 2
  EXPECT_EQ(b.cpu, CpuId(2));
  EXPECT_TRUE(p.sched.set_cpus_allowed(a, cpus({2, 3}), Tick(5)));
  EXPECT_EQ(a.cpu, CpuId(3));  // CPU 2 is busy
  EXPECT_EQ(a.state, sched::TaskState::kRunning);
  EXPECT_EQ(p.sched.current(CpuId(0)), 0u);
  EXPECT_EQ(p.sched.current(CpuId(3)), a.pid);
  EXPECT_EQ(a.nivcsw, 1u);
  // Onto a busy CPU: it queues there.
  EXPECT_TRUE(p.sched.set_cpus_allowed(a, cpus({2}), Tick(6)));
  EXPECT_EQ(a.cpu, CpuId(2));
  EXPECT_EQ(a.state, sched::TaskState::kRunnable);
  EXPECT_EQ(p.sched.nr_running(CpuId(2)), 2u);
  // Allowed where it is: no move.
  EXPECT_FALSE(p.sched.set_cpus_allowed(b, cpus({1, 2}), Tick(7)));
  EXPECT_EQ(b.cpu, CpuId(2));
}

}  // namespace
}  // namespace mmsim::numa

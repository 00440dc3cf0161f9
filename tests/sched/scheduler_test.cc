// The scheduler on its own (sched/task.h): fork placement onto an idle CPU,
// queueing behind a running task, and the switch to the next task when the
// running one leaves its CPU. A fake executor records what it is told.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <vector>

#include "cost/cost_profile.h"
#include "mm/memory_manager.h"
#include "sched/task.h"
#include "topo/topology.h"

namespace mmsim::sched {
namespace {

// Records every instruction of the scheduler.
class FakeExecutor final : public Executor {
 public:
  struct Run {
    uint32_t pid = 0;
    Tick at;
  };
  void run_from(Task& task, Tick at) override { runs.push_back({task.pid, at}); }
  void preempt(Task& current, Tick slice_end, Tick at) override { ++preempts; }
  void moved(Task& task) override { moved_pids.push_back(task.pid); }

  // When the executor was last told to run `pid`, if ever.
  std::optional<Tick> last_run(uint32_t pid) const {
    std::optional<Tick> at;
    for (const auto& r : runs)
      if (r.pid == pid) at = r.at;
    return at;
  }
  std::vector<Run> runs;
  int preempts = 0;
  std::vector<uint32_t> moved_pids;
};

topo::MachineSpec one_cpu() {
  topo::MachineSpec s;
  s.name = "test-1cpu";
  s.mem_per_node = uint64_t{16} << 20;
  s.llc_per_socket = uint64_t{1} << 20;
  return s;
}

topo::MachineSpec two_cpus() {
  topo::MachineSpec s = one_cpu();
  s.name = "test-2cpu";
  s.cores_per_socket = 2;
  return s;
}

constexpr double kContextSwitchNs = 2000;

// A scheduler on a machine, with one mm for its tasks.
struct SchedWorld {
  explicit SchedWorld(const topo::MachineSpec& spec)
      : topo(spec),
        costs(cost::default_costs()),
        mgr(topo, costs, mm::MmConfig{}),
        mm(mgr.mm_alloc()),
        sched(topo, kContextSwitchNs, executor) {}
  Task& fork_task(const char* comm, Tick at) {
    Task& t = sched.new_task(0, 0, comm, *mm, NodeId(0), at);
    sched.wake_up_new_task(t, at);
    return t;
  }

  topo::Topology topo;
  cost::CostProfile costs;
  mm::MemoryManager mgr;
  std::shared_ptr<mm::Mm> mm;
  FakeExecutor executor;
  Scheduler sched;
};

TEST(Scheduler, ANewTaskOnAnIdleCpuRunsAtOnce) {
  SchedWorld w(one_cpu());

  Task& t = w.fork_task("a", Tick(100));

  EXPECT_EQ(t.pid, 1u);
  EXPECT_EQ(t.cpu, CpuId(0));
  EXPECT_EQ(t.state, TaskState::kRunning);
  EXPECT_EQ(w.sched.current(CpuId(0)), t.pid);
  ASSERT_EQ(w.executor.runs.size(), 1u);
  EXPECT_EQ(w.executor.runs[0].pid, t.pid);
  EXPECT_EQ(w.executor.runs[0].at, Tick(100));
  EXPECT_EQ(t.times.wait_ns, 0);
  EXPECT_EQ(t.times.sys_ns, 0);
}

TEST(Scheduler, ANewTaskGoesToAnIdleCpuRatherThanABusyOne) {
  SchedWorld w(two_cpus());

  Task& a = w.fork_task("a", Tick(0));
  Task& b = w.fork_task("b", Tick(10));

  EXPECT_NE(a.cpu, b.cpu);
  EXPECT_EQ(b.state, TaskState::kRunning);
  EXPECT_EQ(w.executor.last_run(b.pid), Tick(10));
}

TEST(Scheduler, ASecondTaskOnTheSameCpuQueuesUntilTheFirstLeaves) {
  SchedWorld w(one_cpu());
  Task& a = w.fork_task("a", Tick(0));

  Task& b = w.fork_task("b", Tick(1000));

  EXPECT_EQ(b.cpu, a.cpu);
  EXPECT_EQ(b.state, TaskState::kRunnable);
  EXPECT_EQ(w.sched.current(a.cpu), a.pid);
  EXPECT_EQ(w.sched.nr_running(a.cpu), 2u);
  EXPECT_TRUE(w.sched.others_waiting(a));
  EXPECT_FALSE(w.executor.last_run(b.pid).has_value());
}

TEST(Scheduler, TheQueuedTaskStartsAfterLeaveCpuAndPaysTheContextSwitch) {
  SchedWorld w(one_cpu());
  Task& a = w.fork_task("a", Tick(0));
  Task& b = w.fork_task("b", Tick(1000));

  w.sched.leave_cpu(a, TaskState::kSleeping, Tick(5000));

  EXPECT_EQ(a.state, TaskState::kSleeping);
  EXPECT_EQ(a.nvcsw, 1u);
  EXPECT_EQ(b.state, TaskState::kRunning);
  EXPECT_EQ(w.sched.current(b.cpu), b.pid);
  EXPECT_EQ(w.sched.nr_running(b.cpu), 1u);
  // It waited in the queue from 1000 to 5000, then the switch costs it
  // system time and it resumes once the switch is done.
  EXPECT_EQ(b.times.wait_ns, 4000);
  EXPECT_EQ(b.times.sys_ns, kContextSwitchNs);
  EXPECT_EQ(w.executor.last_run(b.pid), Tick(5000) + to_tick(kContextSwitchNs));
  EXPECT_EQ(w.executor.runs.back().pid, b.pid);
}

TEST(Scheduler, ATaskThatLeavesItsCpuWithNobodyQueuedLeavesItIdle) {
  SchedWorld w(one_cpu());
  Task& a = w.fork_task("a", Tick(0));

  w.sched.leave_cpu(a, TaskState::kSleeping, Tick(5000));

  EXPECT_EQ(w.sched.current(a.cpu), 0u);
  EXPECT_EQ(w.sched.nr_running(a.cpu), 0u);
  EXPECT_EQ(w.executor.runs.size(), 1u);  // only its own start
}

TEST(Scheduler, ATaskWokenOnAnIdleCpuWaitsForItsLastTaskToHaveLeft) {
  // a ran ahead of the event queue and left the CPU at 9000; b's wake-up
  // event is at 6000. The CPU is b's from 9000 on: it waits in the queue.
  SchedWorld w(one_cpu());
  Task& a = w.fork_task("a", Tick(0));
  Task& b = w.fork_task("b", Tick(0));
  w.sched.leave_cpu(a, TaskState::kSleeping, Tick(1000));  // b runs from 1000 + switch
  w.sched.leave_cpu(b, TaskState::kSleeping, Tick(4000));
  w.sched.wake(b, Tick(5000));  // b alone again, from 5000
  w.sched.leave_cpu(b, TaskState::kSleeping, Tick(9000));

  w.sched.wake(a, Tick(6000));

  EXPECT_EQ(a.state, TaskState::kRunning);
  EXPECT_EQ(w.executor.last_run(a.pid), Tick(9000));
  EXPECT_EQ(a.times.wait_ns, 3000);  // runnable from 6000 to 9000
}

TEST(SchedulerDeathTest, AWakeUpBeforeTheTaskWentToSleepIsABug) {
  SchedWorld w(one_cpu());
  Task& a = w.fork_task("a", Tick(0));
  w.sched.leave_cpu(a, TaskState::kUninterruptible, Tick(5000));

  EXPECT_DEATH(w.sched.wake(a, Tick(4000)), "woken before it went to sleep");
}

TEST(Scheduler, ACpuThatGoesIdlePullsATaskQueuedOnAnotherCpu) {
  SchedWorld w(two_cpus());
  Task& a = w.fork_task("a", Tick(0));  // CPU 0
  Task& b = w.fork_task("b", Tick(0));  // CPU 1
  Task& c = w.fork_task("c", Tick(0));  // queued behind one of them
  ASSERT_EQ(c.state, TaskState::kRunnable);
  Task& other = c.cpu == a.cpu ? b : a;

  w.sched.leave_cpu(other, TaskState::kSleeping, Tick(5000));

  EXPECT_EQ(c.state, TaskState::kRunning);
  EXPECT_EQ(c.cpu, other.cpu);
  EXPECT_EQ(w.sched.nr_running(a.cpu == other.cpu ? b.cpu : a.cpu), 1u);
  EXPECT_EQ(w.executor.moved_pids, std::vector<uint32_t>{c.pid});
  EXPECT_EQ(w.executor.last_run(c.pid), Tick(5000) + to_tick(kContextSwitchNs));
}

TEST(Scheduler, AnIdleCpuDoesNotPullATaskItsMaskForbids) {
  SchedWorld w(two_cpus());
  Task& a = w.fork_task("a", Tick(0));
  Task& b = w.fork_task("b", Tick(0));
  Task& c = w.sched.new_task(0, 0, "c", *w.mm, NodeId(0), Tick(0), {a.cpu});
  w.sched.wake_up_new_task(c, Tick(0));
  ASSERT_EQ(c.cpu, a.cpu);

  w.sched.leave_cpu(b, TaskState::kSleeping, Tick(5000));

  EXPECT_EQ(c.state, TaskState::kRunnable);
  EXPECT_EQ(w.sched.current(b.cpu), 0u);
  EXPECT_TRUE(w.executor.moved_pids.empty());
}

TEST(Scheduler, AWokenTaskWhoseCpuIsBusyGoesToAnIdleCpuOfItsNode) {
  SchedWorld w(two_cpus());
  Task& a = w.fork_task("a", Tick(0));
  Task& b = w.fork_task("b", Tick(0));
  w.sched.leave_cpu(a, TaskState::kSleeping, Tick(1000));
  w.sched.leave_cpu(b, TaskState::kSleeping, Tick(1000));
  Task& c = w.fork_task("c", Tick(2000));  // takes one CPU
  Task& sleeper = c.cpu == a.cpu ? a : b;

  w.sched.wake(sleeper, Tick(3000));

  EXPECT_NE(sleeper.cpu, c.cpu);
  EXPECT_EQ(sleeper.state, TaskState::kRunning);
  EXPECT_EQ(w.executor.moved_pids, std::vector<uint32_t>{sleeper.pid});
}

}  // namespace
}  // namespace mmsim::sched

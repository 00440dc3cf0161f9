#include "workload/world.h"

#include <gtest/gtest.h>

#include "support/run.h"

namespace mmsim::workload {
namespace {

using testing::kSmallMachine;
using testing::run_text;

std::string scenario(const std::string& programs, const std::string& extra = "") {
  return std::string(kSmallMachine) + extra +
         "\n[run]\nprogram = \"main\"\nprocess_image = \"mapped\"\n" + programs;
}

TEST(World, SweepLoopCountsIterationsThatFitTheDuration) {
  // 16 pages of 1024 ints at 1 ns each: 16.384 us per pass.
  auto ran = run_text(scenario(R"(
[[programs.main]]
op = "map"
region = "a"
size = "64KiB"
[[programs.main]]
op = "touch"
region = "a"
mode = "write"
[[programs.main]]
op = "loop"
duration = "1ms"
body = [ { op = "sweep", region = "a", compute_ns = 1.0 }, { op = "count", counter = "passes" } ]
)"));
  // Passes that start before 1 ms has gone by: ceil(1 ms / 16.384 us) = 62,
  // give or take the first pass, which starts after the touch's faults.
  EXPECT_GE(ran.counter("passes"), 60u);
  EXPECT_LE(ran.counter("passes"), 62u);
  EXPECT_EQ(ran.result.tasks[0].min_flt, 16u);
}

TEST(World, FastForwardedLoopMatchesPassByPassExecution) {
  const std::string s = scenario(R"(
[[programs.main]]
op = "map"
region = "a"
size = "64KiB"
[[programs.main]]
op = "touch"
region = "a"
mode = "write"
[[programs.main]]
op = "loop"
duration = "2ms"
body = [ { op = "sweep", region = "a", compute_ns = 0.7 }, { op = "count", counter = "passes" } ]
)");
  // Noise draws per run-ahead stretch, and the two run different stretches.
  auto fast = testing::run_text(s, {"noise.enabled=false"}, true);
  auto slow = testing::run_text(s, {"noise.enabled=false"}, false);
  EXPECT_EQ(fast.counter("passes"), slow.counter("passes"));
  EXPECT_NEAR(fast.result.elapsed_s, slow.result.elapsed_s, 1e-6);
  EXPECT_NEAR(fast.result.tasks[0].times.user_ns, slow.result.tasks[0].times.user_ns, 1000);
}

TEST(World, ForkedChildrenAreSpreadAcrossNodes) {
  auto ran = run_text(scenario(R"(
[[programs.main]]
op = "fork"
count = 4
program = "child"
[[programs.main]]
op = "wait"
[[programs.child]]
op = "sleep"
duration = "1ms"
)"));
  ASSERT_EQ(ran.result.tasks.size(), 5u);
  int on_node[2] = {0, 0};
  for (size_t i = 1; i < 5; ++i) ++on_node[ran.result.tasks[i].node];
  EXPECT_EQ(on_node[0], 2);
  EXPECT_EQ(on_node[1], 2);
}

TEST(World, ParentWaitsUntilTheLastChildExits) {
  auto ran = run_text(scenario(R"(
[[programs.main]]
op = "fork"
count = 2
program = "child"
[[programs.main]]
op = "wait"
[[programs.child]]
op = "sleep"
duration = "5ms"
)"));
  EXPECT_GE(ran.result.tasks[0].exit_s, ran.result.tasks[1].exit_s);
  EXPECT_GE(ran.result.tasks[0].exit_s, 0.005);
  EXPECT_GT(ran.result.tasks[0].times.sleep_ns, 4.9e6);
}

TEST(World, TasksSharingACpuTakeTurnsInTimeSlices) {
  // Three CPU-bound tasks on a 2-CPU machine: someone waits in a run queue.
  auto ran = run_text(std::string(R"(
[machine]
preset = "2s-16c"
sockets = 1
cores_per_socket = 2
mem_per_node = "64MiB"
[run]
program = "main"
process_image = "mapped"
[[programs.main]]
op = "map"
region = "a"
size = "64KiB"
[[programs.main]]
op = "touch"
region = "a"
mode = "write"
[[programs.main]]
op = "fork"
count = 2
program = "spin"
[[programs.main]]
op = "loop"
duration = "100ms"
body = [ { op = "sweep", region = "a" } ]
[[programs.main]]
op = "wait"
[[programs.spin]]
op = "loop"
duration = "100ms"
body = [ { op = "sweep", region = "a" } ]
)"));
  double waited = 0;
  uint64_t preempted = 0;
  for (const auto& t : ran.result.tasks) {
    waited += t.times.wait_ns;
    preempted += t.nivcsw;
  }
  EXPECT_GT(waited, 10e6);
  EXPECT_GT(preempted, 2u);
}

TEST(World, MajorFaultTimeIsCountedAsIowait) {
  auto ran = run_text(scenario(R"(
[[files]]
name = "data"
size = "1MiB"
[[programs.main]]
op = "map"
region = "f"
file = "data"
prot = "r"
flags = "shared"
[[programs.main]]
op = "touch"
region = "f"
)"));
  EXPECT_GT(ran.result.tasks[0].maj_flt, 0u);
  EXPECT_GT(ran.result.tasks[0].times.iowait_ns, 0);
  // One read on a miss (pgmajfault); the task's maj_flt also counts the
  // fault retried at each of the 8 windows' readahead marks (5.9+).
  EXPECT_EQ(ran.vm("pgmajfault"), 1);
  EXPECT_EQ(ran.result.tasks[0].maj_flt, 1u + 8u);
}

TEST(World, ChildWritesToInheritedAnonymousMemoryCopyOnlyTheirPages) {
  auto ran = run_text(scenario(R"(
[[programs.main]]
op = "map"
region = "a"
size = "16KiB"
[[programs.main]]
op = "touch"
region = "a"
mode = "write"
[[programs.main]]
op = "fork"
count = 3
program = "writer"
[[programs.main]]
op = "wait"
[[programs.writer]]
op = "touch"
region = "a"
mode = "write"
size = 4096
)"));
  // 4 pages for the parent, then one copy per child; and each process's
  // page tables: its PGD (2 pages), PUD, PMD and PTE tables.
  EXPECT_EQ(ran.vm("pgalloc_normal"), 4 + 3 + 4 * 5);
}

TEST(World, TheTimeLimitStopsATaskThatWouldRunOnInOneEvent) {
  // One task, nothing else queued: without the limit it would fault and drop
  // pages for hours of simulated time inside a single event.
  auto ran = run_text(scenario(R"(
[[programs.main]]
op = "map"
region = "a"
size = "64KiB"
[[programs.main]]
op = "loop"
count = 1000000000
body = [ { op = "touch", region = "a", mode = "write" }, { op = "madvise", region = "a", advice = "dontneed" } ]
)",
                               "[scenario]\ntime_limit = \"10ms\"\n"));
  EXPECT_TRUE(ran.result.time_limit_hit);
  EXPECT_DOUBLE_EQ(ran.result.elapsed_s, 0.01);
  EXPECT_LT(ran.vm("pgfault"), 100000);
}

TEST(World, SegfaultKillsTheTaskAndIsReported) {
  auto ran = run_text(scenario(R"(
[[programs.main]]
op = "map"
region = "a"
size = "16KiB"
prot = "r"
[[programs.main]]
op = "touch"
region = "a"
mode = "write"
)"));
  ASSERT_EQ(ran.result.errors.size(), 1u);
  EXPECT_NE(ran.result.errors[0].find("SIGSEGV"), std::string::npos);
}

TEST(World, AnMlockThatFindsNoMemoryKillsTheTaskAsItsOwnFaultWould) {
  // 127 MiB to populate on a machine of 2 x 64 MiB (mmap's overcommit
  // check lets it through; the watermarks keep 1.4 MiB back): the OOM
  // killer takes the task; the op after it never runs.
  auto ran = run_text(scenario(R"(
[[programs.main]]
op = "map"
region = "a"
size = "127MiB"
[[programs.main]]
op = "mlock"
region = "a"
[[programs.main]]
op = "count"
counter = "after"
)"));
  ASSERT_FALSE(ran.result.errors.empty());
  EXPECT_NE(ran.result.errors.back().find("out of memory"), std::string::npos)
      << ran.result.errors.back();
  EXPECT_EQ(ran.counter("after"), 0u);
}

TEST(World, SameSeedGivesIdenticalResults) {
  const std::string s = scenario(R"(
[[programs.main]]
op = "fork"
count = 3
program = "child"
[[programs.main]]
op = "wait"
[[programs.child]]
op = "map"
region = "a"
size = "64KiB"
[[programs.child]]
op = "loop"
count = 20
body = [ { op = "touch", region = "a", mode = "write" }, { op = "madvise", region = "a", advice = "dontneed" } ]
)");
  auto a = run_text(s);
  auto b = run_text(s);
  ASSERT_EQ(a.result.tasks.size(), b.result.tasks.size());
  EXPECT_EQ(a.result.events, b.result.events);
  EXPECT_EQ(a.result.vmstat, b.result.vmstat);
  for (size_t i = 0; i < a.result.tasks.size(); ++i) {
    EXPECT_EQ(a.result.tasks[i].times.sys_ns, b.result.tasks[i].times.sys_ns);
    EXPECT_EQ(a.result.tasks[i].exit_s, b.result.tasks[i].exit_s);
  }
}

TEST(World, TheCheckerAndItsStrideLeaveTheRunUnchanged) {
  scenario::Source source;
  source.path = "stride.toml";
  source.text = scenario(R"(
[[programs.main]]
op = "map"
region = "a"
size = "64KiB"
[[programs.main]]
op = "loop"
count = 30
body = [ { op = "touch", region = "a", mode = "write" }, { op = "madvise", region = "a", advice = "dontneed" } ]
)");
  const auto prepared = scenario::prepare(source);
  ASSERT_TRUE(prepared.run);
  auto run = [&](bool check, uint32_t stride) {
    return scenario::simulate(
        *prepared.run, scenario::RunOptions{.check_invariants = check, .check_stride = stride});
  };
  const RunResult off = run(false, 1);
  for (const uint32_t stride : {1u, 7u}) {
    const RunResult on = run(true, stride);
    EXPECT_TRUE(on.check_failures.empty());
    EXPECT_EQ(on.events, off.events);
    EXPECT_EQ(on.vmstat, off.vmstat);
  }
}

TEST(World, RunAheadSweepIsCutWhenAnotherThreadUnmapsItsMemory) {
  // A thread sweeps for 10 ms; the other zaps the range after 1 ms, so the
  // sweeper must fault again (a cut segment) rather than run on unaware.
  auto ran = run_text(scenario(R"(
[[programs.main]]
op = "map"
region = "a"
size = "64KiB"
[[programs.main]]
op = "touch"
region = "a"
mode = "write"
[[programs.main]]
op = "threads"
count = 1
program = "sweeper"
[[programs.main]]
op = "sleep"
duration = "1ms"
[[programs.main]]
op = "madvise"
region = "a"
advice = "dontneed"
[[programs.main]]
op = "wait"
[[programs.sweeper]]
op = "loop"
duration = "10ms"
body = [ { op = "sweep", region = "a", compute_ns = 1.0 }, { op = "count", counter = "passes" } ]
)"));
  // The sweeper faults the 16 pages back in (zero pages: it only reads).
  EXPECT_EQ(ran.result.tasks[1].min_flt, 16u);
  EXPECT_GT(ran.counter("passes"), 500u);
}

TEST(World, AMachineGivenByItsShapeAloneRunsAScenario) {
  // No preset: one socket of two cores with 64 MiB (counts default to 1).
  auto ran = run_text(R"(
[machine]
cores_per_socket = 2
mem_per_node = "64MiB"
llc_per_socket = "4MiB"
[run]
program = "main"
process_image = "mapped"
[[programs.main]]
op = "map"
region = "a"
size = "64KiB"
[[programs.main]]
op = "touch"
region = "a"
mode = "write"
[[programs.main]]
op = "fork"
count = 1
program = "child"
[[programs.main]]
op = "wait"
[[programs.child]]
op = "touch"
region = "a"
mode = "write"
)");
  ASSERT_TRUE(ran.topology.has_value());
  EXPECT_EQ(ran.topology->nr_nodes(), 1u);
  EXPECT_EQ(ran.topology->nr_cpus(), 2u);
  EXPECT_EQ(ran.topology->total_mem_bytes(), uint64_t{64} << 20);
  ASSERT_EQ(ran.result.tasks.size(), 2u);
  EXPECT_TRUE(ran.result.errors.empty());
  EXPECT_FALSE(ran.result.time_limit_hit);
  EXPECT_EQ(ran.result.tasks[0].min_flt, 16u);
  EXPECT_EQ(ran.result.tasks[1].min_flt, 16u);  // one COW copy per page
  EXPECT_NE(ran.result.tasks[0].cpu, ran.result.tasks[1].cpu);
}

}  // namespace
}  // namespace mmsim::workload

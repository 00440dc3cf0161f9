// The pin op (sched_setaffinity(0, ...)): where a pinned task runs, what the
// tasks it starts afterwards inherit, NUMA balancing's task moves kept inside
// the mask, and the loader's diagnostics.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenario/scenario.h"
#include "support/run.h"

namespace mmsim::workload {
namespace {

using testing::kSmallMachine;  // 2 nodes: CPUs 0, 1 on node 0; 2, 3 on node 1
using testing::run_text;

std::string scenario(const std::string& programs) {
  return std::string(kSmallMachine) + "\n[run]\nprogram = \"main\"\n" + programs;
}

const TaskResult* task_running(const testing::Ran& ran, const std::string& program) {
  for (const auto& t : ran.result.tasks)
    if (t.program == program) return &t;
  ADD_FAILURE() << "no task runs " << program;
  return nullptr;
}

TEST(Pin, APinnedTaskRunsOnItsOnlyAllowedCpu) {
  auto ran = run_text(scenario(R"(
[[programs.main]]
op = "pin"
cpus = [3]
[[programs.main]]
op = "sleep"
duration = "1ms"
)"));
  ASSERT_EQ(ran.result.tasks.size(), 1u);
  EXPECT_EQ(ran.result.tasks[0].cpu, 3);
  EXPECT_EQ(ran.result.tasks[0].node, 1);
  EXPECT_EQ(ran.result.tasks[0].nivcsw, 1u);  // the move off CPU 0
  EXPECT_TRUE(ran.result.errors.empty());
}

TEST(Pin, APinToNodesMovesTheTaskToTheLeastLoadedCpuOfThoseNodes) {
  auto ran = run_text(scenario(R"(
[[programs.main]]
op = "pin"
nodes = [1]
[[programs.main]]
op = "count"
counter = "done"
)"));
  ASSERT_EQ(ran.result.tasks.size(), 1u);
  EXPECT_EQ(ran.result.tasks[0].cpu, 2);  // idle, like CPU 3: the lower id
  EXPECT_EQ(ran.result.tasks[0].node, 1);
  EXPECT_EQ(ran.counter("done"), 1u);
}

TEST(Pin, APinToAllNodesUndoesAnEarlierPin) {
  // perf bench numa -0: set up bound to one node, then run anywhere.
  auto ran = run_text(scenario(R"(
[[programs.main]]
op = "pin"
nodes = [1]
[[programs.main]]
op = "pin"
nodes = "all"
[[programs.main]]
op = "threads"
count = 3
program = "w"
[[programs.main]]
op = "wait"
[[programs.w]]
op = "sleep"
duration = "1ms"
)"));
  bool on_node0 = false;
  for (const auto& t : ran.result.tasks) on_node0 |= t.program == "w" && t.node == 0;
  EXPECT_TRUE(on_node0) << "the threads inherit every CPU, not node 1's";
}

TEST(Pin, APinThatKeepsTheCurrentCpuDoesNotMoveTheTask) {
  auto ran = run_text(scenario(R"(
[[programs.main]]
op = "pin"
cpus = [0, 2]
)"),
                      {"noise.launch_cpu=false"});
  // main starts on CPU 0: mmsim-exec's collector runs on node 1 (CPU 3).
  EXPECT_EQ(ran.result.tasks[0].cpu, 0);
  EXPECT_EQ(ran.result.tasks[0].nivcsw, 0u);
}

TEST(Pin, ForkedChildrenAndThreadsStartedAfterThePinInheritItsMask) {
  // Four children and four threads on a node of two CPUs: without the mask
  // fork placement would spread them over both nodes.
  auto ran = run_text(scenario(R"(
[[programs.main]]
op = "pin"
nodes = [1]
[[programs.main]]
op = "fork"
count = 4
program = "child"
[[programs.main]]
op = "threads"
count = 4
program = "thread"
[[programs.main]]
op = "wait"
[[programs.child]]
op = "sleep"
duration = "10ms"
[[programs.thread]]
op = "sleep"
duration = "10ms"
)"));
  ASSERT_EQ(ran.result.tasks.size(), 9u);
  for (const auto& t : ran.result.tasks) {
    EXPECT_EQ(t.node, 1) << t.program << " pid " << t.pid;
    EXPECT_TRUE(t.cpu == 2 || t.cpu == 3) << t.program << " pid " << t.pid;
  }
}

TEST(Pin, ChildrenStartedBeforeThePinKeepEveryCpu) {
  auto ran = run_text(scenario(R"(
[[programs.main]]
op = "fork"
count = 3
program = "child"
[[programs.main]]
op = "pin"
cpus = [0]
[[programs.main]]
op = "wait"
[[programs.child]]
op = "sleep"
duration = "10ms"
)"));
  ASSERT_EQ(ran.result.tasks.size(), 4u);
  bool some_on_node_1 = false;
  for (const auto& t : ran.result.tasks) some_on_node_1 |= t.node == 1;
  EXPECT_TRUE(some_on_node_1);
  EXPECT_EQ(ran.result.tasks[0].cpu, 0);
}

TEST(Pin, APinOntoABusyCpuQueuesTheTaskThereAndBothFinish) {
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
op = "fork"
count = 1
program = "spin"
[[programs.main]]
op = "pin"
cpus = [1, 3]
[[programs.main]]
op = "loop"
count = 200
body = [ { op = "sweep", region = "a" }, { op = "count", counter = "main" } ]
[[programs.main]]
op = "wait"
[[programs.spin]]
op = "pin"
cpus = [1]
[[programs.spin]]
op = "loop"
count = 200
body = [ { op = "sweep", region = "a" }, { op = "count", counter = "spin" } ]
)"));
  EXPECT_EQ(ran.counter("main"), 200u);
  EXPECT_EQ(ran.counter("spin"), 200u);
  const TaskResult* spin = task_running(ran, "spin");
  ASSERT_NE(spin, nullptr);
  EXPECT_EQ(spin->cpu, 1);
  const uint16_t main_cpu = ran.result.tasks[0].cpu;
  EXPECT_TRUE(main_cpu == 1 || main_cpu == 3) << main_cpu;
}

// Node 1's memory filled (bound there), 4 MiB written on node 0, and three
// threads that pin themselves to node 1 and sweep it: their hinting faults
// cannot move the pages to node 1 (it is full), so NUMA balancing prefers
// node 0 for them and, with node 1 overloaded, moves one there, unless their
// mask forbids it. `widen`: each then widens its mask to both nodes.
std::string full_node(bool widen) {
  return R"(
[machine]
preset = "2s-16c"
cores_per_socket = 2
mem_per_node = "64MiB"
[kernel]
version = "6.1"
numa_balancing = 1
[run]
program = "main"
[[programs.main]]
op = "map"
region = "fill"
size = "63MiB"
policy = "bind"
nodes = [1]
[[programs.main]]
op = "touch"
region = "fill"
mode = "write"
[[programs.main]]
op = "map"
region = "data"
size = "4MiB"
[[programs.main]]
op = "touch"
region = "data"
mode = "write"
[[programs.main]]
op = "threads"
count = 3
program = "worker"
[[programs.main]]
op = "wait"
[[programs.worker]]
op = "pin"
nodes = [1]
)" + std::string(widen ? "[[programs.worker]]\nop = \"pin\"\nnodes = [0, 1]\n" : "") +
         R"(
[[programs.worker]]
op = "loop"
duration = "20s"
body = [ { op = "sweep", region = "data" } ]
)";
}

TEST(Pin, WithAWideMaskNumaBalancingMovesATaskToItsMemory) {
  auto ran = run_text(full_node(true));
  int on_node_0 = 0;
  for (const auto& t : ran.result.tasks) {
    if (t.program == "worker" && t.node == 0) ++on_node_0;
  }
  EXPECT_GE(on_node_0, 1);
}

TEST(Pin, NumaBalancingNeverMovesATaskOutsideItsMask) {
  auto ran = run_text(full_node(false));
  ASSERT_EQ(ran.result.tasks.size(), 4u);
  int prefer_node_0 = 0;
  for (const auto& t : ran.result.tasks) {
    if (t.program != "worker") continue;
    EXPECT_EQ(t.node, 1) << "pid " << t.pid;
    prefer_node_0 += t.numa.numa_preferred_nid == 0;
  }
  EXPECT_GE(prefer_node_0, 1);
  EXPECT_GT(ran.vm("numa_hint_faults"), 0);
}

TEST(Pin, ItIsCountedNowhereInVmstat) {
  // To the CPU main starts on (the collector's fork puts it on CPU 2): a
  // move would change which CPU's lru_add batch its exit drains.
  auto with = run_text(scenario("[[programs.main]]\nop = \"pin\"\ncpus = [2]\n"));
  auto without = run_text(scenario("[[programs.main]]\nop = \"count\"\ncounter = \"x\"\n"));
  EXPECT_EQ(with.result.vmstat, without.result.vmstat);
}

// --- the loader ------------------------------------------------------------

std::string diagnostics_of(const std::string& op) {
  const auto lr =
      scenario::parse_scenario(scenario("[[programs.main]]\nop = \"pin\"\n" + op), "p.toml", {});
  EXPECT_FALSE(lr.ok());
  std::string all;
  for (const auto& d : lr.diagnostics) all += d.str() + "\n";
  return all;
}

TEST(PinLoader, CpusAndNodesAreReadSortedWithoutRepeats) {
  const auto lr =
      scenario::parse_scenario(scenario("[[programs.main]]\nop = \"pin\"\ncpus = [3, 1, 3]\n"
                                        "[[programs.main]]\nop = \"pin\"\nnodes = [1, 0]\n"),
                               "p.toml", {});
  ASSERT_TRUE(lr.ok());
  const auto& ops = lr.scenario->workload.programs[0].ops;
  EXPECT_EQ(ops[0].kind, OpKind::kPin);
  EXPECT_EQ(ops[0].cpus, (std::vector<CpuId>{CpuId(1), CpuId(3)}));
  EXPECT_TRUE(ops[0].cpu_nodes.empty());
  EXPECT_EQ(ops[1].cpu_nodes, (std::vector<NodeId>{NodeId(0), NodeId(1)}));
  EXPECT_TRUE(ops[1].cpus.empty());
}

TEST(PinLoader, AnEmptyListIsAnError) {
  // The machine block is 5 lines, [run] 2: the op starts at line 9.
  EXPECT_EQ(diagnostics_of("cpus = []\n"),
            "p.toml:11:8: error: programs.main[0].cpus: must name at least one CPU "
            "(sched_setaffinity with an empty mask fails with EINVAL)\n");
  EXPECT_EQ(diagnostics_of("nodes = []\n"),
            "p.toml:11:9: error: programs.main[0].nodes: must name at least one node "
            "(sched_setaffinity with an empty mask fails with EINVAL)\n");
}

TEST(PinLoader, ACpuOrNodeOutsideTheMachineIsAnErrorEachAtItsPlace) {
  EXPECT_EQ(diagnostics_of("cpus = [1, 4, -1]\n"),
            "p.toml:11:12: error: programs.main[0].cpus: CPU 4 is not a CPU of this machine (0 to "
            "3)\n"
            "p.toml:11:15: error: programs.main[0].cpus: CPU -1 is not a CPU of this machine (0 "
            "to 3)\n");
  EXPECT_EQ(diagnostics_of("nodes = [2]\n"),
            "p.toml:11:10: error: programs.main[0].nodes: node 2 is not a node of this machine (0 "
            "to 1)\n");
  EXPECT_NE(diagnostics_of("cpus = [\"0\"]\n").find("expected CPU numbers, got a string"),
            std::string::npos);
  EXPECT_NE(diagnostics_of("cpus = 0\n").find("expected an array of CPU numbers, got an integer"),
            std::string::npos);
}

TEST(PinLoader, BothKeysOrNeitherIsAnError) {
  EXPECT_EQ(diagnostics_of("cpus = [0]\nnodes = [0]\n"),
            "p.toml:12:9: error: programs.main[0].nodes: give cpus or nodes, not both\n");
  EXPECT_EQ(diagnostics_of(""),
            "p.toml:9:1: error: programs.main[0].cpus: a pin needs cpus (a list of CPUs) or nodes "
            "(a list of nodes)\n");
}

TEST(PinLoader, EveryProblemOfEveryPinIsReportedAtOnce) {
  const auto lr =
      scenario::parse_scenario(scenario("[[programs.main]]\nop = \"pin\"\n"
                                        "[[programs.main]]\nop = \"pin\"\ncpus = [9]\nnodes = []\n"
                                        "[[programs.main]]\nop = \"pin\"\ncpus = [0]\nwhere = 1\n"),
                               "p.toml", {});
  EXPECT_EQ(lr.diagnostics.size(), 5u);
}

}  // namespace
}  // namespace mmsim::workload

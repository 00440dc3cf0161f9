// The task's own memory policy (the mempolicy op, set_mempolicy(2)), pins and
// policies by the task's share of the nodes (nodes = "own" / "mirror"), and
// memset sweeps: what autonuma-benchmark's bind variants are made of.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "support/run.h"

namespace mmsim {
namespace {

using testing::run_text;

const std::vector<std::string> kQuiet = {"noise.enabled=false"};

// Where the pages went: numa_local counts allocations on the allocating
// CPU's node (node 0, main's), numa_other those elsewhere (node 1).
// main runs `main_ops` (TOML op tables) on 2s-16c with a 4 MiB region "data".
std::string with_main(const std::string& main_ops, const std::string& balancing = "0",
                      const std::string& worker_ops = "") {
  return R"(
[machine]
preset = "2s-16c"
[kernel]
version = "6.1"
numa_balancing = )" +
         balancing + R"(
transparent_hugepage = "never"
[run]
program = "main"
)" + main_ops +
         worker_ops;
}

const std::string kMapData = R"(
[[programs.main]]
op = "map"
region = "data"
size = "4MiB"
)";
const std::string kTouchData = R"(
[[programs.main]]
op = "touch"
region = "data"
mode = "write"
)";
std::string mempolicy(const std::string& nodes) {
  return "\n[[programs.main]]\nop = \"mempolicy\"\npolicy = \"bind\"\nnodes = " + nodes + "\n";
}

// main on node 0 (it starts beside mmsim-exec's collector, on node 1).
const std::string kPin0 = "\n[[programs.main]]\nop = \"pin\"\nnodes = [0]\n";

TEST(TaskMempolicy, ABindPolicyPutsTheTasksNewPagesOnItsNodes) {
  const auto local = run_text(with_main(kPin0 + kMapData + kTouchData), kQuiet);
  const auto bound = run_text(with_main(kPin0 + mempolicy("[1]") + kMapData + kTouchData), kQuiet);
  ASSERT_EQ(local.result.tasks[0].node, 0);
  EXPECT_GE(local.vm("numa_local"), 1024);
  EXPECT_LT(local.vm("numa_other"), 1024);
  EXPECT_GE(bound.vm("numa_other"), 1024);
  EXPECT_LT(bound.vm("numa_local"), 1024);
}

// Where a task ends: the share of its last sweep or touch on its node.
TEST(TaskPlacement, LocalPctIsTheShareOfTheLastAccessRangeOnTheTasksNode) {
  const std::string pin = "\n[[programs.main]]\nop = \"pin\"\nnodes = [0]\n";
  const auto local = run_text(with_main(pin + kMapData + kTouchData), kQuiet);
  const auto remote = run_text(with_main(pin + mempolicy("[1]") + kMapData + kTouchData), kQuiet);
  EXPECT_DOUBLE_EQ(local.result.tasks[0].local_pct, 100.0);
  EXPECT_DOUBLE_EQ(remote.result.tasks[0].local_pct, 0.0);
  const auto none = run_text(with_main(kMapData), kQuiet);
  EXPECT_EQ(none.result.tasks[0].local_pct, -1) << "no sweep or touch";
}

TEST(TaskMempolicy, TheVmasOwnPolicyWinsOverTheTasks) {
  const std::string map_on_0 = R"(
[[programs.main]]
op = "map"
region = "data"
size = "4MiB"
policy = "bind"
nodes = [0]
)";
  const auto ran = run_text(with_main(kPin0 + mempolicy("[1]") + map_on_0 + kTouchData), kQuiet);
  EXPECT_GE(ran.vm("numa_local"), 1024);
  EXPECT_LT(ran.vm("numa_other"), 1024);
}

TEST(TaskMempolicy, ThreadsInheritThePolicyOfTheirCreator) {
  const std::string threads = R"(
[[programs.main]]
op = "threads"
count = 2
program = "worker"
[[programs.main]]
op = "wait"
[[programs.worker]]
op = "touch"
region = "data"
mode = "write"
slice = "own"
)";
  // Pinned to node 0 (inherited too), the threads allocate on node 1.
  const std::string pin = "\n[[programs.main]]\nop = \"pin\"\nnodes = [0]\n";
  const auto ran = run_text(with_main(pin + mempolicy("[1]") + kMapData + threads), kQuiet);
  EXPECT_GE(ran.vm("numa_other"), 1024);
  EXPECT_LT(ran.vm("numa_local"), 1024);
}

TEST(TaskMempolicy, TheDefaultPolicyAgainMeansFirstTouchOnTheLocalNode) {
  const std::string back = "\n[[programs.main]]\nop = \"mempolicy\"\npolicy = \"default\"\n";
  const auto ran = run_text(with_main(mempolicy("[1]") + back + kMapData + kTouchData), kQuiet);
  EXPECT_GE(ran.vm("numa_local"), 1024);
  EXPECT_LT(ran.vm("numa_other"), 1024);
}

// vma_policy_mof: a task whose policy lacks MPOL_F_MOF scans none of its
// default-policy VMAs, so it takes no hinting faults. (Two threads: a
// single-threaded mm's pages on its own node are not even marked.)
TEST(TaskMempolicy, TheVmasOfATaskWithABindPolicyAreNotScannedForNumaBalancing) {
  const std::string threads = R"(
[[programs.main]]
op = "threads"
count = 2
program = "worker"
[[programs.main]]
op = "wait"
[[programs.worker]]
op = "loop"
duration = "3s"
body = [{ op = "sweep", region = "data", mode = "write", build = "memset" }]
)";
  const auto free = run_text(with_main(kMapData + kTouchData + threads, "1"), kQuiet);
  const auto bound =
      run_text(with_main(mempolicy("[0]") + kMapData + kTouchData + threads, "1"), kQuiet);
  EXPECT_GT(free.vm("numa_pte_updates"), 0);
  EXPECT_EQ(bound.vm("numa_pte_updates"), 0);
  EXPECT_EQ(bound.vm("numa_hint_faults"), 0);
}

// Four threads pin themselves by share: two a node, in order, or mirrored.
std::string pinned_threads(const std::string& share) {
  return with_main(R"(
[[programs.main]]
op = "threads"
count = 4
program = "worker"
[[programs.main]]
op = "wait"
)",
                   "0", R"(
[[programs.worker]]
op = "pin"
nodes = ")" + share + R"("
[[programs.worker]]
op = "sleep"
duration = "1ms"
)");
}

TEST(NodeShare, OwnPinsConsecutiveThreadsToConsecutiveNodes) {
  const auto ran = run_text(pinned_threads("own"), kQuiet);
  ASSERT_EQ(ran.result.tasks.size(), 5u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(ran.result.tasks[1 + i].node, i / 2) << "thread " << i;
}

TEST(NodeShare, MirrorPinsEachThreadToTheNodeOfItsMirrorImage) {
  const auto ran = run_text(pinned_threads("mirror"), kQuiet);
  ASSERT_EQ(ran.result.tasks.size(), 5u);
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(ran.result.tasks[1 + i].node, 1 - i / 2) << "thread " << i;
}

TEST(NodeShare, AMapTakesListedNodesOnly) {
  const std::string map_own = R"(
[[programs.main]]
op = "map"
region = "data"
size = "4MiB"
policy = "bind"
nodes = "own"
)";
  scenario::LoadResult lr = scenario::parse_scenario(with_main(map_own), "t.toml", {});
  ASSERT_EQ(lr.diagnostics.size(), 1u);
  EXPECT_EQ(lr.diagnostics[0].key, "programs.main[0].nodes");
  EXPECT_EQ(lr.diagnostics[0].message, "expected an array of node numbers");
}

TEST(TaskMempolicy, AMempolicyWithoutAPolicyIsAnError) {
  scenario::LoadResult lr = scenario::parse_scenario(
      with_main("\n[[programs.main]]\nop = \"mempolicy\"\nnodes = [0]\n"), "t.toml", {});
  const auto missing = std::find_if(lr.diagnostics.begin(), lr.diagnostics.end(), [](auto& d) {
    return d.key == "programs.main[0].policy" && d.message == "missing required key";
  });
  EXPECT_NE(missing, lr.diagnostics.end());
}

TEST(MemsetSweep, AMemsetThatReadsOrHasElementsIsAnError) {
  const std::string bad = kMapData + R"(
[[programs.main]]
op = "sweep"
region = "data"
mode = "read"
build = "memset"
elem_size = 8
)";
  scenario::LoadResult lr = scenario::parse_scenario(with_main(bad), "t.toml", {});
  ASSERT_EQ(lr.diagnostics.size(), 2u);
  EXPECT_EQ(lr.diagnostics[0].key, "programs.main[1].build");
  EXPECT_EQ(lr.diagnostics[0].message, "memset writes: it needs mode = \"write\"");
  EXPECT_EQ(lr.diagnostics[1].key, "programs.main[1].elem_size");
}

// Over cache-resident data the element loop is bound by its compute; a
// memset has none and costs what delivering the lines does.
TEST(MemsetSweep, AMemsetOfCachedDataTakesLessTimeThanTheElementLoop) {
  auto passes = [](const std::string& how) {
    return with_main(kMapData + kTouchData + R"(
[[programs.main]]
op = "loop"
count = 200
body = [{ op = "sweep", region = "data", mode = "write", )" +
                     how + " }]\n");
  };
  const auto loop = run_text(passes("elem_size = 4"), kQuiet);
  const auto memset = run_text(passes("build = \"memset\""), kQuiet);
  EXPECT_LT(memset.result.tasks[0].times.user_ns, loop.result.tasks[0].times.user_ns);
  EXPECT_GT(memset.result.tasks[0].times.user_ns, 0);
}

// A core that issues its stores slowly (an emulated one: a TCG guest) sets a
// memset's pace however fast the lines come: 200 passes over 1,024 pages of
// 64 lines each take at least that many lines at memset_line_ns.
TEST(MemsetSweep, AMemsetTakesAtLeastItsLinesAtTheCoresStorePace) {
  const std::string passes = with_main(kMapData + kTouchData + R"(
[[programs.main]]
op = "loop"
count = 200
body = [{ op = "sweep", region = "data", mode = "write", build = "memset" }]
)");
  std::vector<std::string> slow = kQuiet;
  slow.push_back("costs.memset_line_ns=30");
  const auto fast = run_text(passes, kQuiet);
  const auto paced = run_text(passes, slow);
  const double lines = 200.0 * 1024 * 64;
  EXPECT_LT(static_cast<double>(fast.result.tasks[0].times.user_ns), lines * 30);
  EXPECT_GE(static_cast<double>(paced.result.tasks[0].times.user_ns), lines * 30);
}

}  // namespace
}  // namespace mmsim

// The NUMA imbalance the scheduler allows, by version (sched/domains.h):
// imb_numa_nr as build_sched_domains derives it from the SLIT and the LLCs,
// adjust_numa_imbalance, and where fork/clone places a new task
// (find_idlest_group) under each rule.
#include <gtest/gtest.h>

#include <string>

#include "sched/domains.h"
#include "sched/task.h"
#include "topo/topology.h"

namespace mmsim::sched {
namespace {

topo::Topology machine(const std::string& preset) { return topo::Topology(*topo::preset(preset)); }

// 2 sockets of `cores` CPUs, one node each.
topo::Topology two_by(uint16_t cores) {
  topo::MachineSpec s;
  s.name = "2xN";
  s.sockets = 2;
  s.cores_per_socket = cores;
  s.threads_per_core = 1;
  s.mem_per_node = 1ull << 30;
  s.llc_per_socket = 1 << 20;
  return topo::Topology(s);
}

TEST(NumaDomains, APackageOfEightCpusAllowsAnImbalanceOfOne) {
  // An eighth of the package's CPUs; the validation guest's two-CPU
  // packages round down to the floor of 1.
  const NumaDomains d(machine("2s-16c"));
  EXPECT_EQ(d.imb_numa_nr(NodeId(0)), 1);
  EXPECT_EQ(d.top_imb_numa_nr(NodeId(1)), 1);
  EXPECT_EQ(NumaDomains(two_by(2)).imb_numa_nr(NodeId(0)), 1);
  EXPECT_EQ(NumaDomains(two_by(16)).imb_numa_nr(NodeId(0)), 2);
}

TEST(NumaDomains, HigherNumaLevelsScaleItByTheirSpanOverTheLowestsSpan) {
  // 36 CPUs a package: 4. The first NUMA level holds a socket and its
  // three neighbours (distance 21, 144 CPUs), the second all eight (288).
  const NumaDomains d(machine("xeon-8s-144c"));
  for (uint16_t n = 0; n < 8; ++n) {
    EXPECT_EQ(d.imb_numa_nr(NodeId(n)), 4) << n;
    EXPECT_EQ(d.top_imb_numa_nr(NodeId(n)), 8) << n;
  }
}

TEST(NumaDomains, AMachineOfOneNodeHasNoNumaDomainAndAllowsOne) {
  topo::MachineSpec s;
  s.name = "1n";
  s.sockets = 1;
  s.cores_per_socket = 4;
  s.mem_per_node = 1ull << 30;
  s.llc_per_socket = 1 << 20;
  const topo::Topology t(s);
  EXPECT_EQ(NumaDomains(t).imb_numa_nr(NodeId(0)), 1);
}

TEST(AdjustNumaImbalance, EachRuleAllowsWhatItsKernelAllows) {
  // Before 5.5 no imbalance is forgiven.
  EXPECT_EQ(adjust_numa_imbalance(NumaImbalance::kLoad, 1, 1, 8), 1);
  // 5.10: any imbalance while at most two tasks run at the destination.
  EXPECT_EQ(adjust_numa_imbalance(NumaImbalance::k510, 2, 2, 0), 0);
  EXPECT_EQ(adjust_numa_imbalance(NumaImbalance::k510, 3, 3, 8), 3);
  // 6.0: at most two, while the destination runs at most imb_numa_nr.
  EXPECT_EQ(adjust_numa_imbalance(NumaImbalance::k60, 2, 4, 4), 0);
  EXPECT_EQ(adjust_numa_imbalance(NumaImbalance::k60, 3, 4, 4), 3);
  EXPECT_EQ(adjust_numa_imbalance(NumaImbalance::k60, 2, 5, 4), 2);
}

// Places `n` new tasks from node 0, each counted on its CPU, and returns
// their nodes.
std::vector<uint16_t> fork_nodes(const topo::Topology& t, NumaImbalance rule, int n) {
  RunQueues rq(t);
  rq.set_numa_imbalance(rule);
  rq.add(CpuId(0));  // the parent, running on node 0
  std::vector<uint16_t> nodes;
  for (int i = 0; i < n; ++i) {
    const CpuId c = rq.select_cpu_for_new_task(NodeId(0));
    rq.add(c);
    nodes.push_back(t.cpu_to_node(c).v);
  }
  return nodes;
}

TEST(ForkPlacement, BeforeFiveFiveANewTaskGoesToTheLeastLoadedNode) {
  const topo::Topology t = two_by(4);
  EXPECT_EQ(fork_nodes(t, NumaImbalance::kLoad, 4), (std::vector<uint16_t>{1, 0, 1, 0}));
}

TEST(ForkPlacement, InFiveTenANewTaskStaysOnItsParentsNodeWhileItHasAnIdleCpu) {
  const topo::Topology t = two_by(4);
  EXPECT_EQ(fork_nodes(t, NumaImbalance::k510, 5), (std::vector<uint16_t>{0, 0, 0, 1, 1}));
}

TEST(ForkPlacement, FromSixZeroANewTaskStaysWhileTheImbalanceIsSmallAndTheNodeLight) {
  // 16 CPUs a package, imb_numa_nr 2: the first child makes two tasks on
  // node 0 (allowed), the second would make three.
  const topo::Topology t = two_by(16);
  EXPECT_EQ(fork_nodes(t, NumaImbalance::k60, 4), (std::vector<uint16_t>{0, 1, 1, 0}));
}

TEST(ForkPlacement, AParentOutsideTheRunCountsAsATaskOnItsCpu) {
  // mmsim-exec's collector forks the first task from CPU 0: 6.0's rule
  // with 2 CPUs a package (imb_numa_nr 1) sends it to node 1, as a 6.12
  // guest did; 5.10's keeps it beside the collector, on CPU 1.
  const topo::Topology t = two_by(2);
  RunQueues rq(t);
  rq.set_numa_imbalance(NumaImbalance::k60);
  EXPECT_EQ(rq.select_cpu_for_new_task(NodeId(0)), CpuId(0)) << "no parent: an idle machine";
  EXPECT_EQ(rq.select_cpu_for_new_task(NodeId(0), {}, CpuId(0)), CpuId(2));
  rq.set_numa_imbalance(NumaImbalance::k510);
  EXPECT_EQ(rq.select_cpu_for_new_task(NodeId(0), {}, CpuId(0)), CpuId(1));
}

TEST(ForkPlacement, AProgramLaunchedFromAShellRunsBesideTheLauncherForkedAwayFromIt) {
  // mmsim native is forked from the shell's node to the idler one (6.0's
  // rule, 2 CPUs a package) and wakes mmsim-exec onto the idle CPU beside
  // it; under 5.10's rule everything stays on the shell's node, and
  // mmsim-exec takes the shell's CPU, the shell waiting.
  const topo::Topology t = two_by(2);
  RunQueues rq(t);
  rq.set_numa_imbalance(NumaImbalance::k60);
  EXPECT_EQ(rq.launched_cpu(CpuId(0)), CpuId(3));
  EXPECT_EQ(rq.launched_cpu(CpuId(3)), CpuId(1));
  rq.set_numa_imbalance(NumaImbalance::k510);
  EXPECT_EQ(rq.launched_cpu(CpuId(0)), CpuId(0));
}

TEST(ForkPlacement, ANewTaskKeepsToItsAllowedCpusUnderEveryRule) {
  const topo::Topology t = two_by(4);
  for (NumaImbalance rule : {NumaImbalance::kLoad, NumaImbalance::k510, NumaImbalance::k60}) {
    RunQueues rq(t);
    rq.set_numa_imbalance(rule);
    rq.add(CpuId(0));
    EXPECT_EQ(t.cpu_to_node(rq.select_cpu_for_new_task(NodeId(0), {CpuId(5), CpuId(6)})),
              NodeId(1));
    EXPECT_EQ(rq.select_cpu_for_new_task(NodeId(1), {CpuId(2)}), CpuId(2));
  }
}

}  // namespace
}  // namespace mmsim::sched

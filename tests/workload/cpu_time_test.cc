// The machine's CPUs bound the tasks' CPU time: tasks run ahead of the event
// queue, and one woken on a CPU must not start there before the task that
// ran ahead on it has left.
#include <gtest/gtest.h>

#include <string>

#include "support/run.h"

namespace mmsim::workload {
namespace {

TEST(CpuTime, TasksSwappingOnTinyNodesUseNoMoreCpuTimeThanTheMachineHas) {
  // 40 tasks on 4 CPUs, swapping on tiny nodes: long direct reclaims run
  // each faulting task far ahead of the queue, while others wake from swap
  // reads and sleeps (fuzz/findings/013: 0.10 CPU-seconds in 0.08 by
  // 20 ms).
  const std::string text = testing::fuzz_finding("013-cpu-overcommit-after-run-ahead.toml");
  ASSERT_FALSE(text.empty());
  // 1 MiB, not the finding's 128 KiB: the executor's file (1.4 MiB, its
  // text mapped by every task) would leave nothing to swap in, most tasks
  // killed by the OOM killer at once. At 1 MiB its text still thrashes
  // (about as many major faults again as swap-ins).
  const auto ran =
      testing::run_text(text, {"scenario.time_limit=\"20ms\"", "machine.mem_per_node=\"1MiB\""});
  EXPECT_TRUE(ran.result.check_failures.empty());
  ASSERT_GT(ran.vm("pswpin"), 500);
  double busy_s = 0;
  for (const auto& t : ran.result.tasks) busy_s += (t.times.user_ns + t.times.sys_ns) * 1e-9;
  // A task may run one kernel operation past the time limit.
  const double cpus = 4;
  EXPECT_LE(busy_s, cpus * (ran.result.elapsed_s + 0.002));
}

}  // namespace
}  // namespace mmsim::workload

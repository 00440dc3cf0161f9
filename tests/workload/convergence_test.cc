// [run] convergence, perf bench numa mem -m's measure: the run ends the
// first time each process's tasks of the program are all on one node, once
// all of them have started; converged_s says when, or -1 if never.
#include <gtest/gtest.h>

#include <string>

#include "support/run.h"

namespace mmsim {
namespace {

using testing::run_text;

// Two processes of two threads each; `process_pin` and `thread_pin` are ops
// (TOML) each runs first, `process_delay` a sleep before the second's threads.
std::string two_by_two(const std::string& process_pin, const std::string& thread_pin,
                       const std::string& process_delay = "0s") {
  return R"(
[machine]
preset = "2s-16c"
[kernel]
version = "6.12"
numa_balancing = 0
[run]
program = "main"
convergence = "thread"
[[programs.main]]
op = "fork"
count = 2
program = "process"
[[programs.main]]
op = "wait"
)" + process_pin +
         R"(
[[programs.process]]
op = "map"
region = "buf"
size = "1MiB"
[[programs.process]]
op = "sleep"
duration = ")" +
         process_delay + R"("
[[programs.process]]
op = "threads"
count = 2
program = "thread"
[[programs.process]]
op = "wait"
)" + thread_pin +
         R"(
[[programs.thread]]
op = "loop"
duration = "3s"
body = [{ op = "sweep", region = "buf", mode = "write" }]
)";
}

const std::string kProcessOwnNode = R"(
[[programs.process]]
op = "pin"
nodes = "own"
)";
const std::string kThreadOwnNode = R"(
[[programs.thread]]
op = "pin"
nodes = "own"
)";

TEST(Convergence, TheRunEndsWhenEachProcesssThreadsFirstShareANode) {
  const auto ran = run_text(two_by_two(kProcessOwnNode, ""));
  ASSERT_GE(ran.result.converged_s, 0);
  EXPECT_LT(ran.result.converged_s, 0.5);
  EXPECT_EQ(ran.result.elapsed_s, ran.result.converged_s);
  EXPECT_FALSE(ran.result.time_limit_hit);
}

TEST(Convergence, ThreadsSpreadOverNodesNeverConverge) {
  const auto ran = run_text(two_by_two(kProcessOwnNode, kThreadOwnNode));
  EXPECT_EQ(ran.result.converged_s, -1);
  EXPECT_GE(ran.result.elapsed_s, 3.0);
}

TEST(Convergence, ItIsJudgedOnlyOnceEveryTaskOfTheProgramHasStarted) {
  // Process a's threads are on node 0 at once; b starts a second later.
  const std::string text = R"(
[machine]
preset = "2s-16c"
[kernel]
version = "6.12"
numa_balancing = 0
[run]
program = "main"
convergence = "thread"
[[programs.main]]
op = "fork"
count = 1
program = "a"
[[programs.main]]
op = "sleep"
duration = "1s"
[[programs.main]]
op = "fork"
count = 1
program = "b"
[[programs.main]]
op = "wait"
[[programs.a]]
op = "pin"
nodes = [0]
[[programs.a]]
op = "threads"
count = 2
program = "thread"
[[programs.a]]
op = "wait"
[[programs.b]]
op = "pin"
nodes = [1]
[[programs.b]]
op = "threads"
count = 2
program = "thread"
[[programs.b]]
op = "wait"
[[programs.thread]]
op = "loop"
duration = "3s"
body = [{ op = "sleep", duration = "10ms" }]
)";
  const auto ran = run_text(text);
  ASSERT_GE(ran.result.converged_s, 0);
  EXPECT_GE(ran.result.converged_s, 1.0);
  EXPECT_LT(ran.result.converged_s, 1.5);
}

}  // namespace
}  // namespace mmsim

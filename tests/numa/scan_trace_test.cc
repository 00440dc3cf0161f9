// The simulated NUMA scan's trace (mmsim run --scan-trace): task_numa_work's
// calls and the ranges they mark, in the guest's kprobe format.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>

#include "support/run.h"

namespace mmsim::numa {
namespace {

// Two threads sweep 64 MiB on the far node for 4 s: scans mark it.
constexpr const char* kSweep = R"(
[machine]
preset = "2s-16c"
cores_per_socket = 2
mem_per_node = "256MiB"
[kernel]
version = "6.1"
numa_balancing = 1
[run]
program = "main"
[[programs.main]]
op = "pin"
nodes = [1]
[[programs.main]]
op = "map"
region = "buf"
size = "64MiB"
[[programs.main]]
op = "touch"
region = "buf"
mode = "write"
[[programs.main]]
op = "pin"
nodes = [0]
[[programs.main]]
op = "threads"
count = 2
program = "t"
[[programs.main]]
op = "wait"
[[programs.t]]
op = "loop"
duration = "4s"
body = [{ op = "sweep", region = "buf" }]
)";

struct Traced {
  testing::Ran ran;
  std::string trace;
};

Traced run_traced(uint64_t seed) {
  Traced t;
  t.ran = testing::run_text(kSweep, {"scenario.seed=" + std::to_string(seed)}, true, &t.trace);
  return t;
}

TEST(SimulatedScanTrace, TheRangesItShowsMarkedAsManyPtesAsTheRunCounts) {
  const Traced t = run_traced(1);
  const std::regex line(R"(^\s*\S+-(\d+)\s+\[(\d+)\] \.\.\.\.\. ([\d.]+): (\w+): ?(.*)$)");
  const std::regex updated(R"(updated=(\d+))");
  int64_t marked = 0, calls = 0, returns = 0, ranges = 0;
  std::istringstream in(t.trace);
  for (std::string l; std::getline(in, l);) {
    if (l.starts_with("#")) continue;
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l, m, line)) << l;
    const std::string event = m[4], args = m[5];
    if (event == "task_numa_work") ++calls;
    if (event == "task_numa_work_ret") ++returns;
    if (event == "change_prot_numa") ++ranges;
    std::smatch u;
    if (event == "change_prot_numa_ret" && std::regex_search(args, u, updated))
      marked += std::stoll(u[1]);
  }
  EXPECT_GT(calls, 0);
  EXPECT_EQ(returns, calls);
  EXPECT_GT(ranges, 0);
  EXPECT_GT(marked, 0);
  EXPECT_EQ(marked, t.ran.vm("numa_pte_updates"));
}

TEST(SimulatedScanTrace, IsTheSameBytesForTheSameSeed) {
  const Traced a = run_traced(3), b = run_traced(3);
  EXPECT_FALSE(a.trace.empty());
  EXPECT_EQ(a.trace, b.trace);
}

}  // namespace
}  // namespace mmsim::numa

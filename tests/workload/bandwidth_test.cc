// Memory bandwidth shared by the streams that use it (cost::Bandwidth): a
// sweep slows down when the memory or interconnect it streams through is
// asked for more than it delivers, and speeds up again when the others stop.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/run.h"

namespace mmsim::workload {
namespace {

// Main first-touches 64 MiB on node 0; then `threads` threads, pinned to
// node `node`, each write the whole buffer `passes` times (the first
// `long_threads` of them `long_passes` times instead). 2s-16c's costs with 4
// cores a socket; no NUMA balancing, base pages.
std::string scenario(int threads, int node, int passes, int long_threads = 0, int long_passes = 0) {
  std::string s = R"([scenario]
name = "bandwidth"
seed = 1

[machine]
preset = "2s-16c"
cores_per_socket = 4
mem_per_node = "1GiB"

[kernel]
version = "6.1"
transparent_hugepage = "never"
numa_balancing = 0

[noise]
enabled = false

[run]
program = "main"
process_image = "mapped"

[[programs.main]]
op = "pin"
nodes = [0]

[[programs.main]]
op = "map"
region = "buf"
size = "64MiB"

[[programs.main]]
op = "sweep"
region = "buf"
mode = "write"
)";
  auto threads_op = [&](int count, const std::string& program) {
    s += "\n[[programs.main]]\nop = \"threads\"\ncount = " + std::to_string(count) +
         "\nprogram = \"" + program + "\"\n";
  };
  auto program = [&](const std::string& name, int count) {
    s += "\n[[programs." + name + "]]\nop = \"pin\"\nnodes = [" + std::to_string(node) +
         "]\n\n[[programs." + name + "]]\nop = \"loop\"\ncount = " + std::to_string(count) +
         "\nbody = [{ op = \"sweep\", region = \"buf\", mode = \"write\", build = \"memset\" }]\n";
  };
  if (long_threads) threads_op(long_threads, "long");
  if (threads > long_threads) threads_op(threads - long_threads, "thread");
  s += "\n[[programs.main]]\nop = \"wait\"\n";
  if (threads > long_threads) program("thread", passes);
  if (long_threads) program("long", long_passes);
  return s;
}

// The longest time from start to exit of the tasks running `program`.
double longest_s(const testing::Ran& ran, const std::string& program) {
  double longest = 0;
  for (const auto& t : ran.result.tasks) {
    if (t.program == program) longest = std::max(longest, t.exit_s - t.start_s);
  }
  EXPECT_GT(longest, 0) << "no task ran " << program;
  return longest;
}

const std::vector<std::string> kUnlimited = {"costs.mem_bandwidth_gbps=0",
                                             "costs.interconnect_gbps=0"};

TEST(MemoryBandwidth, ThreadsAskingMoreThanANodeDeliversShareIt) {
  // One thread streams 12.8 GB/s (64 B every mem_latency_ns 80 /
  // l2_outstanding 16 ns); four ask 51.2 of node 0's 37.5.
  const double one = longest_s(testing::run_text(scenario(1, 0, 10)), "thread");
  const double four = longest_s(testing::run_text(scenario(4, 0, 10)), "thread");
  EXPECT_NEAR(four / one, 51.2 / 37.5, 0.02);
  const double unlimited = longest_s(testing::run_text(scenario(4, 0, 10), kUnlimited), "thread");
  EXPECT_NEAR(unlimited / one, 1.0, 0.01);
}

TEST(MemoryBandwidth, ThreadsOnAnotherSocketAreHeldBackByTheInterconnect) {
  // Four threads on node 1 ask 4 x 64 B / (130 / 16) ns = 31.5 GB/s of node
  // 0's memory, which has room, through links that carry 25.6.
  const double limited = longest_s(testing::run_text(scenario(4, 1, 10)), "thread");
  const double no_link =
      longest_s(testing::run_text(scenario(4, 1, 10), {"costs.interconnect_gbps=0"}), "thread");
  EXPECT_NEAR(limited / no_link, 31.5 / 25.6, 0.02);
}

TEST(MemoryBandwidth, AThreadSpeedsUpWhenTheOthersStopStreaming) {
  // One thread writes 20 passes; three others 5 or 20.
  const double others_stop = longest_s(testing::run_text(scenario(4, 0, 5, 1, 20)), "long");
  const double others_go_on = longest_s(testing::run_text(scenario(4, 0, 20, 1, 20)), "long");
  const double alone = longest_s(testing::run_text(scenario(1, 0, 1, 1, 20)), "long");
  EXPECT_NEAR(others_go_on / alone, 51.2 / 37.5, 0.02);
  // Its first 5 passes at 37.5 / 51.2 of its speed, the next 15 at full.
  EXPECT_NEAR(others_stop / alone, (5 * 51.2 / 37.5 + 15) / 20, 0.02);
}

}  // namespace
}  // namespace mmsim::workload

// A stretch of user work is priced when it is planned; when what its price
// depends on changes (its SMT sibling starts or stops, its socket's cache
// footprints grow or shrink), it is priced again from then on, so that the
// order in which tasks plan does not decide their times.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "support/run.h"

namespace mmsim::workload {
namespace {

double user_s(const testing::Ran& ran, const std::string& comm) {
  for (const auto& t : ran.result.tasks)
    if (t.comm == comm) return t.times.user_ns * 1e-9;
  ADD_FAILURE() << "no task " << comm;
  return 0;
}

// Two sockets of the 8-socket preset's kind (an adaptive LLC), no noise,
// NUMA balancing off; `shape` gives the cores and threads.
std::string header(const std::string& name, const std::string& shape) {
  return "[scenario]\nname = \"" + name +
         "\"\nseed = 1\n\n[machine]\npreset = \"xeon-8s-144c\"\nsockets = 2\n" + shape +
         "\nmem_per_node = \"256MiB\"\n\n[kernel]\nnuma_balancing = 0\n\n[noise]\nenabled = "
         "false\n\n[run]\nprogram = \"main\"\n";
}

// Two threads on the two SMT threads of one core, each reading its own 64 KiB
// (cached: compute-bound, so the sibling halves it); `short` stops first.
const std::string kSiblings =
    header("reprice-smt", "cores_per_socket = 2\nthreads_per_core = 2") + R"(
[[programs.main]]
op = "map"
region = "buf"
size = "256KiB"

[[programs.main]]
op = "threads"
count = 1
program = "short"

[[programs.main]]
op = "threads"
count = 1
program = "long"

[[programs.main]]
op = "wait"

[[programs.short]]
op = "pin"
cpus = [0]

[[programs.short]]
op = "loop"
count = 2000
body = [{ op = "sweep", region = "buf", mode = "read", size = "64KiB" }]

[[programs.long]]
op = "pin"
cpus = [4]

[[programs.long]]
op = "loop"
count = 8000
body = [{ op = "sweep", region = "buf", mode = "read", offset = "128KiB", size = "64KiB" }]
)";

TEST(Repricing, AStretchSpeedsUpWhenItsSmtSiblingGoesIdle) {
  const auto both = testing::run_text(kSiblings);
  const auto alone = testing::run_text(kSiblings, {"programs.short.1.count=1"});
  const double short_s = user_s(both, "short");
  const double long_alone_s = user_s(alone, "long");
  ASSERT_GT(short_s, 0.4 * long_alone_s) << "the sibling must slow the pair down";
  // While `short` runs both go at its pace; `long`'s last 6000 of 8000 passes
  // run alone, at the speed it has without a sibling.
  EXPECT_NEAR(user_s(both, "long"), short_s + 0.75 * long_alone_s, 0.005 * long_alone_s);
}

// Four threads pinned to one socket, each sweeping its own 6 MiB slice of a
// buffer short-lived threads wrote first: one slice fits the 8 MiB LLC,
// four do not.
const std::string kSharedLlc =
    header("reprice-llc", "cores_per_socket = 4\nthreads_per_core = 1\nllc_per_socket = \"8MiB\"") +
    R"(
[[programs.main]]
op = "pin"
nodes = [0]

[[programs.main]]
op = "map"
region = "buf"
size = "24MiB"

[[programs.main]]
op = "threads"
count = 4
program = "prefault"

[[programs.main]]
op = "wait"

[[programs.main]]
op = "threads"
count = 4
program = "thread"

[[programs.main]]
op = "wait"

[[programs.thread]]
op = "loop"
count = 200
body = [{ op = "sweep", region = "buf", mode = "write", slice = "own" }]

[[programs.prefault]]
op = "sweep"
region = "buf"
mode = "write"
slice = "own"
)";

TEST(Repricing, ThreadsOfEqualWorkSharingALastLevelCacheArePricedAlike) {
  const auto ran = testing::run_text(kSharedLlc);
  double lo = 1e9, hi = 0;
  for (const auto& t : ran.result.tasks) {
    if (t.comm != "thread") continue;
    lo = std::min(lo, t.times.user_ns);
    hi = std::max(hi, t.times.user_ns);
  }
  ASSERT_GT(lo, 0);
  // The first thread to start must not keep the price it had alone.
  EXPECT_LT(hi / lo, 1.001) << lo * 1e-9 << " s to " << hi * 1e-9 << " s";
}

}  // namespace
}  // namespace mmsim::workload

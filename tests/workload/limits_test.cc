// The bounds of workload/limits.h and the run-time outcomes that Linux gives
// hostile programs (SIGSEGV, SIGBUS, ENOMEM), through the run pipeline with
// the checker on. The command-line view of the same is tests/hostile.
#include <gtest/gtest.h>

#include <string>

#include "mm/pgtable.h"
#include "support/run.h"

namespace mmsim {
namespace {

using testing::run_text;

const std::string kMachine = R"(
[scenario]
time_limit = "1s"
[machine]
mem_per_node = "64MiB"
llc_per_socket = "1MiB"
[run]
program = "main"
process_image = "mapped"
)";

// A child maps region a at half the size its parent did, so that ranges the
// loader accepts (within the largest mapping) reach past the child's end.
const std::string kShrunkRegion = R"(
[[programs.main]]
op = "map"
region = "a"
size = "8KiB"
[[programs.main]]
op = "fork"
program = "w"
[[programs.main]]
op = "wait"
[[programs.w]]
op = "unmap"
region = "a"
[[programs.w]]
op = "map"
region = "a"
size = "4KiB"
)";

bool has_error(const workload::RunResult& r, const std::string& fragment) {
  for (const auto& e : r.errors)
    if (e.find(fragment) != std::string::npos) return true;
  return false;
}

TEST(PageTableWalk, AHugeMostlyEmptyRangeVisitsOnlyThePresentPtes) {
  mm::PageTable pt;
  mm::Pte pte;
  pte.flags = mm::Pte::kPresent;
  pt.table_build(Vpn(5)).set(5, pte);
  pt.table_build(Vpn(uint64_t{1} << 40)).set(0, pte);
  std::vector<uint64_t> seen;
  pt.for_each(Vpn(0), Vpn(uint64_t{1} << 45),
              [&](Vpn v, mm::PteTable&, uint32_t) { seen.push_back(v.v); });
  EXPECT_EQ(seen, (std::vector<uint64_t>{5, uint64_t{1} << 40}));
}

TEST(Limits, AnUntouchedMappingOfTheWholeAddressSpaceIsMappedAndUnmappedAtOnce) {
  const auto ran = run_text(kMachine + R"(
[[programs.main]]
op = "map"
region = "a"
size = "100TiB"
prot = "r"
[[programs.main]]
op = "unmap"
region = "a"
)");
  EXPECT_TRUE(ran.result.errors.empty());
  EXPECT_FALSE(ran.result.time_limit_hit);
}

TEST(Limits, APrivateWritableMappingLargerThanRamFailsWithEnomem) {
  const auto ran = run_text(kMachine + R"(
[[programs.main]]
op = "map"
region = "a"
size = "65MiB"
)");
  EXPECT_TRUE(has_error(ran.result, "mmap of region a failed: ENOMEM"));
}

TEST(Limits, ALoopOfCountsOnlyIsCountedAtOnce) {
  const auto ran = run_text(kMachine + R"(
[[programs.main]]
op = "loop"
count = 1000000000000
body = [ { op = "count", counter = "n", by = 3 } ]
)");
  EXPECT_EQ(ran.counter("n"), 3000000000000u);
  EXPECT_EQ(ran.result.events, 1u);
}

TEST(Limits, ACounterSaturatesAndSaysSo) {
  const auto ran = run_text(kMachine + R"(
[[programs.main]]
op = "loop"
count = 3
body = [ { op = "count", counter = "n", by = 9223372036854775807 } ]
)");
  EXPECT_EQ(ran.counter("n"), UINT64_MAX);
  EXPECT_TRUE(has_error(ran.result, "counter n reached 2^64-1"));
}

TEST(Limits, TheRunStopsWhenItExecutesMoreOpsThanTheLimit) {
  const auto ran = run_text(kMachine + R"(
[limits]
ops = 1000
[[programs.main]]
op = "map"
region = "a"
size = "8KiB"
[[programs.main]]
op = "loop"
duration = "1s"
body = [ { op = "madvise", region = "a", advice = "dontneed" }, { op = "count", counter = "n" } ]
)");
  EXPECT_NE(ran.result.limit_error.find("limits.ops: the run executed more than 1000 program "
                                        "operations"),
            std::string::npos)
      << ran.result.limit_error;
  // map, then the loop op, then (madvise, count) pairs up to the 1000th op.
  EXPECT_EQ(ran.counter("n"), 499u);
}

// A wait with no child to wait for returns at once: a loop of it and sweeps
// runs as one stretch, as a loop of sweeps alone does.
TEST(Limits, AWaitWithoutChildrenDoesNotStopALoopRunningAtOnce) {
  const auto ran = run_text(kMachine + R"(
[[programs.main]]
op = "map"
region = "a"
size = "8KiB"
[[programs.main]]
op = "loop"
duration = "10ms"
body = [ { op = "wait" }, { op = "sweep", region = "a" }, { op = "count", counter = "n" } ]
)");
  EXPECT_GT(ran.counter("n"), 1000u);
  EXPECT_LE(ran.result.events, 10u);
}

TEST(Limits, TheRunStopsWhenItCreatesMoreTasksThanTheLimit) {
  const auto ran = run_text(kMachine + R"(
[limits]
tasks = 10
[[programs.main]]
op = "loop"
duration = "1s"
body = [ { op = "fork", program = "w" }, { op = "wait" } ]
[[programs.w]]
op = "sleep"
duration = "1ms"
)");
  EXPECT_NE(ran.result.limit_error.find("limits.tasks"), std::string::npos);
  EXPECT_EQ(ran.result.tasks.size(), 10u);
}

TEST(Limits, TheRunStopsWhenTheTimelineIsFull) {
  const auto ran = run_text(kMachine + R"(
[limits]
timeline_rows = 5
[[programs.main]]
op = "sleep"
duration = "100ms"
)",
                            {"scenario.sample_interval=\"1ms\""});
  EXPECT_NE(ran.result.limit_error.find("limits.timeline_rows"), std::string::npos);
}

TEST(Limits, TheRunStopsWhenMoreMemoryIsInUseThanTheLimit) {
  const auto ran = run_text(kMachine + R"(
[limits]
memory = "1MiB"
[[programs.main]]
op = "map"
region = "a"
size = "2MiB"
[[programs.main]]
op = "touch"
region = "a"
mode = "write"
)");
  EXPECT_NE(ran.result.limit_error.find("limits.memory"), std::string::npos);
}

TEST(Limits, AnMlockThatWouldNeedMorePageTablesThanTheLimitStopsTheRunFirst) {
  const auto ran = run_text(kMachine + R"(
[limits]
page_tables = 4
[[programs.main]]
op = "map"
region = "a"
size = "64MiB"
prot = "r"
[[programs.main]]
op = "mlock"
region = "a"
)");
  EXPECT_NE(ran.result.limit_error.find("limits.page_tables"), std::string::npos);
}

TEST(Limits, AnOpFailingInEveryIterationKeepsTheFirstHundredErrorsAndCountsTheRest) {
  const auto ran = run_text(kMachine + R"(
[[programs.main]]
op = "map"
region = "a"
size = "4KiB"
[[programs.main]]
op = "loop"
count = 1000
body = [ { op = "map", region = "a", size = "4KiB" } ]
)");
  ASSERT_EQ(ran.result.errors.size(), 101u);
  EXPECT_EQ(ran.result.errors.back(), "... and 900 more errors");
}

TEST(Limits, ALoopIterationThatTakesNoTimeStopsTheRun) {
  const auto ran = run_text(kMachine + R"(
[costs]
l1_ns = 0
mem_latency_ns = 0
[[programs.main]]
op = "map"
region = "a"
size = "4KiB"
[[programs.main]]
op = "loop"
duration = "1ms"
body = [ { op = "touch", region = "a" } ]
)");
  EXPECT_NE(ran.result.limit_error.find("no simulated time"), std::string::npos);
}

TEST(LinuxOutcomes, ATouchPastTheRegionEndIsASigsegvAfterTheMappedPart) {
  const auto ran = run_text(kMachine + kShrunkRegion + R"(
[[programs.w]]
op = "touch"
region = "a"
size = "8KiB"
mode = "write"
)");
  EXPECT_TRUE(has_error(ran.result, "SIGSEGV: page 1 is past the end of region a"));
  EXPECT_EQ(ran.result.tasks[1].min_flt, 1u);
}

TEST(LinuxOutcomes, ATouchOfAFilePageBeyondItsEndIsASigbus) {
  const auto ran = run_text(kMachine + R"(
[[files]]
name = "f"
size = "4KiB"
[[programs.main]]
op = "map"
region = "a"
file = "f"
size = "8KiB"
[[programs.main]]
op = "touch"
region = "a"
)");
  EXPECT_TRUE(has_error(ran.result, "SIGBUS"));
}

TEST(LinuxOutcomes, MadviseOverARangeNotAllMappedFailsWithEnomem) {
  const auto ran = run_text(kMachine + kShrunkRegion + R"(
[[programs.w]]
op = "madvise"
region = "a"
size = "8KiB"
advice = "dontneed"
)");
  EXPECT_TRUE(has_error(ran.result, "madvise of region a failed: ENOMEM"));
}

TEST(LinuxOutcomes, UnmappingARegionThatIsNotMappedSucceeds) {
  const auto ran = run_text(kMachine + R"(
[[programs.main]]
op = "map"
region = "a"
size = "4KiB"
[[programs.main]]
op = "unmap"
region = "a"
[[programs.main]]
op = "unmap"
region = "a"
)");
  EXPECT_TRUE(ran.result.errors.empty());
}

}  // namespace
}  // namespace mmsim

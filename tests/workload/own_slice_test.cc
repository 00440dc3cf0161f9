// Ops on the task's own slice of a range (slice = "own"): the i-th of the n
// tasks a threads or fork op started takes the i-th of n equal slices, as
// autonuma-benchmark's numa01_THREAD_ALLOC and numa02 threads do.
#include <gtest/gtest.h>

#include <string>

#include "support/run.h"

namespace mmsim {
namespace {

using testing::run_text;

// `count` threads each write-touch `slice` of a 1 MiB (256-page) array.
std::string touchers(const std::string& count, const std::string& slice,
                     const std::string& main_touch = "") {
  return R"(
[machine]
preset = "2s-16c"
[kernel]
version = "6.1"
numa_balancing = 0
transparent_hugepage = "never"
[run]
program = "main"
process_image = "mapped"
[[programs.main]]
op = "map"
region = "data"
size = "1MiB"
)" + main_touch +
         R"(
[[programs.main]]
op = "threads"
count = )" +
         count + R"(
program = "worker"
[[programs.main]]
op = "wait"
[[programs.worker]]
op = "touch"
region = "data"
mode = "write"
slice = ")" +
         slice +
         R"("
)";
}

uint64_t faults_of(const testing::Ran& ran, uint32_t pid) {
  for (const auto& t : ran.result.tasks)
    if (t.pid == pid) return t.min_flt;
  ADD_FAILURE() << "no task " << pid;
  return 0;
}

TEST(OwnSlice, EachThreadFaultsOnlyItsOwnQuarter) {
  const auto ran = run_text(touchers("4", "own"), {"noise.enabled=false"});
  for (uint32_t pid = 2; pid <= 5; ++pid) EXPECT_EQ(faults_of(ran, pid), 64u) << "pid " << pid;
  EXPECT_EQ(ran.vm("pgfault"), 256);
}

TEST(OwnSlice, TheWholeRangeIsEveryThreadsWithoutIt) {
  const auto ran = run_text(touchers("4", "all"), {"noise.enabled=false"});
  uint64_t sum = 0;
  for (uint32_t pid = 2; pid <= 5; ++pid) sum += faults_of(ran, pid);
  // Each faults pages beyond its quarter: the first to reach a page, and
  // those that reach it while its zero-fill is under way (tests/workload/
  // fault_race_test.cc).
  EXPECT_GE(sum, 256u);
  EXPECT_GT(faults_of(ran, 2), 64u);
}

TEST(OwnSlice, SlicesRoundDownAndLeaveTheRemainderUntouched) {
  // 256 pages in 3 slices of 85: the last page is nobody's.
  const auto ran = run_text(touchers("3", "own"), {"noise.enabled=false"});
  for (uint32_t pid = 2; pid <= 4; ++pid) EXPECT_EQ(faults_of(ran, pid), 85u) << "pid " << pid;
  EXPECT_EQ(ran.vm("pgfault"), 255);
}

TEST(OwnSlice, TheFirstTaskOwnsTheWholeRange) {
  const std::string main_touch = R"(
[[programs.main]]
op = "touch"
region = "data"
slice = "own"
)";
  const auto ran = run_text(touchers("2", "own", main_touch), {"noise.enabled=false"});
  EXPECT_EQ(faults_of(ran, 1), 256u);
}

TEST(OwnSlice, AnUnknownSliceIsAnErrorAtItsValue) {
  scenario::LoadResult lr = scenario::parse_scenario(touchers("2", "mine"), "t.toml", {});
  ASSERT_EQ(lr.diagnostics.size(), 1u);
  EXPECT_EQ(lr.diagnostics[0].key, "programs.worker[0].slice");
  EXPECT_NE(lr.diagnostics[0].message.find("unknown value \"mine\" (known: all, own)"),
            std::string::npos)
      << lr.diagnostics[0].message;
}

}  // namespace
}  // namespace mmsim

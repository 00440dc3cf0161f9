// Writeback of dirty page cache (mm/writeback.h): the flusher, the dirty
// limits and balance_dirty_pages, reclaim's part, and the PTEs of a written
// page.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/run.h"

namespace {

using mmsim::testing::run_text;

// One task in memcg /g writes a shared mapping of `file_size` (on disk, or
// cached) with `ops` after it.
std::string shared_write(const std::string& limit, const std::string& file_size, bool cached,
                         const std::string& after = "") {
  return R"(
[machine]
preset = "2s-16c"
cores_per_socket = 2
mem_per_node = "256MiB"
[kernel]
version = "6.12"
numa_balancing = 0
[[cgroups]]
path = "/g"
)" + (limit.empty() ? "" : "limit = \"" + limit + "\"\n") +
         R"(
[[files]]
name = "data"
size = ")" +
         file_size +
         R"("
cached = )" +
         (cached ? "true" : "false") +
         R"(
[run]
program = "main"
cgroup = "/g"
[[programs.main]]
op = "map"
region = "f"
file = "data"
flags = "shared"
prot = "rw"
[[programs.main]]
op = "touch"
region = "f"
mode = "write"
)" + after;
}

double iowait_s(const mmsim::testing::Ran& ran) {
  double s = 0;
  for (const auto& t : ran.result.tasks) s += t.times.iowait_ns * 1e-9;
  return s;
}

TEST(Writeback, AFileWrittenPastAV1MemcgLimitIsWrittenBackAndReclaimedNotKilled) {
  const auto ran = run_text(shared_write("1MiB", "4MiB", false), {"memcg.hierarchy=v1"});
  EXPECT_TRUE(ran.result.errors.empty()) << ran.result.errors.front();
  EXPECT_EQ(ran.vm("nr_dirtied"), 1024);
  EXPECT_GT(ran.vm("nr_written"), 0);
  EXPECT_GT(ran.vm("pgsteal_file"), 0);
}

TEST(Writeback, AFileWrittenPastAV2MemcgLimitIsWrittenBackAndReclaimedNotKilled) {
  const auto ran = run_text(shared_write("1MiB", "4MiB", false), {"memcg.hierarchy=v2"});
  EXPECT_TRUE(ran.result.errors.empty()) << ran.result.errors.front();
  EXPECT_GT(ran.vm("nr_written"), 0);
  EXPECT_GT(ran.vm("pgsteal_file"), 0);
}

TEST(Writeback, AV2MemcgsOwnDirtyLimitHoldsItsDirtierBack) {
  // 4 MiB dirtied in an 8 MiB memcg: past its domain's freerun ceiling (a
  // fifth of what it could hold is its limit), far below the machine's. The
  // flusher writes, and the task sleeps longer than its reads alone take.
  const auto fresh = run_text(shared_write("8MiB", "4MiB", false),
                              {"memcg.hierarchy=v2", "memcg.wb_stats_ratelimited=false"});
  const auto stale = run_text(shared_write("8MiB", "4MiB", false), {"memcg.hierarchy=v2"});
  EXPECT_GT(fresh.vm("nr_written"), 0);
  EXPECT_GT(iowait_s(fresh), iowait_s(stale));
}

TEST(Writeback, StaleMemcgStatsLetTheDirtierRunFree) {
  // The same with 6.12's ratelimited stats flush: the run is over before
  // the periodic flush shows the memcg's dirty pages, and nothing is
  // written.
  const auto ran = run_text(shared_write("8MiB", "4MiB", false), {"memcg.hierarchy=v2"});
  EXPECT_EQ(ran.vm("nr_written"), 0);
}

// A 64 KiB cached file written whole, then `after` (a sleep, a write).
mmsim::testing::Ran write_then(const std::string& after,
                               const std::vector<std::string>& sets = {}) {
  return run_text(shared_write("", "64KiB", true, after), sets);
}

std::string sleep_for(const std::string& duration) {
  return "[[programs.main]]\nop = \"sleep\"\nduration = \"" + duration + "\"\n";
}

const char* kWriteAgain = R"(
[[programs.main]]
op = "touch"
region = "f"
mode = "write"
)";

TEST(Writeback, KupdateWritesPagesDirtyForLongerThanTheExpiry) {
  EXPECT_EQ(write_then(sleep_for("40s")).vm("nr_written"), 16);
}

TEST(Writeback, KupdateLeavesPagesDirtyForLessThanTheExpiry) {
  EXPECT_EQ(write_then(sleep_for("20s")).vm("nr_written"), 0);
}

TEST(Writeback, AWrittenBackPageFaultsAndIsDirtiedAgainAtItsNextWrite) {
  // Written back by kupdate meanwhile, or (no periodic writeback) not.
  const auto written = write_then(sleep_for("40s") + kWriteAgain);
  const auto kept =
      write_then(sleep_for("40s") + kWriteAgain, {"kernel.dirty_writeback_centisecs=0"});
  EXPECT_EQ(written.vm("nr_dirtied"), 32);
  EXPECT_EQ(kept.vm("nr_dirtied"), 16);
  // Each page's second write is a write-protect fault (page_mkwrite).
  EXPECT_EQ(written.vm("pgfault") - kept.vm("pgfault"), 16);
}

TEST(Writeback, AZeroDirtyRatioPausesEveryPageButTheWriterFinishes) {
  // 256 pages: checked first after 32, then at each page, each paused.
  const auto ran = run_text(shared_write("", "1MiB", true), {"kernel.dirty_ratio=0"});
  EXPECT_FALSE(ran.result.time_limit_hit);
  EXPECT_TRUE(ran.result.errors.empty());
  EXPECT_GE(ran.vm("nr_dirtied"), 256);
  EXPECT_GT(iowait_s(ran), 200 * 0.004);  // a jiffy's pause a page at least
}

}  // namespace

namespace {

TEST(Writeback, AMemcgsDirtyAndWritebackPagesAreItsMemoryStatFileDirtyAndFileWriteback) {
  // 1 MiB read in and written by a task of /g, far below any threshold:
  // dirty at the run's end.
  const auto ran = run_text(shared_write("", "1MiB", false));
  int found = 0;
  for (const auto& g : ran.result.memcg) {
    if (g.path != "/g") continue;
    ++found;
    EXPECT_EQ(g.dirty, 256);
    EXPECT_EQ(g.dirty, ran.vm("nr_dirty"));
    EXPECT_EQ(g.writeback, ran.vm("nr_writeback"));
  }
  EXPECT_EQ(found, 1);
}

}  // namespace

// Memory tiering on whole runs: NUMA balancing's tiering mode promoting hot
// pages of a CXL node (kernel/sched/fair.c should_numa_migrate_memory,
// mm/migrate.c) and reclaim demoting cold DRAM pages to it (mm/vmscan.c
// demote_folio_list), by kernel version.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/run.h"

namespace mmsim::numa {
namespace {

using testing::Ran;
using testing::run_text;

// One socket of the dram-cxl preset shrunk: 64 MiB of DRAM (node 0, with
// the CPUs) and 256 MiB of CXL memory (node 1). A task writes 48 MiB of cold
// memory, which fills DRAM, then 32 MiB of hot memory, part of which spills
// to CXL, and sweeps the hot part for `duration` (10 s).
std::string hot_cold(const std::string& kernel_keys, const std::string& machine_keys = "",
                     const std::string& duration = "10s") {
  return R"(
[scenario]
name = "hot-cold"
seed = 1
[machine]
preset = "dram-cxl"
sockets = 1
cores_per_socket = 2
mem_per_node = "64MiB"
memory_node_mem = "256MiB"
)" + machine_keys +
         R"(
[kernel]
)" + kernel_keys +
         R"(
[run]
program = "main"
[[programs.main]]
op = "map"
region = "cold"
size = "48MiB"
[[programs.main]]
op = "map"
region = "hot"
size = "32MiB"
[[programs.main]]
op = "touch"
region = "cold"
mode = "write"
[[programs.main]]
op = "touch"
region = "hot"
mode = "write"
[[programs.main]]
op = "loop"
duration = ")" +
         duration + R"("
body = [ { op = "sweep", region = "hot" }, { op = "count", counter = "passes" } ]
)";
}

const std::string kTiering61 = R"(version = "6.1"
numa_balancing = 2
demotion_enabled = true)";

// Long enough for the fourth scan pass: the first promotes only what
// kswapd, on the other CPU, frees while the task sweeps; a refused page
// waits for its next scan (at 2, 4 and 8 s, then 8 to 16 s later).
const std::string kToTheFourthScan = "30s";

TEST(Tiering, HotPagesOnCxlArePromotedAndColdDramPagesDemotedToMakeRoom) {
  const Ran r = run_text(hot_cold(kTiering61, "", kToTheFourthScan));
  // The hot pages first touch put on CXL (numa_miss) all move up, each one
  // hinting fault, candidate and promotion; kswapd demotes as many cold pages
  // to make room (it balances to the promo watermark).
  const int64_t on_cxl = r.vm("numa_miss");
  ASSERT_GT(on_cxl, 1000);
  // Nearly all by the fourth scan (a refused one waits for its next scan:
  // more of them while kswapd's demotions lag behind).
  EXPECT_GE(r.vm("pgpromote_success"), on_cxl * 97 / 100);
  EXPECT_LE(r.vm("pgpromote_success"), on_cxl);
  EXPECT_EQ(r.vm("numa_pages_migrated"), r.vm("pgpromote_success"));
  EXPECT_GE(r.vm("pgpromote_candidate"), on_cxl);
  EXPECT_GE(r.vm("pgdemote_kswapd"), r.vm("pgpromote_success"));
  EXPECT_GT(r.vm("pgscan_anon"), 0);             // no swap, but a tier below
  EXPECT_EQ(r.vm("numa_hint_faults_local"), 0);  // the CXL node has no CPU
  EXPECT_TRUE(r.result.check_failures.empty());
}

TEST(Tiering, KswapdRunsOnAnIdleCpuWhicheverCpuTheTaskHas) {
  // kswapd wakes on an idle CPU of its node, so its demotions' TLB flushes
  // reach the task by IPI from either of the node's two CPUs.
  auto pinned = [](int cpu) {
    std::string s = hot_cold(kTiering61);
    const std::string first = "[[programs.main]]\nop = \"map\"";
    s.replace(s.find(first), 0,
              "[[programs.main]]\nop = \"pin\"\ncpus = [" + std::to_string(cpu) + "]\n");
    // Each new page on its LRU at once: which CPU's lru_add batch holds the
    // last few of them is not what this test is about.
    return run_text(s, {"kernel.lru_add_batch=0"});
  };
  const Ran on0 = pinned(0), on1 = pinned(1);
  EXPECT_EQ(on0.vm("pgpromote_success"), on1.vm("pgpromote_success"));
  EXPECT_EQ(on0.vm("pgdemote_kswapd"), on1.vm("pgdemote_kswapd"));
}

TEST(Tiering, TieringAloneMarksOnlySlowTierPages) {
  // Everything in DRAM: numa_balancing = 2 marks nothing. With the spill to
  // CXL it marks the pages there (again after a refused promotion).
  EXPECT_EQ(
      run_text(hot_cold(kTiering61), {"machine.mem_per_node=\"256MiB\""}).vm("numa_pte_updates"),
      0);
  const Ran r = run_text(hot_cold(kTiering61));
  EXPECT_GE(r.vm("numa_pte_updates"), r.vm("numa_miss"));
}

TEST(Tiering, APageFaultedLaterThanTheHotThresholdAfterItsScanStays) {
  // With a 1 ms threshold only faults within the scan's own jiffy promote.
  const Ran hot = run_text(hot_cold(kTiering61));
  const Ran strict = run_text(hot_cold(kTiering61), {"kernel.numa_balancing_hot_threshold_ms=1"});
  EXPECT_LT(strict.vm("pgpromote_success") * 2, hot.vm("pgpromote_success"));
  EXPECT_LT(strict.vm("pgpromote_candidate"), strict.vm("numa_hint_faults"));
}

TEST(Tiering, TheRateLimitCountsCandidatesButStopsTheirPromotion) {
  // 1 MB/s: 256 candidates a second are promoted, the rest only counted.
  const Ran r = run_text(hot_cold(kTiering61), {"kernel.numa_balancing_promote_rate_limit_MBps=1"});
  EXPECT_GT(r.vm("pgpromote_candidate"), r.vm("pgpromote_success"));
  EXPECT_LE(r.vm("pgpromote_success"), 256 * 11);
}

TEST(Tiering, WithoutDemotionPromotionWaitsForFreeDramThatNeverComes) {
  // No swap and no demotion: anonymous memory cannot be reclaimed, so DRAM
  // stays at its watermarks, and only what kswapd frees of the page cache
  // (the executor's file) lets a promotion through; the rest are refused.
  const Ran r = run_text(hot_cold(R"(version = "6.1"
numa_balancing = 2)"));
  EXPECT_GT(r.vm("numa_hint_faults"), 0);
  EXPECT_LE(r.vm("pgpromote_success"), r.vm("pgsteal_file"));
  EXPECT_LT(r.vm("pgpromote_success"), r.vm("pgpromote_candidate"));
  EXPECT_EQ(r.vm("pgdemote_kswapd"), 0);
  EXPECT_EQ(r.vm("pgscan_anon"), 0);
}

TEST(Tiering, In61CxlMemoryOnlinedAtBootIsDramAndIn612TheHmatMakesItASlowTier) {
  const std::string boot = "memory_node_online = \"boot\"";
  EXPECT_EQ(run_text(hot_cold(kTiering61, boot)).vm("pgpromote_success"), 0);
  const Ran r612 = run_text(hot_cold(kTiering61, boot, kToTheFourthScan), {"kernel.version=6.12"});
  EXPECT_GE(r612.vm("pgpromote_success"), r612.vm("numa_miss") * 97 / 100);
}

TEST(Tiering, Before61ASlowTierPageIsPromotedWithoutLatencyOrCandidates) {
  // 5.18-6.0: the tiering mode exists, its hot-page selection does not.
  const Ran r = run_text(hot_cold(kTiering61, "", kToTheFourthScan), {"kernel.version=5.19"});
  EXPECT_GE(r.vm("pgpromote_success"), r.vm("numa_miss") * 97 / 100);
  for (const auto& [name, v] : r.result.vmstat) EXPECT_NE(name, "pgpromote_candidate");
}

TEST(Tiering, TheTieringModeIsRefusedByAKernelOlderThan518) {
  scenario::Source source;
  source.path = "t.toml";
  source.text = hot_cold(R"(version = "5.15"
numa_balancing = 2)");
  const auto prepared = scenario::prepare(source);
  ASSERT_FALSE(prepared.diagnostics.empty());
  EXPECT_NE(prepared.diagnostics[0].str().find("arrived in 5.18"), std::string::npos)
      << prepared.diagnostics[0].str();
}

TEST(Demotion, KswapdDemotesWhatItWouldReclaimAndTheLastTierEvicts) {
  // Balancing off. 48 MiB of anonymous memory, then a 96 MiB file read
  // twice through 128 MiB of memory: both nodes fall below their watermarks
  // and their kswapds run. DRAM's kswapd demotes to CXL the page cache it
  // would evict (with this much inactive page cache it scans no anon:
  // get_scan_count's cache trim mode); CXL's, the last tier, evicts.
  const std::string text = R"(
[scenario]
name = "demote"
seed = 1
[machine]
preset = "dram-cxl"
sockets = 1
cores_per_socket = 2
mem_per_node = "64MiB"
memory_node_mem = "64MiB"
[kernel]
version = "6.1"
numa_balancing = 0
demotion_enabled = true
[[files]]
name = "f"
size = "96MiB"
[run]
program = "main"
[[programs.main]]
op = "map"
region = "anon"
size = "48MiB"
[[programs.main]]
op = "map"
region = "f"
file = "f"
prot = "r"
flags = "shared"
[[programs.main]]
op = "touch"
region = "anon"
mode = "write"
[[programs.main]]
op = "loop"
count = 2
body = [ { op = "touch", region = "f" }, { op = "count", counter = "passes" } ]
)";
  const Ran on = run_text(text);
  EXPECT_GT(on.vm("pgdemote_kswapd"), 0);
  EXPECT_GT(on.vm("pgsteal_kswapd"), on.vm("pgdemote_kswapd"));  // CXL's evictions
  EXPECT_TRUE(on.result.check_failures.empty());
  const Ran off = run_text(text, {"kernel.demotion_enabled=false"});
  EXPECT_EQ(off.vm("pgdemote_kswapd"), 0);
  EXPECT_GT(off.vm("pgsteal_kswapd"), 0);
}

TEST(Tiering, AColdThpGoesDownWholeWhenTheLowerTierHas2MiBForIt) {
  // THP on (a 512 MiB CXL node brings the machine to THP's minimum): the
  // cold set's THPs are demoted as THPs (migrate_pages of a THP, no split).
  const Ran r = run_text(hot_cold(kTiering61 + "\ntransparent_hugepage = \"always\""),
                         {"machine.memory_node_mem=\"512MiB\""});
  ASSERT_GT(r.vm("thp_fault_alloc"), 0);
  EXPECT_GT(r.vm("thp_migration_success"), 0);
  // Every THP that moved went down whole, or (a hot one that its fault put
  // on CXL as a THP, DRAM being full) up: 512 pages each.
  EXPECT_GE(r.vm("pgdemote_kswapd"), 512);
  EXPECT_GE(r.vm("pgdemote_kswapd") + r.vm("pgpromote_success"),
            512 * r.vm("thp_migration_success"));
  EXPECT_EQ(r.vm("thp_split_page"), 0);
}

}  // namespace
}  // namespace mmsim::numa

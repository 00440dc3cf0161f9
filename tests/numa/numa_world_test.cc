// End-to-end NUMA balancing: small versions of the scenarios, checker on.
#include <gtest/gtest.h>

#include <string>

#include "support/run.h"

namespace mmsim::numa {
namespace {

using testing::run_text;

// Seed A in small: 14 forked readers of a 1 MiB initialised .data array on
// two nodes, for 2 s.
std::string shared_cow(const std::string& kernel_extra, const std::string& numa_extra = "") {
  return R"(
[scenario]
sample_interval = "100ms"
[machine]
preset = "2s-16c"
mem_per_node = "256MiB"
[kernel]
version = "4.15"
)" + kernel_extra +
         "\n[numa]\n" + numa_extra + R"(
[[files]]
name = "exe"
size = 1052672
cached = true
[run]
program = "parent"
process_image = "mapped"
[[programs.parent]]
op = "map"
region = "rw"
file = "exe"
prot = "rw"
[[programs.parent]]
op = "touch"
region = "rw"
mode = "write"
size = 4096
[[programs.parent]]
op = "fork"
count = 14
program = "child"
[[programs.parent]]
op = "wait"
[[programs.child]]
op = "loop"
duration = "2s"
body = [ { op = "sweep", region = "rw", offset = 4096 }, { op = "count", counter = "iterations" } ]
)";
}

TEST(NumaSharedCow, BalancingOffTakesNoHintingFaultsAndMigratesNothing) {
  auto ran = run_text(shared_cow("numa_balancing = 0"));
  EXPECT_EQ(ran.vm("numa_pte_updates"), 0);
  EXPECT_EQ(ran.vm("numa_hint_faults"), 0);
  EXPECT_EQ(ran.vm("pgmigrate_success") + ran.vm("pgmigrate_fail"), 0);
}

TEST(NumaSharedCow, WithoutTheSkipSharedPagesBounceAndReadersWaitInDState) {
  auto off = run_text(shared_cow("numa_balancing = 0"));
  auto on = run_text(shared_cow("numa_balancing = 1"));
  EXPECT_GT(on.vm("numa_hint_faults"), 0);
  EXPECT_GT(on.vm("pgmigrate_success"), 0);
  double iowait = 0;
  for (const auto& t : on.result.tasks) iowait += t.times.iowait_ns;
  EXPECT_GT(iowait, 0);
  EXPECT_LT(on.counter("iterations"), off.counter("iterations"));
}

TEST(NumaSharedCow, WithTheSkipSharedCowPagesStayUnmarkedAndThroughputMatchesOff) {
  // Exact equality needs exact lockstep: without noise, the two runs differ
  // only by the mechanism.
  auto off = run_text(shared_cow("numa_balancing = 0"), {"noise.enabled=false"});
  auto skip =
      run_text(shared_cow("numa_balancing = 1", "skip_shared_cow = true"), {"noise.enabled=false"});
  EXPECT_EQ(skip.vm("numa_pte_updates"), 0);
  EXPECT_EQ(skip.vm("numa_hint_faults"), 0);
  EXPECT_EQ(skip.counter("iterations"), off.counter("iterations"));
}

TEST(NumaSharedCow, ForkedReadersOfCowMemoryNeverFormAGroup) {
  auto on = run_text(shared_cow("numa_balancing = 1"));
  for (const auto& t : on.result.tasks) EXPECT_EQ(t.numa.numa_group_id, 0u) << "pid " << t.pid;
}

TEST(NumaSharedCow, SleepersPinningThePageMakeMigrationsFailMoreOften) {
  // 30 readers on 16 CPUs: a woken waiter may wait for a CPU, holding its
  // pin while the page's next migration starts.
  const std::vector<std::string> readers{"programs.parent.2.count=30"};
  auto pin = run_text(shared_cow("numa_balancing = 1", "waiter_pins_page = true"), readers);
  auto nopin = run_text(shared_cow("numa_balancing = 1", "waiter_pins_page = false"), readers);
  const double pin_fail =
      static_cast<double>(pin.vm("pgmigrate_fail")) /
      static_cast<double>(pin.vm("pgmigrate_fail") + pin.vm("pgmigrate_success"));
  const double nopin_fail =
      static_cast<double>(nopin.vm("pgmigrate_fail")) /
      static_cast<double>(nopin.vm("pgmigrate_fail") + nopin.vm("pgmigrate_success"));
  EXPECT_GT(pin_fail, nopin_fail);
}

TEST(NumaSharedCow, SameSeedGivesTheSameRunAndAnotherSeedMovesTheTicks) {
  auto a = run_text(shared_cow("numa_balancing = 1"));
  auto b = run_text(shared_cow("numa_balancing = 1"));
  EXPECT_EQ(a.vm("numa_hint_faults"), b.vm("numa_hint_faults"));
  EXPECT_EQ(a.counter("iterations"), b.counter("iterations"));
  auto c = run_text(shared_cow("numa_balancing = 1"), {"scenario.seed=3"});
  EXPECT_NE(a.counter("iterations"), c.counter("iterations"));
}

std::string converge(const std::string& extra = "") {
  return R"(
[scenario]
sample_interval = "2s"
[machine]
preset = "2s-16c"
mem_per_node = "256MiB"
[kernel]
version = "4.15"
numa_balancing = 1
)" + extra +
         R"(
[run]
program = "main"
process_image = "mapped"
[[programs.main]]
op = "map"
region = "data"
size = "16MiB"
[[programs.main]]
op = "touch"
region = "data"
mode = "write"
[[programs.main]]
op = "threads"
count = 1
program = "worker"
[[programs.main]]
op = "wait"
[[programs.worker]]
op = "loop"
duration = "30s"
body = [ { op = "sweep", region = "data" } ]
)";
}

TEST(NumaConverge, PrivatePagesMoveToTheNodeOfTheTaskThatUsesThem) {
  auto ran = run_text(converge(), {"noise.launch_cpu=false"});
  ASSERT_EQ(ran.result.tasks.size(), 2u);
  // 4.15 forks onto the least loaded node: mmsim-exec's collector runs on
  // node 1 (beside mmsim native, forked away from the shell on CPU 0),
  // main on node 0, its worker on node 1.
  EXPECT_EQ(ran.result.tasks[0].node, 0);
  EXPECT_EQ(ran.result.tasks[1].node, 1);
  EXPECT_EQ(ran.vm("numa_pages_migrated"), 4096);
  EXPECT_EQ(ran.result.tasks[1].numa.numa_preferred_nid, 1);
}

TEST(NumaConverge, HintingFaultsFallAsTheScanPeriodGrows) {
  auto ran = run_text(converge());
  const auto& tl = ran.result.timeline;
  ASSERT_GE(tl.size(), 10u);
  const int64_t first_half = tl[tl.size() / 2].vm[2];
  const int64_t second_half = tl.back().vm[2] - first_half;
  EXPECT_LT(second_half, first_half);
  EXPECT_GT(ran.result.tasks[1].numa.numa_scan_period_ms, 1000);
}

TEST(NumaConverge, NothingMovesWithBalancingOff) {
  auto ran = run_text(converge(), {"kernel.numa_balancing=0"});
  EXPECT_EQ(ran.vm("numa_pages_migrated"), 0);
  EXPECT_EQ(ran.vm("numa_hint_faults"), 0);
}

TEST(NumaGroups, ThreadsWritingSharedMemoryJoinOneGroup) {
  auto ran = run_text(R"(
[machine]
preset = "2s-16c"
mem_per_node = "256MiB"
[kernel]
version = "6.6"
numa_balancing = 1
[run]
program = "main"
process_image = "mapped"
[[programs.main]]
op = "map"
region = "shared"
size = "8MiB"
[[programs.main]]
op = "touch"
region = "shared"
mode = "write"
[[programs.main]]
op = "threads"
count = 4
program = "worker"
[[programs.main]]
op = "wait"
[[programs.worker]]
op = "loop"
duration = "10s"
body = [ { op = "sweep", region = "shared", mode = "write" } ]
)");
  ASSERT_EQ(ran.result.tasks.size(), 5u);
  const uint32_t gid = ran.result.tasks[1].numa.numa_group_id;
  EXPECT_NE(gid, 0u);
  for (size_t i = 2; i < 5; ++i) EXPECT_EQ(ran.result.tasks[i].numa.numa_group_id, gid);
}

TEST(NumaMigration, ASystemCallWhileShmemFoliosMigrateFindsThePageCacheConsistent) {
  // Two threads sweep a MAP_SHARED anonymous (shmem) region, so hinting
  // faults migrate its page-cache folios; main's system calls run the checker
  // while a migration's new folio is still being copied.
  auto ran = run_text(R"(
[machine]
sockets = 2
cores_per_socket = 4
mem_per_node = "16MiB"
llc_per_socket = "1MiB"
[kernel]
numa_balancing = 1
numa_balancing_scan_delay_ms = 1
[numa]
skip_shmem_default_policy = false  # shmem scanned, as 6.12 and the fixed kernels do
[run]
program = "main"
process_image = "mapped"
[[programs.main]]
op = "map"
region = "shm"
size = "64KiB"
flags = "shared"
[[programs.main]]
op = "threads"
program = "reader"
count = 2
[[programs.main]]
op = "map"
region = "other"
size = "4KiB"
[[programs.main]]
op = "madvise"
region = "other"
advice = "dontneed"
[[programs.reader]]
op = "loop"
duration = "10ms"  # past the threads' staggered first scans
body = [ { op = "sweep", region = "shm" } ]
)");
  EXPECT_GT(ran.vm("numa_pages_migrated"), 0);
  // The unnamed shmem inode went, every page of it, with its last mapping.
  EXPECT_EQ(ran.vm("nr_shmem"), 0);
  EXPECT_EQ(ran.vm("pgfree"), ran.vm("pgalloc_normal"));
}

TEST(NumaMigration, AnAnonymousPageUnmappedWhileItMigratesIsFreedOnceByTheMigration) {
  // Threads write one page and drop it (MADV_DONTNEED) over and over while
  // NUMA balancing migrates it: its last mapping goes mid-migration. The
  // migration holds the folio and frees it at its end ("freed from under
  // us"); the zap used to free it too, handing the page out twice
  // (fuzz/findings/006). The timings (compute_ns, loops long enough for the
  // threads' staggered first scans) are chosen so that, with the default
  // costs, hinting-fault migrations are in flight while the threads drop the
  // page in some of the seeds (their noise decides which): every seed must
  // free every page, and some must have migrated. Each new page goes on the
  // LRU at once: from a CPU's lru_add batch a page so soon dropped would
  // rarely be isolated.
  int64_t migrated = 0;
  for (int seed = 1; seed <= 24; ++seed) {
    auto ran = run_text(R"(
[machine]
preset = "2s-16c"
[kernel]
numa_balancing_scan_delay_ms = 2
numa_balancing_scan_period_min_ms = 2
numa_balancing_scan_size_mb = 1
lru_add_batch = 0
[[files]]
name = "f1"
size = "2048KiB"
cached = true
[run]
program = "main"
process_image = "mapped"
[[programs.main]]
op = "map"
region = "r0"
size = 8866
[[programs.main]]
op = "threads"
program = "p1"
count = 3
[[programs.p1]]
op = "loop"
duration = "40ms"
body = [ { op = "count", counter = "c2", by = 7 }, { op = "loop", duration = "40ms", body = [ { op = "loop", duration = "40ms", body = [ { op = "sleep", duration = "10us" }, { op = "sleep", duration = "10us" } ] }, { op = "loop", duration = "40ms", body = [ { op = "sweep", region = "r0", mode = "write", elem_size = 8, compute_ns = 250, offset = 8192, size = 4096 }, { op = "madvise", region = "r0", advice = "dontneed", offset = 4096, size = 8192 } ] } ] } ]
)",
                        {"scenario.seed=" + std::to_string(seed)});
    migrated += ran.vm("numa_pages_migrated");
    EXPECT_EQ(ran.vm("nr_anon_pages"), 0) << seed;  // every page freed once all have exited
  }
  EXPECT_GT(migrated, 0);
}

TEST(NumaMigration, AShmemPageFaultedInWhileItMigratesWaitsForTheMigration) {
  // main mlocks a MAP_SHARED anonymous region while its children write it
  // and NUMA balancing migrates its pages: a fault (here mlock's populate)
  // that finds the page cache's folio locked by the migration must not map
  // it, or the PTE would point to the old page the migration frees
  // (fuzz/findings/007).
  auto ran = run_text(R"(
[scenario]
seed = 1
[machine]
preset = "2s-16c"
[kernel]
numa_balancing_scan_delay_ms = 2
[numa]
skip_shmem_default_policy = false  # shmem scanned, as 6.12 and the fixed kernels do
[run]
program = "main"
process_image = "mapped"
[[programs.main]]
op = "map"
region = "r0"
size = 1046553
[[programs.main]]
op = "map"
region = "r1"
size = 1046553
flags = "shared"
[[programs.main]]
op = "fork"
program = "p1"
count = 2
[[programs.main]]
op = "loop"
count = 2
body = [ { op = "mlock", region = "r1", offset = 24576 }, { op = "loop", count = 3, body = [ { op = "loop", count = 3, body = [ { op = "sweep", region = "r1", mode = "write", compute_ns = 10, size = 4096 }, { op = "fork", program = "p1", count = 1 } ] }, { op = "sweep", region = "r1", mode = "write", elem_size = 64, compute_ns = 10 }, { op = "sweep", region = "r1", mode = "write", elem_size = 64 } ] }, { op = "touch", region = "r0", mode = "write" } ]
[[programs.p1]]
op = "loop"
count = 3
body = [ { op = "loop", duration = "5ms", body = [ { op = "sweep", region = "r1", mode = "write", elem_size = 64, compute_ns = 10 }, { op = "sweep", region = "r1", mode = "write", elem_size = 64, compute_ns = 10 } ] }, { op = "sweep", region = "r0", mode = "write", elem_size = 2, compute_ns = 0.5 }, { op = "map", region = "r0", size = 9107, flags = "shared", policy = "interleave", nodes = [1, 1] } ]
)");
  EXPECT_GT(ran.vm("numa_pages_migrated"), 0);
  // The region's pages, each freed once, with the unnamed inode's last mapping.
  EXPECT_EQ(ran.vm("nr_shmem"), 0);
  EXPECT_EQ(ran.vm("pgfree"), ran.vm("pgalloc_normal"));
}

// One thread on node 1 writes, over and over, 4 MiB of base pages that
// main wrote on node 0: NUMA balancing moves them to node 1.
std::string moved_writes(const std::string& version, const std::string& balancing) {
  return R"(
[machine]
preset = "2s-16c"
cores_per_socket = 2
mem_per_node = "64MiB"
[kernel]
version = ")" +
         version + R"("
numa_balancing = )" +
         balancing + R"(
transparent_hugepage = "never"
numa_balancing_scan_delay_ms = 10
[run]
program = "main"
process_image = "mapped"
[[programs.main]]
op = "pin"
nodes = [0]
[[programs.main]]
op = "map"
region = "data"
size = "4MiB"
[[programs.main]]
op = "touch"
region = "data"
mode = "write"
[[programs.main]]
op = "threads"
count = 1
program = "writer"
[[programs.main]]
op = "wait"
[[programs.writer]]
op = "pin"
nodes = [1]
[[programs.writer]]
op = "loop"
duration = "2s"
body = [ { op = "sweep", region = "data", mode = "write", elem_size = 8 } ]
)";
}

TEST(NumaSavedWrite, UpTo6_1APageMovedByAHintingFaultStaysWritable) {
  // The hinting PTE kept its write bit, so did the migration entry: the
  // writer's only faults beyond the hinting ones are the first touches.
  const auto off = run_text(moved_writes("6.1", "0"), {"noise.enabled=false"});
  const auto on = run_text(moved_writes("6.1", "1"), {"noise.enabled=false"});
  ASSERT_GT(on.vm("numa_pages_migrated"), 1000);
  EXPECT_EQ(on.vm("pgfault") - on.vm("numa_hint_faults"), off.vm("pgfault"));
}

TEST(NumaSavedWrite, From6_2APageMovedByAHintingFaultIsReadOnlyUntilItsNextWrite) {
  // No saved write bit: the migration entry is read-only, and the first
  // write after the move takes one more fault, which reuses the page.
  const auto off = run_text(moved_writes("6.12", "0"), {"noise.enabled=false"});
  const auto on = run_text(moved_writes("6.12", "1"), {"noise.enabled=false"});
  const int64_t migrated = on.vm("numa_pages_migrated");
  ASSERT_GT(migrated, 1000);
  EXPECT_EQ(on.vm("pgfault") - on.vm("numa_hint_faults") - migrated, off.vm("pgfault"));
  EXPECT_EQ(on.vm("pgalloc_normal"), off.vm("pgalloc_normal") + migrated);  // reused, not copied
  EXPECT_TRUE(on.result.check_failures.empty());
}

// As moved_writes, but a hog fills node 1 while the first migration
// isolates its page (an isolation made 100 ms long for it), so the
// migration finds no destination page (ENOMEM) before it unmaps anything;
// the later ones are refused up front (migrate_balanced_pgdat).
std::string unmoved_writes(const std::string& version, const std::string& balancing) {
  std::string s = moved_writes(version, balancing);
  const std::string wait = "[[programs.main]]\nop = \"wait\"\n";
  s.replace(s.find(wait), wait.size(), R"([[programs.main]]
op = "threads"
count = 1
program = "hog"
)" + wait);
  return s + R"(
[[programs.hog]]
op = "pin"
nodes = [1]
[[programs.hog]]
op = "sleep"
duration = "30ms"
[[programs.hog]]
op = "map"
region = "big"
size = "64MiB"
[[programs.hog]]
op = "touch"
region = "big"
mode = "write"
[[programs.hog]]
op = "sleep"
duration = "2s"
)";
}

TEST(NumaMigration, From6_2AMigrationThatFindsNoPageLeavesThePageMappedReadOnly) {
  // do_numa_page's out_map maps the page again once its migration failed,
  // read-only from 6.2 (the write permission it read before dropping the
  // page-table lock is not trusted): one write fault follows, and no second
  // hinting fault on an entry left PROT_NONE.
  const std::vector<std::string> sets = {"noise.enabled=false",
                                         "costs.migrate_isolate_ns=100000000"};
  for (const std::string version : {"6.1", "6.12"}) {
    const auto off = run_text(unmoved_writes(version, "0"), sets);
    const auto on = run_text(unmoved_writes(version, "1"), sets);
    EXPECT_EQ(on.vm("pgmigrate_fail"), 1) << version;
    EXPECT_EQ(on.vm("numa_pages_migrated"), 0) << version;
    const int64_t write_faults = version == "6.1" ? 0 : 1;
    EXPECT_EQ(on.vm("pgfault") - on.vm("numa_hint_faults"), off.vm("pgfault") + write_faults)
        << version;
    EXPECT_TRUE(on.result.check_failures.empty()) << version;
  }
}

TEST(NumaBalancing, AScanPeriodOfZeroTicksOncePerTickNotForever) {
  // A 1 MB scan size puts task_scan_min's floor at 0 ms, and 2 ms over a few
  // scan windows rounds to 0: task_tick_numa then acts at every scheduler
  // tick, as the kernel's does, not again and again at one instant (the run
  // never ended: fuzz/findings/008).
  std::string text = testing::fuzz_finding("008-numa-scan-period-zero-hang.toml");
  ASSERT_FALSE(text.empty());
  // Since threads stagger their first scans (init_numa_balancing: some 8 ms
  // of run time), the finding's threads scan only if they run longer.
  auto replace_all = [&text](const std::string& from, const std::string& to) {
    for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size())
      text.replace(at, from.size(), to);
  };
  replace_all("\"20ms\"", "\"200ms\"");
  replace_all("\"50ms\"", "\"500ms\"");
  auto ran = run_text(text);
  EXPECT_GT(ran.vm("numa_pte_updates"), 0);
}

TEST(NumaVersions, KernelVersionPresetsTheRules) {
  auto at = [](const char* v) {
    auto lr = scenario::parse_scenario(
        "[machine]\npreset = \"2s-16c\"\n[run]\nprogram = \"m\"\n"
        "[[programs.m]]\nop = \"sleep\"\nduration = \"1ms\"\n",
        "v.toml", {std::string("kernel.version=") + v});
    EXPECT_TRUE(lr.ok());
    return lr.scenario->kernel.numa;
  };
  EXPECT_FALSE(at("4.15").skip_shared_cow);
  EXPECT_TRUE(at("4.16").skip_shared_cow);
  EXPECT_TRUE(at("4.18").migrate_rate_limit);
  EXPECT_FALSE(at("4.19").migrate_rate_limit);
  EXPECT_TRUE(at("4.18").placement_every_fault);
  EXPECT_FALSE(at("4.19").placement_every_fault);
  EXPECT_TRUE(at("4.20").waiter_pins_page);
  EXPECT_FALSE(at("5.0").waiter_pins_page);
  EXPECT_EQ(at("4.13").scan_period_update, ScanPeriodUpdate::k313);
  EXPECT_EQ(at("4.14").scan_period_update, ScanPeriodUpdate::k414);
  EXPECT_FALSE(at("4.13").scan_start_group_scaled);
  EXPECT_TRUE(at("4.14").scan_start_group_scaled);
  EXPECT_FALSE(at("4.16").skip_dirty_file);
  EXPECT_TRUE(at("4.17").skip_dirty_file);
  EXPECT_FALSE(at("4.18").thread_scan_stagger);
  EXPECT_TRUE(at("4.19").thread_scan_stagger);
  EXPECT_FALSE(at("4.9").skip_target_node);
  EXPECT_TRUE(at("4.10").skip_target_node);
}

TEST(NumaVersions, BalancingOnAKernelWithoutItIsAnError) {
  auto lr = scenario::parse_scenario(
      "[machine]\npreset = \"2s-16c\"\n[kernel]\nversion = \"3.7\"\n"
      "numa_balancing = 1\n[run]\nprogram = \"m\"\n"
      "[[programs.m]]\nop = \"sleep\"\nduration = \"1ms\"\n",
      "v.toml", {});
  ASSERT_EQ(lr.diagnostics.size(), 1u);
  EXPECT_EQ(lr.diagnostics[0].key, "kernel.numa_balancing");
}

}  // namespace
}  // namespace mmsim::numa

namespace mmsim {
namespace {

// Two threads on two nodes sweep a MAP_SHARED anonymous (shmem) region.
testing::Ran run_shmem_scan(const std::string& version) {
  return testing::run_text(R"(
[machine]
sockets = 2
cores_per_socket = 2
mem_per_node = "64MiB"
llc_per_socket = "1MiB"
[kernel]
version = ")" + version + R"("
numa_balancing = 1
numa_balancing_scan_delay_ms = 1
numa_balancing_scan_period_min_ms = 1
[run]
program = "main"
process_image = "mapped"
[[programs.main]]
op = "map"
region = "shm"
size = "1MiB"
flags = "shared"
[[programs.main]]
op = "touch"
region = "shm"
mode = "write"
[[programs.main]]
op = "threads"
count = 2
program = "reader"
[[programs.main]]
op = "wait"
[[programs.reader]]
op = "loop"
duration = "50ms"
body = [ { op = "sweep", region = "shm" } ]
)");
}

TEST(NumaScan, A6_1KernelNeverScansAShmemMappingWithoutAPolicyOfItsOwn) {
  const auto ran = run_shmem_scan("6.1");
  EXPECT_EQ(ran.vm("numa_pte_updates"), 0);
  EXPECT_EQ(ran.vm("numa_hint_faults"), 0);
}

TEST(NumaScan, Debians6_12KernelScansShmemUnderTheTasksDefaultPolicy) {
  const auto ran = run_shmem_scan("6.12");
  EXPECT_GT(ran.vm("numa_pte_updates"), 0);
}

}  // namespace
}  // namespace mmsim

// NUMA balancing of anonymous transparent huge pages: change_huge_pmd marks
// a huge PMD whole, do_huge_pmd_numa_page takes one hinting fault for its 512
// pages, and the THP migrates whole (migrate_misplaced_transhuge_page up to
// 5.12, migrate_pages after), as docs/research/thp-rules.md section 5 reads
// the kernel. Whole scenarios, with the invariant checker on.
#include <gtest/gtest.h>

#include <string>

#include "support/run.h"

namespace mmsim {
namespace {

using testing::run_text;

// 2 nodes of 2 CPUs and 256 MiB (512 MiB in all: THP's minimum). The main
// task writes 16 MiB on node 0 (8 THPs); then `readers` readers, threads or
// forked children (`how`), are pinned to node 1 and sweep it for 5 s.
std::string scenario(const std::string& version, const std::string& thp = "always",
                     const std::string& how = "threads", int readers = 1) {
  return R"(
[scenario]
name = "thp-numa"
seed = 1

[machine]
preset = "2s-16c"
cores_per_socket = 2
mem_per_node = "256MiB"

[kernel]
version = ")" +
         version + R"("
numa_balancing = 1
transparent_hugepage = ")" +
         thp + R"("
thp_anon_align = "pmd-multiple"  # 8 whole THPs whatever the version

[run]
program = "main"
process_image = "mapped"

[[programs.main]]
op = "pin"
nodes = [0]

[[programs.main]]
op = "map"
region = "data"
size = "16MiB"

[[programs.main]]
op = "touch"
region = "data"
mode = "write"

[[programs.main]]
op = ")" +
         how +
         R"("
count = )" +
         std::to_string(readers) +
         R"(
program = "reader"

[[programs.main]]
op = "wait"

[[programs.reader]]
op = "pin"
nodes = [1]

[[programs.reader]]
op = "loop"
duration = "5s"
body = [{ op = "sweep", region = "data" }]
)";
}

constexpr int64_t kThps = 8;
constexpr int64_t kPages = kThps * 512;

TEST(ThpAlign, UpTo6_6ARandomisedMmapBaseLeaves16MiBOneThpShort) {
  // A 2 MiB-multiple mapping off a 2 MiB boundary: 7 THPs and 512 base
  // pages (the validation of fork-cow-faults on 6.1 counts 15 of 16). The
  // base pages main writes last stay in its CPU's lru_add batch, which
  // 6.1's change_prot_numa skips (tests/mm/lru_batch_test.cc): no batch.
  const auto ran =
      run_text(scenario("6.1"), {"kernel.thp_anon_align=none", "kernel.lru_add_batch=0"});
  EXPECT_EQ(ran.vm("thp_fault_alloc"), kThps - 1);
  EXPECT_EQ(ran.vm("numa_pages_migrated"), kPages);
}

TEST(ThpAlign, From6_12A2MiBMultipleMappingIsAlignedForThps) {
  const auto ran = run_text(scenario("6.12"), {"kernel.thp_anon_align=pmd-multiple"});
  EXPECT_EQ(ran.vm("thp_fault_alloc"), kThps);
}

TEST(ThpNuma, AScanMarksAHugePmdAsOneHugeUpdateOf512Pages) {
  const auto ran = run_text(scenario("6.1"));
  ASSERT_GT(ran.vm("numa_huge_pte_updates"), 0);
  EXPECT_EQ(ran.vm("numa_pte_updates"), 512 * ran.vm("numa_huge_pte_updates"));
}

TEST(ThpNuma, AHugePmdTakesOneHintingFaultForItsPages) {
  // Each marked PMD faults once; 4 KiB pages would fault 512 times each.
  const auto thp = run_text(scenario("6.1"));
  const auto base = run_text(scenario("6.1", "never"));
  EXPECT_EQ(thp.vm("numa_hint_faults"), thp.vm("numa_huge_pte_updates"));
  EXPECT_EQ(base.vm("numa_huge_pte_updates"), 0);
  EXPECT_GE(base.vm("numa_hint_faults"), 256 * thp.vm("numa_hint_faults"));
}

TEST(ThpNuma, AMisplacedThpMigratesWholeAndStaysHuge) {
  const auto ran = run_text(scenario("6.1"));
  EXPECT_EQ(ran.vm("numa_pages_migrated"), kPages);
  EXPECT_EQ(ran.vm("pgmigrate_success"), kPages);
  EXPECT_EQ(ran.vm("thp_migration_success"), kThps);
  EXPECT_EQ(ran.vm("thp_migration_fail"), 0);
  EXPECT_EQ(ran.vm("thp_split_pmd"), 0);
  EXPECT_EQ(ran.vm("thp_split_page"), 0);
}

// The scenario with the first THP's PMD split, its pages all still mapped:
// MADV_NOHUGEPAGE on its first page splits the VMA there.
std::string with_pte_mapped_thp(const std::string& version) {
  std::string s = scenario(version);
  const std::string touch = "op = \"touch\"\nregion = \"data\"\nmode = \"write\"\n";
  const auto at = s.find(touch);
  s.insert(at + touch.size(),
           "\n[[programs.main]]\nop = \"madvise\"\nregion = \"data\"\nadvice = "
           "\"nohugepage\"\nsize = \"4KiB\"\n");
  return s;
}

TEST(ThpNuma, UpTo6_9APteMappedThpIsNeverMarkedOrMoved) {
  const auto ran = run_text(with_pte_mapped_thp("6.1"));
  ASSERT_EQ(ran.vm("thp_split_pmd"), 1);
  EXPECT_EQ(ran.vm("numa_pte_updates"), 512 * ran.vm("numa_huge_pte_updates"));
  EXPECT_EQ(ran.vm("thp_migration_success"), kThps - 1);
  EXPECT_EQ(ran.vm("numa_pages_migrated"), kPages - 512);
  EXPECT_TRUE(ran.result.check_failures.empty());
}

TEST(ThpNuma, From6_10APteMappedThpTakesOneHintingFaultAndMovesWhole) {
  const auto ran = run_text(with_pte_mapped_thp("6.12"));
  ASSERT_EQ(ran.vm("thp_split_pmd"), 1);
  EXPECT_EQ(ran.vm("thp_migration_success"), kThps);
  EXPECT_EQ(ran.vm("numa_pages_migrated"), kPages);
  // Its 512 PTEs are marked one by one, but a fault makes the folio's other
  // PTEs of its VMA accessible again (numa_rebuild_large_mapping stops at
  // the VMA's edge; a migration remaps them all): one or two faults a scan
  // for it, its first page being a VMA of its own, and one for each PMD.
  const int64_t huge = ran.vm("numa_huge_pte_updates");
  const int64_t pte_scans = (ran.vm("numa_pte_updates") - 512 * huge) / 512;
  ASSERT_GT(pte_scans, 0);
  EXPECT_GE(ran.vm("numa_hint_faults"), huge + pte_scans);
  EXPECT_LE(ran.vm("numa_hint_faults"), huge + 2 * pte_scans);
  EXPECT_TRUE(ran.result.check_failures.empty());
}

TEST(ThpNuma, AThreadThatReachesAThpUnderMigrationWaitsInDState) {
  // The second reader finds the PMD migration entry the first one's
  // migration left (pmd_migration_entry_wait).
  const auto ran = run_text(scenario("6.1", "always", "threads", 2));
  EXPECT_EQ(ran.vm("numa_pages_migrated"), kPages);
  double iowait = 0;
  for (const auto& t : ran.result.tasks) iowait += t.times.iowait_ns;
  EXPECT_GT(iowait, 0);
}

TEST(ThpNuma, UpTo5_12AThpMovesWithoutThpMigrationCounts) {
  // migrate_misplaced_transhuge_page counts pages, not THPs.
  const auto ran = run_text(scenario("5.10"));
  EXPECT_EQ(ran.vm("numa_pages_migrated"), kPages);
  EXPECT_EQ(ran.vm("thp_migration_success"), 0);
}

TEST(ThpNuma, A6_1KernelLeavesAThpThatTwoProcessesMapWhereItIs) {
  // After fork both mms map each PMD: numamigrate_isolate_page refuses it,
  // counting nothing; the reader still takes its hinting faults.
  const auto ran = run_text(scenario("6.1", "always", "fork"));
  EXPECT_GT(ran.vm("numa_hint_faults"), 0);
  EXPECT_EQ(ran.vm("numa_pages_migrated"), 0);
  EXPECT_EQ(ran.vm("pgmigrate_fail"), 0);
}

TEST(ThpNuma, A5_10KernelCountsARefusedSharedThpAsFailed) {
  const auto ran = run_text(scenario("5.10", "always", "fork"));
  EXPECT_EQ(ran.vm("numa_pages_migrated"), 0);
  EXPECT_GT(ran.vm("pgmigrate_fail"), 0);
  EXPECT_EQ(ran.vm("pgmigrate_fail") % 512, 0);
}

TEST(ThpNuma, A6_12KernelMigratesAThpThatTwoProcessesMap) {
  const auto ran = run_text(scenario("6.12", "always", "fork"));
  EXPECT_EQ(ran.vm("numa_pages_migrated"), kPages);
  EXPECT_EQ(ran.vm("thp_migration_success"), kThps);
}

}  // namespace
}  // namespace mmsim

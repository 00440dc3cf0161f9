// Anonymous transparent huge pages (mm/huge_memory.c): the THP fault, the
// huge zero page, PMD splits, fork's shared PMD and its copy-on-write, and
// the memory they hold. Rules: docs/research/thp-rules.md.
#include <gtest/gtest.h>

#include <memory>

#include "mm/memory_manager.h"
#include "support/mm_fixture.h"

namespace mmsim::mm {
namespace {

using testing::kRW;
using testing::MmWorld;

constexpr uint64_t kMachinePages = 65536;  // 256 MiB a node: 512 MiB, THP's minimum

MmConfig thp_config(ThpEnabled enabled = ThpEnabled::kAlways) {
  MmConfig c = testing::test_mm_config();
  c.thp_enabled = enabled;
  return c;
}

// One mm with an anonymous private mapping whose first page is 2 MiB-aligned.
struct ThpWorld {
  explicit ThpWorld(MmConfig cfg = thp_config(), uint64_t pages = 4 * kHugePages)
      : w(cfg, kMachinePages) {
    mm = w.mgr.mm_alloc();
    a = w.map(*mm, pages, kRW);
  }
  ~ThpWorld() {
    if (mm) w.teardown(*mm);
  }
  int64_t vm(Vm v) const { return w.mgr.vmstat()[v]; }
  MmWorld w;
  std::shared_ptr<Mm> mm;
  Vpn a{};
};

TEST(ThpFault, AWriteFaultMapsA2MiBFolioWithOnePmd) {
  ThpWorld t;
  ASSERT_EQ(t.a.v % kHugePages, 0u);
  ASSERT_EQ(t.w.fault(*t.mm, t.a, true), FaultStatus::kOk);
  const PteTable* table = t.mm->pgtable().table(t.a);
  ASSERT_TRUE(table && table->huge());
  EXPECT_EQ(t.vm(Vm::thp_fault_alloc), 1);
  EXPECT_EQ(t.vm(Vm::nr_anon_pages), 512);
  EXPECT_EQ(t.vm(Vm::nr_anon_transparent_hugepages), 1);
  EXPECT_EQ(t.mm->rss_anon, 512u);
  // Every page of the 2 MiB is mapped, writable: no more faults.
  EXPECT_EQ(t.mm->pgtable().next_blocked(t.a, Vpn(t.a.v + kHugePages), true).v, t.a.v + kHugePages);
  EXPECT_EQ(t.mm->pgtable().get(Vpn(t.a.v + 7)).pfn, table->pmd().pfn + 7);
  t.w.expect_consistent();
}

TEST(ThpFault, AReadFaultMapsTheHugeZeroPageWithoutRss) {
  ThpWorld t;
  ASSERT_EQ(t.w.fault(*t.mm, t.a, false), FaultStatus::kOk);
  EXPECT_EQ(t.mm->pgtable().table(t.a)->pmd().pfn, kZeroPfn);
  EXPECT_EQ(t.vm(Vm::thp_zero_page_alloc), 1);
  EXPECT_EQ(t.vm(Vm::nr_anon_pages), 0);
  EXPECT_EQ(t.mm->rss_anon, 0u);
  t.w.expect_consistent();
}

TEST(ThpFault, TheHugeZeroPageTakes512PagesOnceAtItsFirstUse) {
  ThpWorld t;
  const uint64_t free = t.w.mgr.folios().free_pages(NodeId(0));
  t.w.fault(*t.mm, t.a, false);
  t.w.fault(*t.mm, Vpn(t.a.v + kHugePages), false);
  // Besides it, page tables: the PUD and PMD tables and each PMD's deposit
  // (and the mm's PGD, 2 pages, before).
  EXPECT_EQ(t.vm(Vm::pgalloc_normal), 512 + 2 + 4);
  EXPECT_EQ(t.w.mgr.folios().free_pages(NodeId(0)), free - kHugePages - 4);
  EXPECT_EQ(t.vm(Vm::thp_zero_page_alloc), 1);
  t.w.expect_consistent();
}

TEST(ThpFault, AWriteToTheHugeZeroPageSplitsItAndCopiesOnePage) {
  // 5.8+: no THP is allocated for it; 511 pages still map the zero page.
  ThpWorld t;
  t.w.fault(*t.mm, t.a, false);
  ASSERT_EQ(t.w.fault(*t.mm, Vpn(t.a.v + 3), true), FaultStatus::kOk);
  EXPECT_EQ(t.vm(Vm::thp_split_pmd), 1);
  EXPECT_EQ(t.vm(Vm::thp_fault_alloc), 0);
  EXPECT_EQ(t.vm(Vm::nr_anon_pages), 1);
  EXPECT_EQ(t.mm->pgtable().get(Vpn(t.a.v + 4)).pfn, kZeroPfn);
  t.w.expect_consistent();
}

TEST(ThpFault, ARangeThatIsNotWhollyInsideTheVmaGetsBasePages) {
  // A 1 MiB mapping holds no aligned 2 MiB range.
  ThpWorld t(thp_config(), 256);
  ASSERT_EQ(t.w.fault(*t.mm, t.a, true), FaultStatus::kOk);
  EXPECT_FALSE(t.mm->pgtable().table(t.a)->huge());
  EXPECT_EQ(t.vm(Vm::thp_fault_alloc), 0);
  EXPECT_EQ(t.vm(Vm::thp_fault_fallback), 0);  // not eligible: no counter
  EXPECT_EQ(t.vm(Vm::nr_anon_pages), 1);
}

TEST(ThpFault, AnEarlierBasePageFaultInTheRangeRulesOutAHugePage) {
  // The PTE table stays (pmd_none no more): khugepaged's business.
  ThpWorld t(thp_config(ThpEnabled::kMadvise));
  t.w.fault(*t.mm, t.a, true);
  t.w.mgr.madvise_hugepage(*t.mm, t.a, 4 * kHugePages, true);
  t.w.fault(*t.mm, Vpn(t.a.v + 1), true);
  EXPECT_EQ(t.vm(Vm::thp_fault_alloc), 0);
  t.w.fault(*t.mm, Vpn(t.a.v + kHugePages), true);  // the next 2 MiB: empty PMD
  EXPECT_EQ(t.vm(Vm::thp_fault_alloc), 1);
  t.w.expect_consistent();
}

TEST(ThpFault, InMadviseModeOnlyMadvHugepageVmasGetHugePages) {
  ThpWorld t(thp_config(ThpEnabled::kMadvise));
  t.w.fault(*t.mm, t.a, true);
  EXPECT_EQ(t.vm(Vm::thp_fault_alloc), 0);
  ASSERT_EQ(t.w.mgr.madvise_hugepage(*t.mm, Vpn(t.a.v + kHugePages), kHugePages, true).error,
            MmError::kOk);
  t.w.fault(*t.mm, Vpn(t.a.v + kHugePages), true);
  EXPECT_EQ(t.vm(Vm::thp_fault_alloc), 1);
  t.w.expect_consistent();
}

TEST(ThpFault, MadvNohugepageKeepsAnAlwaysVmaToBasePages) {
  ThpWorld t;
  t.w.mgr.madvise_hugepage(*t.mm, t.a, 4 * kHugePages, false);
  t.w.fault(*t.mm, t.a, true);
  EXPECT_EQ(t.vm(Vm::thp_fault_alloc), 0);
  EXPECT_EQ(t.vm(Vm::nr_anon_pages), 1);
}

TEST(ThpFault, AMachineUnder512MiBHasNoHugePages) {
  MmWorld w(thp_config(), 4096);  // 32 MiB
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 4 * kHugePages, kRW);
  w.fault(*mm, a, true);
  EXPECT_FALSE(w.mgr.thp_on());
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_anon_pages], 1);
  w.teardown(*mm);
}

TEST(ThpFault, AnInterleavedThpCountsIts2MiBStepsFromTheVmasStart) {
  // interleave_nid / get_vma_policy's ilx: (vm_pgoff >> 9) plus whole 2 MiB
  // steps from vm_start. A VMA that starts 100 pages past 2 MiB index 512
  // has its first THP at index 513, but its ilx is 512 + 0: node 0, where
  // the address's own index would say node 1.
  MmWorld w(thp_config(), kMachinePages);
  auto mm = w.mgr.mm_alloc();
  MmapArgs args;
  args.addr = Vpn(0x40000 + 100);  // 0x40000 pages: an even 2 MiB index (512)
  args.pages = 3 * kHugePages;
  args.vm_flags = kRW;
  args.policy.mode = MemPolicy::Mode::kInterleave;
  args.policy.nodes = {NodeId(0), NodeId(1)};
  ASSERT_EQ(w.mgr.mmap(*mm, args, CpuId(0)).addr, args.addr);
  const Vpn first(0x40000 + kHugePages);
  ASSERT_EQ(w.fault(*mm, first, true), FaultStatus::kOk);
  ASSERT_TRUE(mm->pgtable().table(first)->huge());
  EXPECT_EQ(w.folio_at(*mm, first).node, NodeId(0));
  const Vpn second(first.v + kHugePages);
  ASSERT_EQ(w.fault(*mm, second, true), FaultStatus::kOk);
  EXPECT_EQ(w.folio_at(*mm, second).node, NodeId(1));
  w.expect_consistent();
  w.teardown(*mm);
}

TEST(ThpFault, ANodeWithoutA2MiBBlockFallsBackToABasePageCounted) {
  // The default mask takes a huge page from the local node only, with no
  // reclaim: node 0 is nearly full, so the fault falls back (and the base
  // page may then come from node 1).
  ThpWorld t;
  auto filler = t.w.mgr.mm_alloc();
  const uint64_t fill = kMachinePages - 300;
  const Vpn f = t.w.map(*filler, fill, kRW);
  t.w.mgr.madvise_hugepage(*filler, f, fill, false);
  for (uint64_t i = 0; i < fill; ++i) t.w.fault(*filler, Vpn(f.v + i), true);
  ASSERT_LT(t.w.mgr.folios().free_pages(NodeId(0)), kHugePages);
  ASSERT_EQ(t.w.fault(*t.mm, t.a, true), FaultStatus::kOk);
  EXPECT_EQ(t.vm(Vm::thp_fault_fallback), 1);
  EXPECT_EQ(t.vm(Vm::thp_fault_alloc), 0);
  EXPECT_FALSE(t.mm->pgtable().table(t.a)->huge());
  t.w.expect_consistent();
  t.w.teardown(*filler);
}

TEST(ThpSplit, APartialMunmapSplitsThePmdAndTheFolioLivesOnInTheRest) {
  ThpWorld t;
  t.w.fault(*t.mm, t.a, true);
  ASSERT_EQ(t.w.mgr.munmap(*t.mm, Vpn(t.a.v + 100), 12, CpuId(0)).error, MmError::kOk);
  EXPECT_EQ(t.vm(Vm::thp_split_pmd), 1);
  EXPECT_EQ(t.vm(Vm::nr_anon_transparent_hugepages), 0);
  // The folio is still whole: its memory is not given back yet (deferred split).
  EXPECT_EQ(t.vm(Vm::nr_anon_pages), 512);
  EXPECT_EQ(t.mm->rss_anon, 500u);
  t.w.expect_consistent();
  t.w.mgr.munmap(*t.mm, t.a, 4 * kHugePages, CpuId(0));
  EXPECT_EQ(t.vm(Vm::nr_anon_pages), 0);
  t.w.expect_consistent();
}

TEST(ThpSplit, AWholeMunmapFreesTheFolioAndItsTable) {
  ThpWorld t;
  t.w.fault(*t.mm, t.a, true);
  const size_t tables = t.mm->pgtable().nr_tables();
  t.w.mgr.munmap(*t.mm, t.a, 4 * kHugePages, CpuId(0));
  EXPECT_EQ(t.vm(Vm::thp_split_pmd), 0);
  EXPECT_EQ(t.vm(Vm::nr_anon_pages), 0);
  EXPECT_EQ(t.mm->pgtable().nr_tables(), tables - 1);
  t.w.expect_consistent();
}

TEST(ThpSplit, MadvDontneedOfAWholeThpLeavesThePmdNoneForAnotherThp) {
  // zap_huge_pmd frees the table the PMD had deposited: the next write
  // there is a THP fault again, not 512 base-page faults.
  ThpWorld t;
  t.w.fault(*t.mm, t.a, true);
  t.w.mgr.madvise_dontneed(*t.mm, t.a, kHugePages, CpuId(0));
  EXPECT_EQ(t.mm->pgtable().table(t.a), nullptr);
  EXPECT_EQ(t.vm(Vm::nr_anon_pages), 0);
  ASSERT_EQ(t.w.fault(*t.mm, t.a, true), FaultStatus::kOk);
  EXPECT_EQ(t.vm(Vm::thp_fault_alloc), 2);
  EXPECT_TRUE(t.mm->pgtable().table(t.a)->huge());
  t.w.expect_consistent();
}

TEST(ThpSplit, MadvDontneedOfPartOfAThpKeepsItsTableForBasePages) {
  ThpWorld t;
  t.w.fault(*t.mm, t.a, true);
  t.w.mgr.madvise_dontneed(*t.mm, t.a, kHugePages / 2, CpuId(0));
  ASSERT_EQ(t.w.fault(*t.mm, t.a, true), FaultStatus::kOk);
  EXPECT_EQ(t.vm(Vm::thp_split_pmd), 1);
  EXPECT_EQ(t.vm(Vm::thp_fault_alloc), 1);
  EXPECT_FALSE(t.mm->pgtable().table(t.a)->huge());
  t.w.expect_consistent();
}

TEST(ThpSplit, SplittingTheFolioFreesThePagesNothingMaps) {
  ThpWorld t;
  t.w.fault(*t.mm, t.a, true);
  t.w.mgr.madvise_dontneed(*t.mm, Vpn(t.a.v + 256), 256, CpuId(0));
  const Pfn head(t.mm->pgtable().get(t.a).pfn);
  t.w.mgr.split_huge_page(head);
  EXPECT_EQ(t.vm(Vm::thp_split_page), 1);
  EXPECT_EQ(t.vm(Vm::nr_anon_pages), 256);
  EXPECT_FALSE(t.w.mgr.folios().folio(head).large());
  t.w.expect_consistent();
}

// A THP written by the world's mm, then a forked child of that mm.
std::shared_ptr<Mm> fork_after_thp(ThpWorld& t) {
  t.w.fault(*t.mm, t.a, true);
  auto child = t.w.mgr.mm_alloc();
  t.w.mgr.dup_mmap(*t.mm, *child, CpuId(0));
  return child;
}

TEST(ThpFork, TheChildSharesThePmdAndAWriteCopiesOnlyOnePage) {
  // 5.8+: the written side's PMD is split and one 4 KiB page copied.
  ThpWorld t;
  auto child = fork_after_thp(t);
  EXPECT_TRUE(child->pgtable().table(t.a)->huge());
  EXPECT_EQ(child->rss_anon, 512u);
  EXPECT_EQ(t.vm(Vm::nr_anon_pages), 512);
  ASSERT_EQ(t.w.fault(*child, Vpn(t.a.v + 5), true), FaultStatus::kOk);
  EXPECT_EQ(t.vm(Vm::thp_split_pmd), 1);
  EXPECT_EQ(t.vm(Vm::nr_anon_pages), 513);
  EXPECT_TRUE(t.mm->pgtable().table(t.a)->huge());  // the parent's stays huge
  t.w.expect_consistent();
  t.w.teardown(*child);
  t.w.expect_consistent();
}

TEST(ThpFork, AfterTheChildExitsTheParentReusesItsHugePageInPlace) {
  ThpWorld t;
  auto child = fork_after_thp(t);
  t.w.teardown(*child);
  ASSERT_EQ(t.w.fault(*t.mm, t.a, true), FaultStatus::kOk);
  EXPECT_TRUE(t.mm->pgtable().table(t.a)->huge());
  EXPECT_EQ(t.vm(Vm::thp_split_pmd), 0);
  EXPECT_EQ(t.vm(Vm::nr_anon_pages), 512);
  t.w.expect_consistent();
}

// migrate_misplaced_page's part in these tests: the folio isolated from its
// LRU and locked, as the Migrator does before its first pass.
void isolate(MmWorld& w, Pfn head) {
  w.mgr.lru().del(head);
  w.mgr.folios().folio(head).flags |= Folio::kLocked;
}

TEST(ThpMigrate, AHugePmdBecomesOneMigrationEntryAndMapsTheNewFolioAfter) {
  ThpWorld t;
  t.w.fault(*t.mm, t.a, true);
  const Pfn old(t.mm->pgtable().table(t.a)->pmd().pfn);
  isolate(t.w, old);
  const auto un = t.w.mgr.migrate_unmap(old, CpuId(0));
  ASSERT_EQ(un.mappings, 1u);
  EXPECT_EQ(un.unmapped.front().pages, kHugePages);
  EXPECT_TRUE(t.mm->pgtable().table(t.a)->pmd().migration());

  const auto fresh = t.w.mgr.folios().alloc_on(NodeId(1), Mark::kNone, kHugeOrder);
  ASSERT_TRUE(fresh);
  t.w.mgr.migrate_remap(old, *fresh);
  t.w.mgr.migrate_folio_finish(old, *fresh, CpuId(0), true);

  const PteTable& table = *t.mm->pgtable().table(t.a);
  ASSERT_TRUE(table.huge());
  EXPECT_EQ(table.pmd().pfn, fresh->v);
  EXPECT_TRUE(table.pmd().writable());
  EXPECT_EQ(t.w.mgr.folios().folio(*fresh).node, NodeId(1));
  EXPECT_EQ(t.vm(Vm::nr_anon_transparent_hugepages), 1);
  t.w.expect_consistent();
}

TEST(ThpMigrate, AWholeDropByOneMmDuringMigrationLeavesItsPmdNone) {
  // Parent and child map the THP; the child's MADV_DONTNEED of the whole
  // 2 MiB zaps its PMD migration entry and deposited table. The migration's
  // end maps the new folio in the parent only, and the child's range can
  // take a THP fault again.
  ThpWorld t;
  auto child = fork_after_thp(t);
  const Pfn old(t.mm->pgtable().table(t.a)->pmd().pfn);
  isolate(t.w, old);
  t.w.mgr.migrate_unmap(old, CpuId(0));
  t.w.mgr.madvise_dontneed(*child, t.a, kHugePages, CpuId(0));
  const auto fresh = t.w.mgr.folios().alloc_on(NodeId(1), Mark::kNone, kHugeOrder);
  ASSERT_TRUE(fresh);
  EXPECT_EQ(t.w.mgr.migrate_remap(old, *fresh).mappings, 1u);
  t.w.mgr.migrate_folio_finish(old, *fresh, CpuId(0), true);
  EXPECT_EQ(child->pgtable().table(t.a), nullptr);
  EXPECT_EQ(t.mm->pgtable().table(t.a)->pmd().pfn, fresh->v);
  ASSERT_EQ(t.w.fault(*child, t.a, true), FaultStatus::kOk);
  EXPECT_TRUE(child->pgtable().table(t.a)->huge());
  t.w.expect_consistent();
  t.w.teardown(*child);
}

TEST(ThpMigrate, APartialMunmapDuringMigrationLeavesPteMigrationEntriesTheEndMaps) {
  // The split of a PMD migration entry gives 512 PTE migration entries;
  // those still mapped point at the new folio's pages when it ends.
  ThpWorld t;
  t.w.fault(*t.mm, t.a, true);
  const Pfn old(t.mm->pgtable().table(t.a)->pmd().pfn);
  isolate(t.w, old);
  t.w.mgr.migrate_unmap(old, CpuId(0));
  ASSERT_EQ(t.w.mgr.munmap(*t.mm, Vpn(t.a.v + 5), 1, CpuId(0)).error, MmError::kOk);
  EXPECT_EQ(t.vm(Vm::thp_split_pmd), 1);
  EXPECT_TRUE(t.mm->pgtable().get(Vpn(t.a.v + 6)).migration());

  const auto fresh = t.w.mgr.folios().alloc_on(NodeId(1), Mark::kNone, kHugeOrder);
  ASSERT_TRUE(fresh);
  const auto re = t.w.mgr.migrate_remap(old, *fresh);
  t.w.mgr.migrate_folio_finish(old, *fresh, CpuId(0), true);

  EXPECT_EQ(re.mappings, kHugePages - 1);
  EXPECT_EQ(t.mm->pgtable().get(Vpn(t.a.v + 6)).pfn, fresh->v + 6);
  EXPECT_TRUE(t.mm->pgtable().get(Vpn(t.a.v + 5)).none());
  EXPECT_EQ(t.w.mgr.folio_mapcount(*fresh), static_cast<int32_t>(kHugePages - 1));
  t.w.expect_consistent();
}

TEST(ThpMigrate, ANewHugeFolioNotYetGivenTheOldOnesPlacePassesTheChecker) {
  // A migration still copying when the run ends (fuzz/findings/012): the
  // destination's mapping counts start at zero, not at a free entry's links.
  ThpWorld t;
  const auto fresh = t.w.mgr.folios().alloc_on(NodeId(1), Mark::kNone, kHugeOrder);
  ASSERT_TRUE(fresh);
  EXPECT_EQ(t.w.mgr.folio_mapcount(*fresh), 0);
  t.w.expect_consistent();
  t.w.mgr.folios().free(*fresh);
}

}  // namespace
}  // namespace mmsim::mm

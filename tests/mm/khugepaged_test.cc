// khugepaged (mm/khugepaged.c): which mms it scans, how far a pass goes,
// which PMD ranges it collapses into a THP, and where the THP goes.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "mm/memory_manager.h"
#include "support/mm_fixture.h"
#include "support/run.h"

namespace mmsim::mm {
namespace {

using testing::kRW;
using testing::MmWorld;
using Next = MemoryManager::KhugepagedStep::Next;

constexpr uint64_t kMachinePages = 65536;  // 256 MiB a node: 512 MiB, THP's minimum

MmConfig madvise_config() {
  MmConfig c = testing::test_mm_config();
  c.thp_enabled = ThpEnabled::kMadvise;
  return c;
}

// One mm with an aligned anonymous mapping of `ranges` x 2 MiB, THP in
// madvise mode: faults map base pages until MADV_HUGEPAGE.
struct CollapseWorld {
  explicit CollapseWorld(MmConfig cfg = madvise_config(), uint64_t ranges = 4)
      : w(cfg, kMachinePages), ranges(ranges) {
    mm = w.mgr.mm_alloc();
    a = w.map(*mm, ranges * kHugePages, kRW);
  }
  ~CollapseWorld() {
    if (mm) w.teardown(*mm);
  }
  // Writes pages [first, first + n) of range r from a CPU of node `node`.
  void write(uint64_t r, uint64_t first, uint64_t n, uint16_t node = 0) {
    for (uint64_t i = first; i < first + n; ++i)
      w.fault(*mm, Vpn(a.v + r * kHugePages + i), true, static_cast<uint16_t>(node * 2));
  }
  void madvise_hugepage() { w.mgr.madvise_hugepage(*mm, a, ranges * kHugePages, true); }
  bool huge(uint64_t r) const {
    const PteTable* t = mm->pgtable().table(Vpn(a.v + r * kHugePages));
    return t && t->huge();
  }
  int64_t vm(Vm v) const { return w.mgr.vmstat()[v]; }
  MmWorld w;
  uint64_t ranges;
  std::shared_ptr<Mm> mm;
  Vpn a{};
};

TEST(Khugepaged, MadvHugepageOnAFaultedVmaRegistersTheMmAndWakesTheThread) {
  CollapseWorld t;
  t.write(0, 0, 1);
  EXPECT_FALSE(t.w.mgr.khugepaged_take_wakeup());  // madvise mode: not yet eligible
  t.madvise_hugepage();
  EXPECT_TRUE(t.mm->khugepaged);
  EXPECT_TRUE(t.w.mgr.khugepaged_take_wakeup());
  EXPECT_FALSE(t.w.mgr.khugepaged_take_wakeup());
}

TEST(Khugepaged, AVmaThatNeverFaultedDoesNotRegister) {
  // hugepage_vma_check wants the VMA's anon_vma, made at its first fault.
  CollapseWorld t;
  t.madvise_hugepage();
  EXPECT_FALSE(t.mm->khugepaged);
  EXPECT_EQ(t.w.mgr.khugepaged_run().next, Next::kIdle);
}

TEST(Khugepaged, ARangeOfBasePagesBecomesOneThpMappedByAPmd) {
  CollapseWorld t;
  t.write(0, 0, kHugePages);
  t.madvise_hugepage();
  EXPECT_EQ(t.w.mgr.khugepaged_run().next, Next::kScanSleep);
  EXPECT_TRUE(t.huge(0));
  EXPECT_EQ(t.vm(Vm::thp_collapse_alloc), 1);
  EXPECT_EQ(t.vm(Vm::nr_anon_transparent_hugepages), 1);
  // The 512 base pages were copied and freed.
  EXPECT_EQ(t.vm(Vm::nr_anon_pages), 512);
  // ...besides the mm's page tables: its PGD (2 pages), PUD, PMD, and the
  // PTE table, now the PMD's deposit.
  EXPECT_EQ(t.w.mgr.folios().in_use(), 512u + 5u);
  EXPECT_EQ(t.mm->rss_anon, 512u);
  EXPECT_EQ(t.w.mgr.khugepaged_stats().pages_collapsed, 1u);
  t.w.expect_consistent();
}

TEST(Khugepaged, OneWrittenPageIsEnoughUnderTheDefaultMaxPtesNone) {
  // 511 empty PTEs become zeroed pages: the range's memory grows 512-fold.
  CollapseWorld t;
  t.write(0, 7, 1);
  t.madvise_hugepage();
  t.w.mgr.khugepaged_run();
  EXPECT_TRUE(t.huge(0));
  EXPECT_EQ(t.mm->rss_anon, 512u);
  t.w.expect_consistent();
}

TEST(Khugepaged, MoreEmptyPtesThanMaxPtesNoneKeepTheRangeAsItIs) {
  MmConfig c = madvise_config();
  c.khugepaged_max_ptes_none = 0;
  CollapseWorld t(c);
  t.write(0, 0, kHugePages - 1);
  t.madvise_hugepage();
  t.w.mgr.khugepaged_run();
  EXPECT_FALSE(t.huge(0));
  EXPECT_EQ(t.vm(Vm::thp_collapse_alloc), 0);
}

TEST(Khugepaged, ARangeMappedOnlyReadOnlyIsNotCollapsed) {
  // After fork every PTE is write-protected: no writable PTE, no collapse.
  CollapseWorld t;
  t.write(0, 0, kHugePages);
  t.madvise_hugepage();
  auto child = t.w.mgr.mm_alloc();
  t.w.mgr.dup_mmap(*t.mm, *child, CpuId(0));
  EXPECT_TRUE(child->khugepaged);  // khugepaged_fork
  t.w.mgr.khugepaged_run();
  EXPECT_FALSE(t.huge(0));
  t.w.teardown(*child);
}

TEST(Khugepaged, AtMostMaxPtesSharedPagesMappedTwiceAfterForkAreCopiedIn) {
  // The parent's writes make pages its own again; 256 shared may remain.
  for (const auto& [written, collapsed] : {std::pair{256u, true}, std::pair{255u, false}}) {
    CollapseWorld t;
    t.write(0, 0, kHugePages);
    t.madvise_hugepage();
    auto child = t.w.mgr.mm_alloc();
    t.w.mgr.dup_mmap(*t.mm, *child, CpuId(0));
    t.write(0, 0, written);
    t.w.mgr.khugepaged_run();
    EXPECT_EQ(t.huge(0), collapsed) << written << " pages written after fork";
    // The child keeps the old pages.
    EXPECT_EQ(child->rss_anon, 512u);
    t.w.expect_consistent();
    t.w.teardown(*child);
  }
}

TEST(Khugepaged, APassScansPagesToScanAndTheNextGoesOnFromThere) {
  // 4096 a pass: 8 ranges, each one 512, plus the mm's 1.
  CollapseWorld t(madvise_config(), 20);
  for (uint64_t r = 0; r < 20; ++r) t.write(r, 0, 1);
  t.madvise_hugepage();
  t.w.mgr.khugepaged_run();
  EXPECT_EQ(t.vm(Vm::thp_collapse_alloc), 8);
  EXPECT_TRUE(t.huge(7));
  EXPECT_FALSE(t.huge(8));
  EXPECT_EQ(t.w.mgr.khugepaged_stats().full_scans, 0u);
  t.w.mgr.khugepaged_run();
  EXPECT_EQ(t.vm(Vm::thp_collapse_alloc), 16);
  t.w.mgr.khugepaged_run();
  EXPECT_EQ(t.vm(Vm::thp_collapse_alloc), 20);
  EXPECT_EQ(t.w.mgr.khugepaged_stats().full_scans, 1u);
  t.w.expect_consistent();
}

TEST(Khugepaged, TheThpGoesToTheNodeThatHoldsMostOfTheRange) {
  CollapseWorld t;
  t.write(0, 0, 200, /*node=*/0);
  t.write(0, 200, 312, /*node=*/1);
  t.madvise_hugepage();
  t.w.mgr.khugepaged_run();
  ASSERT_TRUE(t.huge(0));
  const Pfn head(t.mm->pgtable().table(t.a)->pmd().pfn);
  EXPECT_EQ(t.w.mgr.folios().folio(head).node, NodeId(1));
  t.w.expect_consistent();
}

TEST(Khugepaged, APteMappedThpIsCopiedIntoANewOneFrom5_8) {
  for (const bool large : {true, false}) {
    MmConfig c = madvise_config();
    c.thp_enabled = ThpEnabled::kAlways;
    c.khugepaged_collapse_large = large;
    CollapseWorld t(c);
    t.write(0, 0, 1);  // a THP, registered
    ASSERT_TRUE(t.huge(0));
    // MADV_DONTNEED of one page splits the PMD: 511 PTEs of the old THP.
    t.w.mgr.madvise_dontneed(*t.mm, Vpn(t.a.v + 3), 1, CpuId(0));
    ASSERT_FALSE(t.huge(0));
    t.w.mgr.khugepaged_run();
    EXPECT_EQ(t.huge(0), large);
    // The old THP went with its last page's mapping.
    EXPECT_EQ(t.vm(Vm::nr_anon_pages), 512);
    t.w.expect_consistent();
  }
}

TEST(Khugepaged, AFailedAllocationSleepsAndASecondEndsThePass) {
  CollapseWorld t;
  t.write(0, 0, 1);
  t.write(1, 0, 1);
  t.madvise_hugepage();
  auto filler = t.w.mgr.mm_alloc();
  const uint64_t fill = kMachinePages - 300;
  const Vpn f = t.w.map(*filler, fill, kRW);
  for (uint64_t i = 0; i < fill; ++i) t.w.fault(*filler, Vpn(f.v + i), true);
  ASSERT_LT(t.w.mgr.folios().free_pages(NodeId(0)), kHugePages);
  EXPECT_EQ(t.w.mgr.khugepaged_run().next, Next::kAllocSleep);
  EXPECT_EQ(t.vm(Vm::thp_collapse_alloc_failed), 1);
  EXPECT_EQ(t.w.mgr.khugepaged_run().next, Next::kScanSleep);
  EXPECT_EQ(t.vm(Vm::thp_collapse_alloc_failed), 2);
  EXPECT_FALSE(t.huge(0));
  t.w.expect_consistent();
  t.w.teardown(*filler);
}

TEST(Khugepaged, AnExitedMmLeavesTheListAndTheThreadIdles) {
  CollapseWorld t;
  t.write(0, 0, 1);
  t.madvise_hugepage();
  t.w.teardown(*t.mm);
  EXPECT_FALSE(t.mm->khugepaged);
  EXPECT_EQ(t.w.mgr.khugepaged_run().next, Next::kIdle);
}

}  // namespace
}  // namespace mmsim::mm

namespace mmsim {
namespace {

using testing::run_text;

// 32 MiB written in base pages (THP madvise, not yet advised), made
// MADV_HUGEPAGE, then swept for `seconds`.
std::string collapse_scenario(int seconds, const std::string& extra = "") {
  return R"(
[scenario]
name = "khugepaged"
seed = 1
time_limit = "60s"

[machine]
preset = "2s-16c"
cores_per_socket = 2
mem_per_node = "256MiB"

[kernel]
version = "6.1"
transparent_hugepage = "madvise"
thp_anon_align = "pmd-multiple"  # 16 whole ranges whatever the version
)" + extra +
         R"(

[run]
program = "main"

[[programs.main]]
op = "map"
region = "data"
size = "32MiB"

[[programs.main]]
op = "touch"
region = "data"
mode = "write"

[[programs.main]]
op = "madvise"
region = "data"
advice = "hugepage"

[[programs.main]]
op = "loop"
duration = ")" +
         std::to_string(seconds) +
         R"(s"
body = [{ op = "sweep", region = "data" }]
)";
}

TEST(KhugepagedRun, AtTheDefaultPaceEachPassEvery10sCollapsesEightRanges) {
  // The registration wakes the thread at once; the next pass is 10 s later.
  EXPECT_EQ(run_text(collapse_scenario(5)).vm("thp_collapse_alloc"), 8);
  EXPECT_EQ(run_text(collapse_scenario(15)).vm("thp_collapse_alloc"), 16);
}

TEST(KhugepagedRun, AShorterScanSleepCollapsesSooner) {
  const auto r = run_text(collapse_scenario(1, "khugepaged_scan_sleep_millisecs = 100"));
  EXPECT_EQ(r.vm("thp_collapse_alloc"), 16);
  EXPECT_EQ(r.result.khugepaged_pages_collapsed, 16u);
  EXPECT_GT(r.result.khugepaged_s, 0);
}

TEST(KhugepagedRun, ASleepOf0IsOneTickNotPassesBackToBack) {
  // 1 s at HZ=250: some 250 passes, not millions.
  const auto r = run_text(collapse_scenario(1, "khugepaged_scan_sleep_millisecs = 0"));
  EXPECT_EQ(r.vm("thp_collapse_alloc"), 16);
  EXPECT_LT(r.result.events, 2000u);
  EXPECT_GT(r.result.khugepaged_full_scans, 100u);
}

TEST(KhugepagedRun, ItsSleepBetweenPassesDoesNotLengthenTheRun) {
  // Its next pass is due 10 s after the first: the run still ends when its
  // last task does, within its time limit.
  const auto r = run_text(collapse_scenario(1));
  EXPECT_FALSE(r.result.time_limit_hit);
  EXPECT_LT(r.result.elapsed_s, 2);
}

TEST(KhugepagedRun, WithThpNeverNothingRegistersOrCollapses) {
  const auto r = run_text(collapse_scenario(15), {"kernel.transparent_hugepage=never"});
  EXPECT_EQ(r.result.khugepaged_s, 0);
  EXPECT_EQ(r.result.khugepaged_pages_collapsed, 0u);
}

}  // namespace
}  // namespace mmsim

// Readahead marks and major faults (mm/filemap.c filemap_fault,
// do_sync_mmap_readahead, do_async_mmap_readahead; mm/memory.c
// mm_account_fault): vmstat counts a miss, the task also a retried fault.
#include <gtest/gtest.h>

#include "mm/memory_manager.h"
#include "support/mm_fixture.h"

namespace mmsim::mm {
namespace {

using testing::kR;
using testing::MmWorld;

// A 64-page file, not cached, mapped shared and read-only; 128 KiB (32-page)
// readahead windows.
struct Uncached {
  explicit Uncached(MmConfig cfg) : w(cfg) {
    file = &w.mgr.create_file("data", 64, false);
    mm = w.mgr.mm_alloc();
    // The mmap base lies a page below a 2 MiB boundary (x86-64's, not
    // randomised): 15 pages first put the file on a fault-around block.
    w.map(*mm, 15, testing::kRW);
    a = w.map(*mm, 64, kR | Vma::kShared, file);
    EXPECT_EQ(a.v % 16, 0u);
  }
  ~Uncached() { w.teardown(*mm); }
  MmWorld w;
  AddressSpace* file = nullptr;
  std::shared_ptr<Mm> mm;
  Vpn a{};
};

MmConfig no_fault_around(bool retried_is_major) {
  MmConfig c = testing::test_mm_config();
  c.fault_around_kb = 0;
  c.retried_fault_is_major = retried_is_major;
  return c;
}

TEST(FileReadahead, AMissReadsAWindowAndMarksItsLastQuarterAsync) {
  Uncached u(no_fault_around(true));
  u.w.fault(*u.mm, u.a, false);
  EXPECT_EQ(u.w.mgr.vmstat()[Vm::pgmajfault], 1);
  EXPECT_EQ(u.w.majflt, 1u);
  EXPECT_EQ(u.file->nrpages, 32u);
  EXPECT_TRUE(u.w.mgr.folios().folio(Pfn(u.file->lookup(24))).test(Folio::kReadahead));
  EXPECT_FALSE(u.w.mgr.folios().folio(Pfn(u.file->lookup(23))).test(Folio::kReadahead));
  u.w.expect_consistent();
}

TEST(FileReadahead, AFaultOnTheMarkReadsTheNextWindowAndIsMajorOnlyForTheTask) {
  Uncached u(no_fault_around(true));
  u.w.fault(*u.mm, u.a, false);
  auto c = u.w.ctx();
  const FaultResult r = u.w.mgr.handle_mm_fault(*u.mm, Vpn(u.a.v + 24), false, c);
  EXPECT_GT(r.cost.io_ns, 0);
  EXPECT_EQ(u.file->nrpages, 64u);
  EXPECT_EQ(u.w.mgr.vmstat()[Vm::pgpgin], 64 * 4);
  EXPECT_EQ(u.w.mgr.vmstat()[Vm::pgmajfault], 1);  // no miss
  EXPECT_EQ(u.w.majflt, 2u);                       // retried: FAULT_FLAG_TRIED
  EXPECT_FALSE(u.w.mgr.folios().folio(Pfn(u.file->lookup(24))).test(Folio::kReadahead));
  // The next window is marked at its first page (async_size = size).
  EXPECT_TRUE(u.w.mgr.folios().folio(Pfn(u.file->lookup(32))).test(Folio::kReadahead));
  u.w.expect_consistent();
}

TEST(FileReadahead, AMissInsideTheFileReadsAWindowCentredOnIt) {
  // do_sync_mmap_readahead's read-around: ra_pages from 16 before the fault.
  Uncached u(no_fault_around(true));
  u.w.fault(*u.mm, Vpn(u.a.v + 32), false);
  EXPECT_EQ(u.file->nrpages, 32u);
  EXPECT_EQ(u.file->lookup(15), AddressSpace::kNone);
  EXPECT_NE(u.file->lookup(16), AddressSpace::kNone);
  EXPECT_NE(u.file->lookup(47), AddressSpace::kNone);
  EXPECT_EQ(u.file->lookup(48), AddressSpace::kNone);
  EXPECT_TRUE(u.w.mgr.folios().folio(Pfn(u.file->lookup(40))).test(Folio::kReadahead));
  u.w.expect_consistent();
}

TEST(FileReadahead, TheMarkOfACentredWindowReadsOnFromItsEnd) {
  // page_cache_async_ra: the next window starts where the last one ended,
  // here cut by the file's end, and is marked at its first page.
  Uncached u(no_fault_around(true));
  u.w.fault(*u.mm, Vpn(u.a.v + 32), false);
  u.w.fault(*u.mm, Vpn(u.a.v + 40), false);
  EXPECT_EQ(u.file->nrpages, 48u);
  EXPECT_NE(u.file->lookup(63), AddressSpace::kNone);
  EXPECT_TRUE(u.w.mgr.folios().folio(Pfn(u.file->lookup(48))).test(Folio::kReadahead));
  EXPECT_EQ(u.w.mgr.vmstat()[Vm::pgmajfault], 1);
  u.w.expect_consistent();
}

TEST(FileReadahead, UpTo6_4ARetriedFaultCountsPgfaultForEachAttempt) {
  for (bool per_attempt : {true, false}) {
    MmConfig c = no_fault_around(true);
    c.pgfault_per_attempt = per_attempt;
    Uncached u(c);
    u.w.fault(*u.mm, u.a, false);              // a miss: read, retried
    u.w.fault(*u.mm, Vpn(u.a.v + 1), false);   // cached: one attempt
    u.w.fault(*u.mm, Vpn(u.a.v + 24), false);  // the mark: read, retried
    EXPECT_EQ(u.w.mgr.vmstat()[Vm::pgfault], per_attempt ? 5 : 3);
    EXPECT_EQ(u.w.majflt + u.w.minflt, 3u);  // the task counts faults
  }
}

TEST(FileMmap, ADiskFileCoveringAnAligned2MiBIsMappedAtItsOffsetModulo2MiB) {
  // thp_get_unmapped_area (ext4): whatever is mapped before it, so that
  // fault-around's 16-page blocks line up with the readahead windows.
  MmWorld w(testing::test_mm_config());
  auto mm = w.mgr.mm_alloc();
  w.map(*mm, 3, testing::kRW);  // leaves the next free address unaligned
  AddressSpace& disk = w.mgr.create_file("disk", 2048, false);
  AddressSpace& tmpfs = w.mgr.create_file("tmpfs", 2048, true);
  EXPECT_EQ(w.map(*mm, 1024, kR | Vma::kShared, &disk).v % 512, 0u);
  EXPECT_EQ(w.map(*mm, 1024, kR | Vma::kShared, &disk, 515).v % 512, 3u);
  // Less than an aligned 2 MiB of the file, or tmpfs: where it falls.
  EXPECT_NE(w.map(*mm, 600, kR | Vma::kShared, &disk, 3).v % 512, 3u);
  EXPECT_NE(w.map(*mm, 1024, kR | Vma::kShared, &tmpfs).v % 512, 0u);
  MmConfig old = testing::test_mm_config();
  old.file_thp_align = false;  // before 5.18: DAX files only
  MmWorld w2(old);
  auto mm2 = w2.mgr.mm_alloc();
  w2.map(*mm2, 3, testing::kRW);
  AddressSpace& disk2 = w2.mgr.create_file("disk", 2048, false);
  EXPECT_NE(w2.map(*mm2, 1024, kR | Vma::kShared, &disk2).v % 512, 0u);
  w.teardown(*mm);
  w2.teardown(*mm2);
}

TEST(FileReadahead, BeforeFiveNineTheFaultRetriedAtAMarkIsAMinorFault) {
  Uncached u(no_fault_around(false));
  u.w.fault(*u.mm, u.a, false);
  u.w.fault(*u.mm, Vpn(u.a.v + 24), false);
  EXPECT_EQ(u.file->nrpages, 64u);
  EXPECT_EQ(u.w.majflt, 1u);  // only the miss returned VM_FAULT_MAJOR
  EXPECT_EQ(u.w.minflt, 1u);
}

TEST(FileReadahead, FaultAroundLeavesAMarkedPageToARealFault) {
  Uncached u(testing::test_mm_config());  // 64 KiB fault-around
  u.w.fault(*u.mm, u.a, false);
  u.w.fault(*u.mm, Vpn(u.a.v + 16), false);
  EXPECT_FALSE(u.mm->pgtable().get(Vpn(u.a.v + 23)).none());
  EXPECT_TRUE(u.mm->pgtable().get(Vpn(u.a.v + 24)).none());
  EXPECT_FALSE(u.mm->pgtable().get(Vpn(u.a.v + 25)).none());
  EXPECT_EQ(u.file->nrpages, 32u);  // nothing read ahead yet
}

TEST(FileReadahead, RetriedFaultsAreMajorFrom5_9To6_6) {
  const auto& table = mm_switches();
  for (const auto& s : table) {
    if (s.info.key != "retried_fault_is_major") continue;
    EXPECT_EQ(s.info.value_for({5, 8}), 0);
    EXPECT_EQ(s.info.value_for({5, 9}), 1);
    EXPECT_EQ(s.info.value_for({6, 6}), 1);
    // The per-VMA-lock attempt's retry is not FAULT_FLAG_TRIED (measured on
    // Debian's 6.12: 1 maj_flt where 6.1 counts 257).
    EXPECT_EQ(s.info.value_for({6, 7}), 0);
    EXPECT_EQ(s.info.value_for({6, 12}), 0);
    return;
  }
  ADD_FAILURE() << "no kernel.retried_fault_is_major switch";
}

TEST(FileReadahead, AReadaheadPageThatCannotBeAllocatedEndsTheWindowAfterOneReclaimRound) {
  // Memory is full but for one page. The faulting page takes it; the next
  // page of the window is readahead (__GFP_NORETRY): one round of direct
  // reclaim, which frees nothing, and the window stops there rather than
  // trying each of its other 30 pages.
  MmWorld w(no_fault_around(true), 256);
  testing::BarrenReclaim reclaim;
  w.mgr.set_reclaim(&reclaim);
  auto mm = w.mgr.mm_alloc();
  const Vpn anon = w.map(*mm, 512, testing::kRW);
  uint64_t filled = 0;
  while (filled < 512 && w.fault(*mm, Vpn(anon.v + filled), true) == FaultStatus::kOk) ++filled;
  ASSERT_LT(filled, 512u);  // the anon fault that found no memory
  AddressSpace& file = w.mgr.create_file("data", 64, false);
  const Vpn a = w.map(*mm, 64, kR | Vma::kShared, &file);
  // One free page for the fault's page, and one for its PTE table if it
  // needs one.
  const uint64_t free = mm->pgtable().table(a) ? 1 : 2;
  w.mgr.munmap(*mm, Vpn(anon.v + filled - free), free, CpuId(0));
  reclaim.rounds = 0;
  EXPECT_EQ(w.fault(*mm, a, false), FaultStatus::kOk);
  EXPECT_EQ(file.nrpages, 1u);
  EXPECT_EQ(reclaim.rounds, 1);
  w.expect_consistent();
  w.teardown(*mm);
}

}  // namespace
}  // namespace mmsim::mm

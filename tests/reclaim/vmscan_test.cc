// Page reclaim with the classic LRU (mm/vmscan.c): watermarks, the
// allocator's slow path, folio_check_references, refault activation, and
// kswapd on a whole run.
#include "reclaim/vmscan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/mm_fixture.h"
#include "support/run.h"

namespace mmsim::reclaim {
namespace {

using mm::Folio;
using mm::Vm;
using testing::kR;
using testing::MmWorld;

TEST(Watermarks, MinFollowsTheSquareRootRuleAndLowAndHighAreAGapAbove) {
  // One node of 16 GiB (two of 8 GiB share it): min_free_kbytes =
  // 4 x sqrt(16 GiB in KiB) = 16384 KiB = 4096 pages, half a node each; the
  // gap is 0.1% of the node (2097 pages), more than min/4 (512).
  mm::MmConfig c = testing::test_mm_config();
  c.thp_enabled = mm::ThpEnabled::kNever;
  MmWorld w(c, (8ull << 30) / kPageSize);
  const mm::Watermarks& wm = w.mgr.folios().watermarks(NodeId(0));
  EXPECT_EQ(wm.min, 2048u);
  EXPECT_EQ(wm.low, 2048u + 2097u);
  EXPECT_EQ(wm.high, 2048u + 2 * 2097u);
}

TEST(Watermarks, WithThpOnMinIsRaisedToElevenPageblocksAZone) {
  // set_recommended_min_free_kbytes: zones DMA, DMA32 and Normal on node 0
  // (8 GiB), Normal on node 1: 4 x 11 x 512 pages = 22528, above the square
  // root rule's 4096 and under 5% of memory; 11264 a node.
  MmWorld w(testing::test_mm_config(), (8ull << 30) / kPageSize);
  ASSERT_TRUE(w.mgr.thp_on());
  EXPECT_EQ(w.mgr.folios().watermarks(NodeId(0)).min, 11264u);
  EXPECT_EQ(w.mgr.folios().watermarks(NodeId(1)).min, 11264u);
}

TEST(Watermarks, WithThpOnMinStaysUnder5PercentOfMemory) {
  // 2 x 256 MiB: 3 zones x 11 x 512 = 16896 pages, more than 5% of the
  // 131072 pages (6553): 6553, 3276 a node.
  MmWorld w(testing::test_mm_config(), 65536);
  ASSERT_TRUE(w.mgr.thp_on());
  EXPECT_EQ(w.mgr.folios().watermarks(NodeId(0)).min, 3276u);
}

TEST(Watermarks, AScaleFactorOfZeroGivesTheOlderQuarterOfMin) {
  mm::MmConfig c = testing::test_mm_config();
  c.watermark_scale_factor = 0;
  c.min_free_kbytes = 4096;  // 1024 pages, 512 a node
  MmWorld w(c, 65536);
  const mm::Watermarks& wm = w.mgr.folios().watermarks(NodeId(1));
  EXPECT_EQ(wm.min, 512u);
  EXPECT_EQ(wm.low, 512u + 128u);
  EXPECT_EQ(wm.high, 512u + 256u);
}

// A file read through a shared read-only mapping into a machine that has
// reclaim wired in.
struct ReclaimWorld {
  ReclaimWorld() : vmscan(w.mgr, {}) {
    w.mgr.set_reclaim(&vmscan);
    mm = w.mgr.mm_alloc();
  }
  ~ReclaimWorld() { w.teardown(*mm); }
  // Maps `pages` of a new file and faults them in, one by one.
  Vpn read_file(uint64_t pages) {
    mm::AddressSpace& f = w.mgr.create_file("f" + std::to_string(files++), pages, false);
    const Vpn a = w.map(*mm, pages, kR | mm::Vma::kShared, &f);
    for (uint64_t i = 0; i < pages; ++i) w.fault(*mm, Vpn(a.v + i), false);
    return a;
  }
  MmWorld w;
  Vmscan vmscan;
  std::shared_ptr<mm::Mm> mm;
  int files = 0;
};

TEST(FolioReferences,
     AYoungMappingCountsOnceAndItsClearedBitIsSetAgainByTheNextAccessWithoutAFault) {
  ReclaimWorld r;
  const Vpn a = r.read_file(1);
  const Pfn pfn(r.mm->pgtable().get(a).pfn);
  // x86 installs PTEs young: folio_referenced finds one young mapping and
  // clears its bit.
  auto ref = r.w.mgr.folio_referenced(pfn);
  EXPECT_EQ(ref.mappings, 1);
  EXPECT_FALSE(r.mm->pgtable().get(a).flags & mm::Pte::kYoung);
  // The next access sets the bit again, with no fault counted.
  const uint64_t faults = r.w.mgr.vmstat()[Vm::pgfault];
  EXPECT_EQ(r.w.fault(*r.mm, a, false), mm::FaultStatus::kOk);
  EXPECT_TRUE(r.mm->pgtable().get(a).flags & mm::Pte::kYoung);
  EXPECT_EQ(r.w.mgr.vmstat()[Vm::pgfault], static_cast<int64_t>(faults));
  r.w.expect_consistent();
}

// A file page that two mms map, shared; the first's VMA with `first_flags`.
struct TwoMappings {
  explicit TwoMappings(uint32_t first_flags = 0) : other(r.w.mgr.mm_alloc()) {
    mm::AddressSpace& f = r.w.mgr.create_file("shared", 1, false);
    a = r.w.map(*r.mm, 1, kR | mm::Vma::kShared | first_flags, &f);
    b = r.w.map(*other, 1, kR | mm::Vma::kShared, &f);
    r.w.fault(*r.mm, a, false);
    r.w.fault(*other, b, false);
    pfn = Pfn(r.mm->pgtable().get(a).pfn);
  }
  ~TwoMappings() { r.w.teardown(*other); }
  bool young_in_other() const { return other->pgtable().get(b).flags & mm::Pte::kYoung; }
  ReclaimWorld r;
  std::shared_ptr<mm::Mm> other;
  Vpn a, b;
  Pfn pfn;
};

TEST(FolioReferences, TheWalkStopsAtAnMlockedMappingAndLeavesLaterOnesAlone) {
  TwoMappings m(mm::Vma::kLocked);
  ASSERT_TRUE(m.young_in_other());
  const auto ref = m.r.w.mgr.folio_referenced(m.pfn);
  EXPECT_TRUE(ref.locked);
  EXPECT_TRUE(m.young_in_other());  // folio_referenced_one broke the loop
}

TEST(FolioReferences, EachMappingCostsThePageTableLockAndAYoungOneALockedBitClear) {
  TwoMappings m;
  const auto& c = m.r.w.costs;
  const auto young = m.r.w.mgr.folio_referenced(m.pfn);  // both young
  const auto old = m.r.w.mgr.folio_referenced(m.pfn);    // both cleared by the first
  EXPECT_EQ(young.mappings, 2);
  EXPECT_EQ(old.mappings, 0);
  // The rmap lock and two page-table locks, at least (the PTE lines' misses
  // come on top).
  EXPECT_GE(old.cost_ns, 3 * c.lock_ns);
  EXPECT_DOUBLE_EQ(young.cost_ns - old.cost_ns, 2 * c.pte_protect_ns);
}

TEST(Kswapd, WakesOnlyWhenEveryZonelistNodeIsBelowLowAndBalancesToHigh) {
  ReclaimWorld r;
  mm::AddressSpace& f = r.w.mgr.create_file("big", 3 * 4096, false);
  const Vpn a = r.w.map(*r.mm, 3 * 4096, kR | mm::Vma::kShared, &f);
  // Read page by page until a kswapd is woken.
  std::vector<NodeId> woken;
  uint64_t i = 0;
  for (; i < 3 * 4096 && woken.empty(); ++i) {
    r.w.fault(*r.mm, Vpn(a.v + i), false);
    woken = r.vmscan.take_wakeups();
  }
  // Node 0 went below low first and the fast path spilled to node 1 without
  // waking anyone; the first wakeup came with both nodes at or below low,
  // and it woke both kswapds, before any direct reclaim.
  EXPECT_GT(r.w.mgr.vmstat()[Vm::numa_miss], 0);
  EXPECT_EQ(woken.size(), 2u);
  for (NodeId n : {NodeId(0), NodeId(1)})
    EXPECT_LE(r.w.mgr.folios().free_pages(n), r.w.mgr.folios().watermarks(n).low);
  EXPECT_EQ(r.w.mgr.vmstat()[Vm::pgscan_direct], 0);
  // Node 0's kswapd runs until the node is above its high watermark.
  ASSERT_TRUE(r.vmscan.kswapd_wake(NodeId(0), Tick(0)));
  Tick now(0);
  for (int k = 0; k < 100; ++k) {
    const Vmscan::Step s = r.vmscan.kswapd_step(NodeId(0), now);
    if (!s.run) break;
    now = now + to_tick(s.ns) + Tick(1);
  }
  EXPECT_TRUE(r.vmscan.balanced(NodeId(0)));
  EXPECT_GT(r.w.mgr.vmstat()[Vm::pgsteal_kswapd], 0);
  EXPECT_EQ(r.w.mgr.vmstat()[Vm::pgscan_direct], 0);
  r.w.expect_consistent();
}

TEST(DirectReclaim, AnAllocationBelowMinEverywhereReclaimsAndCountsAnAllocstall) {
  ReclaimWorld r;
  // Fill both nodes to their min watermark (kswapd is never run here).
  r.read_file(2 * 4096);
  EXPECT_GT(r.w.mgr.vmstat()[Vm::allocstall_movable], 0);
  EXPECT_GT(r.w.mgr.vmstat()[Vm::pgsteal_direct], 0);
  EXPECT_GE(r.w.mgr.vmstat()[Vm::pgscan_direct], r.w.mgr.vmstat()[Vm::pgsteal_direct]);
  for (NodeId n : {NodeId(0), NodeId(1)})
    EXPECT_GE(r.w.mgr.folios().free_pages(n), r.w.mgr.folios().watermarks(n).min);
  r.w.expect_consistent();
}

TEST(DirectReclaim, WithNothingReclaimableAnAllocationGoesOutOfMemoryAfterOneTry) {
  // should_reclaim_retry: no node would be above min even with every
  // reclaimable page freed (anonymous memory, no swap): no more retries.
  ReclaimWorld r;
  const Vpn a = r.w.map(*r.mm, 2 * 4096, testing::kRW);
  uint64_t i = 0;
  while (r.w.fault(*r.mm, Vpn(a.v + i), true) == mm::FaultStatus::kOk) ++i;
  EXPECT_LT(i, 2u * 4096);
  EXPECT_EQ(r.w.mgr.vmstat()[Vm::allocstall_movable], 1);
  r.w.expect_consistent();
}

TEST(Workingset, APageEvictedAndReadBackSoonIsActivatedOnRefault) {
  ReclaimWorld r;
  mm::AddressSpace& f = r.w.mgr.create_file("f", 4, false);
  const Vpn a = r.w.map(*r.mm, 4, kR | mm::Vma::kShared, &f);
  r.w.fault(*r.mm, a, false);
  const Pfn pfn(r.mm->pgtable().get(a).pfn);
  // Some active file pages make a workingset the refault distance fits in.
  r.w.mgr.lru().relist(pfn, [](Folio& g) { g.flags |= Folio::kActive; });
  const Vpn b = r.read_file(8);
  for (uint64_t i = 0; i < 8; ++i) {
    const Pfn p(r.mm->pgtable().get(Vpn(b.v + i)).pfn);
    r.w.mgr.lru().relist(p, [](Folio& g) { g.flags |= Folio::kActive; });
  }
  r.w.mgr.lru().relist(pfn, [](Folio& g) { g.flags &= ~Folio::kActive; });
  ASSERT_TRUE(r.w.mgr.evict_folio(pfn, CpuId(0)).has_value());
  r.w.fault(*r.mm, a, false);
  EXPECT_EQ(r.w.mgr.vmstat()[Vm::workingset_refault_file], 1);
  EXPECT_EQ(r.w.mgr.vmstat()[Vm::workingset_activate_file], 1);
  EXPECT_TRUE(r.w.folio_at(*r.mm, a).test(Folio::kActive));
  r.w.expect_consistent();
}

// The shipped scenario, smaller: two nodes of 32 MiB, a 128 MiB stream read
// twice beside a 4 MiB hot set.
testing::Ran run_kswapd_scenario() {
  return testing::run_text(std::string(R"(
[machine]
sockets = 2
cores_per_socket = 2
mem_per_node = "32MiB"
llc_per_socket = "8MiB"
[kernel]
version = "6.1"
numa_balancing = 0
[[files]]
name = "stream"
size = "128MiB"
[[files]]
name = "hot"
size = "4MiB"
[run]
program = "main"
[[programs.main]]
op = "pin"
nodes = [0]
[[programs.main]]
op = "map"
region = "stream"
file = "stream"
prot = "r"
flags = "shared"
[[programs.main]]
op = "map"
region = "hot"
file = "hot"
prot = "r"
flags = "shared"
[[programs.main]]
op = "threads"
count = 1
program = "hot"
[[programs.main]]
op = "loop"
count = 2
body = [ { op = "touch", region = "stream" } ]
[[programs.main]]
op = "wait"
[[programs.hot]]
op = "loop"
count = 400
body = [ { op = "sweep", region = "hot" } ]
)"));
}

TEST(KswapdRun, StreamingPageCacheIsReclaimedByKswapdAlmostAloneOnBothNodes) {
  const auto ran = run_kswapd_scenario();
  EXPECT_TRUE(ran.result.check_failures.empty());
  EXPECT_GT(ran.vm("pgsteal_kswapd"), 32768);  // most of 256 MiB read into 64 MiB
  // Direct reclaim steals under 1% (a few stalls when the stream outruns
  // kswapd's rmap walks).
  EXPECT_LT(ran.vm("pgsteal_direct") * 100, ran.vm("pgsteal_kswapd"));
  EXPECT_GT(ran.vm("numa_miss"), 0);  // node 0's task spilled to node 1 first
  ASSERT_EQ(ran.result.kswapd_s.size(), 2u);
  EXPECT_GT(ran.result.kswapd_s[0], 0);
  EXPECT_GT(ran.result.kswapd_s[1], 0);
}

TEST(KswapdRun, MappedPageCacheIsScannedTwiceBeforeItGoes) {
  // Young at its first scan (kept, PG_referenced), old at the second:
  // reclaimed. So kswapd scans about two pages per page it frees.
  const auto ran = run_kswapd_scenario();
  const double ratio =
      static_cast<double>(ran.vm("pgscan_kswapd")) / static_cast<double>(ran.vm("pgsteal_kswapd"));
  EXPECT_GT(ratio, 1.8);
  EXPECT_LT(ratio, 2.3);
}

TEST(KswapdRun, TheHotSetIsActivatedAndStaysWhileTheStreamGoesThrough) {
  const auto ran = run_kswapd_scenario();
  const int64_t hot_pages = 1024;
  EXPECT_GE(ran.vm("pgactivate"), hot_pages * 9 / 10);
  // Refaults are the stream's second pass (32768 pages), and few hot ones.
  EXPECT_GE(ran.vm("workingset_refault_file"), 32768 - 4096);
  EXPECT_LT(ran.vm("workingset_refault_file"), 32768 + hot_pages / 4);
}

}  // namespace
}  // namespace mmsim::reclaim

namespace mmsim::reclaim {
namespace {

// Anonymous memory 1.25 times the machine's, written once and read twice,
// with a swap device.
testing::Ran run_swap_scenario(const std::string& swap = "[swap]\nsize = \"64MiB\"\n") {
  return testing::run_text(R"(
[machine]
sockets = 2
cores_per_socket = 2
mem_per_node = "16MiB"
llc_per_socket = "8MiB"
[kernel]
version = "6.1"
numa_balancing = 0
)" + swap + R"(
[run]
program = "main"
[[programs.main]]
op = "map"
region = "a"
size = "40MiB"
[[programs.main]]
op = "touch"
region = "a"
mode = "write"
[[programs.main]]
op = "loop"
count = 2
body = [ { op = "sweep", region = "a" } ]
)");
}

TEST(Swap, AnonymousPagesBeyondMemoryGoToSwapAndFaultBackMajor) {
  const auto ran = run_swap_scenario();
  EXPECT_TRUE(ran.result.check_failures.empty());
  EXPECT_TRUE(ran.result.errors.empty());
  EXPECT_GT(ran.vm("pswpout"), 0);
  EXPECT_GT(ran.vm("pswpin"), 0);
  // Every page read back from the device was a major fault, and a refault
  // of a page whose eviction left a shadow in its slot. The other major
  // faults read back the executor's text, evicted too (each a refault).
  EXPECT_GE(ran.vm("pgmajfault"), ran.vm("pswpin"));
  EXPECT_LE(ran.vm("pgmajfault") - ran.vm("pswpin"), ran.vm("workingset_refault_file"));
  EXPECT_EQ(ran.vm("workingset_refault_anon"), ran.vm("pswpin"));
  EXPECT_GT(ran.vm("pgsteal_anon"), 0);
}

TEST(Swap, APageReadBackAndNotWrittenKeepsItsSlotAndGoesAgainWithoutAWrite) {
  // The sweeps only read: pages read back stay in the swap cache with their
  // slot, so evicting them again writes nothing.
  const auto ran = run_swap_scenario();
  EXPECT_LT(ran.vm("pswpout"), ran.vm("pgsteal_anon"));
}

TEST(Swap, WithoutASwapDeviceAnonymousPagesAreNeverScannedAndTheRunIsOutOfMemory) {
  const auto ran = run_swap_scenario("");
  EXPECT_EQ(ran.vm("pgscan_anon"), 0);
  EXPECT_EQ(ran.vm("pswpout"), 0);
  ASSERT_FALSE(ran.result.errors.empty());  // the 40 MiB mapping is past RAM
}

TEST(Swap, ShmemWhichReclaimDoesNotSwapGivesTheAllocatorNoReasonToRetry) {
  // Memory fills with a shared anonymous mapping while swap has room. Its
  // pages are on the anon lists, but reclaim here does not swap shmem
  // (SIMPLIFICATION), so the fault that finds no memory tries one round of
  // direct reclaim, not MAX_RECLAIM_RETRIES more, before the OOM path.
  mm::MmConfig c = testing::test_mm_config();
  c.swap_pages = 64;
  MmWorld w(c, 256);
  testing::BarrenReclaim reclaim;
  w.mgr.set_reclaim(&reclaim);
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 512, testing::kRW | mm::Vma::kShared);
  uint64_t filled = 0;
  for (; filled < 512; ++filled) {
    reclaim.rounds = 0;
    if (w.fault(*mm, Vpn(a.v + filled), true) != mm::FaultStatus::kOk) break;
  }
  ASSERT_LT(filled, 512u);
  EXPECT_GT(w.mgr.lru().node_shmem(NodeId(0)), 0u);
  EXPECT_EQ(reclaim.rounds, 1);
  w.expect_consistent();
  w.teardown(*mm);
}

TEST(Swap, AHugePageToReclaimIsSplitAndItsPagesGoToSwap) {
  // SIMPLIFICATION (no THP swap-out): the split's pages are reclaimed one by
  // one in the same pass, as split_folio_to_list puts them on its list.
  mm::MmConfig c = testing::test_mm_config();
  c.thp_enabled = mm::ThpEnabled::kAlways;
  c.swap_pages = 4096;
  MmWorld w(c, 65536);  // 512 MiB: THP's minimum
  Vmscan vmscan(w.mgr, {});
  w.mgr.set_reclaim(&vmscan);
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 512, testing::kRW);
  ASSERT_EQ(w.fault(*mm, a, true), mm::FaultStatus::kOk);
  ASSERT_EQ(w.mgr.vmstat()[Vm::thp_fault_alloc], 1);
  const NodeId nodes[] = {NodeId(0)};
  for (int i = 0; i < 4 && w.mgr.vmstat()[Vm::pswpout] == 0; ++i)
    vmscan.try_to_free_pages(nodes, CpuId(0));
  EXPECT_EQ(w.mgr.vmstat()[Vm::thp_split_pmd], 1);
  EXPECT_EQ(w.mgr.vmstat()[Vm::thp_split_page], 1);
  EXPECT_EQ(w.mgr.vmstat()[Vm::pswpout], 512);
  w.expect_consistent();
  w.teardown(*mm);
  w.expect_consistent();
}

TEST(Swap, AForkedChildSharesTheSwapEntryAndItsParentFindsTheChildsSwapCache) {
  mm::MmConfig c = testing::test_mm_config();
  c.swap_pages = 16;
  MmWorld w(c);
  auto parent = w.mgr.mm_alloc();
  const Vpn a = w.map(*parent, 1, testing::kRW);
  w.fault(*parent, a, true);
  const Pfn pfn(parent->pgtable().get(a).pfn);
  w.mgr.lru().del(pfn);  // isolated, as reclaim does
  // Written out (dirty), then freed (clean) at the next look.
  EXPECT_EQ(w.mgr.swap_out_folio(pfn, CpuId(0)).what, mm::MemoryManager::SwapOut::kWritten);
  EXPECT_EQ(w.mgr.swap_out_folio(pfn, CpuId(0)).what, mm::MemoryManager::SwapOut::kFreed);
  EXPECT_TRUE(parent->pgtable().get(a).swap());
  auto child = w.mgr.mm_alloc();
  w.mgr.dup_mmap(*parent, *child, CpuId(0));
  const uint32_t slot = parent->pgtable().get(a).pfn;
  EXPECT_EQ(w.mgr.swap()->slot(slot).count, 2u);
  // The child reads it back (major); the parent then finds it cached (minor).
  EXPECT_EQ(w.fault(*child, a, false), mm::FaultStatus::kOk);
  EXPECT_EQ(w.majflt, 1u);
  EXPECT_EQ(w.fault(*parent, a, false), mm::FaultStatus::kOk);
  EXPECT_EQ(w.majflt, 1u);
  EXPECT_EQ(parent->pgtable().get(a).pfn, child->pgtable().get(a).pfn);
  EXPECT_EQ(w.mgr.vmstat()[Vm::pswpin], 1);
  w.expect_consistent();  // the rmap finds both mappings (the chain's root anon_vma)
  w.teardown(*child);
  w.teardown(*parent);
  EXPECT_EQ(w.mgr.swap()->nr_free(), 16u);
}

}  // namespace
}  // namespace mmsim::reclaim

// Tests of the per-CPU lru_add batch (mm/swap.c folio_add_lru): a new small
// folio waits off the LRU, holding a reference, until its CPU's batch fills,
// a large folio comes, or an lru_add_drain runs.
#include <gtest/gtest.h>

#include "mm/memory_manager.h"
#include "numa/skip_rules.h"
#include "support/mm_fixture.h"
#include "support/run.h"

namespace mmsim::mm {
namespace {

using testing::kRW;
using testing::MmWorld;

MmConfig batched(int64_t size) {
  MmConfig c = testing::test_mm_config();
  c.lru_add_batch = size;
  return c;
}

TEST(LruBatch, NewPagesWaitOffTheLruUntilTheBatchFills) {
  MmWorld w(batched(15));
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 32, kRW);
  for (uint64_t i = 0; i < 14; ++i) ASSERT_EQ(w.fault(*mm, Vpn(a.v + i), true), FaultStatus::kOk);
  EXPECT_FALSE(w.folio_at(*mm, a).test(Folio::kLru));
  EXPECT_TRUE(w.folio_at(*mm, a).test(Folio::kLruBatched));
  w.expect_consistent();
  // The fifteenth fills it: all fifteen go on the LRU.
  ASSERT_EQ(w.fault(*mm, Vpn(a.v + 14), true), FaultStatus::kOk);
  for (uint64_t i = 0; i < 15; ++i) EXPECT_TRUE(w.folio_at(*mm, Vpn(a.v + i)).test(Folio::kLru));
  w.expect_consistent();
  w.teardown(*mm);
}

TEST(LruBatch, EachCpuHasItsOwnBatchAndADrainEmptiesOnlyItsOwn) {
  MmWorld w(batched(15));
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 2, kRW);
  ASSERT_EQ(w.fault(*mm, a, true, 0), FaultStatus::kOk);
  ASSERT_EQ(w.fault(*mm, Vpn(a.v + 1), true, 1), FaultStatus::kOk);
  w.mgr.lru_add_drain(CpuId(1));
  EXPECT_FALSE(w.folio_at(*mm, a).test(Folio::kLru));
  EXPECT_TRUE(w.folio_at(*mm, Vpn(a.v + 1)).test(Folio::kLru));
  w.mgr.lru_add_drain_all();
  EXPECT_TRUE(w.folio_at(*mm, a).test(Folio::kLru));
  w.expect_consistent();
  w.teardown(*mm);
}

TEST(LruBatch, WithoutABatchEachPageGoesOnTheLruAtOnce) {
  MmWorld w(batched(0));
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 1, kRW);
  ASSERT_EQ(w.fault(*mm, a, true), FaultStatus::kOk);
  EXPECT_TRUE(w.folio_at(*mm, a).test(Folio::kLru));
  w.teardown(*mm);
}

TEST(LruBatch, AFreedPageLeavesTheBatchOfAnotherCpu) {
  // munmap drains only the unmapping CPU's batch; the page waiting in CPU
  // 1's batch is freed out of it, and the batch no longer holds it.
  MmWorld w(batched(15));
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 1, kRW);
  ASSERT_EQ(w.fault(*mm, a, true, 1), FaultStatus::kOk);
  w.mgr.munmap(*mm, a, 1, CpuId(0));
  w.expect_consistent();
  w.mgr.lru_add_drain_all();
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_inactive_anon], 0);
  w.expect_consistent();
  w.teardown(*mm);
}

TEST(LruBatch, The61RefcountFormOfTheSharedCowSkipPassesOverABatchedPage) {
  // 5.17-6.9's change_prot_numa tests page_count: the batch's reference
  // makes a page of one mapping look shared.
  MmWorld w(batched(15));
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 1, kRW);
  ASSERT_EQ(w.fault(*mm, a, true), FaultStatus::kOk);
  numa::NumaConfig rules;
  rules.skip_shared_cow = true;
  rules.shared_cow_refcount = true;
  const numa::ProtNumaFilter filter(rules, std::nullopt, w.mgr.tiers(), 0);
  const Vma& vma = *mm->find_vma(a);
  const Pte pte = mm->pgtable().get(a);
  EXPECT_TRUE(filter.skip(vma, pte, &w.folio_at(*mm, a)));
  w.mgr.lru_add_drain_all();
  EXPECT_FALSE(filter.skip(vma, pte, &w.folio_at(*mm, a)));
  w.teardown(*mm);
}

TEST(LruBatch, AThreadsPagesLeftInTheBatchOfACpuItLeftFailToMigrate) {
  // 6.12: a thread faults its buffer in on node 0's CPU 0, then moves to
  // node 1 for good; the last pages it faulted wait in CPU 0's batch, off
  // the LRU, so their hinting faults' migrations fail (a 6.12 guest's
  // folio_isolate_lru: PG_lru clear, refcount 2). Without the batch all
  // of them move.
  const std::string s = R"([scenario]
name = "batch"
seed = 1
[machine]
sockets = 2
cores_per_socket = 2
mem_per_node = "1GiB"
llc_per_socket = "8MiB"
[kernel]
version = "6.12"
transparent_hugepage = "never"
numa_balancing = 1
[noise]
enabled = false
[run]
program = "main"
process_image = "mapped"
[[programs.main]]
op = "pin"
cpus = [0]
[[programs.main]]
op = "map"
region = "buf"
size = "100KiB"
[[programs.main]]
op = "touch"
region = "buf"
mode = "write"
[[programs.main]]
op = "pin"
cpus = [2]
[[programs.main]]
op = "loop"
duration = "3s"
body = [{ op = "sweep", region = "buf" }]
)";
  const auto with = testing::run_text(s);
  const auto without = testing::run_text(s, {"kernel.lru_add_batch=0"});
  // 25 pages: 31 would hold them all; none is on the LRU.
  EXPECT_EQ(without.vm("numa_pages_migrated"), 25);
  EXPECT_EQ(with.vm("numa_pages_migrated"), 0);
  EXPECT_GT(with.vm("numa_hint_faults"), 0);
}

}  // namespace
}  // namespace mmsim::mm

// The Migrator's steps in time: a base page of node 0 moved to node 1 on
// the small test machine, with an executor that only records the end.
#include "migrate/migrator.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "numa/skip_rules.h"
#include "scenario/scenario.h"
#include "support/mm_fixture.h"

namespace mmsim::migrate {
namespace {

using testing::kRW;
using testing::MmWorld;

struct Ended final : Executor {
  void on_unmapped(Migration&, mm::Mm&, Vpn, uint32_t, double, Tick) override {}
  bool holds_reference(const Migration&, const Waiter&) override { return false; }
  void release(const Migration&, const Waiter&, Tick, bool) override {}
  void finished(const Migration& m, Tick now) override {
    at = now;
    success = m.success;
  }
  Tick at = Tick::max();
  bool success = false;
};

mm::MmConfig with_batch(int64_t lru_add_batch,
                        mm::MigrateDrain drain = mm::MigrateDrain::kMlocked) {
  mm::MmConfig c = testing::test_mm_config();
  c.lru_add_batch = lru_add_batch;
  c.migrate_lru_drain = drain;
  return c;
}

// A page written on node 0 (on its LRU), its PTE made a NUMA hinting one
// (so no TLB to flush), and a migrator to move it; lru_add batches of
// `lru_add_batch` folios (0: none).
struct OnePage {
  explicit OnePage(int64_t lru_add_batch = 0, mm::MigrateDrain drain = mm::MigrateDrain::kMlocked,
                   bool mlocked = false)
      : w(with_batch(lru_add_batch, drain)),
        mm(w.mgr.mm_alloc()),
        migrator(queue, w.mgr, w.topo, w.costs, {}, ended) {
    a = w.map(*mm, 2, kRW);
    EXPECT_EQ(w.fault(*mm, a, true, 0), mm::FaultStatus::kOk);
    if (mlocked) {
      mm::FaultCtx c = w.ctx(0);
      EXPECT_EQ(w.mgr.mlock(*mm, a, 1, c).error, mm::MmError::kOk);
    }
    w.mgr.lru_add_drain(CpuId(0));
    pfn = Pfn(mm->pgtable().get(a).pfn);
    const numa::NumaConfig config;
    const numa::ProtNumaFilter filter(config, std::nullopt, w.mgr.tiers(), 0);
    w.mgr.change_prot_numa(*mm, *mm->find_vma(a), a, Vpn(a.v + 1), filter, CpuId(0));
    EXPECT_TRUE(mm->pgtable().get(a).protnone());
  }
  ~OnePage() { w.teardown(*mm); }
  CpuId node1_cpu() const { return w.topo.node(NodeId(1)).cpus.front(); }

  MmWorld w;
  std::shared_ptr<mm::Mm> mm;
  sim::EventQueue queue;
  Ended ended;
  Migrator migrator;
  Vpn a;
  Pfn pfn;
};

TEST(Migrator, ThePteStaysUntilTheFolioIsIsolatedAndItsDestinationAllocated) {
  OnePage p;
  const Tick unmap = to_tick(p.w.costs.migrate_isolate_ns + p.w.costs.page_alloc_ns);
  ASSERT_GT(unmap, Tick(1));

  p.migrator.start(p.pfn, NodeId(1), 1, p.node1_cpu(), Tick(0));
  p.queue.run(Tick(unmap.ns - 1));
  // Isolated and locked, its hinting PTE still there: another task's
  // hinting fault finds it so and gives up.
  EXPECT_TRUE(p.migrator.migrating(p.pfn));
  EXPECT_FALSE(p.w.mgr.folios().folio(p.pfn).test(mm::Folio::kLru));
  EXPECT_TRUE(p.mm->pgtable().get(p.a).protnone());
  p.queue.run(unmap);
  EXPECT_TRUE(p.mm->pgtable().get(p.a).migration());
  p.queue.run();

  EXPECT_TRUE(p.ended.success);
  EXPECT_EQ(p.w.folio_at(*p.mm, p.a).node, NodeId(1));
  p.w.expect_consistent();
}

TEST(Migrator, ItsStepsTakeTheIsolationAllocationPtesCopyAndFolioWork) {
  OnePage p;
  const cost::CostProfile& c = p.w.costs;
  const double copy = p.w.mgr.cache().page_copy_ns(NodeId(1), NodeId(0), NodeId(1));

  p.migrator.start(p.pfn, NodeId(1), 1, p.node1_cpu(), Tick(0));
  p.queue.run();

  // Each step's time rounds to a tick on its own.
  const Tick expected = to_tick(c.migrate_isolate_ns + c.page_alloc_ns) + to_tick(c.pte_clear_ns) +
                        to_tick(c.pte_set_ns + c.migrate_folio_ns) + to_tick(copy);
  EXPECT_EQ(p.ended.at, expected);
}

TEST(Migrator, WithoutAPageOnTheTargetNodeNothingIsUnmapped) {
  OnePage p;
  std::vector<Pfn> taken;
  while (auto f = p.w.mgr.folios().alloc_on(NodeId(1), mm::Mark::kLow)) taken.push_back(*f);

  p.migrator.start(p.pfn, NodeId(1), 1, p.node1_cpu(), Tick(0));
  while (!p.queue.empty()) {
    p.queue.run(p.queue.next_time());
    EXPECT_FALSE(p.mm->pgtable().get(p.a).migration());
  }

  EXPECT_FALSE(p.ended.success);
  EXPECT_EQ(p.w.mgr.vmstat()[mm::Vm::pgmigrate_fail], 1);
  EXPECT_TRUE(p.w.mgr.folios().folio(p.pfn).test(mm::Folio::kLru));  // put back
  for (const Pfn f : taken) p.w.mgr.folios().free(f);
  p.w.expect_consistent();
}

TEST(Migrator, AFailedMigrationPutsTheFolioBackThroughTheCpusLruAddBatch) {
  // putback_movable_pages -> folio_putback_lru -> folio_add_lru: the folio
  // waits off the LRU in the migrating CPU's batch, where a hinting fault's
  // isolation fails, until that batch drains.
  OnePage p(15);
  std::vector<Pfn> taken;
  while (auto f = p.w.mgr.folios().alloc_on(NodeId(1), mm::Mark::kLow)) taken.push_back(*f);
  p.migrator.start(p.pfn, NodeId(1), 1, p.node1_cpu(), Tick(0));
  p.queue.run();
  ASSERT_FALSE(p.ended.success);
  EXPECT_FALSE(p.w.mgr.folios().folio(p.pfn).test(mm::Folio::kLru));
  EXPECT_TRUE(p.w.mgr.folios().folio(p.pfn).test(mm::Folio::kLruBatched));
  p.w.mgr.lru_add_drain(p.node1_cpu());
  EXPECT_TRUE(p.w.mgr.folios().folio(p.pfn).test(mm::Folio::kLru));
  for (const Pfn f : taken) p.w.mgr.folios().free(f);
  p.w.expect_consistent();
}

// A page of node 1 waits in node 1's CPU's batch while the page at `a`
// moves there from node 0, by that CPU.
struct MovedBesideABatchedPage {
  explicit MovedBesideABatchedPage(mm::MigrateDrain drain, bool mlocked = false)
      : p(15, drain, mlocked), other(p.a.v + 1) {
    EXPECT_EQ(p.w.fault(*p.mm, other, true, p.node1_cpu().v), mm::FaultStatus::kOk);
    EXPECT_TRUE(p.w.folio_at(*p.mm, other).test(mm::Folio::kLruBatched));
    p.migrator.start(p.pfn, NodeId(1), 1, p.node1_cpu(), Tick(0));
    p.queue.run();
    EXPECT_TRUE(p.ended.success);
  }
  bool batched(Vpn v) { return p.w.folio_at(*p.mm, v).test(mm::Folio::kLruBatched); }
  bool on_lru(Vpn v) { return p.w.folio_at(*p.mm, v).test(mm::Folio::kLru); }

  OnePage p;
  const Vpn other;
};

TEST(Migrator, From5_18To6_6AMovedMappedFolioDrainsTheMigratingCpusLruAddBatch) {
  // migrate_folio_move: folio_add_lru of the new folio, then lru_add_drain
  // when the old one was mapped; the page waiting in that CPU's batch goes
  // on the LRU with it.
  MovedBesideABatchedPage m(mm::MigrateDrain::kMapped);
  EXPECT_TRUE(m.on_lru(m.p.a));
  EXPECT_TRUE(m.on_lru(m.other));
  m.p.w.expect_consistent();
}

TEST(Migrator, From6_7AMovedFolioWaitsInTheMigratingCpusBatchUnlessItWasMlocked) {
  // 6.7 drains only after moving an mlocked folio: the new folio and the
  // page before it wait off the LRU, so the next hinting fault cannot
  // isolate the moved page until the batch drains.
  MovedBesideABatchedPage m(mm::MigrateDrain::kMlocked);
  EXPECT_TRUE(m.batched(m.p.a));
  EXPECT_TRUE(m.batched(m.other));
  m.p.w.mgr.lru_add_drain(m.p.node1_cpu());
  EXPECT_TRUE(m.on_lru(m.p.a));
  m.p.w.expect_consistent();
}

TEST(Migrator, From6_7AMovedMlockedFolioDrainsTheMigratingCpusBatch) {
  // PAGE_WAS_MLOCKED: the drain that lets remove_migration_ptes count the
  // new folio's mlocks.
  MovedBesideABatchedPage m(mm::MigrateDrain::kMlocked, true);
  EXPECT_FALSE(m.batched(m.p.a));
  EXPECT_TRUE(m.p.w.folio_at(*m.p.mm, m.p.a).test(mm::Folio::kMlocked));
  EXPECT_TRUE(m.on_lru(m.other));
  m.p.w.expect_consistent();
}

TEST(Migrator, UpTo5_17AMovedFolioWaitsInTheMigratingCpusBatch) {
  // __unmap_and_move puts the new page back with putback_lru_page, through
  // the batch, and drains nothing.
  MovedBesideABatchedPage m(mm::MigrateDrain::kNever);
  EXPECT_TRUE(m.batched(m.p.a));
  EXPECT_TRUE(m.batched(m.other));
  m.p.w.expect_consistent();
}

TEST(Migrator, TheDrainAfterAMoveFollowsTheKernelVersion) {
  scenario::KernelConfig k;
  k.apply_version(*KernelVersion::parse("5.17"));
  EXPECT_EQ(k.mm.migrate_lru_drain, mm::MigrateDrain::kNever);
  k.apply_version(*KernelVersion::parse("6.1"));
  EXPECT_EQ(k.mm.migrate_lru_drain, mm::MigrateDrain::kMapped);
  k.apply_version(*KernelVersion::parse("6.6"));
  EXPECT_EQ(k.mm.migrate_lru_drain, mm::MigrateDrain::kMapped);
  k.apply_version(*KernelVersion::parse("6.7"));
  EXPECT_EQ(k.mm.migrate_lru_drain, mm::MigrateDrain::kMlocked);
}

}  // namespace
}  // namespace mmsim::migrate

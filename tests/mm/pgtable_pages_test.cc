// Page tables are memory: each PTE, PMD and PUD table is a page the task
// allocates (zeroed, by its own mempolicy, charged to its memcg), freed by
// free_pgtables, and a process's PGD is two pages under page-table
// isolation.
#include <gtest/gtest.h>

#include <string>

#include "memcg/memcg.h"
#include "mm/memory_manager.h"
#include "support/mm_fixture.h"
#include "support/run.h"

namespace mmsim::mm {
namespace {

using testing::kRW;
using testing::MmWorld;

int64_t vm(const MmWorld& w, Vm v) { return w.mgr.vmstat()[v]; }

TEST(PageTablePages, AProcessStartsWithATwoPagePgd) {
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  EXPECT_EQ(vm(w, Vm::pgalloc_normal), 2);
  EXPECT_EQ(vm(w, Vm::numa_hit), 1);             // one order-1 allocation
  EXPECT_EQ(vm(w, Vm::nr_page_table_pages), 0);  // a PGD is not NR_PAGETABLE
  w.expect_consistent();
  w.teardown(*mm);
}

TEST(PageTablePages, TheFirstFaultInAnAddressRangeAllocatesItsPudPmdAndPteTables) {
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 4, kRW);
  const int64_t before = vm(w, Vm::pgalloc_normal);
  w.fault(*mm, a, true);
  EXPECT_EQ(vm(w, Vm::pgalloc_normal) - before, 3 + 1);  // the tables and the page
  EXPECT_EQ(vm(w, Vm::nr_page_table_pages), 3);          // 6.7+: the PUD's counted too
  w.fault(*mm, Vpn(a.v + 1), true);
  EXPECT_EQ(vm(w, Vm::pgalloc_normal) - before, 3 + 2);  // the same tables serve it
  w.expect_consistent();
  w.teardown(*mm);
}

TEST(PageTablePages, Before6_7NrPageTablePagesLeavesThePudOut) {
  MmConfig c = testing::test_mm_config();
  c.pagetable_stat = PagetableStat::kPmd;
  MmWorld w(c);
  auto mm = w.mgr.mm_alloc();
  w.fault(*mm, w.map(*mm, 4, kRW), true);
  EXPECT_EQ(vm(w, Vm::nr_page_table_pages), 2);
  w.expect_consistent();
  w.teardown(*mm);
}

TEST(PageTablePages, MunmapFreesTheTablesNoMappingReachesIntoAndKeepsAShared2MiB) {
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  // Two small mappings side by side share a PTE table.
  const Vpn a = w.map(*mm, 4, kRW);
  const Vpn b = w.map(*mm, 4, kRW);
  ASSERT_EQ(b.v >> kPteTableShift, a.v >> kPteTableShift);
  w.fault(*mm, a, true);
  w.fault(*mm, b, true);
  const int64_t tables = vm(w, Vm::nr_page_table_pages);
  w.mgr.munmap(*mm, b, 4, CpuId(0));
  EXPECT_EQ(vm(w, Vm::nr_page_table_pages), tables);  // a still maps into it
  w.mgr.munmap(*mm, a, 4, CpuId(0));
  EXPECT_EQ(vm(w, Vm::nr_page_table_pages), 0);                 // PTE, PMD and PUD tables gone
  EXPECT_EQ(vm(w, Vm::pgalloc_normal) - vm(w, Vm::pgfree), 2);  // the PGD stays
  w.expect_consistent();
  w.teardown(*mm);
}

TEST(PageTablePages, MadviseDontneedKeepsThePteTable) {
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 4, kRW);
  w.fault(*mm, a, true);
  const int64_t tables = vm(w, Vm::nr_page_table_pages);
  w.mgr.madvise_dontneed(*mm, a, 4, CpuId(0));
  EXPECT_EQ(vm(w, Vm::nr_page_table_pages), tables);
  w.expect_consistent();
  w.teardown(*mm);
}

TEST(PageTablePages, TheLastReferenceToAnMmFreesItsPgd) {
  MmWorld w;
  {
    auto mm = w.mgr.mm_alloc();
    w.fault(*mm, w.map(*mm, 4, kRW), true);
    w.teardown(*mm);
    EXPECT_EQ(vm(w, Vm::pgalloc_normal) - vm(w, Vm::pgfree), 2);
  }
  EXPECT_EQ(vm(w, Vm::pgfree), vm(w, Vm::pgalloc_normal));
  w.expect_consistent();
}

TEST(PageTablePages, ForkCopiesTablesOnlyForMappingsWithAnonymousPages) {
  MmWorld w;
  auto parent = w.mgr.mm_alloc();
  AddressSpace& file = w.mgr.create_file("f", 4, false);
  // Far apart: each mapping in a 1 GiB range of its own.
  const Vpn anon = w.map_at(*parent, Vpn(uint64_t{1} << 20), 4, kRW);
  const Vpn shared = w.map(*parent, 4, testing::kR | Vma::kShared, &file);
  w.fault(*parent, anon, true);
  w.fault(*parent, shared, false);
  const int64_t before = vm(w, Vm::pgalloc_normal);
  auto child = w.mgr.mm_alloc();
  w.mgr.dup_mmap(*parent, *child, CpuId(0));
  // Its PGD, then the PUD, PMD and PTE tables of the anonymous mapping: the
  // file's the child faults in for itself.
  EXPECT_EQ(vm(w, Vm::pgalloc_normal) - before, 2 + 3);
  EXPECT_NE(child->pgtable().table(anon), nullptr);
  EXPECT_EQ(child->pgtable().table(shared), nullptr);
  w.expect_consistent();
  w.teardown(*child);
  w.teardown(*parent);
}

TEST(PageTablePages, TablesFollowTheTasksPolicyNotTheMappings) {
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  MmapArgs args;
  args.pages = 4;
  args.vm_flags = kRW;
  args.policy.mode = MemPolicy::Mode::kBind;
  args.policy.nodes = {NodeId(1)};
  const Vpn a = w.mgr.mmap(*mm, args, CpuId(0)).addr;
  const uint64_t node0 = w.mgr.folios().used_pages(NodeId(0));
  w.fault(*mm, a, true);  // from CPU 0, on node 0
  EXPECT_EQ(w.folio_at(*mm, a).node, NodeId(1));
  EXPECT_EQ(w.mgr.folios().used_pages(NodeId(0)) - node0, 3u);  // PUD, PMD, PTE: local
  w.expect_consistent();
  w.teardown(*mm);
}

TEST(PageTablePages, AnInterleavingTaskSpreadsItsTablesInTurn) {
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 4, kRW);
  MemPolicy interleave;
  interleave.mode = MemPolicy::Mode::kInterleave;
  interleave.nodes = {NodeId(0), NodeId(1)};
  uint64_t il_next = 0;
  FaultCtx ctx = w.ctx(0);
  ctx.task_policy = &interleave;
  ctx.il_next = &il_next;
  const uint64_t node1 = w.mgr.folios().used_pages(NodeId(1));
  w.mgr.handle_mm_fault(*mm, a, true, ctx);
  EXPECT_EQ(il_next, 3u);  // PUD on node 0, PMD on node 1, PTE on node 0
  // The PMD table and the page (by its VMA's offset, vpn odd or even).
  EXPECT_GE(w.mgr.folios().used_pages(NodeId(1)) - node1, 1u);
  w.expect_consistent();
  w.teardown(*mm);
}

// 4 MiB written by a task in memcg /t, on `version`: /t's files.
memcg::MemCgroup two_thps_in_a_memcg(const std::string& version) {
  const auto ran = testing::run_text(R"(
[scenario]
time_limit = "500ms"
[machine]
sockets = 2
cores_per_socket = 2
mem_per_node = "64MiB"
llc_per_socket = "8MiB"
[kernel]
version = ")" + version + R"("
[[cgroups]]
path = "/t"
[run]
program = "main"
cgroup = "/t"
[[programs.main]]
op = "map"
region = "a"
size = "4MiB"
[[programs.main]]
op = "touch"
region = "a"
mode = "write"
[[programs.main]]
op = "sleep"
duration = "1s"
)",
                                     {"memcg.charge_batch=1"});  // usage without per-CPU stock
  for (const auto& g : ran.result.memcg)
    if (g.path == "/t") return g;
  ADD_FAILURE() << "no /t";
  return {};
}

TEST(PageTablePages, AreChargedToTheTasksMemcgAndShownAsPagetablesUnderV2) {
  // Two THPs and their deposited PTE tables. (The PMD and PUD tables above
  // them came with the fork from mmsim-exec: its allocations, in the root.)
  const memcg::MemCgroup now = two_thps_in_a_memcg("6.12");
  EXPECT_EQ(now.pagetables, 2);
  // Before 4.6 page tables are not charged: the same run uses two pages less.
  const memcg::MemCgroup old = two_thps_in_a_memcg("4.5");
  EXPECT_EQ(old.pagetables, 0);
  EXPECT_EQ(now.usage - old.usage, 2u);
}

}  // namespace
}  // namespace mmsim::mm

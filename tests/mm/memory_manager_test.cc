#include "mm/memory_manager.h"

#include <gtest/gtest.h>

#include "support/mm_fixture.h"

namespace mmsim::mm {
namespace {

using testing::kR;
using testing::kRW;
using testing::MmWorld;

TEST(MmapLayout, ALaterMappingLiesJustBelowAnEarlierOne) {
  // x86-64's top-down layout, edge to edge: the NUMA scan and khugepaged,
  // which walk VMAs by address, meet the later mapping first.
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  const Vpn first = w.map(*mm, 100, kRW);
  const Vpn second = w.map(*mm, 50, kR);
  EXPECT_EQ(second.v + 50, first.v);
  EXPECT_EQ(mm->vmas().front()->start, second);
  EXPECT_EQ(mm->map_count(), 2u);
  w.teardown(*mm);
}

TEST(MmapLayout, ACompatibleMappingJustBelowAnotherExtendsIt) {
  // mmap_region's vma_merge: the same flags, file and policy, and no
  // anon_vma of another lineage.
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  const Vpn first = w.map(*mm, 100, kRW);
  const Vpn second = w.map(*mm, 50, kRW);
  EXPECT_EQ(second.v + 50, first.v);
  ASSERT_EQ(mm->map_count(), 1u);
  EXPECT_EQ(mm->vmas().front()->start, second);
  EXPECT_EQ(mm->vmas().front()->end.v, first.v + 100);
  w.teardown(*mm);
}

TEST(MmapLayout, AMappingWithAnotherPolicyIsNotMergedWithItsNeighbour) {
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  w.map(*mm, 100, kRW);
  MmapArgs a;
  a.pages = 50;
  a.vm_flags = kRW;
  a.policy.mode = MemPolicy::Mode::kBind;
  a.policy.nodes = {NodeId(0)};
  EXPECT_EQ(w.mgr.mmap(*mm, a, CpuId(0)).error, MmError::kOk);
  EXPECT_EQ(mm->map_count(), 2u);
  w.teardown(*mm);
}

TEST(MmapLayout, MprotectMergesARangeWithTheNeighbourItNowMatches) {
  // glibc's thread stack: mapped PROT_NONE, then opened up above its guard
  // page; the opened part joins a writable mapping just above it.
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  const Vpn buffer = w.map(*mm, 100, kRW);
  const Vpn stack = w.map(*mm, 10, 0);
  ASSERT_EQ(mm->map_count(), 2u);
  ASSERT_EQ(w.mgr.mprotect(*mm, Vpn(stack.v + 1), 9, kRW).error, MmError::kOk);
  ASSERT_EQ(mm->map_count(), 2u);  // the guard, and the stack with the buffer
  EXPECT_EQ(mm->find_vma(stack)->end.v, stack.v + 1);
  const Vma* merged = mm->find_vma(buffer);
  EXPECT_EQ(merged->start.v, stack.v + 1);
  EXPECT_EQ(merged->end.v, buffer.v + 100);
  w.teardown(*mm);
}

TEST(MmapLayout, MadviseThatGivesARangeItsNeighboursFlagsMergesThem) {
  // madvise_update_vma: MADV_HUGEPAGE on the second half of a VMA splits
  // it; the same advice on the first half makes the halves one again.
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 1024, kRW);
  ASSERT_EQ(w.mgr.madvise_hugepage(*mm, Vpn(a.v + 512), 512, true).error, MmError::kOk);
  ASSERT_EQ(mm->map_count(), 2u);
  ASSERT_EQ(w.mgr.madvise_hugepage(*mm, a, 512, true).error, MmError::kOk);
  ASSERT_EQ(mm->map_count(), 1u);
  EXPECT_EQ(mm->vmas().front()->pages(), 1024u);
  EXPECT_TRUE(mm->vmas().front()->flags & Vma::kHugepage);
  w.teardown(*mm);
}

TEST(MmapLayout, AForkedVmaWithItsParentsAnonVmaIsNotMergedInto) {
  // is_mergeable_anon_vma: a neighbour whose anon_vma chain holds its
  // parent's as well as its own stays apart (the chain is not singular).
  MmWorld w;
  auto parent = w.mgr.mm_alloc();
  const Vpn buffer = w.map(*parent, 100, kRW);
  ASSERT_EQ(w.fault(*parent, buffer, true), FaultStatus::kOk);
  auto child = w.mgr.mm_alloc();
  w.mgr.dup_mmap(*parent, *child, CpuId(0));
  ASSERT_EQ(w.fault(*child, buffer, true), FaultStatus::kOk);  // COW: the child's own anon_vma
  w.map(*child, 50, kRW);
  EXPECT_EQ(child->map_count(), 2u);
  w.teardown(*child);
  w.teardown(*parent);
}

TEST(MmapLayout, AnAddressHintIsTakenOnlyWhenItsRangeIsFree) {
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  const Vpn at(0x7e0000000);
  EXPECT_EQ(w.map_at(*mm, at, 10, kRW), at);
  MmapArgs again;
  again.addr = Vpn(at.v + 5);
  again.pages = 10;
  again.vm_flags = kRW;
  const Vpn got = w.mgr.mmap(*mm, again, CpuId(0)).addr;
  EXPECT_NE(got, *again.addr);
  EXPECT_EQ(mm->find_vma_intersection(got, Vpn(got.v + 10)), mm->find_vma(got));
  w.teardown(*mm);
}

TEST(MmapLayout, AHintEndingAtTheTopOfTheUserAddressSpaceIsTaken) {
  // [stack] ends at TASK_SIZE: a mapping may end there.
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  const Vpn at(kTaskSizePages - 33);
  EXPECT_EQ(w.map_at(*mm, at, 33, kRW), at);
  w.teardown(*mm);
}

TEST(MmapLayout, AMappingTakesTheHighestHoleThatFitsAfterAnUnmap) {
  // The search that starts where the last one ended must still see a hole
  // an munmap opened above it.
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  w.map(*mm, 100, kRW);
  const Vpn middle = w.map(*mm, 100, kRW);
  w.map(*mm, 100, kRW);
  w.map(*mm, 10, kRW);
  w.mgr.munmap(*mm, middle, 100, CpuId(0));
  const Vpn in_hole = w.map(*mm, 40, kRW);
  EXPECT_EQ(in_hole.v + 40, middle.v + 100);  // at the top of the hole
  w.teardown(*mm);
}

TEST(MmapLayout, AMappingTooLongForEveryHoleGoesBelowAllTheOthers) {
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 100, kRW);
  const Vpn b = w.map(*mm, 100, kRW);
  w.mgr.munmap(*mm, a, 100, CpuId(0));
  const Vpn small = w.map(*mm, 30, kRW);  // in a's hole
  const Vpn big = w.map(*mm, 200, kRW);   // too long for the rest of it
  const Vpn small_again = w.map(*mm, 30, kRW);
  EXPECT_EQ(small.v + 30, a.v + 100);
  EXPECT_EQ(big.v + 200, b.v);
  EXPECT_EQ(small_again.v + 30, small.v);  // the hole's rest, above `big`
  w.teardown(*mm);
}

TEST(MmapLayout, AnMmapPastVmMaxMapCountFailsWithEnomem) {
  mm::MmConfig cfg = testing::test_mm_config();
  cfg.max_map_count = 3;
  MmWorld w(cfg);
  auto mm = w.mgr.mm_alloc();
  MmapArgs a;
  a.pages = 1;
  for (int i = 0; i < 4; ++i) {
    a.vm_flags = i % 2 ? kRW : kR;  // neighbours that do not merge
    EXPECT_EQ(w.mgr.mmap(*mm, a, CpuId(0)).error, MmError::kOk);
  }
  EXPECT_EQ(w.mgr.mmap(*mm, a, CpuId(0)).error, MmError::kNoMem);  // map_count 4 > 3
  EXPECT_EQ(mm->map_count(), 4u);
  w.teardown(*mm);
}

TEST(AnonFault, ReadOfUntouchedAnonymousMemoryMapsTheZeroPage) {
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 4, kRW);
  ASSERT_EQ(w.fault(*mm, a, false), FaultStatus::kOk);
  EXPECT_EQ(mm->pgtable().get(a).pfn, kZeroPfn);
  EXPECT_FALSE(mm->pgtable().get(a).writable());
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_anon_pages], 0);
  w.expect_consistent();
  w.teardown(*mm);
}

TEST(AnonFault, WriteAfterZeroPageReadAllocatesAZeroedFolio) {
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 4, kRW);
  w.fault(*mm, a, false);
  ASSERT_EQ(w.fault(*mm, a, true), FaultStatus::kOk);
  EXPECT_NE(mm->pgtable().get(a).pfn, kZeroPfn);
  EXPECT_TRUE(mm->pgtable().get(a).writable());
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_anon_pages], 1);
  EXPECT_EQ(w.mgr.vmstat()[Vm::pgfault], 2);
  w.expect_consistent();
  w.teardown(*mm);
}

TEST(AnonFault, FirstTouchAllocatesOnTheFaultingCpusNode) {
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 4, kRW);
  const uint16_t cpu_on_node1 = w.topo.node(NodeId(1)).cpus.front().v;
  const int64_t local = w.mgr.vmstat()[Vm::numa_local];
  w.fault(*mm, a, true, cpu_on_node1);
  EXPECT_EQ(w.folio_at(*mm, a).node, NodeId(1));
  // The folio and the PUD, PMD and PTE tables above it, all local.
  EXPECT_EQ(w.mgr.vmstat()[Vm::numa_local] - local, 4);
  EXPECT_EQ(w.mgr.vmstat()[Vm::numa_other], 0);
  w.teardown(*mm);
}

TEST(AnonFault, AllocationFallsBackToTheNearestNodeWhenTheLocalOneIsFull) {
  MmWorld w(testing::test_mm_config(), 64);
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 72, kRW);
  bool remote = false;
  for (uint64_t i = 0; i < 72; ++i) {
    ASSERT_EQ(w.fault(*mm, Vpn(a.v + i), true), FaultStatus::kOk);
    const NodeId n = w.folio_at(*mm, Vpn(a.v + i)).node;
    // Node 0 until it is full, then node 1.
    if (n == NodeId(1) && !remote) {
      EXPECT_EQ(w.mgr.folios().free_pages(NodeId(0)), 0u);
    }
    if (remote) {
      EXPECT_EQ(n, NodeId(1));
    }
    remote |= n == NodeId(1);
  }
  EXPECT_TRUE(remote);
  // Every page on node 1 (page tables included) is a miss.
  const auto on_node1 = static_cast<int64_t>(w.mgr.folios().used_pages(NodeId(1)));
  EXPECT_EQ(w.mgr.vmstat()[Vm::numa_miss], on_node1);
  EXPECT_EQ(w.mgr.vmstat()[Vm::numa_other], on_node1);
  w.expect_consistent();
  w.teardown(*mm);
}

TEST(AnonFault, FallbackPrefersTheNearerOfTwoRemoteNodes) {
  // 4 nodes where node 2 is nearer to node 0 than node 1 is.
  topo::MachineSpec spec = testing::small_machine(16);
  spec.sockets = 4;
  spec.cores_per_socket = 1;
  spec.distance = {{10, 30, 20, 30}, {30, 10, 30, 20}, {20, 30, 10, 30}, {30, 20, 30, 10}};
  const topo::Topology topo(spec);
  const cost::CostProfile costs = cost::default_costs();
  MemoryManager mgr(topo, costs, {});
  auto mm = mgr.mm_alloc();
  MmapArgs args;
  args.pages = 24;
  args.vm_flags = kRW;
  const Vpn a = mgr.mmap(*mm, args, CpuId(0)).addr;
  FaultCtx ctx{CpuId(0), NodeId(0), nullptr, nullptr};
  for (uint64_t i = 0; i < 24; ++i) mgr.handle_mm_fault(*mm, Vpn(a.v + i), true, ctx);
  // Node 0 filled (page tables and folios), then node 2 only.
  EXPECT_EQ(mgr.folios().free_pages(NodeId(0)), 0u);
  EXPECT_GT(mgr.folios().used_pages(NodeId(2)), 0u);
  EXPECT_EQ(mgr.folios().used_pages(NodeId(1)), 0u);
  EXPECT_EQ(mgr.folios().used_pages(NodeId(3)), 0u);
  EXPECT_EQ(mgr.folios().folio(Pfn(mm->pgtable().get(Vpn(a.v + 23)).pfn)).node, NodeId(2));
  mgr.exit_mmap(*mm, CpuId(0));
}

TEST(AnonFault, FaultFailsWithOomWhenEveryNodeIsFull) {
  MmWorld w(testing::test_mm_config(), 16);
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 32, kRW);  // all RAM: it passes the overcommit check
  uint64_t i = 0;
  while (i < 32 && w.fault(*mm, Vpn(a.v + i), true) == FaultStatus::kOk) ++i;
  ASSERT_LT(i, 32u);  // the page tables took some of it
  EXPECT_EQ(w.fault(*mm, Vpn(a.v + i), true), FaultStatus::kOom);
  EXPECT_EQ(w.mgr.folios().free_pages(NodeId(0)), 0u);
  EXPECT_EQ(w.mgr.folios().free_pages(NodeId(1)), 0u);
  w.expect_consistent();
  w.teardown(*mm);
}

TEST(AnonFault, AccessOutsideEveryVmaIsASegfault) {
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  EXPECT_EQ(w.fault(*mm, Vpn(12345), false), FaultStatus::kSegv);
}

TEST(AnonFault, WriteToAReadOnlyMappingIsASegfault) {
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 1, kR);
  EXPECT_EQ(w.fault(*mm, a, true), FaultStatus::kSegv);
  w.teardown(*mm);
}

TEST(MemPolicy, InterleaveSpreadsPagesRoundRobinByOffset) {
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  MmapArgs args;
  args.pages = 4;
  args.vm_flags = kRW;
  args.policy.mode = MemPolicy::Mode::kInterleave;
  args.policy.nodes = {NodeId(0), NodeId(1)};
  const Vpn a = w.mgr.mmap(*mm, args, CpuId(0)).addr;
  for (uint64_t i = 0; i < 4; ++i) w.fault(*mm, Vpn(a.v + i), true);
  EXPECT_NE(w.folio_at(*mm, a).node, w.folio_at(*mm, Vpn(a.v + 1)).node);
  EXPECT_EQ(w.folio_at(*mm, a).node, w.folio_at(*mm, Vpn(a.v + 2)).node);
  EXPECT_EQ(w.mgr.vmstat()[Vm::numa_interleave], 4);
  w.teardown(*mm);
}

TEST(MemPolicy, BindNeverAllocatesOutsideItsNodes) {
  MmWorld w(testing::test_mm_config(), 16);
  auto mm = w.mgr.mm_alloc();
  MmapArgs args;
  args.pages = 32;
  args.vm_flags = kRW;
  args.policy.mode = MemPolicy::Mode::kBind;
  args.policy.nodes = {NodeId(1)};
  const Vpn a = w.mgr.mmap(*mm, args, CpuId(0)).addr;
  // (Its page tables follow the task's policy, not the VMA's: on node 0.)
  uint64_t i = 0;
  for (; i < 32 && w.fault(*mm, Vpn(a.v + i), true) == FaultStatus::kOk; ++i)
    EXPECT_EQ(w.folio_at(*mm, Vpn(a.v + i)).node, NodeId(1));
  EXPECT_EQ(i, 16u);
  EXPECT_EQ(w.fault(*mm, Vpn(a.v + i), true), FaultStatus::kOom);
  w.teardown(*mm);
}

TEST(ForkCow, ForkSharesAnonymousFoliosWriteProtectedInBoth) {
  MmWorld w;
  auto parent = w.mgr.mm_alloc();
  const Vpn a = w.map(*parent, 2, kRW);
  w.fault(*parent, a, true);
  auto child = w.mgr.mm_alloc();
  w.mgr.dup_mmap(*parent, *child, CpuId(0));
  EXPECT_EQ(parent->pgtable().get(a).pfn, child->pgtable().get(a).pfn);
  EXPECT_FALSE(parent->pgtable().get(a).writable());
  EXPECT_FALSE(child->pgtable().get(a).writable());
  EXPECT_EQ(w.folio_at(*parent, a).mapcount, 2);
  w.expect_consistent();
  w.teardown(*child);
  w.teardown(*parent);
}

TEST(ForkCow, WriteAfterForkCopiesTheFolioForTheWriterOnly) {
  MmWorld w;
  auto parent = w.mgr.mm_alloc();
  const Vpn a = w.map(*parent, 2, kRW);
  w.fault(*parent, a, true);
  auto child = w.mgr.mm_alloc();
  w.mgr.dup_mmap(*parent, *child, CpuId(0));
  const uint32_t shared = parent->pgtable().get(a).pfn;
  ASSERT_EQ(w.fault(*child, a, true), FaultStatus::kOk);
  EXPECT_NE(child->pgtable().get(a).pfn, shared);
  EXPECT_TRUE(child->pgtable().get(a).writable());
  EXPECT_EQ(parent->pgtable().get(a).pfn, shared);
  EXPECT_FALSE(parent->pgtable().get(a).writable());
  EXPECT_EQ(w.mgr.folios().folio(Pfn(shared)).mapcount, 1);
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_anon_pages], 2);
  w.expect_consistent();
  w.teardown(*child);
  w.teardown(*parent);
}

TEST(ForkCow, LastMapperReusesTheFolioOnWriteWithoutCopying) {
  MmWorld w;
  auto parent = w.mgr.mm_alloc();
  const Vpn a = w.map(*parent, 1, kRW);
  w.fault(*parent, a, true);
  auto child = w.mgr.mm_alloc();
  w.mgr.dup_mmap(*parent, *child, CpuId(0));
  w.teardown(*child);
  const uint32_t pfn = parent->pgtable().get(a).pfn;
  const int64_t allocs = w.mgr.vmstat()[Vm::pgalloc_normal];
  ASSERT_EQ(w.fault(*parent, a, true), FaultStatus::kOk);
  EXPECT_EQ(parent->pgtable().get(a).pfn, pfn);
  EXPECT_TRUE(parent->pgtable().get(a).writable());
  EXPECT_EQ(w.mgr.vmstat()[Vm::pgalloc_normal], allocs);
  w.teardown(*parent);
}

TEST(ForkCow, ForkDoesNotCopyPtesOfAMappingWithoutAnonVma) {
  MmWorld w;
  auto& file = w.mgr.create_file("lib", 4, false);
  w.mgr.preload_file(file, NodeId(0));
  auto parent = w.mgr.mm_alloc();
  const Vpn a = w.map(*parent, 4, kR, &file);
  w.fault(*parent, a, false);
  auto child = w.mgr.mm_alloc();
  w.mgr.dup_mmap(*parent, *child, CpuId(0));
  EXPECT_TRUE(child->pgtable().get(a).none());
  EXPECT_EQ(child->vmas().size(), 1u);
  w.expect_consistent();
  w.teardown(*child);
  w.teardown(*parent);
}

TEST(ForkCow, SharedAnonymousMemoryGoesWithItsLastMapping) {
  // The unnamed shmem inode lives as long as a VMA maps it: the parent's
  // munmap leaves the child's pages, the child's exit frees them.
  MmWorld w;
  auto parent = w.mgr.mm_alloc();
  const Vpn a = w.map(*parent, 4, kRW | Vma::kShared);
  for (uint64_t i = 0; i < 4; ++i) w.fault(*parent, Vpn(a.v + i), true);
  auto child = w.mgr.mm_alloc();
  w.mgr.dup_mmap(*parent, *child, CpuId(0));
  w.mgr.munmap(*parent, a, 4, CpuId(0));
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_shmem], 4);
  w.expect_consistent();
  w.teardown(*child);
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_shmem], 0);
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_file_pages], 0);
  // All but the two mms' PGDs (two pages each), which go with the mms.
  EXPECT_EQ(w.mgr.vmstat()[Vm::pgfree] + 4, w.mgr.vmstat()[Vm::pgalloc_normal]);
  w.expect_consistent();
  w.teardown(*parent);
}

TEST(ForkCow, SharedAnonymousMemoryStaysSharedAfterFork) {
  MmWorld w;
  auto parent = w.mgr.mm_alloc();
  const Vpn a = w.map(*parent, 1, kRW | Vma::kShared);
  w.fault(*parent, a, true);
  auto child = w.mgr.mm_alloc();
  w.mgr.dup_mmap(*parent, *child, CpuId(0));
  w.fault(*child, a, true);
  EXPECT_EQ(child->pgtable().get(a).pfn, parent->pgtable().get(a).pfn);
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_shmem], 1);
  EXPECT_EQ(w.folio_at(*parent, a).mapcount, 2);
  w.expect_consistent();
  w.teardown(*child);
  w.teardown(*parent);
}

TEST(FileFault, ReadFaultMapsThePageCacheFolioReadOnly) {
  MmWorld w({.fault_around_kb = 0, .read_ahead_kb = 128});
  auto& file = w.mgr.create_file("data", 64, false);
  w.mgr.preload_file(file, NodeId(0));
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 64, kR | Vma::kShared, &file);
  ASSERT_EQ(w.fault(*mm, Vpn(a.v + 5), false), FaultStatus::kOk);
  EXPECT_EQ(mm->pgtable().get(Vpn(a.v + 5)).pfn, file.lookup(5));
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_mapped], 1);
  EXPECT_EQ(w.minflt, 1u);
  w.expect_consistent();
  w.teardown(*mm);
}

TEST(FileFault, FaultAroundMapsSixteenCachedPagesWhenOn) {
  MmWorld w({.fault_around_kb = 64, .read_ahead_kb = 128});
  auto& file = w.mgr.create_file("data", 64, false);
  w.mgr.preload_file(file, NodeId(0));
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 64, kR | Vma::kShared, &file);
  w.fault(*mm, Vpn(a.v + 20), false);
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_mapped], 16);
  EXPECT_EQ(w.mgr.vmstat()[Vm::pgfault], 1);
  EXPECT_EQ(mm->rss_file, 16u);
  w.expect_consistent();
  w.teardown(*mm);
}

TEST(FileFault, WithoutFaultAroundEachPageTakesItsOwnFault) {
  MmWorld w({.fault_around_kb = 0, .read_ahead_kb = 128});
  auto& file = w.mgr.create_file("data", 64, false);
  w.mgr.preload_file(file, NodeId(0));
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 64, kR | Vma::kShared, &file);
  w.fault(*mm, Vpn(a.v + 20), false);
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_mapped], 1);
  EXPECT_TRUE(mm->pgtable().get(Vpn(a.v + 21)).none());
  w.teardown(*mm);
}

TEST(FileFault, UncachedPageIsAMajorFaultThatReadsAReadaheadWindow) {
  MmWorld w({.fault_around_kb = 0, .read_ahead_kb = 128});
  auto& file = w.mgr.create_file("data", 64, false);
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 64, kR | Vma::kShared, &file);
  auto c = w.ctx();
  const FaultResult r = w.mgr.handle_mm_fault(*mm, Vpn(a.v + 3), false, c);
  EXPECT_GT(r.cost.io_ns, 0);
  EXPECT_EQ(w.mgr.vmstat()[Vm::pgmajfault], 1);
  EXPECT_EQ(w.majflt, 1u);
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_file_pages], 32);
  EXPECT_EQ(w.mgr.vmstat()[Vm::pgpgin], 32 * 4);
  w.fault(*mm, Vpn(a.v + 4), false);
  EXPECT_EQ(w.mgr.vmstat()[Vm::pgmajfault], 1);
  w.expect_consistent();
  w.teardown(*mm);
}

TEST(FileFault, PrivateWriteCopiesThePageCacheFolioIntoAnAnonymousOne) {
  MmWorld w({.fault_around_kb = 0, .read_ahead_kb = 128});
  auto& file = w.mgr.create_file("exe", 8, false);
  w.mgr.preload_file(file, NodeId(0));
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 8, kRW, &file);
  w.fault(*mm, a, true);
  EXPECT_NE(mm->pgtable().get(a).pfn, file.lookup(0));
  EXPECT_TRUE(w.folio_at(*mm, a).test(Folio::kAnon));
  EXPECT_EQ(w.mgr.folios().folio(Pfn(file.lookup(0))).mapcount, 0);
  w.expect_consistent();
  w.teardown(*mm);
}

// An 8-page file read back with read(2) before the run, mapped private with
// `flags` and its first page read-faulted.
struct ReadBackFile {
  explicit ReadBackFile(uint32_t flags)
      : w({.fault_around_kb = 0, .read_ahead_kb = 128}),
        file(w.mgr.create_file("data", 8, false)),
        mm(w.mgr.mm_alloc()) {
    w.mgr.preload_file(file, NodeId(0), MemoryManager::Cached::kRead);
    a = w.map(*mm, 8, flags, &file);
    w.fault(*mm, a, false);
  }
  ~ReadBackFile() { w.teardown(*mm); }
  MmWorld w;
  AddressSpace& file;
  std::shared_ptr<Mm> mm;
  Vpn a{};
};

TEST(FileFault, ACopyOnWriteOfAMappedFilePageDoesNotMarkItAccessed) {
  // wp_page_copy replaces the read-only PTE without mark_page_accessed,
  // unlike a zap: the page cache folio stays as it was.
  ReadBackFile f(kRW);
  f.w.fault(*f.mm, f.a, true);
  EXPECT_FALSE(f.w.mgr.folios().folio(Pfn(f.file.lookup(0))).test(Folio::kActive));
  EXPECT_EQ(f.w.mgr.vmstat()[Vm::pgactivate], 0);
  f.w.expect_consistent();
}

TEST(FileFault, AFileReadBackBeforeTheRunIsActivatedByItsFirstZap) {
  // read(2) left each folio PG_referenced (filemap_read's
  // folio_mark_accessed); the zap of a young PTE marks it a second time.
  ReadBackFile f(kR);
  f.w.mgr.madvise_dontneed(*f.mm, f.a, 8, CpuId(0));
  EXPECT_EQ(f.w.mgr.vmstat()[Vm::pgactivate], 1);
  f.w.expect_consistent();
}

TEST(FileFault, EachMmMappingAPageAddsToItsMapcountButNrMappedCountsItOnce) {
  MmWorld w({.fault_around_kb = 0, .read_ahead_kb = 128});
  auto& file = w.mgr.create_file("data", 8, false);
  w.mgr.preload_file(file, NodeId(0));
  auto m1 = w.mgr.mm_alloc();
  auto m2 = w.mgr.mm_alloc();
  const Vpn a1 = w.map(*m1, 8, kR | Vma::kShared, &file);
  const Vpn a2 = w.map(*m2, 8, kR | Vma::kShared, &file);
  w.fault(*m1, a1, false);
  w.fault(*m2, a2, false);
  EXPECT_EQ(w.mgr.folios().folio(Pfn(file.lookup(0))).mapcount, 2);
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_mapped], 1);
  w.expect_consistent();
  w.teardown(*m1);
  w.teardown(*m2);
}

TEST(Madvise, DontneedDropsPtesButKeepsPageCacheFolios) {
  MmWorld w({.fault_around_kb = 0, .read_ahead_kb = 128});
  auto& file = w.mgr.create_file("data", 16, false);
  w.mgr.preload_file(file, NodeId(0));
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 16, kR | Vma::kShared, &file);
  for (uint64_t i = 0; i < 16; ++i) w.fault(*mm, Vpn(a.v + i), false);
  ASSERT_EQ(w.mgr.madvise_dontneed(*mm, a, 16, CpuId(0)).error, MmError::kOk);
  EXPECT_TRUE(mm->pgtable().get(a).none());
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_mapped], 0);
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_file_pages], 16);
  EXPECT_EQ(file.nrpages, 16u);
  w.expect_consistent();
  w.teardown(*mm);
}

TEST(Madvise, DontneedFreesAnonymousFolios) {
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 4, kRW);
  for (uint64_t i = 0; i < 4; ++i) w.fault(*mm, Vpn(a.v + i), true);
  w.mgr.madvise_dontneed(*mm, a, 4, CpuId(0));
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_anon_pages], 0);
  EXPECT_EQ(w.mgr.vmstat()[Vm::pgfree], 4);
  w.expect_consistent();
  w.teardown(*mm);
}

TEST(Madvise, DontneedOnAnMlockedRangeFailsWithEinval) {
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 4, kRW);
  auto c = w.ctx();
  w.mgr.mlock(*mm, a, 4, c);
  EXPECT_EQ(w.mgr.madvise_dontneed(*mm, a, 4, CpuId(0)).error, MmError::kInval);
  w.teardown(*mm);
}

TEST(Mlock, MlockPopulatesEveryPageAndCountsThemMlocked) {
  MmWorld w({.fault_around_kb = 0, .read_ahead_kb = 128});
  auto& file = w.mgr.create_file("data", 40, false);
  w.mgr.preload_file(file, NodeId(0));
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 40, kR | Vma::kShared, &file);
  auto c = w.ctx();
  ASSERT_EQ(w.mgr.mlock(*mm, a, 40, c).error, MmError::kOk);
  for (uint64_t i = 0; i < 40; ++i) EXPECT_TRUE(mm->pgtable().get(Vpn(a.v + i)).present());
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_mlock], 40);
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_mapped], 40);
  EXPECT_EQ(w.minflt, 40u);
  w.expect_consistent();
  w.teardown(*mm);
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_mlock], 0);
}

TEST(Mlock, MlockOfAPrivateWritableMappingBreaksCow) {
  MmWorld w({.fault_around_kb = 0, .read_ahead_kb = 128});
  auto& file = w.mgr.create_file("exe", 4, false);
  w.mgr.preload_file(file, NodeId(0));
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 4, kRW, &file);
  auto c = w.ctx();
  w.mgr.mlock(*mm, a, 4, c);
  EXPECT_TRUE(mm->pgtable().get(a).writable());
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_anon_pages], 4);
  w.teardown(*mm);
}

TEST(Munmap, PartialUnmapSplitsTheVmaAndFreesOnlyThatRange) {
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 8, kRW);
  for (uint64_t i = 0; i < 8; ++i) w.fault(*mm, Vpn(a.v + i), true);
  ASSERT_EQ(w.mgr.munmap(*mm, Vpn(a.v + 2), 3, CpuId(0)).error, MmError::kOk);
  EXPECT_EQ(mm->vmas().size(), 2u);
  EXPECT_EQ(mm->find_vma(Vpn(a.v + 3)), nullptr);
  EXPECT_NE(mm->find_vma(Vpn(a.v + 6)), nullptr);
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_anon_pages], 5);
  w.expect_consistent();
  w.teardown(*mm);
}

TEST(TlbFlush, ZapSendsAnIpiToEachOtherCpuRunningTheMm) {
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  mm->cpumask() = {CpuId(0), CpuId(1), CpuId(2)};
  const Vpn a = w.map(*mm, 2, kRW);
  w.fault(*mm, a, true);
  w.mgr.madvise_dontneed(*mm, a, 2, CpuId(0));
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_tlb_remote_flush], 1);
  EXPECT_EQ(w.mgr.vmstat()[Vm::nr_tlb_remote_flush_received], 2);
  mm->cpumask().clear();
  w.teardown(*mm);
}

TEST(Rmap, WalkFindsEveryMmMappingAForkedAnonymousFolio) {
  MmWorld w;
  auto parent = w.mgr.mm_alloc();
  const Vpn a = w.map(*parent, 1, kRW);
  w.fault(*parent, a, true);
  std::vector<std::shared_ptr<Mm>> children;
  for (int i = 0; i < 3; ++i) {
    children.push_back(w.mgr.mm_alloc());
    w.mgr.dup_mmap(*parent, *children.back(), CpuId(0));
  }
  int found = 0;
  w.mgr.rmap_walk(Pfn(parent->pgtable().get(a).pfn), [&](Mm&, Vma&, Vpn v) {
    EXPECT_EQ(v, a);
    ++found;
  });
  EXPECT_EQ(found, 4);
  for (auto& c : children) w.teardown(*c);
  w.teardown(*parent);
}

TEST(Checker, ReportsAMapcountThatDisagreesWithThePageTables) {
  MmWorld w;
  auto mm = w.mgr.mm_alloc();
  const Vpn a = w.map(*mm, 1, kRW);
  w.fault(*mm, a, true);
  Folio& f = w.mgr.folios().folio(Pfn(mm->pgtable().get(a).pfn));
  ++f.mapcount;
  EXPECT_FALSE(w.mgr.check_invariants().empty());
  --f.mapcount;
  EXPECT_TRUE(w.mgr.check_invariants().empty());
  w.teardown(*mm);
}

}  // namespace
}  // namespace mmsim::mm

// Builders for tests: a small machine and a memory manager on it, with the
// invariant checker one call away.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cost/cost_profile.h"
#include "mm/memory_manager.h"
#include "topo/topology.h"

namespace mmsim::testing {

// A 2-node machine with `pages_per_node` pages of memory on each node.
inline topo::MachineSpec small_machine(uint64_t pages_per_node = 4096) {
  topo::MachineSpec s;
  s.name = "test-2n";
  s.sockets = 2;
  s.cores_per_socket = 2;
  s.threads_per_core = 1;
  s.mem_per_node = pages_per_node * kPageSize;
  s.llc_per_socket = 1 << 20;
  return s;
}

// The mm switches most tests assume: 64 KiB fault-around (3.15+), 128 KiB
// readahead, base-page page-cache folios (before 6.16), and each new folio
// on its LRU at once (no lru_add batch: the tests of the batch ask for one).
inline mm::MmConfig test_mm_config() {
  mm::MmConfig c;
  c.fault_around_kb = 64;
  c.read_ahead_kb = 128;
  c.pagecache_folio_kb = 0;
  c.lru_add_batch = 0;
  return c;
}

struct MmWorld {
  explicit MmWorld(mm::MmConfig cfg = test_mm_config(), uint64_t pages_per_node = 4096)
      : topo(small_machine(pages_per_node)), costs(cost::default_costs()), mgr(topo, costs, cfg) {}
  topo::Topology topo;
  cost::CostProfile costs;
  mm::MemoryManager mgr;
  uint64_t minflt = 0, majflt = 0;

  mm::FaultCtx ctx(uint16_t cpu = 0) {
    return mm::FaultCtx{CpuId(cpu), topo.cpu_to_node(CpuId(cpu)), &minflt, &majflt};
  }
  Vpn map(mm::Mm& mm, uint64_t pages, uint32_t flags, mm::AddressSpace* file = nullptr,
          uint64_t pgoff = 0) {
    mm::MmapArgs a;
    a.pages = pages;
    a.vm_flags = flags;
    a.file = file;
    a.pgoff = pgoff;
    return mgr.mmap(mm, a, CpuId(0)).addr;
  }
  // A mapping at `at` (mmap's hint; the range must be free).
  Vpn map_at(mm::Mm& mm, Vpn at, uint64_t pages, uint32_t flags) {
    mm::MmapArgs a;
    a.addr = at;
    a.pages = pages;
    a.vm_flags = flags;
    const Vpn got = mgr.mmap(mm, a, CpuId(0)).addr;
    EXPECT_EQ(got, at) << "the hint's range was not free";
    return got;
  }
  mm::FaultStatus fault(mm::Mm& mm, Vpn v, bool write, uint16_t cpu = 0) {
    auto c = ctx(cpu);
    return mgr.handle_mm_fault(mm, v, write, c).status;
  }
  void expect_consistent() {
    const auto errors = mgr.check_invariants();
    for (const auto& e : errors) ADD_FAILURE() << e;
  }
  const mm::Folio& folio_at(mm::Mm& mm, Vpn v) {
    return mgr.folios().folio(Pfn(mm.pgtable().get(v).pfn));
  }
  // Unmaps everything, so that the mm can be released.
  void teardown(mm::Mm& mm) { mgr.exit_mmap(mm, CpuId(0)); }
};

// Direct reclaim that never frees a page, counting its rounds.
struct BarrenReclaim : mm::ReclaimHooks {
  void wake_kswapd(NodeId) override {}
  Progress try_to_free_pages(std::span<const NodeId>, CpuId) override {
    ++rounds;
    return {};
  }
  int rounds = 0;
};

inline constexpr uint32_t kRW = mm::Vma::kRead | mm::Vma::kWrite;
inline constexpr uint32_t kR = mm::Vma::kRead;

}  // namespace mmsim::testing

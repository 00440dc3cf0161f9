// The memory-management core: faults (anonymous, file, COW, fault-around),
// mmap/munmap/madvise/mlock, fork's page-table copy, exit, and rmap walks.
// Each operation returns the simulated time it took on the calling CPU.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cost/cache_model.h"
#include "cost/cost_profile.h"
#include "mm/config.h"
#include "mm/folio.h"
#include "mm/lru.h"
#include "mm/mm_types.h"
#include "mm/swap.h"
#include "mm/tiers.h"
#include "mm/vmstat.h"
#include "mm/writeback.h"
#include "topo/topology.h"

namespace mmsim::mm {

// Time a kernel operation spent: on the CPU (system time) and asleep waiting
// for storage (D state, counted as iowait).
struct OpCost {
  double sys_ns = 0;
  double io_ns = 0;
  OpCost& operator+=(const OpCost& o) {
    sys_ns += o.sys_ns;
    io_ns += o.io_ns;
    return *this;
  }
};

// Who is faulting: the CPU (and so the local node) and the task's counters.
struct FaultCtx {
  CpuId cpu;
  NodeId node;
  uint64_t* min_flt = nullptr;
  uint64_t* maj_flt = nullptr;
  uint32_t memcg = 0;  // whom new pages are charged to (the mm's memcg)
  // The faulting task's own policy (set_mempolicy); null: the default.
  const MemPolicy* task_policy = nullptr;
  // Its interleave round robin for allocations without an address
  // (interleave_nodes: page tables); null: always the policy's first node.
  uint64_t* il_next = nullptr;
};

// The policy an allocation for `vma` follows (get_vma_policy): the VMA's, if
// it has one, else the task's.
inline const MemPolicy& vma_policy(const Vma& vma, const FaultCtx& ctx) {
  if (vma.policy.mode != MemPolicy::Mode::kDefault || !ctx.task_policy) return vma.policy;
  return *ctx.task_policy;
}

enum class FaultStatus {
  kOk,
  kSegv,
  kSigbus,  // a file page at or beyond the end of the file
  kOom,
  kNumaHint,       // a PROT_NONE hinting PTE: the caller runs do_numa_page
  kMigrationWait,  // a migration entry: the caller waits for the folio's migration
};
struct FaultResult {
  FaultStatus status = FaultStatus::kOk;
  OpCost cost;
  Pfn pfn{};  // kNumaHint, kMigrationWait: the folio
  // Pages of the zero-filled anonymous folio the fault allocated and mapped
  // (do_anonymous_page: 1; a THP: 512); 0 for any other fault.
  uint32_t zero_filled = 0;
};

// What change_prot_numa did to a range.
struct ProtNumaResult {
  uint64_t updated = 0;       // pages made PROT_NONE (numa_pte_updates): 512 a PMD
  uint64_t huge_updated = 0;  // huge PMDs among them (numa_huge_pte_updates)
  double cost_ns = 0;
};

// Decides which present PTEs change_prot_numa leaves alone (the numa layer's
// rules, as mm/mprotect.c prot_numa_skip gathers them). Contract: a pure
// decision; must not change the PTE, the folio or the VMA.
class ProtNumaSkip {
 public:
  virtual ~ProtNumaSkip() = default;
  // `folio` is nullptr when the PTE maps no normal page (the zero page).
  virtual bool skip(const Vma& vma, const Pte& pte, const Folio* folio) const = 0;
  // The same for a huge PMD mapping `folio` whole (change_huge_pmd, which
  // tests far less than change_pte_range).
  virtual bool skip_huge(const Folio&) const { return false; }
  // The same for a PTE mapping a page of a large folio (`head`), which
  // `likely_shared` by more than one mm: skipped unless the kernel hints
  // such pages.
  virtual bool skip_pte_mapped_large(const Vma&, const Folio& /*head*/,
                                     bool /*likely_shared*/) const {
    return true;
  }
  // Called for each folio whose PTE was made PROT_NONE (the memory-tiering
  // mode stamps the scan time in it).
  virtual void marked(Folio&) const {}
};

enum class MmError { kOk, kInval, kNoMem, kOom };
struct MmResult {
  MmError error = MmError::kOk;
  OpCost cost;
  Vpn addr{};
};

struct MmapArgs {
  // mmap's address hint: taken if the range is free (a page clear of other
  // VMAs), else ignored, as without MAP_FIXED.
  std::optional<Vpn> addr;
  uint64_t pages = 0;
  uint32_t vm_flags = 0;  // Vma::kRead | kWrite | kShared ...
  AddressSpace* file = nullptr;
  uint64_t pgoff = 0;
  MemPolicy policy;
  std::string name;
  bool stack = false;  // MAP_STACK
};

// What decides whether a range can join a neighbouring VMA (vma_merge):
// its would-be flags, file and offset, anon_vma and policy.
struct VmaMergeKey {
  uint32_t flags = 0;
  AddressSpace* file = nullptr;
  uint64_t pgoff = 0;
  AnonVma* anon_vma = nullptr;
  const MemPolicy* policy = nullptr;
};

// How hard an allocation or a charge tries. kNoRetry is __GFP_NORETRY, as
// readahead_gfp_mask sets it: one round of reclaim, then failure, never the
// OOM path; kNoReclaim is a mask without __GFP_DIRECT_RECLAIM (a THP
// fault's GFP_TRANSHUGE_LIGHT): no reclaim at all; kUntilOom retries while
// reclaim makes progress.
enum class Retry : uint8_t { kUntilOom, kNoRetry, kNoReclaim };

// What a memcg charge did: whether it succeeded and the time it took.
struct ChargeResult {
  bool ok = true;
  double ns = 0;
};

// The memory controller's entry points from mm (mm/memcontrol.c), which the
// memcg layer implements. Each returns the time it took, if any.
class MemcgHooks {
 public:
  virtual ~MemcgHooks() = default;
  // mem_cgroup_charge: a new anonymous or page-cache folio for `memcg`,
  // reclaiming if over the limit; or a page-table page (kernel memory:
  // __memcg_kmem_charge_page), if this kernel charges those (else it is left
  // uncharged). !ok: the charge failed (memcg OOM).
  // Reclaim may demote, and so grow the folio table: a caller's Folio
  // references are stale afterwards.
  virtual ChargeResult charge(uint32_t memcg, Pfn pfn, CpuId cpu,
                              Retry retry = Retry::kUntilOom) = 0;
  // The folio leaves memory (last anonymous unmap, page-cache removal).
  virtual void uncharge(Pfn pfn, Folio& folio) = 0;
  // page_add_file_rmap / page_remove_rmap of a file folio, under the
  // page-stat protocol; `transition` when its mapcount went 0 <-> 1.
  // Returns its time, page_cgroup line misses included.
  virtual double file_rmap(Pfn pfn, Folio& folio, bool add, bool transition) = 0;
  // A fault by a task of the mm (memory.stat pgfault, pgmajfault).
  virtual void count_fault(uint32_t memcg, bool major) = 0;
  // mem_cgroup_wb_stats for the memcg's dirty domain; nullopt when it has
  // none (the root, or cgroup v1, which has no cgroup writeback).
  virtual std::optional<WbStats> wb_stats(uint32_t memcg) const = 0;
  // mem_cgroup_migrate: `to` has taken the place of `from` (its charge and
  // its memcg already copied); a page-cache folio joins its memcg's LRU.
  virtual void migrate(Pfn from, Pfn to, Folio& folio) = 0;
};

// What the page allocator asks of reclaim (mm/vmscan.c) when memory is short.
class ReclaimHooks {
 public:
  virtual ~ReclaimHooks() = default;
  // wakeup_kswapd: the node's kswapd is to bring it back above its high
  // watermark.
  virtual void wake_kswapd(NodeId node) = 0;
  // try_to_free_pages: direct reclaim over the zonelist's nodes by the
  // allocating task on `cpu`. Returns the pages freed and the time it took.
  struct Progress {
    uint64_t pages = 0;
    double ns = 0;
  };
  virtual Progress try_to_free_pages(std::span<const NodeId> nodes, CpuId cpu) = 0;
};

class MemoryManager {
 public:
  MemoryManager(const topo::Topology& topo, const cost::CostProfile& costs, MmConfig config);
  MemoryManager(const MemoryManager&) = delete;
  MemoryManager& operator=(const MemoryManager&) = delete;

  // A file whose page cache this machine holds. Shmem files back
  // MAP_SHARED|MAP_ANONYMOUS mappings.
  AddressSpace& create_file(std::string name, uint64_t size_pages, bool shmem);
  // Puts every page of the file in the page cache on `node`, as if it had been
  // read before the run (not counted as faults). How it got there: written
  // (kWritten: a tmpfs file's data, an initramfs's files), or read back with
  // read(2) (kRead: filemap_read marks each folio accessed, so each starts
  // PG_referenced and its next mark_page_accessed activates it).
  // Its pages are charged to `memcg` (the root's by default: the run's
  // own cgroup). False if memory ran out first (the rest of the file stays
  // uncached).
  enum class Cached : uint8_t { kWritten, kRead };
  bool preload_file(AddressSpace& file, NodeId node, Cached how = Cached::kWritten,
                    uint32_t memcg = 0);

  // mm_alloc at exec or fork: a new mm and its PGD (pgd_alloc), allocated
  // by the task `ctx` describes (the forking parent); none: CPU 0's.
  std::shared_ptr<Mm> mm_alloc(const FaultCtx* ctx = nullptr);
  MmResult mmap(Mm& mm, const MmapArgs& args, CpuId cpu);
  MmResult munmap(Mm& mm, Vpn start, uint64_t pages, CpuId cpu);
  // MADV_DONTNEED: zaps the PTEs of the range; EINVAL on a VM_LOCKED VMA.
  MmResult madvise_dontneed(Mm& mm, Vpn start, uint64_t pages, CpuId cpu);
  // MADV_HUGEPAGE (on) / MADV_NOHUGEPAGE: sets VM_HUGEPAGE or
  // VM_NOHUGEPAGE on the range's VMAs (split at its edges), clearing the
  // other (hugepage_madvise). Mappings already made stay as they are.
  MmResult madvise_hugepage(Mm& mm, Vpn start, uint64_t pages, bool on);
  // mprotect(2) with PROT_READ/WRITE/EXEC as Vma flags: splits the range's
  // VMAs at its edges, sets their protection and merges them with their
  // neighbours. Only opens up ranges nothing is mapped in (glibc's guard
  // pages and arena reservations), the only use the model has.
  MmResult mprotect(Mm& mm, Vpn start, uint64_t pages, uint32_t prot);
  // mlock(2): sets VM_LOCKED and populates the range.
  MmResult mlock(Mm& mm, Vpn start, uint64_t pages, FaultCtx& ctx);
  FaultResult handle_mm_fault(Mm& mm, Vpn vpn, bool write, FaultCtx& ctx);
  // A write fault that loses the race to another thread's zero-fill fault of
  // the same entry (`huge`: its PMD): do_anonymous_page and
  // __do_huge_pmd_anonymous_page allocate, charge and zero their folio before
  // they take the page-table lock, so this one does all that too, finds the
  // entry set under the lock, and frees its folio. The caller knows the other
  // fault is still under way; the page table already shows its result.
  FaultResult lose_fault_race(Mm& mm, Vpn vpn, bool huge, FaultCtx& ctx);
  // A fault whose handler finds the entry another thread's fault has just
  // set (handle_pte_fault finds the PTE present, or __handle_mm_fault the
  // huge PMD): a spurious fault, which pays its entry and maps nothing.
  FaultResult spurious_fault(FaultCtx& ctx);
  // dup_mmap: copies VMAs and, where the kernel does, page tables and PTEs
  // (COW-protecting anonymous pages in both). The child's tables are the
  // parent's allocations (`ctx`: its CPU, memcg and policy), as is the cost.
  OpCost dup_mmap(Mm& parent, Mm& child, const FaultCtx& ctx);
  OpCost dup_mmap(Mm& parent, Mm& child, CpuId cpu) {
    return dup_mmap(parent, child, FaultCtx{cpu, topo_.cpu_to_node(cpu)});
  }
  // exit_mmap: unmaps everything.
  OpCost exit_mmap(Mm& mm, CpuId cpu);

  // change_prot_numa: makes the present PTEs of [start, end) in the VMA
  // PROT_NONE hinting PTEs, except those `skip` says to leave alone, then
  // flushes the TLB.
  ProtNumaResult change_prot_numa(Mm& mm, Vma& vma, Vpn start, Vpn end, const ProtNumaSkip& skip,
                                  CpuId cpu);
  // do_numa_page's pte_modify: the NUMA hinting PTE at vpn (or the huge
  // PMD's view) as it will be made accessible again, its saved write bit
  // restored. The page table is not changed.
  Pte numa_pte_restored(const Mm& mm, Vpn vpn) const;
  // do_numa_page's out_map: makes the PTE (or the huge PMD,
  // do_huge_pmd_numa_page) accessible again, as numa_pte_restored shows it,
  // but read-only unless `writable`. A page to be migrated keeps its
  // PROT_NONE entry until the migration replaces it. The time is
  // costs().pte_protect_ns.
  Pte restore_numa_pte(Mm& mm, Vpn vpn, bool writable = true);
  // Migration (mm/migrate.c). migrate_unmap replaces every PTE mapping the
  // folio with a migration entry (try_to_migrate via the rmap), flushing the
  // TLB of each mm whose entry was accessible (and for each huge PMD); it
  // returns the mappings it replaced. migrate_remap points those
  // entries at `to` (the new folio, or the old one when migration failed).
  // The caller tells the mms' observers (the walk takes time: see unmapped).
  struct MigrateStep {
    uint64_t mappings = 0;
    double cost_ns = 0;
    // migrate_unmap: each mapping in rmap order, with the time into the walk
    // at which its PTE (or PMD) became a migration entry.
    struct Unmapped {
      Mm* mm;
      Vpn vpn;         // the page, or the PMD's first
      uint32_t pages;  // 1, or kHugePages for a PMD
      double offset_ns;
    };
    std::vector<Unmapped> unmapped;
  };
  MigrateStep migrate_unmap(Pfn folio, CpuId cpu);
  MigrateStep migrate_remap(Pfn from, Pfn to);
  // Moves the folio's identity (page cache slot or anon rmap, flags,
  // last_cpupid) to `to`, after its contents were copied; frees `from`.
  // The new folio goes on its LRU through the migrating CPU's lru_add
  // batch, which is then drained as the kernel.migrate_lru_drain rule says
  // (migrate_folio_move: folio_add_lru, then lru_add_drain when the old
  // folio was mapped, 5.18-6.6, or mlocked, 6.7+).
  void migrate_folio_finish(Pfn from, Pfn to, CpuId cpu, bool was_mapped);
  // Frees an anonymous folio that nothing maps any more: nr_anon_pages, its
  // memcg charge, the page. The last unmap calls it, except for a folio under
  // migration (PG_locked): migration holds a reference to the folio it
  // isolated, so the folio outlives its last mapping, and the migration frees
  // it when it ends (migrate_folio_unmap: "freed from under us").
  void free_anon_folio(Pfn pfn);

  // Transparent huge pages (mm/huge_memory.c) --------------------------
  // Whether anonymous THP faults are on at all: the switch, and a machine of
  // 512 MiB or more (hugepage_init).
  bool thp_on() const { return thp_on_; }
  // The head of the folio a page belongs to.
  Pfn folio_head(Pfn pfn) const {
    return folios_.folio(pfn).test(Folio::kTail) ? huge_head(pfn) : pfn;
  }
  // page_mapcount: the page's own PTE mappings plus, for a page of a large
  // folio, the folio's PMD mappings.
  int32_t page_mapcount(Pfn pfn) const {
    const Folio& f = folios_.folio(pfn);
    if (!f.test(Folio::kTail) && !f.large()) return f.mapcount;
    return f.mapcount + static_cast<int32_t>(entire_mapcount(huge_head(pfn)));
  }
  // folio_mapcount: every PTE and PMD mapping of the folio.
  int32_t folio_mapcount(Pfn head) const {
    const Folio& f = folios_.folio(head);
    if (!f.large()) return f.mapcount;
    return static_cast<int32_t>(entire_mapcount(head) + pte_mapcount(head));
  }
  // split_huge_page: a PTE-mapped large folio becomes kHugePages order-0
  // folios, each on the LRU list its head was on (thp_split_page); pages
  // nothing maps are freed. Its PMD mappings must have been split. If the
  // folio was isolated from the LRU, its other pages go to *isolated
  // instead (split_huge_page_to_list).
  void split_huge_page(Pfn head, std::vector<Pfn>* isolated = nullptr);
  // Splits the folio's PMD mappings, then the folio (reclaim's way with a
  // THP, and demotion's when no 2 MiB is free below: SIMPLIFICATION, no
  // THP swap-out).
  void split_huge_folio(Pfn head, std::vector<Pfn>* isolated = nullptr);

  // khugepaged (mm/khugepaged.c) --------------------------------------
  // One run of the khugepaged thread: its CPU time and what it does next.
  struct KhugepagedStep {
    enum class Next : uint8_t {
      kIdle,        // no mm registered: it sleeps until one is
      kScanSleep,   // the pass is over: scan_sleep_millisecs to the next
      kAllocSleep,  // a huge page could not be had: alloc_sleep_millisecs, then the pass goes on
    };
    double ns = 0;
    Next next = Next::kIdle;
  };
  // khugepaged_do_scan: scans PMD ranges of the registered mms, from where the
  // last pass stopped, until pages_to_scan is spent, collapsing each range
  // that qualifies into a THP; or the rest of a pass a failed allocation
  // interrupted. A collapse revokes the range's PTEs (Mm::revoke).
  KhugepagedStep khugepaged_run();
  // Whether a registration found khugepaged's list empty, which wakes it
  // (__khugepaged_enter); cleared by the call.
  bool khugepaged_take_wakeup() { return std::exchange(khugepaged_.wake, false); }
  // /sys/kernel/mm/transparent_hugepage/khugepaged/{pages_collapsed,
  // full_scans}, and its CPU time.
  struct KhugepagedStats {
    uint64_t pages_collapsed = 0;
    uint64_t full_scans = 0;
    double cpu_ns = 0;
  };
  const KhugepagedStats& khugepaged_stats() const { return khugepaged_.stats; }

  // Calls f(Mm&, Vma&, Vpn) for every PTE mapping the folio, found through the
  // rmap (anon_vma chain or the file's i_mmap), as rmap_walk() does. An f
  // that returns bool ends the walk by returning false (rmap_one's false, or
  // its `done`).
  template <class F>
  void rmap_walk(Pfn pfn, F&& f) const {
    const Folio& folio = folios_.folio(pfn);
    // f's answer: go on?
    auto call = [&](Mm& mm, Vma& vma, Vpn vpn) {
      if constexpr (std::is_same_v<std::invoke_result_t<F&, Mm&, Vma&, Vpn>, bool>) {
        return f(mm, vma, vpn);
      } else {
        f(mm, vma, vpn);
        return true;
      }
    };
    auto visit = [&](Vma* vma, Vpn vpn) {
      if (!vma->contains(vpn)) return true;
      const Pte pte = vma->mm->pgtable().get(vpn);
      return !(pte.maps_folio() && pte.pfn == pfn.v) || call(*vma->mm, *vma, vpn);
    };
    if (folio.large()) {
      // Each PTE mapping a page of the folio, or the PMD mapping it whole
      // once (anonymous only: no file THP).
      for (Vma* vma : anon_vmas_[folio.mapping]->slots()) {
        if (!vma) continue;
        const uint64_t first = std::max(folio.index(), vma->start.v);
        const uint64_t last = std::min(folio.index() + folio.nr_pages(), vma->end.v);
        for (uint64_t v = first; v < last; ++v) {
          const PteTable* t = vma->mm->pgtable().table(Vpn(v));
          if (!t) break;
          const Pte pte = t->get(static_cast<uint32_t>(v & (kPtesPerTable - 1)));
          if (!pte.maps_folio() || huge_head(Pfn(pte.pfn)) != pfn) continue;
          if (!call(*vma->mm, *vma, Vpn(v))) return;
          if (t->huge()) break;
        }
      }
    } else if (folio.test(Folio::kAnon)) {
      for (Vma* vma : anon_vmas_[folio.mapping]->slots()) {
        if (vma && !visit(vma, Vpn(folio.index()))) return;
      }
    } else {
      // The PTEs that map the page's offset (AddressSpace::mappers), where
      // the kernel walks every VMA of i_mmap that spans it. Collected
      // first: f may unmap.
      const auto& mappers = files_[folio.mapping]->mappers;
      const auto it = mappers.find(folio.index());
      if (it == mappers.end()) return;
      std::vector<std::pair<Mm*, Vpn>> maps;
      maps.reserve(it->second.size());
      it->second.for_each([&](Mm& mm, Vpn vpn) { maps.emplace_back(&mm, vpn); });
      for (auto [mm, vpn] : maps) {
        Vma* vma = mm->find_vma(vpn);
        check(vma != nullptr, "a file page's mapper outside every VMA");
        if (!visit(vma, vpn)) return;
      }
    }
  }

  // The flush after changing `pages` PTEs of mm from cpu: local flush plus one
  // IPI per other CPU in mm_cpumask. Returns its cost.
  double flush_tlb_range(Mm& mm, CpuId cpu, uint64_t pages);

  void set_memcg(MemcgHooks* hooks) { memcg_ = hooks; }
  // Without reclaim (unit tests of mm alone) allocations may use every free
  // page; with it they follow the watermarks.
  void set_reclaim(ReclaimHooks* hooks) { reclaim_ = hooks; }
  // wakeup_kswapd for a node, if reclaim is modelled.
  void wake_kswapd(NodeId n) {
    if (reclaim_) reclaim_->wake_kswapd(n);
  }
  // __alloc_pages for a user page (GFP_HIGHUSER_MOVABLE): the fast path at
  // the low watermark over the zonelist; else every zonelist node's kswapd
  // is woken and the min watermark tried; else direct reclaim and retry, up
  // to MAX_RECLAIM_RETRIES times without progress. Adds the time direct
  // reclaim took to *ns. nullopt: out of memory (with kNoRetry, one round
  // of direct reclaim failed).
  std::optional<Pfn> alloc_folio(const MemPolicy& policy, NodeId local, uint64_t ilx, CpuId cpu,
                                 double* ns, Retry retry = Retry::kUntilOom, uint8_t order = 0);
  // folio_mark_accessed (mm/swap.c): a second access marks an inactive folio
  // active. Returns its time.
  double folio_mark_accessed(Pfn pfn);
  // folio_referenced (mm/rmap.c): tests and clears the accessed bit of every
  // PTE mapping the folio, through the rmap. `mappings` counts the VMAs in
  // which a PTE was young; `exec` if one of those is VM_EXEC; `locked` if a
  // VM_LOCKED VMA maps it (reclaim then mlocks it). A folio nothing maps
  // costs no walk.
  struct Referenced {
    int mappings = 0;
    bool exec = false;
    bool locked = false;
    double cost_ns = 0;
  };
  Referenced folio_referenced(Pfn pfn);
  // Reclaim of one page-cache folio (shrink_page_list): unmaps it through the
  // rmap if needed, removes it from the page cache, uncharges and frees it.
  // Returns the time it took, or nullopt if it cannot go (locked, mlocked,
  // dirty, under writeback, or shmem: with no swap modelled, swap-backed
  // pages stay).
  std::optional<double> evict_folio(Pfn pfn, CpuId cpu);
  // try_to_unmap of a page-cache folio: every PTE goes (a dirty one
  // dirties the folio), each mm's TLB flushed. Returns the time.
  double unmap_file_folio(Pfn pfn, CpuId cpu);
  // folio_mkclean (folio_clear_dirty_for_io): every PTE mapping the folio
  // made clean and read-only, each mm's TLB flushed. Returns the time.
  double folio_mkclean(Pfn pfn, CpuId cpu);
  // folio_rotate_reclaimable: a folio on an LRU list, clean and evictable,
  // goes to the inactive list's tail (pgrotated).
  void folio_rotate_reclaimable(Pfn pfn);
  // The dirty page cache and its writeback.
  Writeback& writeback() { return writeback_; }
  const Writeback& writeback() const { return writeback_; }
  // The memcg's dirty domain (MemcgHooks::wb_stats), if it has one.
  std::optional<WbStats> memcg_wb_stats(uint32_t memcg) const {
    return memcg_ ? memcg_->wb_stats(memcg) : std::nullopt;
  }
  // Reclaim of an anonymous folio to swap (shrink_folio_list's add_to_swap,
  // try_to_unmap, pageout): a slot, every PTE made a swap entry, then the
  // write if the folio is dirty (pswpout; the folio stays in the swap cache
  // until a later scan finds it clean, as after asynchronous writeback), or
  // its freeing if it is clean. kCannot: no free slot, or it is locked,
  // mlocked or shmem (shmem is not swapped here), or still mapped.
  enum class SwapOut : uint8_t { kFreed, kWritten, kCannot };
  struct SwapOutResult {
    SwapOut what = SwapOut::kCannot;
    double ns = 0;
  };
  SwapOutResult swap_out_folio(Pfn pfn, CpuId cpu);
  // Reclaim's demotion of an isolated folio (shrink_folio_list's demote
  // pass, demote_folio_list): migrated to its node's demotion target, or
  // else to another lower-tier node, with no reclaim for the page. Returns
  // the time, or nullopt if it cannot move (no page below, locked).
  std::optional<double> demote_folio(Pfn pfn, CpuId cpu);
  // can_demote: demotion is on and the node has a tier below it.
  bool can_demote(NodeId n) const {
    return config_.demotion_enabled && tiers_.demotion_target(n).has_value();
  }
  const MemoryTiers& tiers() const { return tiers_; }
  // The swap device, if the machine has one.
  const SwapSpace* swap() const { return swap_.get(); }
  // The memcg whose reclaim evicts (its lruvec's nonresident age goes in the
  // shadow entry); set by the reclaimer around evict_folio.
  void set_evicting_memcg(uint32_t memcg) { evicting_memcg_ = memcg; }

  // Invariant checker (DEBUG_VM-like): mapcounts against page tables, rmap
  // against PTEs, page cache and node accounting. Returns the violations.
  std::vector<std::string> check_invariants() const;

  // folio_add_lru from `cpu`: a small folio waits in that CPU's lru_add
  // batch (config lru_add_batch) until the batch fills; a large one, or the
  // one that fills it, puts the whole batch on its LRU lists.
  void folio_add_lru(Pfn pfn, CpuId cpu);
  // lru_add_drain: `cpu`'s batch onto the LRU; lru_add_drain_all: every CPU's.
  void lru_add_drain(CpuId cpu);
  void lru_add_drain_all();
  // Off its LRU list or out of its batch, as it is freed.
  void lru_remove(Pfn pfn);

  VmStat& vmstat() { return vmstat_; }
  const VmStat& vmstat() const { return vmstat_; }
  // PTE tables of every live mm: each costs the host about 4.2 KB.
  uint64_t nr_pte_tables() const { return nr_pte_tables_; }
  // Whether NR_PAGETABLE (nr_page_table_pages, memcg pagetables) counts a
  // page-table page of the level.
  bool pgtable_counted(PtLevel level) const {
    return level == PtLevel::kPte ||
           (level == PtLevel::kPmd && config_.pagetable_stat != PagetableStat::kPte) ||
           (level == PtLevel::kPud && config_.pagetable_stat == PagetableStat::kPud);
  }
  // The same for a page-table page's folio (its index is its level).
  bool pgtable_counted(const Folio& f) const {
    return pgtable_counted(static_cast<PtLevel>(f.index()));
  }
  FolioAllocator& folios() { return folios_; }
  LruSet& lru() { return lru_; }
  const LruSet& lru() const { return lru_; }
  const FolioAllocator& folios() const { return folios_; }
  const cost::CostProfile& costs() const { return costs_; }
  // The memory hierarchy: working sets, and what lines of memory and of the
  // kernel's metadata cost.
  cost::CacheModel& cache() { return cache_; }
  const cost::CacheModel& cache() const { return cache_; }
  const MmConfig& config() const { return config_; }
  const topo::Topology& topology() const { return topo_; }
  const std::vector<Mm*>& mms() const { return live_mms_; }
  AddressSpace* file(uint32_t id) { return files_[id].get(); }
  // Faults, PTEs zapped and PTEs copied at fork: the simulator's speed unit.
  uint64_t page_events() const { return page_events_; }

 private:
  friend struct MmDeleter;
  void release_mm(Mm* mm);
  // A page-table page of `level` for the task of ctx (pte_alloc_one,
  // pmd_alloc_one, pud_alloc_one, pgd_alloc: GFP_PGTABLE_USER): zeroed,
  // placed by the task's own policy (no VMA's), charged to its memcg as
  // kernel memory. Adds its time to *ns; nullopt: memory or the charge
  // failed.
  std::optional<Pfn> pgtable_alloc(PtLevel level, const FaultCtx& ctx, double* ns);
  // Frees a page-table page (pte_free, pmd_free, pud_free, pgd_free).
  void pgtable_free(uint32_t frame);
  // __pud_alloc and __pmd_alloc: the tables above vpn from the PUD down to
  // `level` (kPud, or kPmd for both), each made if missing. False if one
  // could not be had; with `nofail` the table is made without a frame
  // instead (SIMPLIFICATION: a fork never fails).
  bool upper_alloc(Mm& mm, Vpn vpn, PtLevel level, const FaultCtx& ctx, double* ns,
                   bool nofail = false);
  // __pte_alloc: vpn's PTE table, made if missing (with the tables above
  // it); nullptr if memory ran out (not with `nofail`, as above).
  PteTable* pte_alloc(Mm& mm, Vpn vpn, const FaultCtx& ctx, double* ns, bool nofail = false);
  // free_pgtables after an unmap of [start, end): frees the tables there
  // that no VMA reaches into any more. Returns the time.
  double free_pgtables(Mm& mm, Vpn start, Vpn end);
  // The nodes' watermarks from min_free_kbytes and watermark_scale_factor.
  void setup_watermarks();
  // Installs a PTE mapping pfn and does the rmap/counter bookkeeping.
  // Returns the memcg's time (the page-stat update of a file folio).
  double map_folio(Mm& mm, Vma& vma, Vpn vpn, uint32_t pfn, bool write);
  // Clears a PTE and drops its folio's mapping (freeing anonymous folios).
  // A zap (kZap) passes a file folio's young and dirty bits on to it
  // (zap_pte_range); wp_page_copy's replacement of the PTE (kCopy) does not.
  // Returns the memcg's time.
  enum class Unmap : uint8_t { kZap, kCopy };
  double zap_pte(Mm& mm, Vma& vma, PteTable& t, Vpn vpn, Unmap why = Unmap::kZap);
  // The unnamed shmem inode lost its last VMA: its pages go.
  void truncate_unnamed(AddressSpace& file);
  // A page-cache folio off its LRU leaves its slot, uncharged, and is freed
  // (__filemap_remove_folio, then the last folio_put).
  void delete_from_page_cache(Pfn pfn);
  struct Zapped {
    uint64_t ptes = 0;
    double memcg_ns = 0;
  };
  Zapped zap_range(Mm& mm, Vma& vma, Vpn start, Vpn end);
  AnonVma& anon_vma_prepare(Vma& vma);
  // An anonymous folio for vpn under the VMA's policy, on its anon_vma, with
  // the memcg's charge time; pfn is nullopt when memory or the charge failed.
  struct NewFolio {
    std::optional<Pfn> pfn;
    double memcg_ns = 0;
  };
  NewFolio new_anon_folio(Vma& vma, Vpn vpn, const FaultCtx& ctx);
  // mlock_folio / munlock_folio of the folio of pfn: its count of mappings
  // in VM_LOCKED VMAs, PG_mlocked and the unevictable list.
  void mlock_folio(Pfn pfn);
  void munlock_folio(Pfn head);
  // Changes the folio's flags, moving it to the LRU list they name when it is
  // on one.
  void set_lru_flags(Pfn pfn, uint16_t flags);
  // folio_mark_dirty of a page-cache folio: PG_dirty, and unless it is
  // shmem's the dirty accounting (Writeback::account_dirtied).
  void folio_mark_dirty(Folio& f);
  void unlink_vma(Vma& vma);
  // Splits the VMA at `at`, returning the new upper part.
  Vma* split_vma(Mm& mm, Vma& vma, Vpn at);
  // Splits the VMAs that straddle `start` and `end` there, so that the range
  // holds whole VMAs; returns how many splits it made.
  int split_at_edges(Mm& mm, Vpn start, Vpn end);
  // vma_merge: [start, end), with `key`, joins the VMA just below it and/or
  // the one just above where the kernel would merge them; `self` is the
  // range's own VMA if it has one (merged away), nullptr for a new mapping.
  // Returns the VMA that now covers the range, or nullptr if none merged.
  Vma* vma_merge(Mm& mm, Vpn start, Vpn end, const VmaMergeKey& key, Vma* self = nullptr);
  bool can_merge(const Vma& neighbour, const VmaMergeKey& key) const;
  // vma_merge of a VMA with what it now matches on either side.
  Vma* merge_with_neighbours(Mm& mm, Vma& vma);
  // Merges each VMA in [start, end) with its neighbours where it can (after
  // a change of flags: madvise_update_vma, mlock_fixup).
  void merge_range(Mm& mm, Vpn start, Vpn end);
  // Finds or reads the page-cache folio at index (filemap_fault).
  struct FilemapGet {
    std::optional<uint32_t> pfn;  // nullopt: memory or the charge failed
    OpCost cost;
    // filemap_fault did not find the page: a synchronous read (vmstat and
    // memcg pgmajfault, VM_FAULT_MAJOR).
    bool major = false;
    // It dropped the mmap lock for I/O and the fault was retried
    // (FAULT_FLAG_TRIED): after a synchronous read, or at a readahead mark.
    bool retried = false;
  };
  // Reads the file's pages [first, last) that are not cached, as one
  // request, and sets PG_readahead on `mark` if it read it. Returns the
  // pages read; nullopt if the page at `index` could not be had.
  struct ReadWindow {
    uint64_t read = 0;
    bool index_failed = false;
  };
  ReadWindow read_window(AddressSpace& file, uint64_t first, uint64_t last, uint64_t index,
                         uint64_t mark, const Vma& vma, FaultCtx& ctx, OpCost& cost);
  FilemapGet filemap_get(AddressSpace& file, uint64_t index, const Vma& vma, FaultCtx& ctx);
  // Maps the cached pages around vpn; returns the time, memcg's apart.
  struct Mapped {
    double ns = 0;
    double memcg_ns = 0;
  };
  Mapped fault_around(Mm& mm, Vma& vma, Vpn vpn);
  // A fault's result, with the memcg's time kept apart (handle_mm_fault adds
  // it last).
  struct Fault {
    FaultResult result;
    double memcg_ns = 0;
  };
  Fault do_handle_mm_fault(Mm& mm, Vpn vpn, bool write, FaultCtx& ctx);
  Fault do_wp_page(Mm& mm, Vma& vma, Vpn vpn, Pte pte, FaultCtx& ctx);
  // A fault on a swap entry: the folio from the swap cache, or read back.
  Fault do_swap_page(Mm& mm, Vma& vma, Vpn vpn, Pte pte, bool write, FaultCtx& ctx);
  // A large folio's counts of PMD mappings (entire_mapcount) and of its
  // pages' PTE mappings, kept in its first tail as the kernel does.
  uint32_t& entire_mapcount(Pfn head) { return folios_.folio(Pfn(head.v + 1)).lru_prev; }
  uint32_t entire_mapcount(Pfn head) const { return folios_.folio(Pfn(head.v + 1)).lru_prev; }
  uint32_t& pte_mapcount(Pfn head) { return folios_.folio(Pfn(head.v + 1)).lru_next; }
  uint32_t pte_mapcount(Pfn head) const { return folios_.folio(Pfn(head.v + 1)).lru_next; }
  // thp_vma_allowable: the VMA may fault a PMD-sized folio at vpn (its
  // aligned 2 MiB range inside the VMA).
  bool thp_fault_allowed(const Vma& vma, Vpn vpn) const;
  // do_huge_pmd_anonymous_page on an empty PMD: the huge zero page on a
  // read, else a 2 MiB folio. fallback: the fault goes on with base pages.
  Fault do_huge_pmd_anonymous_page(Mm& mm, Vma& vma, Vpn vpn, bool write, FaultCtx& ctx,
                                   bool* fallback);
  // A fault on a huge PMD: the access bits, or do_huge_pmd_wp_page (reuse,
  // else split and fall back to the PTE's do_wp_page).
  Fault huge_pmd_fault(Mm& mm, Vma& vma, PteTable& t, bool write, FaultCtx& ctx, bool* fallback);
  // The PMD's folio for an anonymous fault: local node only unless the
  // policy or defrag says otherwise (alloc_hugepage_vma, vma_thp_gfp_mask).
  std::optional<Pfn> alloc_huge_folio(const Vma& vma, Vpn haddr, const FaultCtx& ctx, double* ns);
  // zap_huge_pmd: the PMD and its deposited table go (the range takes a THP
  // fault again); the folio too with its last mapping.
  double zap_huge_pmd(Mm& mm, Vma& vma, Vpn haddr);
  // __split_huge_pmd_locked: the PMD becomes 512 PTEs of its folio's pages.
  void split_huge_pmd(Mm& mm, Vma& vma, PteTable& t);
  // khugepaged_enter_vma: registers the VMA's mm with khugepaged if the VMA
  // is one it collapses in.
  void khugepaged_enter_vma(const Vma& vma);
  // __khugepaged_enter: puts the mm on the list (fork's khugepaged_fork too).
  void khugepaged_enter(Mm& mm);
  // __khugepaged_exit: the mm leaves khugepaged's list.
  void khugepaged_exit(Mm& mm);
  // hugepage_vma_check as khugepaged asks it: an anonymous VMA that has
  // faulted (anon_vma), THP on for it, with an aligned 2 MiB range inside.
  bool khugepaged_vma_check(const Vma& vma) const;
  enum class ScanResult : uint8_t { kSucceed, kFail, kAllocFail };
  // khugepaged_scan_mm_slot: the cursor's mm, up to `pages` of budget.
  // Returns the budget used.
  uint64_t khugepaged_scan_mm_slot(uint64_t pages, ScanResult* result, double* ns);
  // What the checks of hpage_collapse_scan_pmd (and, again under the locks,
  // __collapse_huge_page_isolate) found in a PMD range's PTEs.
  struct CollapseSurvey {
    bool ok = false;
    std::vector<uint32_t> node_load;  // present pages by node
  };
  CollapseSurvey collapse_survey(const PteTable& t, double* ns) const;
  // hpage_collapse_scan_pmd, and collapse_huge_page when it qualifies.
  // *unlocked: it tried a collapse, which drops the mmap lock (the scan of
  // the mm ends).
  ScanResult hpage_collapse_scan_pmd(Mm& mm, Vma& vma, Vpn haddr, bool* unlocked, double* ns);
  ScanResult collapse_huge_page(Mm& mm, Vma& vma, Vpn haddr, const CollapseSurvey& survey,
                                double* ns);
  // delete_from_swap_cache: the folio gives its slot up (which goes back
  // once no PTE refers to it).
  void swap_cache_del(Pfn pfn);
  // Drops a swap PTE's reference to its slot (free_swap_and_cache).
  void swap_entry_free(uint32_t slot);
  // A completed fault: pgfault; vmstat (and memcg) pgmajfault when `major`;
  // the task's maj_flt when `major`, or when `retried` and the kernel counts
  // retried faults as major.
  void account_fault(FaultCtx& ctx, bool major, bool retried = false);
  // workingset_refault (mm/workingset.c): a page-cache page read back whose
  // eviction left `shadow`: counted in this kernel's counter, and activated
  // when its refault distance is within the workingset.
  void workingset_refault(Folio& f, const Shadow& shadow);
  // workingset_eviction: the shadow a folio evicted now leaves (page-cache
  // slot or swap slot), by the evicting memcg's lruvec.
  Shadow workingset_eviction(const Folio& f);

  const topo::Topology& topo_;
  const cost::CostProfile& costs_;
  MmConfig config_;
  VmStat vmstat_;
  FolioAllocator folios_;
  LruSet lru_;
  std::vector<std::vector<uint32_t>> lru_batch_;  // by CPU: folios not yet on the LRU
  std::vector<uint32_t> read_locked_;             // read_window's folios under read
  cost::CacheModel cache_;
  MemoryTiers tiers_;
  std::vector<std::unique_ptr<AddressSpace>> files_;
  std::vector<std::unique_ptr<AnonVma>> anon_vmas_;
  std::vector<Mm*> live_mms_;
  uint32_t next_mm_id_ = 1;
  uint64_t page_events_ = 0;
  uint64_t nr_pte_tables_ = 0;
  MemcgHooks* memcg_ = nullptr;
  ReclaimHooks* reclaim_ = nullptr;
  Writeback writeback_{*this};
  std::unique_ptr<SwapSpace> swap_;
  std::unordered_map<uint32_t, uint32_t> swap_slot_of_;  // swap-cache folio -> its slot
  uint32_t evicting_memcg_ = 0;
  std::vector<std::pair<Mm*, Vpn>> scratch_maps_;  // rmap walks that change PTEs
  // The (mm, address) of every PTE mapping the folio, found by rmap_walk,
  // in scratch_maps_ (to change them after the walk).
  std::vector<std::pair<Mm*, Vpn>>& rmap_collect(Pfn pfn);
  bool thp_on_ = false;
  bool huge_zero_page_ = false;  // its 512 pages are allocated (thp_zero_page_alloc)
  // khugepaged's list of mms (khugepaged_scan.mm_head, in registration
  // order), its cursor (mm_slot, npos: none, and address) and where a pass
  // interrupted by an allocation failure stands.
  struct Khugepaged {
    static constexpr size_t npos = ~size_t{0};
    std::vector<Mm*> mms;
    size_t cursor = npos;
    Vpn address{};
    bool wake = false;
    bool in_pass = false;
    uint64_t progress = 0;
    int pass_through_head = 0;
    bool alloc_waited = false;
    KhugepagedStats stats;
  } khugepaged_;
};

}  // namespace mmsim::mm

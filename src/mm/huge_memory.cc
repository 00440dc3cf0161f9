// Models anonymous transparent huge pages (mm/huge_memory.c: the THP fault,
// the huge zero page, do_huge_pmd_wp_page, zap_huge_pmd, copy_huge_pmd,
// __split_huge_pmd_locked, __split_huge_page), in our own words. The rules
// and their versions: docs/research/thp-rules.md.
#include <algorithm>
#include <vector>

#include "mm/memory_manager.h"
#include "sim/check.h"

namespace mmsim::mm {

namespace {

constexpr uint64_t kHugeMask = ~uint64_t{kHugePages - 1};

}  // namespace

bool MemoryManager::thp_fault_allowed(const Vma& vma, Vpn vpn) const {
  if (!thp_on_ || !vma.is_anonymous() || (vma.flags & (Vma::kShared | Vma::kNoHugepage)))
    return false;
  if (config_.thp_enabled == ThpEnabled::kMadvise && !(vma.flags & Vma::kHugepage)) return false;
  // transhuge_vma_suitable: the aligned 2 MiB range lies inside the VMA.
  const uint64_t haddr = vpn.v & kHugeMask;
  return haddr >= vma.start.v && haddr + kHugePages <= vma.end.v;
}

std::optional<Pfn> MemoryManager::alloc_huge_folio(const Vma& vma, Vpn haddr, const FaultCtx& ctx,
                                                   double* ns) {
  // vma_thp_gfp_mask: direct reclaim for defrag=always, or for a
  // MADV_HUGEPAGE VMA under madvise and defer+madvise; a kswapd wake
  // instead under defer (and defer+madvise without MADV_HUGEPAGE).
  const ThpDefrag d = config_.thp_defrag;
  const bool madvised = vma.flags & Vma::kHugepage;
  const bool direct = d == ThpDefrag::kAlways ||
                      (madvised && (d == ThpDefrag::kMadvise || d == ThpDefrag::kDeferMadvise));
  const bool wake = !direct && (d == ThpDefrag::kDefer || d == ThpDefrag::kDeferMadvise);
  const Retry retry = direct ? Retry::kNoRetry : Retry::kNoReclaim;
  const MemPolicy& pol = vma_policy(vma, ctx);
  // The interleave index of a THP (interleave_nid, 6.1; get_vma_policy's
  // ilx, 6.12): the VMA's offset in 2 MiB units plus the 2 MiB steps from
  // the VMA's start, rounded down. An anonymous VMA's offset is its start
  // page, so a VMA that does not start on a 2 MiB boundary counts one less
  // than the address's own 2 MiB index, and interleaves the other way.
  const uint64_t ilx = (vma.start.v >> kHugeOrder) + ((haddr.v - vma.start.v) >> kHugeOrder);
  using Mode = MemPolicy::Mode;
  // Interleave, and a bind that leaves the local node out, allocate over
  // the policy's nodes; otherwise the preferred node is tried alone first
  // (__GFP_THISNODE), and only a mask that reclaims goes on to the others.
  const bool local_in_bind =
      pol.mode != Mode::kBind ||
      std::find(pol.nodes.begin(), pol.nodes.end(), ctx.node) != pol.nodes.end();
  if (pol.mode == Mode::kInterleave || !local_in_bind) {
    if (wake && reclaim_)
      for (NodeId n : folios_.zonelist(pol, ctx.node, ilx)) reclaim_->wake_kswapd(n);
    return alloc_folio(pol, ctx.node, ilx, ctx.cpu, ns, retry, kHugeOrder);
  }
  const NodeId preferred = pol.mode == Mode::kPreferred ? pol.nodes.front() : ctx.node;
  MemPolicy thisnode;
  thisnode.mode = Mode::kBind;
  thisnode.nodes = {preferred};
  if (wake && reclaim_) reclaim_->wake_kswapd(preferred);
  if (auto pfn = alloc_folio(thisnode, ctx.node, ilx, ctx.cpu, ns, Retry::kNoReclaim, kHugeOrder))
    return pfn;
  if (!direct) return std::nullopt;
  return alloc_folio(pol, ctx.node, ilx, ctx.cpu, ns, Retry::kNoRetry, kHugeOrder);
}

MemoryManager::Fault MemoryManager::do_huge_pmd_anonymous_page(Mm& mm, Vma& vma, Vpn vpn,
                                                               bool write, FaultCtx& ctx,
                                                               bool* fallback) {
  Fault out;
  FaultResult& r = out.result;
  const Vpn haddr(vpn.v & kHugeMask);
  AnonVma& av = anon_vma_prepare(vma);
  khugepaged_enter_vma(vma);
  if (!write && config_.thp_use_zero_page) {
    // The huge zero page, read-only: no RSS, no LRU, no charge. Its first
    // use allocates it (get_huge_zero_page: 512 zeroed pages, GFP_TRANSHUGE
    // without __GFP_MOVABLE), and it stays. SIMPLIFICATION: the kernel's
    // shrinker frees it under memory pressure while no PMD maps it; here it
    // stays until the run ends. If it cannot be had the fault falls back to
    // the PTE level, which maps the 4 KiB zero page.
    if (!huge_zero_page_) {
      const std::optional<Pfn> z = folios_.alloc(MemPolicy{}, ctx.node, 0, Mark::kLow, kHugeOrder);
      if (!z) {
        vmstat_.add(Vm::thp_zero_page_alloc_failed);
        *fallback = true;
        return out;
      }
      folios_.folio(*z).flags |= Folio::kKernel;
      huge_zero_page_ = true;
      vmstat_.add(Vm::thp_zero_page_alloc);
      r.cost.sys_ns += static_cast<double>(kHugePages) * cache_.page_zero_ns(ctx.node, ctx.node);
    }
    // The table the PMD deposits (pte_alloc_one; the kernel takes it before
    // the zero page).
    PteTable* t = pte_alloc(mm, haddr, ctx, &r.cost.sys_ns);
    if (!t) {
      r.status = FaultStatus::kOom;
      return out;
    }
    Pte pmd;
    pmd.pfn = kZeroPfn;
    pmd.flags = Pte::kPresent | Pte::kYoung;
    t->set_pmd(pmd);
    r.cost.sys_ns += costs_.pte_set_ns;
    account_fault(ctx, false);
    return out;
  }
  auto pfn = alloc_huge_folio(vma, haddr, ctx, &out.memcg_ns);
  if (!pfn) {
    vmstat_.add(Vm::thp_fault_fallback);
    *fallback = true;
    return out;
  }
  for (uint32_t i = 0; i < kHugePages; ++i) {
    Folio& page = folios_.folio(Pfn(pfn->v + i));
    page.mapping = av.id;
    page.set_index(haddr.v + i);
  }
  folios_.folio(*pfn).flags |= Folio::kAnon | Folio::kUptodate;
  if (memcg_) {
    // The light mask charges without reclaim, as it allocates.
    const ChargeResult c = memcg_->charge(ctx.memcg, *pfn, ctx.cpu, Retry::kNoReclaim);
    out.memcg_ns += c.ns;
    if (!c.ok) {
      folios_.folio(*pfn).flags = Folio::kInUse;
      folios_.free(*pfn);
      vmstat_.add(Vm::thp_fault_fallback);
      vmstat_.add(Vm::thp_fault_fallback_charge);
      *fallback = true;
      return out;
    }
  }
  // __do_huge_pmd_anonymous_page: the table the PMD deposits
  // (pte_alloc_one); without it the folio goes and the fault is OOM.
  PteTable* t = pte_alloc(mm, haddr, ctx, &r.cost.sys_ns);
  if (!t) {
    Folio& g = folios_.folio(*pfn);  // after the allocation's reclaim
    if (memcg_) memcg_->uncharge(*pfn, g);
    g.flags = Folio::kInUse;
    folios_.free(*pfn);
    r.status = FaultStatus::kOom;
    return out;
  }
  Folio& f = folios_.folio(*pfn);
  vmstat_.add(Vm::nr_anon_pages, kHugePages);
  vmstat_.add(Vm::nr_anon_transparent_hugepages);
  vmstat_.add(Vm::thp_fault_alloc);
  if (config_.anon_fault_active) f.flags |= Folio::kActive;
  folio_add_lru(*pfn, ctx.cpu);  // a large folio: the CPU's batch goes on the LRU with it
  Pte pmd;
  pmd.pfn = pfn->v;
  pmd.flags = Pte::kPresent | Pte::kYoung | Pte::kDirty | Pte::kWrite;
  t->set_pmd(pmd);
  ++entire_mapcount(*pfn);
  mm.rss_anon += kHugePages;
  if (vma.flags & Vma::kLocked) mlock_folio(*pfn);
  ++page_events_;
  // clear_huge_page: 512 pages zeroed.
  r.cost.sys_ns += costs_.page_alloc_ns + costs_.pte_set_ns +
                   static_cast<double>(kHugePages) * cache_.page_zero_ns(ctx.node, f.node);
  r.zero_filled = kHugePages;
  out.memcg_ns +=
      cache_.meta_miss_ns(cost::Meta::kStructPage, 0, pfn->v, cost::kStructPageBytes, f.node);
  account_fault(ctx, false);
  return out;
}

MemoryManager::Fault MemoryManager::huge_pmd_fault(Mm& mm, Vma& vma, PteTable& t, bool write,
                                                   FaultCtx& ctx, bool* fallback) {
  Fault out;
  Pte pmd = t.pmd();
  if (pmd.accessible() && (!write || pmd.writable())) {
    // The MMU sets the accessed (and dirty) bit; no fault.
    pmd.flags |= Pte::kYoung | (write ? Pte::kDirty : 0);
    t.set_pmd(pmd);
    return out;
  }
  out.result.cost.sys_ns += costs_.fault_entry_ns;
  if (pmd.protnone() || pmd.migration()) {
    // A NUMA hinting PMD (do_huge_pmd_numa_page is the caller's), or one
    // under migration (pmd_migration_entry_wait): as for a PTE, with the
    // folio's head.
    out.result.status = pmd.protnone() ? FaultStatus::kNumaHint : FaultStatus::kMigrationWait;
    out.result.pfn = Pfn(pmd.pfn);
    account_fault(ctx, false);
    return out;
  }
  if (pmd.accessible() && write && pmd.pfn != kZeroPfn) {
    // do_huge_pmd_wp_page: an exclusive folio (its only mapping, no swap
    // cache) is reused in place; otherwise, and always for the huge zero
    // page, the PMD is split and the PTE-level fault copies one page (5.8+).
    const Pfn head(pmd.pfn);
    const Folio& f = folios_.folio(head);
    if (folio_mapcount(head) == 1 && !f.test(Folio::kSwapCache)) {
      pmd.flags |= Pte::kWrite | Pte::kDirty | Pte::kYoung;
      t.set_pmd(pmd);
      out.result.cost.sys_ns += costs_.pte_protect_ns;
      account_fault(ctx, false);
      return out;
    }
  }
  split_huge_pmd(mm, vma, t);
  *fallback = true;
  return out;
}

double MemoryManager::zap_huge_pmd(Mm& mm, Vma& vma, Vpn haddr) {
  PteTable& t = *mm.pgtable().table(haddr);
  const Pte pmd = t.pmd();
  // The PMD becomes none and the page table it had deposited is freed
  // (zap_huge_pmd's zap_deposited_table): the range may take a THP fault
  // again, as after munmap.
  t.set_pmd(Pte{});
  pgtable_free(mm.pgtable().free_table(haddr));
  ++page_events_;
  if (pmd.pfn == kZeroPfn || !pmd.maps_folio()) return 0;
  const Pfn head(pmd.pfn);
  Folio& f = folios_.folio(head);
  double memcg_ns =
      cache_.meta_miss_ns(cost::Meta::kStructPage, 0, head.v, cost::kStructPageBytes, f.node);
  if (vma.flags & Vma::kLocked) munlock_folio(head);
  mm.rss_anon -= kHugePages;
  check(entire_mapcount(head) > 0, "zap of an unmapped huge PMD");
  if (--entire_mapcount(head) == 0) vmstat_.add(Vm::nr_anon_transparent_hugepages, -1);
  if (folio_mapcount(head) == 0 && !f.test(Folio::kLocked)) free_anon_folio(head);
  return memcg_ns;
}

void MemoryManager::split_huge_pmd(Mm& mm, Vma& vma, PteTable& t) {
  const Pte pmd = t.pmd();
  t.set_pmd(Pte{});
  vmstat_.add(Vm::thp_split_pmd);
  ++page_events_;
  const bool zero = pmd.pfn == kZeroPfn;
  for (uint32_t i = 0; i < kPtesPerTable; ++i) {
    Pte pte = pmd;
    if (!zero) pte.pfn = pmd.pfn + i;
    t.set(i, pte);
  }
  if (zero || !pmd.maps_folio()) return;
  const Pfn head(pmd.pfn);
  for (uint32_t i = 0; i < kHugePages; ++i) ++folios_.folio(Pfn(head.v + i)).mapcount;
  pte_mapcount(head) += kHugePages;
  if (--entire_mapcount(head) == 0) vmstat_.add(Vm::nr_anon_transparent_hugepages, -1);
  // mlock_count of a large folio counts its mappings in VM_LOCKED VMAs: the
  // PMD's one is now 512 PTEs'.
  if (vma.flags & Vma::kLocked)
    folios_.set_mlock_count(head, folios_.mlock_count(head) + kHugePages - 1);
}

void MemoryManager::split_huge_folio(Pfn head, std::vector<Pfn>* isolated) {
  // try_to_unmap's TTU_SPLIT_HUGE_PMD: each PMD mapping becomes PTEs first.
  std::vector<std::pair<Mm*, Vpn>> pmds;
  rmap_walk(head, [&](Mm& mm, Vma&, Vpn v) {
    if (mm.pgtable().table(v)->huge()) pmds.emplace_back(&mm, v);
  });
  for (auto [mm, v] : pmds) split_huge_pmd(*mm, *mm->find_vma(v), *mm->pgtable().table(v));
  split_huge_page(head, isolated);
}

void MemoryManager::split_huge_page(Pfn head, std::vector<Pfn>* isolated) {
  Folio& f = folios_.folio(head);
  check(f.large() && entire_mapcount(head) == 0, "split of a PMD-mapped or small folio");
  // Each page's mappings in VM_LOCKED VMAs, which become its own mlock count.
  std::vector<uint16_t> locked(kHugePages, 0);
  if (folios_.mlock_count(head)) {
    rmap_walk(head, [&](Mm&, Vma& vma, Vpn v) {
      if (vma.flags & Vma::kLocked) ++locked[v.v - f.index()];
    });
  }
  const bool was_mlocked = f.test(Folio::kMlocked);
  const bool on_lru = f.test(Folio::kLru);
  if (on_lru) lru_.del(head);
  folios_.split(head);
  int64_t mlocked = 0;
  for (uint32_t i = 0; i < kHugePages; ++i) {
    Folio& p = folios_.folio(Pfn(head.v + i));
    p.set_index(f.index() + i);
    folios_.set_mlock_count(Pfn(head.v + i), locked[i]);
    if (locked[i]) {
      p.flags |= Folio::kMlocked;
      ++mlocked;
    } else {
      p.flags &= static_cast<uint16_t>(~Folio::kMlocked);
    }
  }
  if (was_mlocked) vmstat_.add(Vm::nr_mlock, mlocked - static_cast<int64_t>(kHugePages));
  vmstat_.add(Vm::thp_split_page);
  // Pages that nothing maps any more are freed; the rest join the LRU after
  // the head, as lru_add_page_tail puts them.
  for (uint32_t i = 0; i < kHugePages; ++i) {
    const Pfn p(head.v + i);
    const Folio& page = folios_.folio(p);
    if (page.mapcount == 0 && !page.test(Folio::kLocked) && !page.test(Folio::kSwapCache)) {
      free_anon_folio(p);
      continue;
    }
    if (on_lru || !isolated) {
      lru_.add(p);
    } else if (i) {
      isolated->push_back(p);  // split_huge_page_to_list: on the isolating list
    }
  }
}

}  // namespace mmsim::mm

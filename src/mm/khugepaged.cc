// Models khugepaged (mm/khugepaged.c, read in 6.1 and 6.12), in our own
// words: the kernel thread that walks the mms registered with it, a budget
// of PMD ranges per pass, and copies a range of small pages into a newly
// allocated THP. Its rules and versions: docs/kernel-rules.md, section 11.
#include <algorithm>

#include "mm/memory_manager.h"
#include "sim/check.h"

namespace mmsim::mm {

namespace {

constexpr uint64_t kHugeMask = ~uint64_t{kHugePages - 1};

}  // namespace

bool MemoryManager::khugepaged_vma_check(const Vma& vma) const {
  // The fault's test on the VMA's last aligned 2 MiB (transhuge_vma_suitable
  // at vm_end - HPAGE_PMD_SIZE), and an anon_vma: hugepage_vma_check lets a
  // VMA without one through for the fault alone.
  if (!vma.anon_vma || vma.end.v - vma.start.v < kHugePages) return false;
  return thp_fault_allowed(vma, Vpn(vma.end.v - kHugePages));
}

void MemoryManager::khugepaged_enter_vma(const Vma& vma) {
  if (!vma.mm->khugepaged && khugepaged_vma_check(vma)) khugepaged_enter(*vma.mm);
}

void MemoryManager::khugepaged_enter(Mm& mm) {
  if (mm.khugepaged) return;
  mm.khugepaged = true;
  // Added at the list's tail, behind the cursor, "to let the area settle
  // down a little"; a first mm wakes the thread, which sleeps without a
  // timeout while the list is empty.
  if (khugepaged_.mms.empty()) khugepaged_.wake = true;
  khugepaged_.mms.push_back(&mm);
}

void MemoryManager::khugepaged_exit(Mm& mm) {
  if (!mm.khugepaged) return;
  mm.khugepaged = false;
  Khugepaged& k = khugepaged_;
  const auto it = std::find(k.mms.begin(), k.mms.end(), &mm);
  check(it != k.mms.end(), "an mm marked MMF_VM_HUGEPAGE that khugepaged does not list");
  const auto at = static_cast<size_t>(it - k.mms.begin());
  k.mms.erase(it);
  if (k.cursor == Khugepaged::npos || at > k.cursor) return;
  if (at < k.cursor) {
    --k.cursor;
    return;
  }
  // The mm under the cursor: the scan goes on with the next one (the kernel
  // finds it dead at its next visit and moves on).
  k.address = Vpn(0);
  if (k.cursor == k.mms.size()) k.cursor = Khugepaged::npos;
}

MemoryManager::KhugepagedStep MemoryManager::khugepaged_run() {
  Khugepaged& k = khugepaged_;
  KhugepagedStep step;
  if (!k.in_pass) {
    lru_add_drain_all();  // khugepaged_do_scan
    k.in_pass = true;
    k.progress = 0;
    k.pass_through_head = 0;
    k.alloc_waited = false;
  }
  const auto pages = static_cast<uint64_t>(config_.khugepaged_pages_to_scan);
  // khugepaged_do_scan: mm after mm until the budget is spent, at most once
  // round the list (the second pass through its head ends it).
  while (true) {
    ScanResult result = ScanResult::kFail;
    if (k.cursor == Khugepaged::npos) ++k.pass_through_head;
    if (!k.mms.empty() && thp_on_ && k.pass_through_head < 2) {
      k.progress += khugepaged_scan_mm_slot(pages - k.progress, &result, &step.ns);
    } else {
      k.progress = pages;
    }
    if (k.progress >= pages) break;
    if (result == ScanResult::kAllocFail) {
      // The first failure sleeps, and the pass goes on; a second ends it.
      if (k.alloc_waited) break;
      k.alloc_waited = true;
      step.next = KhugepagedStep::Next::kAllocSleep;
      k.stats.cpu_ns += step.ns;
      return step;
    }
  }
  k.in_pass = false;
  step.next =
      !k.mms.empty() && thp_on_ ? KhugepagedStep::Next::kScanSleep : KhugepagedStep::Next::kIdle;
  k.stats.cpu_ns += step.ns;
  return step;
}

uint64_t MemoryManager::khugepaged_scan_mm_slot(uint64_t pages, ScanResult* result, double* ns) {
  Khugepaged& k = khugepaged_;
  if (k.cursor == Khugepaged::npos) {
    k.cursor = 0;
    k.address = Vpn(0);
  }
  Mm& mm = *k.mms[k.cursor];
  uint64_t progress = 1;  // the mmap lock taken
  *result = ScanResult::kFail;
  // The VMAs from the cursor's address on (vma_iter_init finds the one that
  // ends after it). A collapse or the spent budget ends the scan of this mm
  // with the cursor kept; running off its last VMA moves it to the next mm.
  bool stopped = false;
  for (size_t i = 0; i < mm.vmas().size() && !stopped; ++i) {
    Vma& vma = *mm.vmas()[i];
    if (vma.end <= k.address) continue;
    if (!khugepaged_vma_check(vma)) {
      ++progress;
      continue;
    }
    const Vpn hstart((vma.start.v + kHugePages - 1) & kHugeMask);
    const Vpn hend(vma.end.v & kHugeMask);
    if (k.address > hend) {
      ++progress;
      continue;
    }
    k.address = std::max(k.address, hstart);
    while (k.address < hend) {
      bool unlocked = false;
      *result = hpage_collapse_scan_pmd(mm, vma, k.address, &unlocked, ns);
      if (*result == ScanResult::kSucceed) ++k.stats.pages_collapsed;
      k.address = Vpn(k.address.v + kHugePages);
      progress += kHugePages;
      if (unlocked || progress >= pages) {
        stopped = true;
        break;
      }
    }
  }
  if (!stopped) {
    k.address = Vpn(0);
    if (k.cursor + 1 < k.mms.size()) {
      ++k.cursor;
    } else {
      k.cursor = Khugepaged::npos;
      ++k.stats.full_scans;
    }
  }
  return progress;
}

MemoryManager::CollapseSurvey MemoryManager::collapse_survey(const PteTable& t, double* ns) const {
  CollapseSurvey s;
  s.node_load.assign(topo_.nr_nodes(), 0);
  uint32_t none_or_zero = 0, shared = 0, referenced = 0;
  bool writable = false;
  for (uint32_t i = 0; i < kPtesPerTable; ++i) {
    const Pte pte = t.get(i);
    // SIMPLIFICATION: a swap or migration entry refuses the range. The
    // kernel takes up to max_ptes_swap (64) of them and swaps them in first
    // (__collapse_huge_page_swapin) when half the range is referenced.
    if (pte.swap() || pte.migration()) return s;
    if (pte.none() || pte.pfn == kZeroPfn) {
      if (++none_or_zero > config_.khugepaged_max_ptes_none) return s;
      continue;
    }
    // A PROT_NONE hinting PTE is present (pte_present), its write bit kept.
    *ns += costs_.pte_protect_ns;
    if (pte.flags & Pte::kWrite) writable = true;
    const Pfn page(pte.pfn);
    const Pfn head = folio_head(page);
    const Folio& f = folios_.folio(head);
    if (!f.test(Folio::kAnon)) return s;
    if (page_mapcount(page) > 1 && ++shared > config_.khugepaged_max_ptes_shared) return s;
    if (f.large() && !config_.khugepaged_collapse_large) return s;
    ++s.node_load[f.node.v];
    // Isolated (by migration or reclaim) or locked: not now.
    if (!f.test(Folio::kLru) || f.test(Folio::kLocked)) return s;
    if ((pte.flags & Pte::kYoung) || f.test(Folio::kReferenced)) ++referenced;
  }
  // At least one page written to be mapped writable, and one referenced.
  s.ok = writable && referenced > 0;
  return s;
}

MemoryManager::ScanResult MemoryManager::hpage_collapse_scan_pmd(Mm& mm, Vma& vma, Vpn haddr,
                                                                 bool* unlocked, double* ns) {
  // find_pmd_or_thp_or_none: no table, or a huge PMD already.
  const PteTable* t = mm.pgtable().table(haddr);
  *ns += costs_.pte_protect_ns;
  if (!t || t->huge()) return ScanResult::kFail;
  const CollapseSurvey s = collapse_survey(*t, ns);
  if (!s.ok) return ScanResult::kFail;
  *unlocked = true;
  return collapse_huge_page(mm, vma, haddr, s, ns);
}

MemoryManager::ScanResult MemoryManager::collapse_huge_page(Mm& mm, Vma& vma, Vpn haddr,
                                                            const CollapseSurvey& survey,
                                                            double* ns) {
  // hpage_collapse_find_target_node: the first node with the most pages;
  // the allocation may use any node that has as many.
  const auto most = std::max_element(survey.node_load.begin(), survey.node_load.end());
  const NodeId target(static_cast<uint16_t>(most - survey.node_load.begin()));
  MemPolicy mask;
  mask.mode = MemPolicy::Mode::kBind;
  for (size_t n = 0; n < survey.node_load.size(); ++n)
    if (survey.node_load[n] == *most) mask.nodes.push_back(NodeId(static_cast<uint16_t>(n)));
  // khugepaged is not bound to a CPU: it runs, and reclaims, on one of the
  // target node's if it has any.
  const auto& cpus = topo_.node(target).cpus;
  const CpuId cpu = cpus.empty() ? CpuId(0) : cpus.front();
  // defrag: GFP_TRANSHUGE, which reclaims once (a costly order does not
  // retry); without it GFP_TRANSHUGE_LIGHT, free pages only.
  const Retry retry = config_.khugepaged_defrag ? Retry::kNoRetry : Retry::kNoReclaim;
  const auto pfn = alloc_folio(mask, target, haddr.v >> kHugeOrder, cpu, ns, retry, kHugeOrder);
  if (!pfn) {
    vmstat_.add(Vm::thp_collapse_alloc_failed);
    return ScanResult::kAllocFail;
  }
  vmstat_.add(Vm::thp_collapse_alloc);
  *ns += costs_.page_alloc_ns;
  auto give_back = [&] {
    folios_.folio(*pfn).flags = Folio::kInUse;
    folios_.free(*pfn);
  };
  // The new folio is anonymous before it is charged (memcg counts it as rss).
  AnonVma& av = anon_vma_prepare(vma);
  for (uint32_t i = 0; i < kHugePages; ++i) {
    Folio& page = folios_.folio(Pfn(pfn->v + i));
    page.mapping = av.id;
    page.set_index(haddr.v + i);
  }
  folios_.folio(*pfn).flags |= Folio::kAnon | Folio::kUptodate;
  if (memcg_) {
    const ChargeResult c = memcg_->charge(mm.memcg, *pfn, cpu, retry);
    *ns += c.ns;
    if (!c.ok) {
      give_back();
      return ScanResult::kFail;
    }
  }
  // Allocation and charge may have reclaimed: the range is checked again
  // under the locks (__collapse_huge_page_isolate).
  PteTable* t = mm.pgtable().table(haddr);
  if (!t || t->huge() || !collapse_survey(*t, ns).ok) {
    if (memcg_) memcg_->uncharge(*pfn, folios_.folio(*pfn));
    give_back();
    return ScanResult::kFail;
  }
  const NodeId node = folios_.folio(*pfn).node;
  // __collapse_huge_page_copy: each page copied (an empty PTE's zeroed),
  // then its PTE cleared and its old page released (freed with its last
  // mapping; a THP's with its last page).
  double memcg_ns = 0;
  uint64_t cleared = 0;
  for (uint32_t i = 0; i < kHugePages; ++i) {
    const Vpn v(haddr.v + i);
    const Pte pte = t->get(i);
    if (pte.maps_folio()) {
      *ns += cache_.page_copy_ns(node, folios_.folio(Pfn(pte.pfn)).node, node);
    } else {
      *ns += cache_.page_zero_ns(node, node);
    }
    if (pte.none()) continue;
    memcg_ns += zap_pte(mm, vma, *t, v);
    ++cleared;
  }
  vmstat_.add(Vm::nr_anon_pages, kHugePages);
  vmstat_.add(Vm::nr_anon_transparent_hugepages);
  lru_.add(*pfn);  // lru_cache_add_inactive_or_unevictable
  Pte pmd;
  pmd.pfn = pfn->v;
  pmd.flags =
      Pte::kPresent | Pte::kYoung | Pte::kDirty | (vma.flags & Vma::kWrite ? Pte::kWrite : 0);
  t->set_pmd(pmd);
  ++entire_mapcount(*pfn);
  mm.rss_anon += kHugePages;
  if (vma.flags & Vma::kLocked) mlock_folio(*pfn);
  ++page_events_;
  // pmdp_collapse_flush: the range's TLB entries go from every CPU of the mm.
  *ns += static_cast<double>(cleared) * costs_.pte_clear_ns + costs_.pte_set_ns + memcg_ns +
         flush_tlb_range(mm, cpu, kHugePages);
  mm.revoke(haddr, Vpn(haddr.v + kHugePages));
  return ScanResult::kSucceed;
}

}  // namespace mmsim::mm

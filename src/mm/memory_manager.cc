// Models mm/memory.c (handle_mm_fault, do_anonymous_page, do_read_fault,
// do_fault_around, do_cow_fault, do_shared_fault, do_wp_page, zap_pte_range,
// copy_page_range), mm/mmap.c, mm/madvise.c, mm/mlock.c, mm/rmap.c and
// mm/filemap.c (filemap_fault with readahead), in our own words.
#include "mm/memory_manager.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "sim/check.h"
#include "sim/rng.h"

namespace mmsim::mm {

MemoryManager::MemoryManager(const topo::Topology& topo, const cost::CostProfile& costs,
                             MmConfig config)
    : topo_(topo),
      costs_(costs),
      config_(config),
      folios_(topo, vmstat_),
      lru_(folios_, vmstat_, topo.nr_nodes()),
      lru_batch_(topo.nr_cpus()),
      cache_(topo, costs),
      tiers_(topo, config.memory_tiers) {
  // The counters this kernel's /proc/vmstat has.
  const RefaultStat refault = config_.workingset_refault_stat;
  vmstat_.set_shown(Vm::workingset_refault, refault == RefaultStat::kCombined);
  vmstat_.set_shown(Vm::workingset_refault_anon, refault == RefaultStat::kSplit);
  vmstat_.set_shown(Vm::workingset_refault_file, refault == RefaultStat::kSplit);
  vmstat_.set_shown(Vm::workingset_activate, refault == RefaultStat::kCombined);
  vmstat_.set_shown(Vm::workingset_activate_anon, refault == RefaultStat::kSplit);
  vmstat_.set_shown(Vm::workingset_activate_file, refault == RefaultStat::kSplit);
  const bool restore = config_.workingset_restore_stat;
  vmstat_.set_shown(Vm::workingset_restore, restore && refault == RefaultStat::kCombined);
  vmstat_.set_shown(Vm::workingset_restore_anon, restore && refault == RefaultStat::kSplit);
  vmstat_.set_shown(Vm::workingset_restore_file, restore && refault == RefaultStat::kSplit);
  thp_on_ = config_.thp_enabled != ThpEnabled::kNever && topo_.total_mem_bytes() >= kThpMinMemBytes;
  setup_watermarks();
  if (config_.swap_pages) swap_ = std::make_unique<SwapSpace>(config_.swap_pages);
  for (Vm v : {Vm::pgscan_anon, Vm::pgscan_file, Vm::pgsteal_anon, Vm::pgsteal_file})
    vmstat_.set_shown(v, config_.reclaim_lru_type_stats);
  // Demotion came with tiers (5.15), promotion with the tiering mode.
  const bool tiers = config_.memory_tiers != TierRule::kNone;
  for (Vm v : {Vm::pgdemote_kswapd, Vm::pgdemote_direct}) vmstat_.set_shown(v, tiers);
  vmstat_.set_shown(Vm::pgpromote_success, tiers && config_.promote_stats);
  vmstat_.set_shown(Vm::pgpromote_candidate, tiers && config_.promote_candidate_stat);
  // hugepage_init: THP stays off on a machine under 512 MiB. Its counters
  // are listed only when it is on (their names changed over the versions).
  for (Vm v : {Vm::nr_anon_transparent_hugepages, Vm::thp_fault_alloc, Vm::thp_fault_fallback,
               Vm::thp_fault_fallback_charge, Vm::thp_split_pmd, Vm::thp_split_page,
               Vm::thp_zero_page_alloc, Vm::thp_zero_page_alloc_failed, Vm::thp_collapse_alloc,
               Vm::thp_collapse_alloc_failed})
    vmstat_.set_shown(v, thp_on_);
  for (Vm v : {Vm::thp_migration_success, Vm::thp_migration_fail, Vm::thp_migration_split})
    vmstat_.set_shown(v, thp_on_ && config_.thp_migration_stats);
  vmstat_.set_shown(Vm::numa_huge_pte_updates, config_.numa_huge_pte_stat);
}

Shadow MemoryManager::workingset_eviction(const Folio& f) {
  // The shadow records the evicting lruvec's age, which the eviction then
  // advances.
  Shadow shadow;
  shadow.memcg = evicting_memcg_;
  shadow.node = f.node.v;
  shadow.age = lru_.lruvec(evicting_memcg_, f.node).nonresident_age;
  shadow.workingset = f.test(Folio::kWorkingset);
  lru_.age_nonresident(evicting_memcg_, f.node);
  return shadow;
}

void MemoryManager::workingset_refault(Folio& f, const Shadow& shadow) {
  // Counted in this kernel's counter: _file for page cache, _anon for a
  // page read back from swap.
  const RefaultStat stat = config_.workingset_refault_stat;
  if (stat == RefaultStat::kNone) return;  // before 3.15: no refault detection
  const bool split = stat == RefaultStat::kSplit;
  const bool file = !f.test(Folio::kAnon);
  auto pick = [&](Vm combined, Vm anon, Vm file_stat) {
    return split ? (file ? file_stat : anon) : combined;
  };
  vmstat_.add(
      pick(Vm::workingset_refault, Vm::workingset_refault_anon, Vm::workingset_refault_file));
  // The refault distance: evictions and activations at the evicting
  // lruvec since this page's. Within the workingset the page comes back
  // active: active file pages (and inactive ones for an anon refault),
  // plus anon pages when there is swap space to reclaim them to.
  const NodeId node(shadow.node);
  const uint64_t distance = lru_.lruvec(shadow.memcg, node).nonresident_age - shadow.age;
  uint64_t workingset = lru_.hier_size(shadow.memcg, node, LruList::kActiveFile);
  if (!file) workingset += lru_.hier_size(shadow.memcg, node, LruList::kInactiveFile);
  if (swap_ && swap_->nr_free() > 0) {
    workingset += lru_.hier_size(shadow.memcg, node, LruList::kActiveAnon);
    if (file) workingset += lru_.hier_size(shadow.memcg, node, LruList::kInactiveAnon);
  }
  if (distance > workingset) return;
  f.flags |= Folio::kActive;
  lru_.age_nonresident(f.memcg, f.node);
  lru_.count_activation(f.memcg, f.node, file);
  vmstat_.add(
      pick(Vm::workingset_activate, Vm::workingset_activate_anon, Vm::workingset_activate_file));
  if (shadow.workingset) {
    // It was active before its eviction: a workingset restore, which
    // costs its LRU type (lru_note_cost_folio).
    f.flags |= Folio::kWorkingset;
    lru_.note_cost(f.memcg, f.node, file, 1);
    if (config_.workingset_restore_stat)
      vmstat_.add(
          pick(Vm::workingset_restore, Vm::workingset_restore_anon, Vm::workingset_restore_file));
  }
}

void MemoryManager::setup_watermarks() {
  // calculate_min_free_kbytes, then __setup_per_zone_wmarks with one zone
  // per node: min shared out by node size; low and high a gap above it.
  uint64_t total_pages = 0;
  for (const auto& n : topo_.nodes()) total_pages += folios_.capacity_pages(n.id);
  int64_t min_kb = config_.min_free_kbytes;
  if (min_kb == kAutoMinFree) {
    const uint64_t kib_per_page = kPageSize / 1024;
    const auto kb = static_cast<double>(total_pages * kib_per_page);
    min_kb = std::clamp<int64_t>(static_cast<int64_t>(std::sqrt(kb * 16)), 128, 262144);
    if (thp_on_) {
      // khugepaged's start at boot (set_recommended_min_free_kbytes, with
      // THP always or madvise): 2 + 3 x 3 pageblocks of 2 MiB per zone up to
      // ZONE_NORMAL, at most 5% of memory. Zones as x86-64 lays them out:
      // each node's, plus node 0's DMA, plus its Normal when it has more
      // than the 3 GiB below the PCI hole (DMA32).
      uint64_t zones = 1;  // node 0's ZONE_DMA
      for (const auto& n : topo_.nodes()) zones += folios_.capacity_pages(n.id) ? 1 : 0;
      const uint64_t node0 = folios_.capacity_pages(topo_.nodes().front().id);
      if (node0 > (uint64_t{3} << 30) / kPageSize) ++zones;
      const uint64_t pages = std::min<uint64_t>(kHugePages * zones * (2 + 3 * 3), total_pages / 20);
      min_kb = std::max<int64_t>(min_kb, static_cast<int64_t>(pages * kib_per_page));
    }
  }
  const uint64_t pages_min = static_cast<uint64_t>(min_kb) / (kPageSize / 1024);
  for (const auto& n : topo_.nodes()) {
    const uint64_t managed = folios_.capacity_pages(n.id);
    Watermarks w;
    w.min = total_pages ? static_cast<uint64_t>(static_cast<unsigned __int128>(pages_min) *
                                                managed / total_pages)
                        : 0;
    const uint64_t gap = std::max(
        w.min / 4, managed * static_cast<uint64_t>(config_.watermark_scale_factor) / 10000);
    w.low = w.min + gap;
    w.high = w.low + gap;
    w.promo = w.high + gap;
    folios_.set_watermarks(n.id, w);
  }
}

std::optional<Pfn> MemoryManager::alloc_folio(const MemPolicy& policy, NodeId local, uint64_t ilx,
                                              CpuId cpu, double* ns, Retry retry, uint8_t order) {
  if (!reclaim_) return folios_.alloc(policy, local, ilx, Mark::kNone, order);
  if (auto pfn = folios_.alloc(policy, local, ilx, Mark::kLow, order)) return pfn;
  // The slow path: wake_all_kswapds (not for a mask without
  // __GFP_KSWAPD_RECLAIM), then the min watermark.
  const std::vector<NodeId> zonelist = folios_.zonelist(policy, local, ilx);
  if (retry != Retry::kNoReclaim)
    for (NodeId n : zonelist) reclaim_->wake_kswapd(n);
  if (auto pfn = folios_.alloc(policy, local, ilx, Mark::kMin, order)) return pfn;
  if (retry == Retry::kNoReclaim) return std::nullopt;
  // Direct reclaim, retried while it makes progress (should_reclaim_retry:
  // MAX_RECLAIM_RETRIES attempts without progress, then the OOM path).
  int no_progress = 0;
  while (no_progress <= kMaxReclaimRetries) {
    const ReclaimHooks::Progress p = reclaim_->try_to_free_pages(zonelist, cpu);
    *ns += p.ns;
    if (auto pfn = folios_.alloc(policy, local, ilx, Mark::kMin, order)) return pfn;
    if (retry == Retry::kNoRetry) break;
    no_progress = p.pages ? 0 : no_progress + 1;
    // ...and only while some node would be above min were all its
    // reclaimable pages freed (file LRU pages; anon ones with swap free, or
    // a demotion target): else the OOM path at once. The kernel counts shmem
    // as anon; reclaim here does not swap it, so it counts only towards
    // demotion.
    const bool swap_free = swap_ && swap_->nr_free() > 0;
    bool could = false;
    for (NodeId n : zonelist) {
      uint64_t reclaimable =
          lru_.node_size(n, LruList::kInactiveFile) + lru_.node_size(n, LruList::kActiveFile);
      const uint64_t anon =
          lru_.node_size(n, LruList::kInactiveAnon) + lru_.node_size(n, LruList::kActiveAnon);
      if (can_demote(n))
        reclaimable += anon;
      else if (swap_free)
        reclaimable += anon - lru_.node_shmem(n);
      could |= folios_.free_pages(n) + reclaimable > folios_.watermarks(n).min;
    }
    if (!could) break;
  }
  return std::nullopt;
}

double MemoryManager::folio_mark_accessed(Pfn pfn) {
  Folio& f = folios_.folio(pfn);
  if (!f.test(Folio::kReferenced)) {
    f.flags |= Folio::kReferenced;
    return 0;  // a bit in the struct page the caller has at hand
  }
  if (f.test(Folio::kMlocked) || f.test(Folio::kActive)) return 0;
  // folio_activate (through the per-CPU batch, drained under the lru_lock):
  // to the active list, pgactivate; then workingset_activation.
  f.flags &= static_cast<uint16_t>(~Folio::kReferenced);
  if (f.test(Folio::kLru)) {
    lru_.relist(pfn, [](Folio& g) { g.flags |= Folio::kActive; });
    vmstat_.add(Vm::pgactivate);
  } else {
    f.flags |= Folio::kActive;
  }
  lru_.age_nonresident(f.memcg, f.node);
  return costs_.lock_ns;
}

MemoryManager::Referenced MemoryManager::folio_referenced(Pfn pfn) {
  Referenced r;
  int32_t unseen = folio_mapcount(pfn);
  if (unseen == 0) return r;
  // Each mapping's PTE is tested and cleared (ptep_clear_flush_young: no
  // TLB flush on x86); a young one counts its VMA once. The walk ends at the
  // first VM_LOCKED mapping (reclaim mlocks the folio; not a PTE of a
  // large folio), or once it has seen as many mappings as the folio's
  // mapcount (folio_referenced_one).
  const bool large = folios_.folio(pfn).large();
  auto& maps = scratch_maps_;
  maps.clear();
  // Each mapping costs its PTE's line and the page-table lock
  // (page_vma_mapped_walk); a young one the locked bit clear too, priced as
  // a locked PTE update (pte_protect_ns). The walk holds the anon_vma or
  // i_mmap lock for reading.
  r.cost_ns += costs_.lock_ns;
  rmap_walk(pfn, [&](Mm& mm, Vma& vma, Vpn vpn) {
    r.cost_ns +=
        cache_.meta_miss_ns(cost::Meta::kPte, mm.id(), vpn.v, sizeof(uint64_t)) + costs_.lock_ns;
    const Pte pte = mm.pgtable().get(vpn);
    if ((vma.flags & Vma::kLocked) && (!large || mm.pgtable().table(vpn)->huge())) {
      r.locked = true;
      return false;
    }
    if (pte.flags & Pte::kYoung) {
      r.cost_ns += costs_.pte_protect_ns;
      ++r.mappings;
      if (vma.flags & Vma::kExec) r.exec = true;
      maps.emplace_back(&mm, vpn);
    }
    return --unseen > 0;
  });
  for (auto [mm, vpn] : maps) {
    PteTable& t = mm->pgtable().at(vpn);
    if (t.huge()) {  // pmdp_clear_flush_young: one bit for 2 MiB
      Pte pmd = t.pmd();
      pmd.flags = static_cast<uint8_t>(pmd.flags & ~Pte::kYoung);
      t.set_pmd(pmd);
      mm->revoke(vpn, Vpn(vpn.v + kPtesPerTable));
      continue;
    }
    const uint32_t i = vpn.v & (kPtesPerTable - 1);
    Pte pte = t.get(i);
    pte.flags = static_cast<uint8_t>(pte.flags & ~Pte::kYoung);
    t.set(i, pte);
    // A task running over the page sets the bit again when it gets there.
    mm->revoke(vpn, Vpn(vpn.v + 1));
  }
  return r;
}

AddressSpace& MemoryManager::create_file(std::string name, uint64_t size_pages, bool shmem) {
  auto f = std::make_unique<AddressSpace>();
  f->id = static_cast<uint32_t>(files_.size());
  f->name = std::move(name);
  f->shmem = shmem;
  f->size_pages = size_pages;
  files_.push_back(std::move(f));
  return *files_.back();
}

bool MemoryManager::preload_file(AddressSpace& file, NodeId node, Cached how, uint32_t memcg) {
  const MemPolicy local;
  for (uint64_t i = 0; i < file.size_pages; ++i) {
    if (file.lookup(i) != AddressSpace::kNone) continue;
    // Read before the run: no reclaim, so within the low watermark.
    auto pfn = folios_.alloc(local, node, i, reclaim_ ? Mark::kLow : Mark::kNone);
    if (!pfn) return false;  // the machine is full: the rest stays on disk
    Folio& f = folios_.folio(*pfn);
    f.flags |= Folio::kUptodate | (file.shmem ? Folio::kShmem : 0) |
               (how == Cached::kRead ? Folio::kReferenced : 0);
    f.mapping = file.id;
    f.set_index(i);
    if (memcg_) memcg_->charge(memcg, *pfn, CpuId(0));  // cached before the run
    lru_.add(*pfn);
    file.store(i, pfn->v);
    vmstat_.add(Vm::nr_file_pages);
    if (file.shmem) vmstat_.add(Vm::nr_shmem);
  }
  return true;
}

struct MmDeleter {
  MemoryManager* mgr;
  void operator()(Mm* mm) const { mgr->release_mm(mm); }
};

std::shared_ptr<Mm> MemoryManager::mm_alloc(const FaultCtx* ctx) {
  Mm* mm = new Mm(next_mm_id_++);
  // arch_pick_mmap_layout: a random base, here from the run's seed and the
  // mm (fork gives the child its parent's, in dup_mmap).
  if (config_.aslr_seed && config_.randomize_va_space != 0) {
    sim::Rng rng(*config_.aslr_seed ^ (uint64_t{mm->id()} << 32));
    mm->mmap_rnd_pages = static_cast<uint32_t>(rng.next() % kHugePages);
  }
  mm->pgtable().count_tables_in(&nr_pte_tables_);
  // mm_init's pgd_alloc, by the task that makes the mm. SIMPLIFICATION: an
  // mm is always made (the kernel's fork or exec fails with ENOMEM); if
  // memory is out it has no PGD page. Its time is in fork's base cost.
  const FaultCtx cpu0{CpuId(0), topo_.cpu_to_node(CpuId(0))};
  double ns = 0;
  if (auto pgd = pgtable_alloc(PtLevel::kPgd, ctx ? *ctx : cpu0, &ns))
    mm->pgtable().pgd_frame = pgd->v;
  live_mms_.push_back(mm);
  return std::shared_ptr<Mm>(mm, MmDeleter{this});
}

void MemoryManager::release_mm(Mm* mm) {
  check(mm->vmas().empty(), "mm released with VMAs still mapped");
  khugepaged_exit(*mm);
  // mmdrop: the page tables exit_mmap left (none, if it ran), then the PGD.
  for (uint32_t frame : mm->pgtable().release_all()) pgtable_free(frame);
  live_mms_.erase(std::find(live_mms_.begin(), live_mms_.end(), mm));
  delete mm;
}

std::optional<Pfn> MemoryManager::pgtable_alloc(PtLevel level, const FaultCtx& ctx, double* ns) {
  // alloc_pages with no VMA: the task's own policy; an interleave policy
  // takes its nodes in turn (interleave_nodes).
  static const MemPolicy kLocal;
  const MemPolicy& pol = ctx.task_policy ? *ctx.task_policy : kLocal;
  uint64_t ilx = 0;
  if (pol.mode == MemPolicy::Mode::kInterleave && ctx.il_next) ilx = (*ctx.il_next)++;
  const uint8_t order = level == PtLevel::kPgd && config_.page_table_isolation ? 1 : 0;
  const std::optional<Pfn> pfn =
      alloc_folio(pol, ctx.node, ilx, ctx.cpu, ns, Retry::kUntilOom, order);
  if (!pfn) return std::nullopt;
  {
    Folio& f = folios_.folio(*pfn);
    f.flags |= Folio::kKernel;
    f.mapping = Folio::kKernelPgtable;
    f.set_index(static_cast<uint64_t>(level));
  }
  // __GFP_ACCOUNT: charged to the task's memcg (the root's is not), which
  // may reclaim; its failure fails the allocation.
  if (memcg_ && ctx.memcg != 0) {
    const ChargeResult c = memcg_->charge(ctx.memcg, *pfn, ctx.cpu);
    *ns += c.ns;
    if (!c.ok) {
      folios_.folio(*pfn).flags = Folio::kInUse;
      folios_.free(*pfn);
      return std::nullopt;
    }
  }
  const Folio& f = folios_.folio(*pfn);  // after the charge's reclaim
  if (pgtable_counted(level)) vmstat_.add(Vm::nr_page_table_pages);
  // __GFP_ZERO: the page is cleared.
  *ns += costs_.page_alloc_ns +
         static_cast<double>(f.nr_pages()) * cache_.page_zero_ns(ctx.node, f.node);
  return pfn;
}

void MemoryManager::pgtable_free(uint32_t frame) {
  if (frame == kNoFrame) return;
  Folio& f = folios_.folio(Pfn(frame));
  check(f.is_pgtable(), "a page-table page freed that is none");
  if (pgtable_counted(f)) vmstat_.add(Vm::nr_page_table_pages, -1);
  if (memcg_ && f.memcg != 0) memcg_->uncharge(Pfn(frame), f);
  f.flags = Folio::kInUse;
  folios_.free(Pfn(frame));
}

bool MemoryManager::upper_alloc(Mm& mm, Vpn vpn, PtLevel level, const FaultCtx& ctx, double* ns,
                                bool nofail) {
  PageTable& pt = mm.pgtable();
  for (PtLevel l : {PtLevel::kPud, PtLevel::kPmd}) {
    if (!pt.has_upper(l, vpn)) {
      const std::optional<Pfn> pfn = pgtable_alloc(l, ctx, ns);
      if (!pfn && !nofail) return false;
      pt.set_upper(l, vpn, pfn ? pfn->v : kNoFrame);
    }
    if (l == level) break;
  }
  return true;
}

PteTable* MemoryManager::pte_alloc(Mm& mm, Vpn vpn, const FaultCtx& ctx, double* ns, bool nofail) {
  if (PteTable* t = mm.pgtable().table(vpn)) return t;
  if (!upper_alloc(mm, vpn, PtLevel::kPmd, ctx, ns, nofail)) return nullptr;
  const std::optional<Pfn> pfn = pgtable_alloc(PtLevel::kPte, ctx, ns);
  if (!pfn && !nofail) return nullptr;
  return &mm.pgtable().table_new(vpn, pfn ? pfn->v : kNoFrame);
}

double MemoryManager::free_pgtables(Mm& mm, Vpn start, Vpn end) {
  // free_pgd_range between the neighbouring VMAs (floor and ceiling): a
  // table goes when no VMA reaches into the range it maps, so that a later
  // mapping there starts with empty PMDs (which THP faults need).
  std::vector<uint32_t> frames;
  mm.pgtable().free_pgtables(
      start, end,
      [&](Vpn first, Vpn stop) { return mm.find_vma_intersection(first, stop) != nullptr; },
      &frames);
  for (uint32_t frame : frames) pgtable_free(frame);
  return static_cast<double>(frames.size()) * costs_.page_free_ns;
}

double MemoryManager::flush_tlb_range(Mm& mm, CpuId cpu, uint64_t pages) {
  if (pages == 0) return 0;
  uint64_t remote = 0;
  for (CpuId c : mm.cpumask()) remote += c != cpu;
  // flush_tlb_mm_range flushes the whole TLB above tlb_single_page_flush_ceiling.
  vmstat_.add(pages > kTlbSinglePageFlushCeiling ? Vm::nr_tlb_local_flush_all
                                                 : Vm::nr_tlb_local_flush_one);
  if (remote) {
    vmstat_.add(Vm::nr_tlb_remote_flush);
    vmstat_.add(Vm::nr_tlb_remote_flush_received, static_cast<int64_t>(remote));
  }
  return costs_.tlb_flush_local_ns + static_cast<double>(remote) * costs_.tlb_flush_ipi_ns;
}

void MemoryManager::account_fault(FaultCtx& ctx, bool major, bool retried) {
  ++page_events_;
  if (memcg_) memcg_->count_fault(ctx.memcg, major);
  vmstat_.add(Vm::pgfault);
  if (retried && config_.pgfault_per_attempt) {  // the first attempt counted too
    if (memcg_) memcg_->count_fault(ctx.memcg, false);
    vmstat_.add(Vm::pgfault);
  }
  if (major) vmstat_.add(Vm::pgmajfault);
  if (major || (retried && config_.retried_fault_is_major)) {
    if (ctx.maj_flt) ++*ctx.maj_flt;
  } else if (ctx.min_flt) {
    ++*ctx.min_flt;
  }
}

AnonVma& MemoryManager::anon_vma_prepare(Vma& vma) {
  if (vma.anon_vma) return *vma.anon_vma;
  auto av = std::make_unique<AnonVma>();
  av->id = static_cast<uint32_t>(anon_vmas_.size());
  const uint32_t slot = av->add(&vma);
  vma.anon_vma = av.get();
  vma.avc.push_back({av.get(), slot});
  anon_vmas_.push_back(std::move(av));
  return *vma.anon_vma;
}

double MemoryManager::map_folio(Mm& mm, Vma& vma, Vpn vpn, uint32_t pfn, bool write) {
  Pte pte;
  pte.pfn = pfn;
  pte.flags = Pte::kPresent | Pte::kYoung | (write ? (Pte::kWrite | Pte::kDirty) : 0);
  if (pfn != kZeroPfn && vma.maps_writable_on_read()) pte.flags |= Pte::kWrite;
  mm.pgtable().at(vpn).set(vpn.v & (kPtesPerTable - 1), pte);
  // The PTE's line, then (but for the zero page) the folio's struct page.
  double memcg_ns = cache_.meta_miss_ns(cost::Meta::kPte, mm.id(), vpn.v, sizeof(uint64_t));
  if (pfn == kZeroPfn) return memcg_ns;
  Folio& f = folios_.folio(Pfn(pfn));
  memcg_ns += cache_.meta_miss_ns(cost::Meta::kStructPage, 0, pfn, cost::kStructPageBytes, f.node);
  const bool first = f.mapcount++ == 0;
  if (!f.test(Folio::kAnon)) {
    files_[f.mapping]->mappers[f.index()].add(&mm, vpn);
    if (first) vmstat_.add(Vm::nr_mapped);
    if (memcg_) memcg_ns += memcg_->file_rmap(Pfn(pfn), f, true, first);
  }
  if (f.test(Folio::kAnon)) {
    ++mm.rss_anon;
  } else if (f.test(Folio::kShmem)) {
    ++mm.rss_shmem;
  } else {
    ++mm.rss_file;
  }
  if (write && !f.test(Folio::kAnon)) folio_mark_dirty(f);
  if (vma.flags & Vma::kLocked) mlock_folio(Pfn(pfn));
  return memcg_ns;
}

void MemoryManager::folio_add_lru(Pfn pfn, CpuId cpu) {
  Folio& f = folios_.folio(pfn);
  const auto size = static_cast<size_t>(config_.lru_add_batch);
  if (size == 0 || cpu.v >= lru_batch_.size()) {
    lru_.add(pfn);
    return;
  }
  // folio_batch_add_and_move: in the batch (with a reference), and the
  // whole batch onto the LRU when it is full or the folio is large.
  std::vector<uint32_t>& batch = lru_batch_[cpu.v];
  f.flags |= Folio::kLruBatched;
  f.lru_prev = cpu.v;
  batch.push_back(pfn.v);
  if (batch.size() >= size || f.order() > 0) lru_add_drain(cpu);
}

namespace {
// Out of its CPU's batch: lru_prev is its list link again.
void unbatch(Folio& f) {
  f.flags &= static_cast<uint16_t>(~Folio::kLruBatched);
  f.lru_prev = Lruvec::kNil;
}
}  // namespace

void MemoryManager::lru_add_drain(CpuId cpu) {
  if (cpu.v >= lru_batch_.size()) return;
  std::vector<uint32_t>& batch = lru_batch_[cpu.v];
  for (const uint32_t p : batch) {
    unbatch(folios_.folio(Pfn(p)));
    lru_.add(Pfn(p));
  }
  batch.clear();
}

void MemoryManager::lru_add_drain_all() {
  for (size_t c = 0; c < lru_batch_.size(); ++c) lru_add_drain(CpuId(static_cast<uint16_t>(c)));
}

void MemoryManager::lru_remove(Pfn pfn) {
  Folio& f = folios_.folio(pfn);
  if (f.test(Folio::kLru)) {
    lru_.del(pfn);
  } else if (f.test(Folio::kLruBatched)) {
    // Freed while its batch holds it: the batch lets it go (the kernel
    // frees it as the batch drains; nothing else sees it meanwhile).
    std::vector<uint32_t>& batch = lru_batch_[f.lru_prev];
    const auto it = std::find(batch.begin(), batch.end(), pfn.v);
    check(it != batch.end(), "a batched folio missing from its CPU's lru_add batch");
    batch.erase(it);
    unbatch(f);
  }
}

void MemoryManager::set_lru_flags(Pfn pfn, uint16_t flags) {
  Folio& f = folios_.folio(pfn);
  if (!f.test(Folio::kLru)) {
    f.flags = static_cast<uint16_t>(flags | (f.flags & Folio::kLruBatched));
    return;
  }
  lru_.relist(pfn, [&](Folio& g) { g.flags = static_cast<uint16_t>(flags & ~Folio::kLru); });
}

void MemoryManager::folio_mark_dirty(Folio& f) {
  if (f.test(Folio::kDirty)) return;
  f.flags |= Folio::kDirty;
  // shmem's dirty_folio is noop_dirty_folio: the flag only, no NR_FILE_DIRTY
  // (tmpfs has no writeback).
  if (!f.test(Folio::kShmem)) writeback_.account_dirtied(f);
}

void MemoryManager::mlock_folio(Pfn pfn) {
  pfn = folio_head(pfn);
  Folio& f = folios_.folio(pfn);
  const uint32_t count = folios_.mlock_count(pfn);
  folios_.set_mlock_count(pfn, count + 1);
  if (count == 0) {
    // To the unevictable list (an isolated folio gets there when put back).
    set_lru_flags(pfn, static_cast<uint16_t>(f.flags | Folio::kMlocked));
    vmstat_.add(Vm::nr_mlock, f.nr_pages());
    vmstat_.add(Vm::unevictable_pgs_mlocked, f.nr_pages());
  }
}

void MemoryManager::munlock_folio(Pfn head) {
  Folio& f = folios_.folio(head);
  const uint32_t count = folios_.mlock_count(head) - 1;
  folios_.set_mlock_count(head, count);
  if (count == 0) {
    set_lru_flags(head, static_cast<uint16_t>(f.flags & ~Folio::kMlocked));
    vmstat_.add(Vm::nr_mlock, -static_cast<int64_t>(f.nr_pages()));
    vmstat_.add(Vm::unevictable_pgs_munlocked, f.nr_pages());
  }
}

double MemoryManager::zap_pte(Mm& mm, Vma& vma, PteTable& t, Vpn vpn, Unmap why) {
  const auto i = static_cast<uint32_t>(vpn.v & (kPtesPerTable - 1));
  ++page_events_;
  const Pte pte = t.get(i);
  t.set(i, Pte{});
  double memcg_ns = cache_.meta_miss_ns(cost::Meta::kPte, mm.id(), vpn.v, sizeof(uint64_t));
  if (pte.swap()) {
    swap_entry_free(pte.pfn);
    return memcg_ns;
  }
  if (!pte.maps_folio()) return memcg_ns;
  const Pfn page(pte.pfn);
  const Pfn pfn = folio_head(page);  // the folio's head: flags, LRU, counts
  Folio& f = folios_.folio(pfn);
  memcg_ns +=
      cache_.meta_miss_ns(cost::Meta::kStructPage, 0, page.v, cost::kStructPageBytes, f.node);
  const bool anon = f.test(Folio::kAnon);
  if (!anon) {
    AddressSpace& file = *files_[f.mapping];
    const auto it = file.mappers.find(f.index());
    check(it != file.mappers.end(), "a file page mapped without its mappers");
    it->second.remove(&mm, vpn);
    if (it->second.empty()) file.mappers.erase(it);
  }
  const bool zap = why == Unmap::kZap;
  if (zap && (pte.flags & Pte::kDirty) && !anon) folio_mark_dirty(f);
  // zap_pte_range: a young PTE of a file folio counts as an access, before
  // the rmap removal munlocks it (an mlocked folio is not activated).
  if (zap && (pte.flags & Pte::kYoung) && !anon) memcg_ns += folio_mark_accessed(pfn);
  if (vma.flags & Vma::kLocked) munlock_folio(pfn);
  if (anon) {
    --mm.rss_anon;
  } else if (f.test(Folio::kShmem)) {
    --mm.rss_shmem;
  } else {
    --mm.rss_file;
  }
  if (f.large()) {
    // A page of a PTE-mapped THP: the folio goes with its last mapping.
    Folio& p = folios_.folio(page);
    check(p.mapcount > 0 && pte_mapcount(pfn) > 0, "zap of an unmapped page of a THP");
    --p.mapcount;
    --pte_mapcount(pfn);
    if (folio_mapcount(pfn) == 0 && !f.test(Folio::kLocked)) free_anon_folio(pfn);
    return memcg_ns;
  }
  check(f.mapcount > 0, "zap of an unmapped folio");
  const bool last = --f.mapcount == 0;
  if (!anon && memcg_) memcg_ns += memcg_->file_rmap(pfn, f, false, last);
  if (last) {
    if (anon) {
      // No swap: the last unmap of an anonymous folio frees it (unless a
      // migration holds it: see free_anon_folio).
      if (!f.test(Folio::kLocked)) free_anon_folio(pfn);
    } else {
      vmstat_.add(Vm::nr_mapped, -1);
    }
  }
  return memcg_ns;
}

void MemoryManager::free_anon_folio(Pfn pfn) {
  Folio& f = folios_.folio(pfn);
  if (f.test(Folio::kSwapCache)) swap_cache_del(pfn);
  lru_remove(pfn);                // not on a list when isolated for migration
  if (f.test(Folio::kMlocked)) {  // its last mapping was not VM_LOCKED
    vmstat_.add(Vm::nr_mlock, -static_cast<int64_t>(f.nr_pages()));
    f.flags &= static_cast<uint16_t>(~Folio::kMlocked);
  }
  vmstat_.add(Vm::nr_anon_pages, -static_cast<int64_t>(f.nr_pages()));
  if (memcg_) memcg_->uncharge(pfn, f);
  folios_.free(pfn);
}

MemoryManager::Zapped MemoryManager::zap_range(Mm& mm, Vma& vma, Vpn start, Vpn end) {
  Zapped z;
  // zap_pmd_range: a huge PMD the range covers goes whole; one it covers in
  // part is split, and its PTEs in the range go.
  mm.pgtable().for_each_table_in(start, end, [&](Vpn base, PteTable& t) {
    if (!t.huge()) return;
    if (base >= start && base.v + kPtesPerTable <= end.v) {
      z.memcg_ns += zap_huge_pmd(mm, vma, base);  // t is gone after it
      ++z.ptes;
    } else {
      split_huge_pmd(mm, vma, t);
    }
  });
  mm.pgtable().for_each(start, end, [&](Vpn vpn, PteTable& t, uint32_t) {
    z.memcg_ns += zap_pte(mm, vma, t, vpn);
    ++z.ptes;
  });
  return z;
}

MemoryManager::ReadWindow MemoryManager::read_window(AddressSpace& file, uint64_t first,
                                                     uint64_t last, uint64_t index, uint64_t mark,
                                                     const Vma& vma, FaultCtx& ctx, OpCost& cost) {
  ReadWindow w;
  // The other pages of the window are readahead (page_cache_ra_unbounded):
  // allocated __GFP_NORETRY, and the first that fails ends the window. The
  // faulting page is then allocated on its own with the mapping's full mask
  // (filemap_fault's __filemap_get_folio), which may end in the OOM path.
  bool ra_failed = false;
  // Each folio is added to the cache locked (filemap_add_folio) and stays
  // locked until its read completes: reclaim that a later page's charge or
  // allocation starts skips it (shrink_folio_list's folio_trylock), so a
  // window is never evicted while it is read. (A new folio is never locked
  // before: only a migration locks one, and it has no mapping yet.)
  std::vector<uint32_t>& locked = read_locked_;
  locked.clear();
  for (uint64_t i = first; i < last; ++i) {
    if (ra_failed && i != index) continue;
    if (file.lookup(i) != AddressSpace::kNone) continue;
    const Retry retry = i == index ? Retry::kUntilOom : Retry::kNoRetry;
    auto pfn = alloc_folio(vma_policy(vma, ctx), ctx.node, i, ctx.cpu, &cost.sys_ns, retry);
    if (!pfn) {
      w.index_failed |= i == index;
      ra_failed = true;
      continue;
    }
    {
      Folio& f = folios_.folio(*pfn);
      f.flags |= Folio::kUptodate | (file.shmem ? Folio::kShmem : 0);
      f.mapping = file.id;
      f.set_index(i);
    }
    if (memcg_) {
      const ChargeResult c = memcg_->charge(ctx.memcg, *pfn, ctx.cpu, retry);
      cost.sys_ns += c.ns;
      if (!c.ok) {
        folios_.folio(*pfn).flags = Folio::kInUse;
        folios_.free(*pfn);
        w.index_failed |= i == index;
        continue;
      }
    }
    Folio& f = folios_.folio(*pfn);  // after the charge's reclaim
    if (i == mark && !file.shmem) f.flags |= Folio::kReadahead;
    if (auto sh = file.shadows.find(i); sh != file.shadows.end()) {
      workingset_refault(f, sh->second);
      file.shadows.erase(sh);
    }
    if (!file.shmem) {
      f.flags |= Folio::kLocked;
      locked.push_back(pfn->v);
    }
    folio_add_lru(*pfn, ctx.cpu);
    file.store(i, pfn->v);
    vmstat_.add(Vm::nr_file_pages);
    cost.sys_ns += costs_.page_alloc_ns;
    if (file.shmem) {
      vmstat_.add(Vm::nr_shmem);
      cost.sys_ns += cache_.page_zero_ns(ctx.node, f.node);
    } else {
      ++w.read;
    }
  }
  if (w.read) {
    vmstat_.add(Vm::pgpgin, static_cast<int64_t>(w.read * (kPageSize / 1024)));
    cost.io_ns += costs_.storage_read_ns;
  }
  // The read completes (folio_end_read): the window's folios unlock.
  for (const uint32_t pfn : locked)
    folios_.folio(Pfn(pfn)).flags &= static_cast<uint16_t>(~Folio::kLocked);
  return w;
}

namespace {
// get_next_ra_size: a window grows fourfold while small, then twofold, up to
// ra_pages.
uint64_t next_ra_size(uint64_t cur, uint64_t max) {
  if (cur < max / 16) return 4 * cur;
  if (cur <= max / 2) return 2 * cur;
  return max;
}
}  // namespace

MemoryManager::FilemapGet MemoryManager::filemap_get(AddressSpace& file, uint64_t index,
                                                     const Vma& vma, FaultCtx& ctx) {
  FilemapGet g;
  OpCost& cost = g.cost;
  cost.sys_ns += costs_.pagecache_lookup_ns;
  // ra_pages (read_ahead_kb): the read-around's size and the largest window.
  const uint64_t window = file.shmem ? 1 : std::max<uint32_t>(1, config_.read_ahead_pages());
  const uint32_t cached = file.lookup(index);
  cost.sys_ns += cache_.meta_miss_ns(cost::Meta::kPageCache, file.id, index, sizeof(uint64_t));
  if (cached != AddressSpace::kNone) {
    Folio& f = folios_.folio(Pfn(cached));
    cost.sys_ns +=
        cache_.meta_miss_ns(cost::Meta::kStructPage, 0, cached, cost::kStructPageBytes, f.node);
    if (f.test(Folio::kReadahead)) {
      // do_async_mmap_readahead: the mark starts the next window's read
      // (its first page marked: async_size = size), and the fault drops the
      // mmap lock for it and is retried. SIMPLIFICATION: the reader catches
      // up with that read, so this fault waits for it (the kernel's waits
      // on the next window's first page, still under I/O).
      f.flags &= static_cast<uint16_t>(~Folio::kReadahead);
      g.retried = true;
      // page_cache_async_ra (6.1's ondemand_readahead): the mark the last
      // window set moves the window on; another mark (another reader's, say)
      // starts one at the first page not cached after it, if that is within
      // ra_pages.
      AddressSpace::Readahead& ra = file.ra;
      uint64_t first = 0, size = 0;
      if (index == ra.start + ra.size - ra.async_size) {
        first = ra.start + ra.size;
        size = std::max(ra.size, next_ra_size(ra.size, window));
      } else {
        first = index + 1;
        while (first <= index + window && first < file.size_pages &&
               file.lookup(first) != AddressSpace::kNone) {
          ++first;
        }
        size = first - index <= window ? next_ra_size(first - index + window, window) : 0;
      }
      if (size) ra = {first, size, size};
      const uint64_t last = size ? std::min(file.size_pages, first + size) : first;
      // The fault holds a reference to its folio meanwhile: reclaim that
      // the read's allocations start cannot take it.
      const bool locked = f.test(Folio::kLocked);
      f.flags |= Folio::kLocked;
      if (first < last) read_window(file, first, last, index, first, vma, ctx, cost);
      // (The read may have grown the folio table: look the folio up again.)
      if (!locked) folios_.folio(Pfn(cached)).flags &= static_cast<uint16_t>(~Folio::kLocked);
    }
    g.pfn = cached;
    return g;
  }
  // Not cached (filemap_fault's miss: pgmajfault): shmem creates a zeroed
  // page; a file reads the pages not cached yet of ra_pages centred on the
  // fault (do_sync_mmap_readahead's read-around), as one storage request,
  // marking the page async_size (a quarter of the window) before its end,
  // and the fault is retried once the lock dropped for the read is taken
  // again. A window cut by the file's end is marked as far before it.
  const uint64_t first = file.shmem ? index : index - std::min(index, window / 2);
  const uint64_t last = std::min(file.size_pages, first + window);
  const uint64_t async = window / 4;
  const uint64_t mark = !file.shmem && async && last - first >= async ? last - async : UINT64_MAX;
  if (!file.shmem) file.ra = {first, window, async};
  const ReadWindow w = read_window(file, first, last, index, mark, vma, ctx, cost);
  if (w.index_failed) return g;
  if (w.read) g.major = g.retried = true;
  const uint32_t pfn = file.lookup(index);
  if (pfn != AddressSpace::kNone) g.pfn = pfn;
  return g;
}

MemoryManager::Mapped MemoryManager::fault_around(Mm& mm, Vma& vma, Vpn vpn) {
  // Map the cached, uptodate pages of an aligned window around the fault that
  // have no PTE yet, without leaving the VMA or the PTE table.
  Mapped m;
  const uint64_t n = config_.fault_around_pages();
  uint64_t from = vpn.v - (vpn.v % n);
  uint64_t to = from + n;
  const uint64_t table_start = vpn.v & ~uint64_t{kPtesPerTable - 1};
  from = std::max({from, vma.start.v, table_start});
  to = std::min({to, vma.end.v, table_start + kPtesPerTable});
  PteTable& t = mm.pgtable().at(vpn);
  for (uint64_t v = from; v < to; ++v) {
    if (!t.get(v & (kPtesPerTable - 1)).none()) continue;
    const uint64_t index = vma.file_index(Vpn(v));
    if (index >= vma.file->size_pages) break;
    const uint32_t pfn = vma.file->lookup(index);
    m.memcg_ns +=
        cache_.meta_miss_ns(cost::Meta::kPageCache, vma.file->id, index, sizeof(uint64_t));
    if (pfn == AddressSpace::kNone) continue;
    const Folio& f = folios_.folio(Pfn(pfn));
    // filemap_map_pages leaves locked, not uptodate and readahead-marked
    // folios to a real fault.
    if (!f.test(Folio::kUptodate) || f.test(Folio::kLocked) || f.test(Folio::kReadahead)) continue;
    m.memcg_ns += map_folio(mm, vma, Vpn(v), pfn, false);
    m.ns += costs_.pte_set_ns;
  }
  return m;
}

MemoryManager::NewFolio MemoryManager::new_anon_folio(Vma& vma, Vpn vpn, const FaultCtx& ctx) {
  NewFolio n;
  auto pfn = alloc_folio(vma_policy(vma, ctx), ctx.node, vpn.v, ctx.cpu, &n.memcg_ns);
  if (!pfn) return n;
  AnonVma& av = anon_vma_prepare(vma);
  {
    Folio& f = folios_.folio(*pfn);
    f.flags |= Folio::kAnon | Folio::kUptodate;
    f.mapping = av.id;
    f.set_index(vpn.v);
  }
  if (memcg_) {
    const ChargeResult c = memcg_->charge(ctx.memcg, *pfn, ctx.cpu);
    n.memcg_ns = c.ns;
    if (!c.ok) {
      folios_.folio(*pfn).flags = Folio::kInUse;
      folios_.free(*pfn);
      return n;
    }
  }
  Folio& f = folios_.folio(*pfn);  // after the charge's reclaim
  vmstat_.add(Vm::nr_anon_pages);
  if (config_.anon_fault_active) f.flags |= Folio::kActive;
  folio_add_lru(*pfn, ctx.cpu);  // folio_add_lru_vma
  n.pfn = pfn;
  return n;
}

FaultResult MemoryManager::handle_mm_fault(Mm& mm, Vpn vpn, bool write, FaultCtx& ctx) {
  Fault f = do_handle_mm_fault(mm, vpn, write, ctx);
  f.result.cost.sys_ns += f.memcg_ns;
  return f.result;
}

FaultResult MemoryManager::lose_fault_race(Mm& mm, Vpn vpn, bool huge, FaultCtx& ctx) {
  FaultResult r;
  r.cost.sys_ns += costs_.fault_entry_ns;
  Vma* vma = mm.find_vma(vpn);
  check(vma && vma->is_anonymous(), "a lost fault race outside an anonymous VMA");
  double memcg_ns = 0;
  const std::optional<Pfn> pfn =
      huge ? alloc_huge_folio(*vma, Vpn(vpn.v & ~uint64_t{kHugePages - 1}), ctx, &memcg_ns)
           : alloc_folio(vma_policy(*vma, ctx), ctx.node, vpn.v, ctx.cpu, &memcg_ns);
  // A THP the allocator refuses falls back to the PTE level, which finds
  // the other fault's PMD set and returns: only the entry is paid.
  if (pfn) {
    Folio& f = folios_.folio(*pfn);
    f.flags |= Folio::kAnon;
    bool charged = true;
    if (memcg_) {
      const ChargeResult c =
          memcg_->charge(ctx.memcg, *pfn, ctx.cpu, huge ? Retry::kNoReclaim : Retry::kUntilOom);
      memcg_ns += c.ns;
      charged = c.ok;
    }
    if (charged && huge) {
      // The table it would deposit, allocated after the folio's clearing,
      // and freed with it (pte_free).
      if (const std::optional<Pfn> t = pgtable_alloc(PtLevel::kPte, ctx, &r.cost.sys_ns)) {
        pgtable_free(t->v);
        r.cost.sys_ns += costs_.page_free_ns;
      }
    }
    Folio& g = folios_.folio(*pfn);  // after the charge's (and the table's) reclaim
    if (charged) {
      r.cost.sys_ns += costs_.page_alloc_ns +
                       static_cast<double>(g.nr_pages()) * cache_.page_zero_ns(ctx.node, g.node);
      if (memcg_) memcg_->uncharge(*pfn, g);
    }
    g.flags = Folio::kInUse;
    folios_.free(*pfn);
    // The handler found the entry set and put its folio back (folio_put:
    // the uncharge, then the free to the per-CPU lists).
    r.cost.sys_ns += costs_.page_free_ns;
  }
  account_fault(ctx, false);
  r.cost.sys_ns += memcg_ns;
  return r;
}

FaultResult MemoryManager::spurious_fault(FaultCtx& ctx) {
  FaultResult r;
  r.cost.sys_ns = costs_.fault_entry_ns;
  account_fault(ctx, false);
  return r;
}

MemoryManager::Fault MemoryManager::do_handle_mm_fault(Mm& mm, Vpn vpn, bool write, FaultCtx& ctx) {
  Fault out;
  FaultResult& r = out.result;
  double& memcg_ns = out.memcg_ns;
  Vma* vma = mm.find_vma(vpn);
  if (!vma || !(vma->flags & (write ? Vma::kWrite : Vma::kRead))) {
    r.status = FaultStatus::kSegv;
    return out;
  }
  // __handle_mm_fault allocates the PUD and PMD tables first (a PTE table
  // below means they exist).
  if (!mm.pgtable().table(vpn) && !upper_alloc(mm, vpn, PtLevel::kPmd, ctx, &r.cost.sys_ns)) {
    r.status = FaultStatus::kOom;
    return out;
  }
  // A huge PMD, or an empty one a THP may fill (__handle_mm_fault); either
  // may fall back to the PTE level.
  OpCost huge_cost;
  if (PteTable* t = mm.pgtable().table(vpn); t && t->huge()) {
    bool fallback = false;
    Fault h = huge_pmd_fault(mm, *vma, *t, write, ctx, &fallback);
    if (!fallback) return h;
    huge_cost = h.result.cost;
  } else if (!t && thp_fault_allowed(*vma, vpn)) {
    bool fallback = false;
    Fault h = do_huge_pmd_anonymous_page(mm, *vma, vpn, write, ctx, &fallback);
    if (!fallback) return h;
    huge_cost = h.result.cost;
    memcg_ns += h.memcg_ns;
  }
  r.cost += huge_cost;
  const Pte pte = mm.pgtable().get(vpn);
  if (pte.present() && !pte.protnone() && (write ? pte.writable() : true) &&
      (!(pte.flags & Pte::kYoung) || (write && !(pte.flags & Pte::kDirty)))) {
    // No fault: the MMU sets the accessed (and on a write the dirty) bit
    // of a PTE that allows the access. It costs the access nothing more.
    Pte set = pte;
    set.flags |= Pte::kYoung | (write ? Pte::kDirty : 0);
    mm.pgtable().at(vpn).set(vpn.v & (kPtesPerTable - 1), set);
    return out;
  }
  OpCost& cost = r.cost;
  cost.sys_ns += costs_.fault_entry_ns;

  if (pte.present() && !pte.protnone()) {
    if (write && !pte.writable()) {
      out = do_wp_page(mm, *vma, vpn, pte, ctx);
      r.cost.sys_ns += costs_.fault_entry_ns;
      if (r.status == FaultStatus::kOk) account_fault(ctx, false);
      return out;
    }
    // Spurious: another thread mapped it first.
    account_fault(ctx, false);
    return out;
  }
  if (pte.protnone()) {
    // A NUMA hinting fault: do_numa_page is the caller's (numa::Balancer).
    r.status = FaultStatus::kNumaHint;
    r.pfn = Pfn(pte.pfn);
    account_fault(ctx, false);
    return out;
  }
  if (pte.migration()) {
    // migration_entry_wait: the caller sleeps until the migration ends (of
    // the whole folio, for a page of a THP).
    r.status = FaultStatus::kMigrationWait;
    r.pfn = folio_head(Pfn(pte.pfn));
    account_fault(ctx, false);
    return out;
  }
  if (pte.swap()) {
    Fault f = do_swap_page(mm, *vma, vpn, pte, write, ctx);
    f.result.cost.sys_ns += cost.sys_ns;
    return f;
  }

  if (vma->is_anonymous()) {
    // do_anonymous_page: the PTE table first.
    if (!pte_alloc(mm, vpn, ctx, &cost.sys_ns)) {
      r.status = FaultStatus::kOom;
      return out;
    }
    if (!write) {
      // do_anonymous_page maps the shared zero page on a read.
      map_folio(mm, *vma, vpn, kZeroPfn, false);
      cost.sys_ns += costs_.pte_set_ns;
      account_fault(ctx, false);
      return out;
    }
    const NewFolio n = new_anon_folio(*vma, vpn, ctx);
    memcg_ns += n.memcg_ns;
    if (!n.pfn) {
      r.status = FaultStatus::kOom;
      return out;
    }
    const Folio& f = folios_.folio(*n.pfn);
    memcg_ns += map_folio(mm, *vma, vpn, n.pfn->v, true);
    cost.sys_ns += costs_.page_alloc_ns + cache_.page_zero_ns(ctx.node, f.node) + costs_.pte_set_ns;
    r.zero_filled = 1;
    account_fault(ctx, false);
    return out;
  }

  AddressSpace& file = *vma->file;
  const uint64_t index = vma->file_index(vpn);
  if (index >= file.size_pages) {
    r.status = FaultStatus::kSigbus;  // filemap_fault beyond i_size
    return out;
  }
  // The PTE table: fault-around's preallocated one (do_fault_around), or
  // finish_fault's. SIMPLIFICATION: before the page is looked up, so a
  // fault whose page cannot be had keeps it (the kernel frees a
  // preallocated table it did not use).
  if (!pte_alloc(mm, vpn, ctx, &cost.sys_ns)) {
    r.status = FaultStatus::kOom;
    return out;
  }
  const bool shared = vma->flags & Vma::kShared;
  const bool around = !write && config_.fault_around_pages() > 1;
  if (around) {
    // do_read_fault: fault-around first; done if it mapped the faulting page.
    const Mapped m = fault_around(mm, *vma, vpn);
    cost.sys_ns += m.ns;
    memcg_ns += m.memcg_ns;
    if (!mm.pgtable().get(vpn).none()) {
      account_fault(ctx, false);
      return out;
    }
  }
  const FilemapGet g = filemap_get(file, index, *vma, ctx);
  cost += g.cost;
  if (!g.pfn) {
    r.status = FaultStatus::kOom;
    return out;
  }
  if (folios_.folio(Pfn(*g.pfn)).test(Folio::kLocked)) {
    // filemap_fault / shmem_get_folio found the folio locked, here only by a
    // migration: the fault sleeps on the lock (holding a reference) until
    // the migration ends, then retries and finds the folio in its new place.
    r.status = FaultStatus::kMigrationWait;
    r.pfn = Pfn(*g.pfn);
    account_fault(ctx, false);
    return out;
  }
  if (write && !shared) {
    // do_cow_fault: copy the cached page into a new anonymous folio.
    const NewFolio copy = new_anon_folio(*vma, vpn, ctx);
    memcg_ns += copy.memcg_ns;
    if (!copy.pfn) {
      r.status = FaultStatus::kOom;
      return out;
    }
    const NodeId src = folios_.folio(Pfn(*g.pfn)).node;
    const Folio& f = folios_.folio(*copy.pfn);
    memcg_ns += map_folio(mm, *vma, vpn, copy.pfn->v, true);
    cost.sys_ns +=
        costs_.page_alloc_ns + costs_.pte_set_ns + cache_.page_copy_ns(ctx.node, src, f.node);
  } else if (around) {
    // After a read, fault-around maps the new window too (the retried
    // fault's); a page it leaves (PG_readahead-marked: the window's first
    // page, when the file ends within its async part) finish_fault maps.
    const Mapped m = fault_around(mm, *vma, vpn);
    cost.sys_ns += m.ns;
    memcg_ns += m.memcg_ns;
    if (mm.pgtable().get(vpn).none()) {
      memcg_ns += map_folio(mm, *vma, vpn, *g.pfn, false);
      cost.sys_ns += costs_.pte_set_ns;
    }
  } else {
    memcg_ns += map_folio(mm, *vma, vpn, *g.pfn, write);
    cost.sys_ns += costs_.pte_set_ns;
  }
  account_fault(ctx, g.major, g.retried);
  return out;
}

MemoryManager::Fault MemoryManager::do_wp_page(Mm& mm, Vma& vma, Vpn vpn, Pte pte, FaultCtx& ctx) {
  Fault out;
  FaultResult& r = out.result;
  PteTable& t = mm.pgtable().at(vpn);
  const uint32_t i = vpn.v & (kPtesPerTable - 1);
  if (pte.pfn != kZeroPfn) {
    Folio& old = folios_.folio(Pfn(pte.pfn));
    // A page of a THP is copied (5.10+: its refcount is never 1; 6.12 never
    // reuses a large folio. SIMPLIFICATION: 6.1 reuses the pages of a THP
    // whose PMD was split while it was exclusive, AnonExclusive).
    const bool reuse =
        (vma.flags & Vma::kShared) || (old.test(Folio::kAnon) && !old.large() && old.mapcount == 1);
    if (reuse) {
      // An exclusive anonymous folio written to gives up its swap slot: the
      // copy on the device is stale from now on (folio_free_swap).
      if (old.test(Folio::kSwapCache) && swap_->slot(swap_slot_of_.at(pte.pfn)).count == 0)
        swap_cache_del(Pfn(pte.pfn));
      // wp_page_reuse / wp_page_shared: make the PTE writable and dirty.
      Pte w = pte;
      w.flags |= Pte::kWrite | Pte::kDirty | Pte::kYoung;
      t.set(i, w);
      if (!old.test(Folio::kAnon)) folio_mark_dirty(old);
      r.cost.sys_ns += costs_.pte_protect_ns;
      return out;
    }
  }
  // wp_page_copy: a private copy for this mm.
  const NewFolio n = new_anon_folio(vma, vpn, ctx);
  out.memcg_ns += n.memcg_ns;
  if (!n.pfn) {
    r.status = FaultStatus::kOom;
    return out;
  }
  const Folio& f = folios_.folio(*n.pfn);
  if (pte.pfn == kZeroPfn) {
    r.cost.sys_ns += cache_.page_zero_ns(ctx.node, f.node);
  } else {
    const NodeId src = folios_.folio(Pfn(pte.pfn)).node;
    r.cost.sys_ns += cache_.page_copy_ns(ctx.node, src, f.node);
  }
  out.memcg_ns += zap_pte(mm, vma, t, vpn, Unmap::kCopy);
  out.memcg_ns += map_folio(mm, vma, vpn, n.pfn->v, true);
  r.cost.sys_ns += costs_.page_alloc_ns + costs_.pte_set_ns;
  // The old translation may be cached on other CPUs running this mm.
  r.cost.sys_ns += flush_tlb_range(mm, ctx.cpu, 1);
  return out;
}

MmResult MemoryManager::mmap(Mm& mm, const MmapArgs& args, CpuId cpu) {
  MmResult r;
  r.cost.sys_ns = costs_.syscall_ns + costs_.vma_op_ns;
  if (args.pages == 0) {
    r.error = MmError::kInval;
    return r;
  }
  // get_unmapped_area: nothing longer than the user address space fits.
  // vm.max_map_count bounds the VMAs.
  // __vm_enough_memory under vm.overcommit_memory = 0 (OVERCOMMIT_GUESS): an
  // accountable mapping (private writable, or shared anonymous) larger than
  // all RAM and swap together fails.
  const bool shared = args.vm_flags & Vma::kShared;
  const bool accountable =
      (!args.file && shared) || (args.vm_flags & (Vma::kWrite | Vma::kShared)) == Vma::kWrite;
  const uint64_t ram_and_swap = topo_.total_mem_bytes() / kPageSize + config_.swap_pages;
  if (args.pages > kTaskSizePages || (accountable && args.pages > ram_and_swap) ||
      mm.map_count() > config_.max_map_count) {
    r.error = MmError::kNoMem;
    return r;
  }
  AddressSpace* file = args.file;
  if (!file && (args.vm_flags & Vma::kShared)) {
    // MAP_SHARED|MAP_ANONYMOUS is backed by a shmem inode of its own.
    file = &create_file("/dev/zero (deleted)", args.pages, true);
    file->unnamed = true;
  }
  // thp_get_unmapped_area: a private anonymous mapping on a 2 MiB boundary,
  // as the version has it.
  const AnonAlign rule = config_.thp_anon_align;
  const bool private_anon = !file && !shared;
  const bool huge_aligned =
      private_anon && ((rule == AnonAlign::kLarge && args.pages >= kHugePages) ||
                       (rule == AnonAlign::kPmdMultiple && args.pages % kHugePages == 0));
  // Otherwise it lies where the randomised base puts it, edge to edge with
  // the mapping above.
  std::optional<uint32_t> huge_offset;
  // A disk file's thp_get_unmapped_area: its offset modulo 2 MiB, if the
  // mapping covers a whole aligned 2 MiB of the file.
  const uint64_t off_align = (args.pgoff + kHugePages - 1) / kHugePages * kHugePages;
  const bool file_aligned = config_.file_thp_align && file && !file->shmem &&
                            args.pgoff + args.pages >= off_align + kHugePages;
  if (huge_aligned) {
    huge_offset = 0;
  } else if (file_aligned) {
    huge_offset = static_cast<uint32_t>(args.pgoff % kHugePages);
  }
  const bool hint_free = args.addr && args.addr->v > 0 &&
                         args.addr->v + args.pages <= kTaskSizePages &&
                         !mm.find_vma_intersection(*args.addr, Vpn(args.addr->v + args.pages));
  const Vpn start = hint_free ? *args.addr : mm.get_unmapped_area(args.pages, huge_offset);
  uint32_t flags = args.vm_flags;
  // do_mmap: a private mapping may always be made writable (VM_MAYWRITE), a
  // shared one if it is writable (the model's files are open for writing
  // only when the mapping writes).
  if (!shared || (args.vm_flags & Vma::kWrite)) flags |= Vma::kMayWrite;
  // MAP_STACK (glibc's thread stacks): VM_NOHUGEPAGE from 6.7.
  if (args.stack && config_.map_stack_nohugepage) flags |= Vma::kNoHugepage;
  // mmap_region: the new range extends a neighbour it could merge with.
  VmaMergeKey key{flags, file, args.pgoff, nullptr, &args.policy};
  if (vma_merge(mm, start, Vpn(start.v + args.pages), key)) {
    r.addr = start;
    return r;
  }
  auto vma = std::make_unique<Vma>();
  vma->start = start;
  vma->end = Vpn(vma->start.v + args.pages);
  vma->flags = flags;
  vma->file = file;
  vma->pgoff = args.pgoff;
  vma->policy = args.policy;
  vma->name = args.name;
  Vma* v = mm.insert_vma(std::move(vma));
  if (file) ++file->i_mmap;
  r.addr = v->start;
  return r;
}

namespace {

// is_mergeable_anon_vma: `mine` (the range's anon_vma, or none) joins a
// neighbour's if they are the same, or if one is none and the neighbour's
// chain holds only its own (a VMA copied at fork keeps its parent's links,
// and is not merged into).
bool anon_vma_mergeable(const AnonVma* mine, const Vma& neighbour) {
  if ((!mine || !neighbour.anon_vma) && neighbour.avc.size() == 1) return true;
  return mine == neighbour.anon_vma;
}

bool policy_equal(const MemPolicy& a, const MemPolicy& b) {
  return a.mode == b.mode && a.nodes == b.nodes;
}

}  // namespace

bool MemoryManager::can_merge(const Vma& neighbour, const VmaMergeKey& key) const {
  // is_mergeable_vma: the same flags and file, and no anon_vma_name or
  // userfaultfd context (the model has neither); mpol_equal.
  return neighbour.flags == key.flags && neighbour.file == key.file &&
         policy_equal(neighbour.policy, *key.policy) && anon_vma_mergeable(key.anon_vma, neighbour);
}

Vma* MemoryManager::vma_merge(Mm& mm, Vpn start, Vpn end, const VmaMergeKey& key, Vma* self) {
  // The VMAs just below and just above [start, end), other than `self`.
  Vma* prev = start.v > 0 ? mm.find_vma(Vpn(start.v - 1)) : nullptr;
  Vma* next = mm.find_vma(end);
  if (prev == self || (prev && prev->end != start)) prev = nullptr;
  if (next == self || (next && next->start != end)) next = nullptr;
  const uint64_t pages = end.v - start.v;
  // can_vma_merge_after / _before: a file's offsets must run on across the
  // boundary.
  const bool after =
      prev && can_merge(*prev, key) && (!key.file || prev->pgoff + prev->pages() == key.pgoff);
  const bool before =
      next && can_merge(*next, key) && (!key.file || key.pgoff + pages == next->pgoff);
  if (!after && !before) return nullptr;
  // A VMA merged away: its range stays mapped, so the layout does not change.
  auto remove = [&](Vma* gone) {
    unlink_vma(*gone);
    mm.erase_merged(gone);
  };
  // The survivor takes the range's anon_vma if it has none (anon_vma_clone
  // of the one that has it).
  auto adopt = [&](Vma& survivor, const Vma* from) {
    if (survivor.anon_vma || !from || !from->anon_vma) return;
    survivor.anon_vma = from->anon_vma;
    survivor.avc.clear();
    for (const AnonVmaLink& l : from->avc) survivor.avc.push_back({l.av, l.av->add(&survivor)});
  };
  if (after) {
    // prev grows over the range, and over next too if all three are
    // compatible (next's anon_vma with prev's: are_anon_vmas_compatible).
    const bool all =
        before && (!prev->anon_vma || !next->anon_vma || prev->anon_vma == next->anon_vma);
    adopt(*prev, self);
    if (self) remove(self);
    prev->end = end;
    if (all) {
      prev->end = next->end;
      adopt(*prev, next);
      remove(next);
    }
    return prev;
  }
  adopt(*next, self);
  if (self) remove(self);
  next->start = start;
  next->pgoff = key.pgoff;
  return next;
}

void MemoryManager::unlink_vma(Vma& vma) {
  for (const AnonVmaLink& l : vma.avc) l.av->remove(l.slot);
  vma.avc.clear();
  if (vma.file) {
    if (--vma.file->i_mmap == 0 && vma.file->unnamed) truncate_unnamed(*vma.file);
  }
}

void MemoryManager::truncate_unnamed(AddressSpace& file) {
  // The last fput of the unnamed inode: shmem_evict_inode truncates it, and
  // every page goes back (uncharged, off the LRU, freed). Nothing maps them
  // any more. SIMPLIFICATION: a folio locked by a migration under way stays
  // (truncate_inode_pages would wait for it).
  for (const uint64_t index : file.cached_indices()) {
    const Pfn pfn(file.lookup(index));
    Folio& f = folios_.folio(pfn);
    if (f.test(Folio::kLocked)) continue;
    check(f.mapcount == 0, "a page of an unmapped shmem inode still mapped");
    lru_remove(pfn);
    if (f.test(Folio::kMlocked)) vmstat_.add(Vm::nr_mlock, -1);
    delete_from_page_cache(pfn);
  }
  file.shadows.clear();
}

void MemoryManager::delete_from_page_cache(Pfn pfn) {
  Folio& f = folios_.folio(pfn);
  files_[f.mapping]->store(f.index(), AddressSpace::kNone);
  vmstat_.add(Vm::nr_file_pages, -1);
  if (f.test(Folio::kShmem)) vmstat_.add(Vm::nr_shmem, -1);
  if (memcg_) memcg_->uncharge(pfn, f);
  f.flags = Folio::kInUse;
  folios_.free(pfn);
}

Vma* MemoryManager::split_vma(Mm& mm, Vma& vma, Vpn at) {
  // vma_adjust_trans_huge: a huge PMD across the new boundary is split.
  if (at.v & (kPtesPerTable - 1)) {
    if (PteTable* t = mm.pgtable().table(at); t && t->huge()) split_huge_pmd(mm, vma, *t);
  }
  auto upper = std::make_unique<Vma>(vma);
  upper->numab = {};  // vm_area_dup: the new VMA's scan state starts empty
  upper->start = at;
  upper->pgoff = vma.pgoff + (at.v - vma.start.v);
  vma.end = at;
  for (AnonVmaLink& l : upper->avc) l.slot = l.av->add(upper.get());
  if (upper->file) ++upper->file->i_mmap;
  return mm.insert_vma(std::move(upper));
}

int MemoryManager::split_at_edges(Mm& mm, Vpn start, Vpn end) {
  int splits = 0;
  if (end <= start) return splits;
  if (Vma* v = mm.find_vma(start); v && v->start < start) {
    split_vma(mm, *v, start);
    ++splits;
  }
  if (Vma* v = mm.find_vma(Vpn(end.v - 1)); v && v->end > end) {
    split_vma(mm, *v, end);
    ++splits;
  }
  return splits;
}

MmResult MemoryManager::munmap(Mm& mm, Vpn start, uint64_t pages, CpuId cpu) {
  MmResult r;
  r.cost.sys_ns = costs_.syscall_ns;
  const Vpn end(start.v + pages);
  uint64_t zapped = 0;
  // Split the VMAs that straddle the range, then remove those inside it.
  r.cost.sys_ns += static_cast<double>(split_at_edges(mm, start, end)) * costs_.vma_op_ns;
  double memcg_ns = 0;
  std::vector<Vma*> gone;
  for (auto it = mm.first_vma_ending_after(start); it != mm.vmas().end() && (*it)->start < end;
       ++it)
    gone.push_back(it->get());
  if (!gone.empty()) lru_add_drain(cpu);  // unmap_region
  for (Vma* v : gone) {
    const Zapped z = zap_range(mm, *v, v->start, v->end);
    zapped += z.ptes;
    memcg_ns += z.memcg_ns;
    r.cost.sys_ns += static_cast<double>(z.ptes) * costs_.pte_clear_ns + costs_.vma_op_ns;
    unlink_vma(*v);
    mm.erase_vma(v);
  }
  r.cost.sys_ns += free_pgtables(mm, start, end);
  mm.revoke(start, end);
  r.cost.sys_ns += flush_tlb_range(mm, cpu, zapped) + memcg_ns;
  return r;
}

namespace {

// Pages of [start, end) covered by VMAs, and whether any of them is VM_LOCKED.
struct Coverage {
  uint64_t pages = 0;
  bool locked = false;
};
Coverage coverage(const Mm& mm, Vpn start, Vpn end) {
  Coverage c;
  for (auto it = mm.first_vma_ending_after(start); it != mm.vmas().end() && (*it)->start < end;
       ++it) {
    const Vma& v = **it;
    c.locked |= (v.flags & Vma::kLocked) != 0;
    c.pages += std::min(v.end, end).v - std::max(v.start, start).v;
  }
  return c;
}

}  // namespace

MmResult MemoryManager::madvise_dontneed(Mm& mm, Vpn start, uint64_t pages, CpuId cpu) {
  MmResult r;
  r.cost.sys_ns = costs_.syscall_ns;
  const Vpn end(start.v + pages);
  // Every page of the range must be mapped, and no VMA may be VM_LOCKED.
  const Coverage c = coverage(mm, start, end);
  if (c.pages != pages || c.locked) {
    r.error = c.locked ? MmError::kInval : MmError::kNoMem;
    return r;
  }
  uint64_t zapped = 0;
  double memcg_ns = 0;
  lru_add_drain(cpu);  // zap_page_range_single
  for (const auto& v : mm.vmas()) {
    if (v->end <= start || v->start >= end) continue;
    const Zapped z = zap_range(mm, *v, std::max(v->start, start), std::min(v->end, end));
    zapped += z.ptes;
    memcg_ns += z.memcg_ns;
  }
  mm.revoke(start, end);
  r.cost.sys_ns += static_cast<double>(zapped) * costs_.pte_clear_ns;
  r.cost.sys_ns += flush_tlb_range(mm, cpu, zapped) + memcg_ns;
  return r;
}

MmResult MemoryManager::madvise_hugepage(Mm& mm, Vpn start, uint64_t pages, bool on) {
  MmResult r;
  r.cost.sys_ns = costs_.syscall_ns;
  const Vpn end(start.v + pages);
  if (coverage(mm, start, end).pages != pages) {
    r.error = MmError::kNoMem;  // (madvise_walk_vmas: the mapped part changes too)
  }
  split_at_edges(mm, start, end);
  for (const auto& v : mm.vmas()) {
    if (v->end <= start || v->start >= end) continue;
    const uint32_t set = on ? Vma::kHugepage : Vma::kNoHugepage;
    const uint32_t clear = on ? Vma::kNoHugepage : Vma::kHugepage;
    v->flags = (v->flags & ~clear) | set;
    r.cost.sys_ns += costs_.vma_op_ns;
    // A VMA that now qualifies registers its mm without waiting for a fault.
    if (on) khugepaged_enter_vma(*v);
  }
  merge_range(mm, start, end);
  return r;
}

Vma* MemoryManager::merge_with_neighbours(Mm& mm, Vma& vma) {
  return vma_merge(mm, vma.start, vma.end,
                   VmaMergeKey{vma.flags, vma.file, vma.pgoff, vma.anon_vma, &vma.policy}, &vma);
}

void MemoryManager::merge_range(Mm& mm, Vpn start, Vpn end) {
  Vpn cur = start;
  while (cur < end) {
    // The VMA at cur, or the next one (a range need not be all mapped).
    auto it = mm.first_vma_ending_after(cur);
    if (it == mm.vmas().end() || (*it)->start >= end) return;
    const Vpn next = (*it)->end;
    merge_with_neighbours(mm, **it);
    cur = next;
  }
}

MmResult MemoryManager::mprotect(Mm& mm, Vpn start, uint64_t pages, uint32_t prot) {
  MmResult r;
  r.cost.sys_ns = costs_.syscall_ns;
  const Vpn end(start.v + pages);
  if (coverage(mm, start, end).pages != pages) {
    r.error = MmError::kNoMem;
    return r;
  }
  constexpr uint32_t kProt = Vma::kRead | Vma::kWrite | Vma::kExec;
  // mprotect_fixup: the range's part of each VMA takes the new protection,
  // split off if it is only a part, then merged with its neighbours.
  split_at_edges(mm, start, end);
  Vpn cur = start;
  while (cur < end) {
    Vma* v = mm.find_vma(cur);
    const Vpn next = v->end;
    const uint32_t flags = (v->flags & ~kProt) | prot;
    if (flags != v->flags) {
      // SIMPLIFICATION: no PTE is changed (change_protection); the callers
      // only open up ranges nothing is mapped in yet.
      if (v->flags & ~flags & kProt) {
        bool mapped = false;
        mm.pgtable().for_each_table_in(
            v->start, v->end, [&](Vpn, PteTable& t) { mapped |= t.huge() || t.nr_used() > 0; });
        check(!mapped, "mprotect took a permission away from mapped pages");
      }
      r.cost.sys_ns += costs_.vma_op_ns;
      v->flags = flags;
      merge_with_neighbours(mm, *v);
    }
    cur = next;
  }
  return r;
}

MmResult MemoryManager::mlock(Mm& mm, Vpn start, uint64_t pages, FaultCtx& ctx) {
  MmResult r;
  r.cost.sys_ns = costs_.syscall_ns;
  const Vpn end(start.v + pages);
  if (coverage(mm, start, end).pages != pages) {
    r.error = MmError::kNoMem;
    return r;
  }
  // Split at the edges so that only the range becomes VM_LOCKED.
  split_at_edges(mm, start, end);
  for (const auto& v : mm.vmas()) {
    if (v->end <= start || v->start >= end || (v->flags & Vma::kLocked)) continue;
    v->flags |= Vma::kLocked;
    // Pages already mapped become mlocked (mlock_fixup walks them), a huge
    // PMD's folio once.
    mm.pgtable().for_each_table_in(v->start, v->end, [&](Vpn, PteTable& t) {
      if (t.huge() && t.pmd().maps_folio() && t.pmd().pfn != kZeroPfn)
        mlock_folio(Pfn(t.pmd().pfn));
    });
    mm.pgtable().for_each(v->start, v->end, [&](Vpn, PteTable& t, uint32_t i) {
      const Pte pte = t.get(i);
      if (pte.maps_folio()) mlock_folio(Pfn(pte.pfn));
    });
  }
  merge_range(mm, start, end);
  // __mm_populate: fault in every page not yet present, as a write on a
  // private writable mapping (breaking COW), else as a read.
  for (const auto& vp : mm.vmas()) {
    Vma& v = *vp;
    if (v.end <= start || v.start >= end) continue;
    const bool write = (v.flags & (Vma::kWrite | Vma::kShared)) == Vma::kWrite;
    Vpn cur = std::max(v.start, start);
    const Vpn stop = std::min(v.end, end);
    while (cur < stop) {
      const Vpn next = mm.pgtable().next_blocked(cur, stop, write);
      if (next >= stop) break;
      FaultResult fr = handle_mm_fault(mm, next, write, ctx);
      r.cost += fr.cost;
      // A page NUMA balancing marked or is migrating is mapped already: the
      // populate goes on (the kernel's would take the hinting fault or wait).
      if (fr.status != FaultStatus::kOk && fr.status != FaultStatus::kNumaHint &&
          fr.status != FaultStatus::kMigrationWait) {
        r.error = MmError::kOom;
        return r;
      }
      cur = Vpn(next.v + 1);
    }
  }
  return r;
}

OpCost MemoryManager::dup_mmap(Mm& parent, Mm& child, const FaultCtx& ctx) {
  const CpuId cpu = ctx.cpu;
  OpCost cost;
  child.mmap_rnd_pages = parent.mmap_rnd_pages;
  uint64_t protected_ptes = 0;
  for (const auto& pv : parent.vmas()) {
    Vma& pvma = *pv;
    auto cv = std::make_unique<Vma>();
    cv->start = pvma.start;
    cv->end = pvma.end;
    cv->flags = pvma.flags & ~Vma::kLocked;  // mlock is not inherited
    cv->file = pvma.file;
    cv->pgoff = pvma.pgoff;
    cv->policy = pvma.policy;
    cv->name = pvma.name;
    Vma* c = child.insert_vma(std::move(cv));
    cost.sys_ns += costs_.vma_op_ns;
    if (c->file) ++c->file->i_mmap;
    if (!pvma.anon_vma) continue;  // nothing to copy: the child faults the pages in
    // anon_vma_fork: join the parent's chain, then get an anon_vma of its own.
    for (const AnonVmaLink& l : pvma.avc) c->avc.push_back({l.av, l.av->add(c)});
    anon_vma_prepare(*c);
    // copy_page_range: the child gets a table wherever the parent has one
    // in the VMA's range (copy_pud_range, copy_pmd_range; copy_pte_range
    // allocates the PTE table before it looks at the entries), each the
    // parent's allocation.
    parent.pgtable().for_each_upper([&](PtLevel level, Vpn first, uint32_t) {
      const Vpn stop(first.v + (uint64_t{1} << PageTable::upper_shift(level)));
      if (stop <= pvma.start || first >= pvma.end) return;
      upper_alloc(child, std::max(first, pvma.start), level, ctx, &cost.sys_ns, /*nofail=*/true);
    });
    parent.pgtable().for_each_table_in(pvma.start, pvma.end, [&](Vpn base, PteTable&) {
      pte_alloc(child, std::max(base, pvma.start), ctx, &cost.sys_ns, /*nofail=*/true);
    });
    // copy_huge_pmd: the child shares each huge PMD's folio, both PMDs
    // write-protected (the huge zero page just shared).
    // A PROT_NONE hinting PMD loses its saved write permission too, and a
    // PMD migration entry is copied read-only.
    constexpr uint8_t kWritable = Pte::kWrite | Pte::kSavedWrite;
    parent.pgtable().for_each_table_in(pvma.start, pvma.end, [&](Vpn base, PteTable& t) {
      if (!t.huge()) return;
      Pte pmd = t.pmd();
      if (pmd.flags & kWritable) {
        pmd.flags = static_cast<uint8_t>(pmd.flags & ~kWritable);
        t.set_pmd(pmd);
        if (pmd.present()) protected_ptes += kHugePages;
      }
      Pte cpmd = pmd;
      cpmd.flags = static_cast<uint8_t>(cpmd.flags & ~Pte::kYoung);
      child.pgtable().at(base).set_pmd(cpmd);
      cost.sys_ns += costs_.pte_copy_ns;
      ++page_events_;
      if (!pmd.maps_folio()) return;
      ++entire_mapcount(Pfn(pmd.pfn));
      child.rss_anon += kHugePages;
    });
    // copy_page_range: share every mapped page, write-protecting private ones.
    const bool cow = pvma.is_cow_mapping();
    parent.pgtable().for_each(pvma.start, pvma.end, [&](Vpn vpn, PteTable& t, uint32_t i) {
      Pte pte = t.get(i);
      if (pte.swap()) {
        // copy_nonpresent_pte: the child refers to the same slot.
        child.pgtable().at(vpn).set(vpn.v & (kPtesPerTable - 1), pte);
        ++swap_->slot(pte.pfn).count;
        cost.sys_ns += costs_.pte_copy_ns;
        ++page_events_;
        return;
      }
      // copy_nonpresent_pte: a migration entry is shared, read-only in a
      // COW mapping (in the parent too).
      if (!pte.present() && !pte.migration()) return;
      if (cow && (pte.flags & kWritable)) {
        pte.flags = static_cast<uint8_t>(pte.flags & ~kWritable);
        t.set(i, pte);
        if (pte.present()) ++protected_ptes;
      }
      Pte cpte = pte;
      cpte.flags = static_cast<uint8_t>(cpte.flags & ~Pte::kYoung);
      child.pgtable().at(vpn).set(vpn.v & (kPtesPerTable - 1), cpte);
      cost.sys_ns += costs_.pte_copy_ns;
      ++page_events_;
      if (pte.pfn == kZeroPfn) return;
      ++folios_.folio(Pfn(pte.pfn)).mapcount;
      const Pfn head = folio_head(Pfn(pte.pfn));
      const Folio& f = folios_.folio(head);
      if (f.large()) ++pte_mapcount(head);
      if (!f.test(Folio::kAnon)) files_[f.mapping]->mappers[f.index()].add(&child, vpn);
      if (f.test(Folio::kAnon)) {
        ++child.rss_anon;
      } else if (f.test(Folio::kShmem)) {
        ++child.rss_shmem;
      } else {
        ++child.rss_file;
      }
    });
  }
  if (protected_ptes) {
    parent.revoke(Vpn(0), Vpn(UINT64_MAX));
    cost.sys_ns += flush_tlb_range(parent, cpu, protected_ptes);
  }
  if (parent.khugepaged) khugepaged_enter(child);  // khugepaged_fork
  return cost;
}

OpCost MemoryManager::exit_mmap(Mm& mm, CpuId cpu) {
  OpCost cost;
  khugepaged_exit(mm);  // before the mappings go (mmput)
  lru_add_drain(cpu);
  uint64_t zapped = 0;
  double memcg_ns = 0;
  for (auto& v : mm.vmas_mut()) {
    const Zapped z = zap_range(mm, *v, v->start, v->end);
    zapped += z.ptes;
    memcg_ns += z.memcg_ns;
    cost.sys_ns += static_cast<double>(z.ptes) * costs_.pte_clear_ns + costs_.vma_op_ns;
    unlink_vma(*v);
  }
  mm.clear_vmas();
  // free_pgtables over the whole address space (the PGD goes with the mm).
  cost.sys_ns += free_pgtables(mm, Vpn(0), Vpn(UINT64_MAX >> kPageShift));
  // tlb_finish_mmu of a dying mm flushes only its last CPU.
  if (zapped) cost.sys_ns += costs_.tlb_flush_local_ns;
  cost.sys_ns += memcg_ns;
  return cost;
}

std::optional<double> MemoryManager::evict_folio(Pfn pfn, CpuId cpu) {
  Folio& f = folios_.folio(pfn);
  // SIMPLIFICATION: no swap, so shmem folios (swap-backed) never go.
  if (f.test(Folio::kAnon) || f.test(Folio::kShmem) || f.test(Folio::kLocked) ||
      f.test(Folio::kMlocked) || f.test(Folio::kDirty) || writeback_.under_writeback(pfn)) {
    return std::nullopt;
  }
  double cost_ns = unmap_file_folio(pfn, cpu);
  // A PTE's dirty bit may have dirtied it: it stays, unmapped.
  if (f.test(Folio::kDirty)) return std::nullopt;
  lru_remove(pfn);  // reclaim has isolated it already
  files_[f.mapping]->shadows[f.index()] = workingset_eviction(f);
  delete_from_page_cache(pfn);
  cost_ns += costs_.page_free_ns;
  return cost_ns;
}

std::vector<std::pair<Mm*, Vpn>>& MemoryManager::rmap_collect(Pfn pfn) {
  scratch_maps_.clear();
  rmap_walk(pfn, [&](Mm& mm, Vma&, Vpn vpn) { scratch_maps_.emplace_back(&mm, vpn); });
  return scratch_maps_;
}

double MemoryManager::unmap_file_folio(Pfn pfn, CpuId cpu) {
  if (folios_.folio(pfn).mapcount <= 0) return 0;
  // try_to_unmap: every PTE goes, with a flush of each mm's TLB.
  double cost_ns = 0;
  for (auto [mm, vpn] : rmap_collect(pfn)) {
    Vma* vma = mm->find_vma(vpn);
    cost_ns += zap_pte(*mm, *vma, mm->pgtable().at(vpn), vpn);
    cost_ns += costs_.pte_clear_ns + flush_tlb_range(*mm, cpu, 1);
    mm->revoke(vpn, Vpn(vpn.v + 1));
  }
  return cost_ns;
}

double MemoryManager::folio_mkclean(Pfn pfn, CpuId cpu) {
  if (folios_.folio(pfn).mapcount <= 0) return 0;
  double cost_ns = 0;
  for (auto [mm, vpn] : rmap_collect(pfn)) {
    PteTable& t = mm->pgtable().at(vpn);
    const auto i = static_cast<uint32_t>(vpn.v & (kPtesPerTable - 1));
    Pte pte = t.get(i);
    cost_ns += cache_.meta_miss_ns(cost::Meta::kPte, mm->id(), vpn.v, sizeof(uint64_t));
    if (!(pte.flags & (Pte::kWrite | Pte::kDirty))) continue;
    // page_mkclean_one: write-protected and clean; the next write faults
    // (page_mkwrite) and dirties the folio again.
    pte.flags = static_cast<uint8_t>(pte.flags & ~(Pte::kWrite | Pte::kDirty));
    t.set(i, pte);
    ++page_events_;
    cost_ns += costs_.pte_clear_ns + flush_tlb_range(*mm, cpu, 1);
    mm->revoke(vpn, Vpn(vpn.v + 1));
  }
  return cost_ns;
}

void MemoryManager::folio_rotate_reclaimable(Pfn pfn) {
  const Folio& f = folios_.folio(pfn);
  if (f.test(Folio::kLocked) || f.test(Folio::kDirty) || f.test(Folio::kMlocked) ||
      !f.test(Folio::kLru)) {
    return;
  }
  // lru_move_tail_fn (SIMPLIFICATION: at once, not through the CPU's
  // lru_rotate batch): off the active list if it was there.
  lru_.del(pfn);
  folios_.folio(pfn).flags &= static_cast<uint16_t>(~Folio::kActive);
  lru_.add_tail(pfn);
  vmstat_.add(Vm::pgrotated, f.nr_pages());
}

namespace {

// A NUMA hinting entry (PTE or PMD): PROT_NONE, its write permission saved
// for the fault to restore.
Pte prot_none(Pte pte) {
  if (pte.flags & Pte::kWrite)
    pte.flags = static_cast<uint8_t>((pte.flags & ~Pte::kWrite) | Pte::kSavedWrite);
  pte.flags |= Pte::kProtNone;
  return pte;
}

}  // namespace

ProtNumaResult MemoryManager::change_prot_numa(Mm& mm, Vma& vma, Vpn start, Vpn end,
                                               const ProtNumaSkip& skip, CpuId cpu) {
  ProtNumaResult r;
  // change_pmd_range: a huge PMD the range covers whole is marked as one
  // (change_huge_pmd); one it covers in part is split, its PTEs marked below.
  mm.pgtable().for_each_table_in(start, end, [&](Vpn base, PteTable& t) {
    if (!t.huge()) return;
    if (base < start || base.v + kPtesPerTable > end.v) {
      split_huge_pmd(mm, vma, t);
      return;
    }
    Pte pmd = t.pmd();
    // Neither the huge zero page nor a PMD already PROT_NONE (or under
    // migration) changes.
    if (!pmd.accessible() || pmd.pfn == kZeroPfn) return;
    Folio& f = folios_.folio(Pfn(pmd.pfn));
    if (skip.skip_huge(f)) return;
    t.set_pmd(prot_none(pmd));
    skip.marked(f);
    r.updated += kHugePages;
    ++r.huge_updated;
  });
  mm.pgtable().for_each(start, end, [&](Vpn, PteTable& t, uint32_t i) {
    Pte pte = t.get(i);
    if (!pte.present()) return;  // migration entries: not present
    Folio* f = pte.pfn == kZeroPfn ? nullptr : &folios_.folio(Pfn(pte.pfn));
    // A page of a PTE-mapped THP: 5.17-6.9 skip it in a COW mapping (its
    // refcount is never 1); 6.10 marks it unless the folio is likely mapped
    // shared (folio_likely_mapped_shared: its first page mapped twice, here
    // more PTE mappings than pages). SIMPLIFICATION: 4.16-5.16 mark it when
    // the page is mapped once, and their do_numa_page only maps it again:
    // not marked here.
    if (f && (f->large() || f->test(Folio::kTail))) {
      const Pfn h = folio_head(Pfn(pte.pfn));
      f = &folios_.folio(h);
      const bool likely_shared = entire_mapcount(h) > 0 || pte_mapcount(h) > f->nr_pages();
      if (skip.skip_pte_mapped_large(vma, *f, likely_shared)) return;
    } else if (skip.skip(vma, pte, f)) {
      return;
    }
    t.set(i, prot_none(pte));
    if (f) skip.marked(*f);
    ++r.updated;
  });
  if (r.updated) {
    // One entry changed per PMD, but the flush covers its 512 pages.
    const uint64_t entries = r.updated - r.huge_updated * (kHugePages - 1);
    r.cost_ns =
        static_cast<double>(entries) * costs_.pte_protect_ns + flush_tlb_range(mm, cpu, r.updated);
    vmstat_.add(Vm::numa_pte_updates, static_cast<int64_t>(r.updated));
    vmstat_.add(Vm::numa_huge_pte_updates, static_cast<int64_t>(r.huge_updated));
    mm.revoke(start, end);
  }
  return r;
}

namespace {

// pte_modify with the VMA's protection: accessible, young (the faulting
// access), and writable if the saved write bit says so. (Without savedwrite,
// 6.2+, do_numa_page asks can_change_pte_writable instead: for the entries
// the model write-protects, its answer is the write bit the scan took.)
Pte numa_pte_modify(Pte pte, bool writable) {
  const bool write = writable && (pte.flags & Pte::kSavedWrite);
  pte.flags = static_cast<uint8_t>(pte.flags & ~(Pte::kProtNone | Pte::kSavedWrite));
  pte.flags |= Pte::kYoung | (write ? Pte::kWrite : 0);
  return pte;
}

}  // namespace

Pte MemoryManager::numa_pte_restored(const Mm& mm, Vpn vpn) const {
  return numa_pte_modify(mm.pgtable().get(vpn), true);  // a huge PMD's view at vpn
}

Pte MemoryManager::restore_numa_pte(Mm& mm, Vpn vpn, bool writable) {
  PteTable& t = mm.pgtable().at(vpn);
  const uint32_t i = vpn.v & (kPtesPerTable - 1);
  if (t.huge()) {
    t.set_pmd(numa_pte_modify(t.pmd(), writable));  // do_huge_pmd_numa_page
    return t.get(i);
  }
  const Pte pte = numa_pte_modify(t.get(i), writable);
  t.set(i, pte);
  return pte;
}

MemoryManager::MigrateStep MemoryManager::migrate_unmap(Pfn folio, CpuId cpu) {
  MigrateStep s;
  auto& maps = rmap_collect(folio);
  s.unmapped.reserve(maps.size());
  // The entry remembers the write permission and the young and dirty bits
  // (6.0 on x86). A NUMA hinting entry has the write bit only with
  // savedwrite (up to 6.1); from 6.2 its migration entry is read-only
  // (readable-exclusive for an anonymous page), and remove_migration_pte
  // maps the new page read-only. SIMPLIFICATION: a page of a PTE-mapped
  // large folio keeps its write permission, since the model's do_wp_page
  // copies such a page where the kernel reuses it (PageAnonExclusive).
  const bool large = folios_.folio(folio).large();
  auto entry = [&](Pte pte, bool pte_mapped) {
    const bool saved =
        (pte.flags & Pte::kSavedWrite) && (config_.prot_numa_savedwrite || (large && pte_mapped));
    const bool write = (pte.flags & Pte::kWrite) || saved;
    pte.flags = static_cast<uint8_t>(Pte::kMigration | (write ? Pte::kSavedWrite : 0) |
                                     (pte.flags & (Pte::kDirty | Pte::kYoung)));
    return pte;
  };
  for (auto [mm, vpn] : maps) {
    PteTable& t = mm->pgtable().at(vpn);
    const uint32_t pages = t.huge() ? kHugePages : 1;
    double flush_ns = 0;
    if (t.huge()) {
      // set_pmd_migration_entry: pmdp_invalidate flushes the PMD's range
      // whatever its state (5.13+). SIMPLIFICATION: up to 5.12 a hinting
      // fault's THP moved by migrate_misplaced_transhuge_page, which set the
      // new PMD over the PROT_NONE one without a flush; the model flushes.
      t.set_pmd(entry(t.pmd(), false));
      flush_ns = flush_tlb_range(*mm, cpu, pages);
    } else {
      // ptep_clear_flush (or, batched, set_tlb_ubc_flush_pending) flushes
      // only an accessible entry: a NUMA hinting PTE left its TLBs when the
      // scan made it PROT_NONE, so a misplaced page's migration sends no
      // IPI. (pte_accessible also flushes a PROT_NONE entry while a scan's
      // flush is pending; a scan here marks and flushes in one step.)
      const uint32_t i = vpn.v & (kPtesPerTable - 1);
      const Pte old = t.get(i);
      t.set(i, entry(old, true));
      if (old.accessible()) flush_ns = flush_tlb_range(*mm, cpu, 1);
    }
    // One entry cleared per mapping, in turn.
    s.cost_ns += costs_.pte_clear_ns + flush_ns;
    ++s.mappings;
    s.unmapped.push_back({mm, vpn, pages, s.cost_ns});
  }
  return s;
}

MemoryManager::MigrateStep MemoryManager::migrate_remap(Pfn from, Pfn to) {
  MigrateStep s;
  auto& maps = rmap_collect(from);
  // remove_migration_pte: the entry maps the same page of `to` (the head,
  // for a PMD).
  auto mapped = [&](Pte pte) {
    const bool write = pte.flags & Pte::kSavedWrite;
    Pte m;
    m.pfn = to.v + (pte.pfn - from.v);
    m.flags = static_cast<uint8_t>(Pte::kPresent | (write ? Pte::kWrite : 0) |
                                   (pte.flags & (Pte::kDirty | Pte::kYoung)));
    return m;
  };
  for (auto [mm, vpn] : maps) {
    PteTable& t = mm->pgtable().at(vpn);
    if (t.huge()) {
      if (!t.pmd().migration()) continue;
      t.set_pmd(mapped(t.pmd()));
    } else {
      const uint32_t i = vpn.v & (kPtesPerTable - 1);
      const Pte pte = t.get(i);
      if (!pte.migration()) continue;
      t.set(i, mapped(pte));
    }
    s.cost_ns += costs_.pte_set_ns;
    ++s.mappings;
  }
  return s;
}

void MemoryManager::migrate_folio_finish(Pfn from, Pfn to, CpuId cpu, bool was_mapped) {
  Folio& old = folios_.folio(from);
  Folio& f = folios_.folio(to);
  const NodeId node = f.node;
  check(!old.test(Folio::kLru), "migration of a folio not isolated from its LRU");
  check(old.order() == f.order(), "migration to a folio of another size");
  // A THP's tails first: their mapcounts (and the first tail's PMD and PTE
  // mapping counts) go to the new folio's.
  for (uint32_t i = 1; i < old.nr_pages(); ++i) {
    Folio& ot = folios_.folio(Pfn(from.v + i));
    Folio& nt = folios_.folio(Pfn(to.v + i));
    nt = ot;
    nt.node = node;
    ot.mapcount = 0;
  }
  f = old;
  f.node = node;
  // folio_migrate_flags: in memory-tiering mode the field holds a slow
  // node's access time, meaningless once the folio crosses the top tier's
  // boundary.
  if (config_.tiering_access_time && tiers_.toptier(old.node) != tiers_.toptier(node))
    f.last_cpupid = ~0u;
  f.flags &= static_cast<uint16_t>(~Folio::kLocked);
  if (!f.test(Folio::kAnon)) files_[f.mapping]->store(f.index(), to.v);
  if (f.test(Folio::kSwapCache)) {
    const uint32_t slot = swap_slot_of_.at(from.v);
    swap_slot_of_.erase(from.v);
    swap_slot_of_[to.v] = slot;
    swap_->slot(slot).cache = to.v;
  }
  if (memcg_) memcg_->migrate(from, to, f);
  // The new folio goes on its LRU through the migrating CPU's lru_add batch
  // (a large one takes the batch with it at once). Whether the batch is then
  // drained depends on the kernel: until it is, the new folio cannot be
  // isolated again.
  folio_add_lru(to, cpu);
  switch (config_.migrate_lru_drain) {
    case MigrateDrain::kNever:
      break;
    case MigrateDrain::kMapped:
      if (was_mapped) lru_add_drain(cpu);
      break;
    case MigrateDrain::kMlocked:
      if (old.test(Folio::kMlocked)) lru_add_drain(cpu);
      break;
  }
  old.mapcount = 0;
  folios_.set_mlock_count(to, folios_.mlock_count(from));
  folios_.set_mlock_count(from, 0);
  old.flags = Folio::kInUse;
  folios_.free(from);
}

std::optional<double> MemoryManager::demote_folio(Pfn pfn, CpuId cpu) {
  const Folio& f = folios_.folio(pfn);
  const NodeId src = f.node;
  const uint8_t order = f.order();
  const uint32_t nr = f.nr_pages();
  const auto target = tiers_.demotion_target(src);
  if (!target || f.test(Folio::kLocked) || f.test(Folio::kMlocked) ||
      writeback_.under_writeback(pfn))
    return std::nullopt;
  // alloc_demote_page: GFP_NOWAIT without reclaim, on the target alone
  // first, then on any lower-tier node; each may wake its node's kswapd and
  // go down to its min watermark.
  const Mark fast = reclaim_ ? Mark::kLow : Mark::kNone;
  const Mark slow = reclaim_ ? Mark::kMin : Mark::kNone;
  auto on = [&](NodeId n) -> std::optional<Pfn> {
    if (auto p = folios_.alloc_on(n, fast, order)) return p;
    if (reclaim_) reclaim_->wake_kswapd(n);
    return folios_.alloc_on(n, slow, order);
  };
  std::optional<Pfn> fresh = on(*target);
  for (NodeId n : tiers_.lower_tier_nodes(src)) {
    if (fresh) break;
    if (n != *target) fresh = on(n);
  }
  if (!fresh) {
    // No 2 MiB below for a THP: migrate_pages splits it (MR_DEMOTION may)
    // and counts no page as failed yet; the caller splits it.
    if (order) {
      vmstat_.add(Vm::thp_migration_fail);
      vmstat_.add(Vm::thp_migration_split);
    } else {
      vmstat_.add(Vm::pgmigrate_fail);
    }
    return std::nullopt;
  }
  // migrate_pages: every PTE a migration entry, the copy, the PTEs back on
  // the new folio, done within the reclaimer's time (SIMPLIFICATION: no
  // task waits on the entries meanwhile; tasks that ran ahead are told).
  const NodeId dst = folios_.folio(*fresh).node;
  MigrateStep un = migrate_unmap(pfn, cpu);
  double ns =
      un.cost_ns + static_cast<double>(nr) * cache_.page_copy_ns(topo_.cpu_to_node(cpu), src, dst);
  ns += migrate_remap(pfn, *fresh).cost_ns;
  migrate_folio_finish(pfn, *fresh, cpu, !un.unmapped.empty());
  for (const auto& u : un.unmapped) u.mm->revoke(u.vpn, Vpn(u.vpn.v + u.pages));
  vmstat_.add(Vm::pgmigrate_success, nr);
  if (order) vmstat_.add(Vm::thp_migration_success);
  return ns;
}

void MemoryManager::swap_cache_del(Pfn pfn) {
  Folio& f = folios_.folio(pfn);
  const auto it = swap_slot_of_.find(pfn.v);
  check(it != swap_slot_of_.end(), "a swap-cache folio without a slot");
  const uint32_t slot = it->second;
  swap_slot_of_.erase(it);
  f.flags &= static_cast<uint16_t>(~Folio::kSwapCache);
  swap_->slot(slot).cache = SwapSlot::kNoFolio;
  swap_->put_if_unused(slot);
}

void MemoryManager::swap_entry_free(uint32_t slot) {
  SwapSlot& s = swap_->slot(slot);
  check(s.count > 0, "a swap entry of a slot nobody refers to");
  --s.count;
  if (s.count == 0 && s.cache != SwapSlot::kNoFolio) {
    // free_swap_and_cache: a cached copy that nothing maps goes too.
    const Pfn cached(s.cache);
    const Folio& f = folios_.folio(cached);
    if (f.mapcount == 0 && !f.test(Folio::kLocked)) free_anon_folio(cached);
  }
  swap_->put_if_unused(slot);
}

MemoryManager::SwapOutResult MemoryManager::swap_out_folio(Pfn pfn, CpuId cpu) {
  SwapOutResult r;
  if (!swap_) return r;
  {
    const Folio& f = folios_.folio(pfn);
    if (!f.test(Folio::kAnon) || f.test(Folio::kLocked) || f.test(Folio::kMlocked)) return r;
  }
  // add_to_swap: a slot, and the folio into the swap cache, dirty (its
  // contents are not on the device yet).
  if (!folios_.folio(pfn).test(Folio::kSwapCache)) {
    const auto slot = swap_->alloc();
    if (!slot) return r;
    swap_->slot(*slot).cache = pfn.v;
    swap_slot_of_[pfn.v] = *slot;
    folios_.folio(pfn).flags |= Folio::kSwapCache | Folio::kDirty;
  }
  const uint32_t slot = swap_slot_of_.at(pfn.v);
  Folio& f = folios_.folio(pfn);
  // try_to_unmap: each PTE becomes a swap entry (its dirty bit moving to
  // the folio), each mm's TLB flushed.
  if (f.mapcount > 0) {
    for (auto [mm, vpn] : rmap_collect(pfn)) {
      PteTable& t = mm->pgtable().at(vpn);
      const uint32_t i = vpn.v & (kPtesPerTable - 1);
      if (t.get(i).flags & Pte::kDirty) f.flags |= Folio::kDirty;
      Pte entry;
      entry.pfn = slot;
      entry.flags = Pte::kSwap;
      t.set(i, entry);
      ++swap_->slot(slot).count;
      --f.mapcount;
      --mm->rss_anon;
      ++page_events_;
      r.ns += cache_.meta_miss_ns(cost::Meta::kPte, mm->id(), vpn.v, sizeof(uint64_t)) +
              costs_.pte_clear_ns + flush_tlb_range(*mm, cpu, 1);
      mm->revoke(vpn, Vpn(vpn.v + 1));
    }
  }
  if (f.mapcount > 0) return r;  // not every mapping went
  if (f.test(Folio::kDirty)) {
    // pageout: the write goes to the device (pswpout); the folio stays in
    // the swap cache until a later scan finds it written and clean. The
    // write is asynchronous: its submission costs a lock round, the I/O no
    // one's CPU time.
    f.flags &= static_cast<uint16_t>(~Folio::kDirty);
    vmstat_.add(Vm::pswpout);
    r.ns += costs_.lock_ns;
    r.what = SwapOut::kWritten;
    return r;
  }
  // __remove_mapping: clean and written, the folio leaves the swap cache for
  // good, with a shadow in its slot, and is freed.
  swap_->slot(slot).shadow = workingset_eviction(f);
  free_anon_folio(pfn);
  r.ns += costs_.page_free_ns;
  r.what = SwapOut::kFreed;
  return r;
}

MemoryManager::Fault MemoryManager::do_swap_page(Mm& mm, Vma& vma, Vpn vpn, Pte pte, bool write,
                                                 FaultCtx& ctx) {
  Fault out;
  FaultResult& r = out.result;
  const uint32_t slot = pte.pfn;
  bool major = false;
  Pfn pfn(swap_->slot(slot).cache);
  r.cost.sys_ns += costs_.pagecache_lookup_ns;  // the swap cache's lookup
  if (swap_->slot(slot).cache == SwapSlot::kNoFolio) {
    // Not in the swap cache: a new folio, charged, read from the device
    // (pswpin; the fault waits for it: major). SIMPLIFICATION: no swap
    // readahead (page-cluster): one page per fault.
    auto p = alloc_folio(vma_policy(vma, ctx), ctx.node, vpn.v, ctx.cpu, &out.memcg_ns);
    if (!p) {
      r.status = FaultStatus::kOom;
      return out;
    }
    // page_add_anon_rmap: the VMA's own anon_vma if this mm alone refers to
    // the slot, else the root of its chain, which every forked VMA is on.
    AnonVma& own = anon_vma_prepare(vma);
    const AnonVma& av = swap_->slot(slot).count == 1 ? own : *vma.avc.front().av;
    {
      Folio& f = folios_.folio(*p);
      f.flags |= Folio::kAnon | Folio::kUptodate | Folio::kSwapCache;
      f.mapping = av.id;
      f.set_index(vpn.v);
    }
    if (memcg_) {
      const ChargeResult c = memcg_->charge(ctx.memcg, *p, ctx.cpu);
      out.memcg_ns += c.ns;
      if (!c.ok) {
        folios_.folio(*p).flags = Folio::kInUse;
        folios_.free(*p);
        r.status = FaultStatus::kOom;
        return out;
      }
    }
    Folio& f = folios_.folio(*p);  // after the charge's reclaim
    vmstat_.add(Vm::nr_anon_pages);
    workingset_refault(f, swap_->slot(slot).shadow);
    folio_add_lru(*p, ctx.cpu);
    swap_->slot(slot).cache = p->v;
    swap_slot_of_[p->v] = slot;
    vmstat_.add(Vm::pswpin);
    r.cost.sys_ns += costs_.page_alloc_ns;
    r.cost.io_ns += costs_.storage_read_ns;
    pfn = *p;
    major = true;
  }
  // swap_free: this PTE's reference to the slot goes; the folio maps in its
  // place, writable only for a write (do_swap_page's maybe_mkwrite).
  --swap_->slot(slot).count;
  mm.pgtable().at(vpn).set(vpn.v & (kPtesPerTable - 1), Pte{});
  out.memcg_ns += map_folio(mm, vma, vpn, pfn.v, write);
  r.cost.sys_ns += costs_.pte_set_ns;
  // should_try_to_free_swap: the slot is given up when the device is over
  // half full, the VMA is locked, or a write made the only user's copy the
  // newer one.
  const Folio& f = folios_.folio(pfn);
  if (swap_->full_half() || (vma.flags & Vma::kLocked) ||
      (write && f.mapcount == 1 && swap_->slot(slot).count == 0))
    swap_cache_del(pfn);
  swap_->put_if_unused(slot);
  account_fault(ctx, major);
  return out;
}

std::vector<std::string> MemoryManager::check_invariants() const {
  int64_t dirty = 0, writeback = 0;
  // By memcg (every id a folio may carry below kMaxMemcgs that the LRU knows).
  std::vector<uint64_t> memcg_dirty(lru_.nr_memcgs() + 1, 0),
      memcg_writeback(lru_.nr_memcgs() + 1, 0);
  std::vector<std::string> errors;
  auto err = [&](std::string s) {
    if (errors.size() < 20) errors.push_back(std::move(s));
  };
  // Count PTEs per folio across every page table.
  std::vector<int32_t> ptes(folios_.table_size(), 0);
  std::vector<int32_t> locked(folios_.table_size(), 0);  // by the folio's head
  std::vector<int32_t> pmds(folios_.table_size(), 0);    // huge PMDs, by head
  std::vector<uint32_t> swap_refs(swap_ ? swap_->total() : 0, 0);
  // The page-table pages each mm's tables occupy, by frame.
  std::vector<uint8_t> table_refs(folios_.table_size(), 0);
  auto table_ref = [&](const Mm& mm, uint32_t frame, PtLevel level) {
    if (frame == kNoFrame) return;
    if (frame >= table_refs.size() || !folios_.folio(Pfn(frame)).test(Folio::kInUse) ||
        !folios_.folio(Pfn(frame)).is_pgtable() ||
        folios_.folio(Pfn(frame)).index() != static_cast<uint64_t>(level)) {
      err("mm " + std::to_string(mm.id()) + " has a page table in a frame that is not one");
      return;
    }
    ++table_refs[frame];
  };
  for (Mm* mm : live_mms_) {
    table_ref(*mm, mm->pgtable().pgd_frame, PtLevel::kPgd);
    mm->pgtable().for_each_upper(
        [&](PtLevel level, Vpn, uint32_t frame) { table_ref(*mm, frame, level); });
    mm->pgtable().for_each_table(
        [&](Vpn, const PteTable& t) { table_ref(*mm, t.frame(), PtLevel::kPte); });
    for (const auto& vp : mm->vmas()) {
      // Each link of its anon_vma chain names the slot that holds it.
      for (const AnonVmaLink& l : vp->avc) {
        if (!l.av->holds(l.slot, vp.get()))
          err("mm " + std::to_string(mm->id()) + " has a VMA its anon_vma does not list");
      }
      if (!mm->pgtable().has_upper(PtLevel::kPmd, vp->start) ||
          !mm->pgtable().has_upper(PtLevel::kPud, vp->start)) {
        // (A VMA that never faulted has none: only one with a PTE table.)
        if (mm->pgtable().table(vp->start))
          err("mm " + std::to_string(mm->id()) + " has a PTE table with no table above it");
      }
    }
  }
  int64_t pagetables = 0;
  for (Mm* mm : live_mms_) {
    size_t huge_in_vmas = 0;
    for (const auto& vp : mm->vmas()) {
      const Vma& vma = *vp;
      mm->pgtable().for_each_table_in(vma.start, vma.end, [&](Vpn base, const PteTable& t) {
        if (!t.huge()) return;
        if (base < vma.start || base.v + kPtesPerTable > vma.end.v) {
          err("mm " + std::to_string(mm->id()) + " has a huge PMD across a VMA's edge");
          return;
        }
        huge_in_vmas += kPtesPerTable;
        const Pte pmd = t.pmd();
        if (!pmd.maps_folio()) return;
        if (pmd.pfn >= pmds.size() || !folios_.folio(Pfn(pmd.pfn)).large() ||
            !folios_.folio(Pfn(pmd.pfn)).test(Folio::kInUse)) {
          err("mm " + std::to_string(mm->id()) + " has a huge PMD of no huge folio");
          return;
        }
        ++pmds[pmd.pfn];
        if (vma.flags & Vma::kLocked) ++locked[pmd.pfn];
      });
      mm->pgtable().for_each(vma.start, vma.end, [&](Vpn vpn, PteTable& t, uint32_t i) {
        const Pte pte = t.get(i);
        if (pte.swap()) {
          if (pte.pfn >= swap_refs.size() || !swap_->slot(pte.pfn).used) {
            err("mm " + std::to_string(mm->id()) + " has a swap entry of a free slot");
          } else {
            ++swap_refs[pte.pfn];
          }
          return;
        }
        if (!pte.maps_folio()) return;
        if (pte.pfn >= ptes.size() || !folios_.folio(Pfn(pte.pfn)).test(Folio::kInUse)) {
          err("mm " + std::to_string(mm->id()) + " maps a free folio");
          return;
        }
        ++ptes[pte.pfn];
        if (vma.flags & Vma::kLocked) ++locked[folio_head(Pfn(pte.pfn)).v];
      });
    }
    // No PTE outside every VMA.
    size_t in_vmas = huge_in_vmas, total = 0;
    mm->pgtable().for_each_table([&](Vpn, const PteTable& t) { total += t.nr_used(); });
    for (const auto& vp : mm->vmas()) {
      mm->pgtable().for_each(vp->start, vp->end, [&](Vpn, PteTable&, uint32_t) { ++in_vmas; });
    }
    if (in_vmas != total) err("mm " + std::to_string(mm->id()) + " has PTEs outside its VMAs");
  }
  // A file page's mappers: each a live mm's PTE (or migration entry) of
  // that page, and as many as the page's PTEs (compared below, in place of
  // a walk of each file page's rmap, which goes through the same list).
  std::vector<int32_t> via_mappers(folios_.table_size(), 0);
  {
    const std::unordered_set<const Mm*> live(live_mms_.begin(), live_mms_.end());
    for (const auto& file : files_) {
      for (const auto& entry : file->mappers) {
        const uint64_t index = entry.first;  // not a structured binding: the lambda takes it
        entry.second.for_each([&](Mm& mm, Vpn vpn) {
          if (!live.contains(&mm)) {
            err("file " + file->name + " has a mapper of a gone mm");
            return;
          }
          const Pte pte = mm.pgtable().get(vpn);
          const bool in_table = pte.maps_folio() && pte.pfn < via_mappers.size();
          const Folio* f = in_table ? &folios_.folio(Pfn(pte.pfn)) : nullptr;
          if (!f || f->test(Folio::kAnon) || f->mapping != file->id || f->index() != index) {
            err("file " + file->name + " page " + std::to_string(index) +
                " has a mapper whose PTE does not map it");
            return;
          }
          ++via_mappers[pte.pfn];
        });
      }
    }
  }
  int64_t anon = 0, file = 0, mapped = 0, mlocked = 0, unowned = 0, thps = 0;
  std::vector<uint64_t> used(topo_.nr_nodes(), 0);
  for (uint32_t p = 0; p < folios_.table_size(); ++p) {
    const Folio& f = folios_.folio(Pfn(p));
    if (!f.test(Folio::kInUse) || f.test(Folio::kTail)) continue;
    const auto nr = static_cast<int64_t>(f.nr_pages());
    used[f.node.v] += f.nr_pages();
    // Each page's mapcount is its PTEs; a large folio's PMD and PTE totals
    // are its own.
    int32_t mappings = 0;
    for (uint32_t i = 0; i < f.nr_pages(); ++i) {
      const Folio& page = folios_.folio(Pfn(p + i));
      if (page.mapcount != ptes[p + i])
        err("page " + std::to_string(p + i) + " mapcount " + std::to_string(page.mapcount) +
            " but " + std::to_string(ptes[p + i]) + " PTEs");
      if (i && (!page.test(Folio::kTail) || !page.test(Folio::kInUse) || page.node != f.node))
        err("huge folio " + std::to_string(p) + " has a bad tail");
      mappings += ptes[p + i];
    }
    if (f.large()) {
      if (static_cast<int32_t>(pte_mapcount(Pfn(p))) != mappings ||
          static_cast<int32_t>(entire_mapcount(Pfn(p))) != pmds[p])
        err("huge folio " + std::to_string(p) +
            " mapping counts wrong: " + std::to_string(pte_mapcount(Pfn(p))) + " PTE-mapped for " +
            std::to_string(mappings) + " PTEs, " + std::to_string(entire_mapcount(Pfn(p))) +
            " PMD-mapped for " + std::to_string(pmds[p]) + " PMDs");
      mappings += pmds[p];
      if (pmds[p] > 0) ++thps;
    }
    // The rmap must find every PTE (and PMD) that maps the folio (it only
    // reports real ones, so equal counts mean the same set). A file page's
    // rmap is its mappers, checked above.
    if (!f.test(Folio::kAnon) && !f.large()) {
      if (via_mappers[p] != mappings)
        err("file folio " + std::to_string(p) + " has " + std::to_string(via_mappers[p]) +
            " mappers for " + std::to_string(mappings) + " mappings");
    } else if (mappings > 0) {
      int32_t found = 0;
      rmap_walk(Pfn(p), [&](Mm&, Vma&, Vpn) { ++found; });
      if (found != mappings)
        err("rmap of folio " + std::to_string(p) + " finds " + std::to_string(found) + " of " +
            std::to_string(mappings) + " mappings");
    }
    const uint32_t mlock_count = folios_.mlock_count(Pfn(p));
    if (static_cast<int64_t>(mlock_count) != locked[p])
      err("folio " + std::to_string(p) + " mlock_count wrong");
    if (mlock_count > 0) mlocked += nr;
    if (f.is_pgtable()) {
      if (table_refs[p] != 1)
        err("page-table page " + std::to_string(p) + " is in " + std::to_string(table_refs[p]) +
            " page tables");
      if (pgtable_counted(f)) ++pagetables;
      unowned += nr;
      continue;
    }
    if (f.test(Folio::kKernel)) {  // the huge zero page
      unowned += nr;
      continue;
    }
    if (!f.test(Folio::kUptodate)) {
      // A migration's new folio while the old one is copied into it: it has
      // no owner yet (no page-cache slot, no anon_vma, no charge, no LRU)
      // until migrate_folio_finish gives it the old folio's place.
      unowned += nr;
      continue;
    }
    // Off the LRU only while isolated for migration (PG_locked here) or
    // waiting in a CPU's lru_add batch.
    if (!f.test(Folio::kLru) && !f.test(Folio::kLocked) && !f.test(Folio::kLruBatched))
      err("folio " + std::to_string(p) + " is on no LRU list");
    if (f.test(Folio::kLruBatched)) {
      const auto& batch = lru_batch_.at(f.lru_prev);
      if (std::find(batch.begin(), batch.end(), p) == batch.end())
        err("folio " + std::to_string(p) + " is not in the lru_add batch of its CPU");
    }
    if (f.test(Folio::kAnon)) {
      anon += nr;
      // One under migration is freed when the migration ends; one in the
      // swap cache when its slot goes or reclaim frees it.
      if (mappings == 0 && !f.test(Folio::kLocked) && !f.test(Folio::kSwapCache))
        err("unmapped anonymous folio " + std::to_string(p) + " not freed");
      if (f.test(Folio::kSwapCache)) {
        const auto it = swap_slot_of_.find(p);
        if (it == swap_slot_of_.end() || swap_->slot(it->second).cache != p)
          err("swap-cache folio " + std::to_string(p) + " is not its slot's");
      }
    } else {
      ++file;
      if (f.mapcount > 0) ++mapped;
      if (files_[f.mapping]->lookup(f.index()) != p)
        err("folio " + std::to_string(p) + " not in its page cache slot");
      // (One under writeback may be dirty again: written to after its PTEs
      // were cleaned.)
      const bool in_memcgs = f.memcg < memcg_dirty.size();
      if (f.test(Folio::kDirty) && !f.test(Folio::kShmem)) {
        ++dirty;
        if (in_memcgs) ++memcg_dirty[f.memcg];
      }
      if (writeback_.under_writeback(Pfn(p))) {
        ++writeback;
        if (in_memcgs) ++memcg_writeback[f.memcg];
        if (f.test(Folio::kShmem)) err("folio " + std::to_string(p) + " under writeback is shmem");
      }
    }
  }
  if (vmstat_[Vm::nr_dirty] != dirty) err("nr_dirty != dirty page-cache folios");
  if (vmstat_[Vm::nr_writeback] != writeback) err("nr_writeback != folios under writeback");
  if (static_cast<int64_t>(writeback_.tagged_pages()) != dirty)
    err("the inodes' dirty tags disagree with the dirty folios");
  for (size_t m = 0; m < memcg_dirty.size(); ++m) {
    if (memcg_dirty[m] != writeback_.memcg_dirty(static_cast<uint32_t>(m)) ||
        memcg_writeback[m] != writeback_.memcg_writeback(static_cast<uint32_t>(m)))
      err("memcg " + std::to_string(m) + "'s dirty or writeback count is off");
  }
  for (const auto& n : topo_.nodes()) {
    if (used[n.id.v] != folios_.used_pages(n.id))
      err("node " + std::to_string(n.id.v) + " used-page count is off");
    if (folios_.used_pages(n.id) > folios_.capacity_pages(n.id))
      err("node " + std::to_string(n.id.v) + " over capacity");
  }
  int64_t cap = 0;
  for (const auto& n : topo_.nodes()) cap += static_cast<int64_t>(folios_.capacity_pages(n.id));
  if (vmstat_[Vm::nr_free_pages] + anon + file + unowned != cap)
    err("free + used pages != capacity");
  if (vmstat_[Vm::nr_anon_pages] != anon) err("nr_anon_pages != anonymous folios");
  if (vmstat_[Vm::nr_file_pages] != file) err("nr_file_pages != page-cache folios");
  if (vmstat_[Vm::nr_mapped] != mapped) err("nr_mapped != mapped page-cache folios");
  if (vmstat_[Vm::nr_mlock] != mlocked) err("nr_mlock != mlocked folios");
  if (vmstat_[Vm::nr_page_table_pages] != pagetables)
    err("nr_page_table_pages != the page-table pages NR_PAGETABLE counts");
  if (vmstat_[Vm::nr_anon_transparent_hugepages] != thps)
    err("nr_anon_transparent_hugepages != PMD-mapped huge folios");
  for (auto& e : lru_.check_invariants()) err(std::move(e));
  for (uint64_t sl = 0; sl < swap_refs.size(); ++sl) {
    const SwapSlot& s = swap_->slot(static_cast<uint32_t>(sl));
    if (!s.used) continue;
    if (s.count != swap_refs[sl])
      err("swap slot " + std::to_string(sl) + " count " + std::to_string(s.count) + " but " +
          std::to_string(swap_refs[sl]) + " swap entries");
    if (s.count == 0 && s.cache == SwapSlot::kNoFolio)
      err("swap slot " + std::to_string(sl) + " is used by nothing");
  }
  int64_t cached = 0;
  for (const auto& f : files_) cached += static_cast<int64_t>(f->nrpages);
  if (cached != file) err("page-cache sizes disagree with folios");
  return errors;
}

}  // namespace mmsim::mm

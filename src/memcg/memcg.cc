// Memory cgroups (mm/memcontrol.c of 3.3/3.4, page_counter of v2), in our
// own words.
#include "memcg/memcg.h"

#include <algorithm>
#include <tuple>

#include "sim/check.h"

namespace mmsim::memcg {

Controller::Controller(const MemcgConfig& cfg, const cost::CostProfile& costs,
                       mm::MemoryManager& mm, reclaim::Vmscan& vmscan, size_t nr_cpus,
                       const std::vector<CgroupSpec>& cgroups)
    : cfg_(cfg), costs_(costs), mm_(mm), vmscan_(vmscan), stock_(nr_cpus) {
  MemCgroup root;
  root.path.assign(1, '/');
  groups_.push_back(root);
  check(cgroups.size() + 1 < mm::kMaxMemcgs, "more memcgs than a folio can name");
  for (const auto& spec : cgroups) {
    MemCgroup g;
    g.id = static_cast<uint32_t>(groups_.size());
    g.path = spec.path;
    g.limit_pages = spec.limit_bytes == UINT64_MAX ? UINT64_MAX : spec.limit_bytes / kPageSize;
    g.move_charge_at_immigrate = spec.move_charge_at_immigrate;
    // The parent is the longest existing prefix of the path.
    g.parent = 0;
    for (const auto& other : groups_) {
      const std::string& o = other.path;
      const bool below = o != "/" && path_is_below(spec.path, o);
      if (below) g.parent = static_cast<int>(other.id);
    }
    groups_.push_back(g);
    mm_.lru().set_parent(g.id, static_cast<uint32_t>(g.parent));
  }
  // The outside memcg, last: a root of its own here (its charges and stats
  // reach no reported group), the root's child on the LRU.
  MemCgroup outside;
  outside.path = "(outside the run)";  // for the checker's messages; find() skips it
  outside.id = static_cast<uint32_t>(groups_.size());
  groups_.push_back(outside);
  mm_.lru().set_parent(outside.id, 0);
}

std::optional<uint32_t> Controller::find(const std::string& path) const {
  for (const auto& g : cgroups()) {
    if (g.path == path) return g.id;
  }
  return std::nullopt;
}

MemCgroup Controller::file_view(uint32_t id) const {
  MemCgroup view = groups_[id];
  view.dirty = static_cast<int64_t>(mm_.writeback().memcg_dirty(id));
  view.writeback = static_cast<int64_t>(mm_.writeback().memcg_writeback(id));
  if (cfg_.hierarchy != Hierarchy::kV2) return view;
  for (const MemCgroup& g : groups_) {
    if (g.id == id || !is_ancestor(id, g.id)) continue;
    view.dirty += static_cast<int64_t>(mm_.writeback().memcg_dirty(g.id));
    view.writeback += static_cast<int64_t>(mm_.writeback().memcg_writeback(g.id));
    view.cache += g.cache;
    view.rss += g.rss;
    view.mapped_file += g.mapped_file;
    view.shmem += g.shmem;
    view.pagetables += g.pagetables;
    view.pgpgin += g.pgpgin;
    view.pgpgout += g.pgpgout;
    view.pgfault += g.pgfault;
    view.pgmajfault += g.pgmajfault;
    view.failcnt += g.failcnt;
  }
  return view;
}

std::vector<MemCgroup> Controller::files_view() const {
  std::vector<MemCgroup> view;
  view.reserve(groups_.size());
  for (const MemCgroup& g : cgroups()) view.push_back(file_view(g.id));
  return view;
}

bool Controller::is_ancestor(uint32_t ancestor, uint32_t memcg) const {
  bool found = false;
  for_each_ancestor(memcg, [&](const MemCgroup& g) { found |= g.id == ancestor; });
  return found;
}

// res_counter / page_counter_try_charge: charge each level from memcg up to
// the root; the first level that would go over its limit counts a failure
// (failcnt), the levels below it are given back, and the charge fails. Returns
// the level that failed, or -1.
int Controller::res_charge(uint32_t memcg, uint64_t pages) {
  MemCgroup* full = nullptr;
  for_each_ancestor(memcg, [&](MemCgroup& g) {
    if (!full && g.limit_pages != UINT64_MAX && g.usage + pages > g.limit_pages) full = &g;
  });
  if (full) {
    ++full->failcnt;
    return static_cast<int>(full->id);
  }
  for_each_ancestor(memcg, [&](MemCgroup& g) {
    g.usage += pages;
    g.max_usage = std::max(g.max_usage, g.usage);
  });
  return -1;
}

void Controller::res_uncharge(uint32_t memcg, uint64_t pages) {
  for_each_ancestor(memcg, [&](MemCgroup& g) { g.usage -= pages; });
}

void Controller::drain_stock(CpuId cpu) {
  Stock& s = stock_[cpu.v];
  if (s.pages) res_uncharge(s.memcg, s.pages);
  s.pages = 0;
}

mm::ChargeResult Controller::try_charge(uint32_t memcg, CpuId cpu, mm::Retry retry,
                                        uint64_t nr_pages) {
  mm::ChargeResult r;
  Stock& s = stock_[cpu.v];
  uint64_t levels = 0;
  for_each_ancestor(memcg, [&](const MemCgroup&) { ++levels; });
  // try_charge_memcg (mem_cgroup_do_charge in 3.x): a page from this CPU's
  // stock; else a batch, refilling the stock with the rest; when that fails,
  // exactly the one page, from then on. Every failed attempt counts in the
  // failing level's failcnt, so at the limit almost every page charged
  // counts once (the batch) and every SWAP_CLUSTER_MAX-th once more before
  // it reclaims.
  // A huge page is charged whole, past the stock (larger than the batch).
  uint64_t batch = std::max<uint64_t>(static_cast<uint64_t>(cfg_.charge_batch), nr_pages);
  bool drained = false;
  int retries = kMaxReclaimRetries;
  for (;;) {
    // consume_stock: a page from this CPU's precharge.
    if (nr_pages == 1 && s.memcg == memcg && s.pages > 0) {
      --s.pages;
      r.ns += costs_.memcg_percpu_add_ns;
      return r;
    }
    r.ns += static_cast<double>(levels) * costs_.lock_ns;  // a counter update per level
    const int over = res_charge(memcg, batch);
    if (over < 0) {
      if (batch > nr_pages) {  // refill_stock
        drain_stock(cpu);
        s.memcg = memcg;
        s.pages = static_cast<uint32_t>(batch - nr_pages);
      }
      return r;
    }
    if (batch > nr_pages) {  // never reclaim for the optional batch
      batch = nr_pages;
      continue;
    }
    // Without __GFP_DIRECT_RECLAIM (a THP fault's light mask) the charge
    // fails at once.
    if (retry == mm::Retry::kNoReclaim) break;
    // try_to_free_mem_cgroup_pages on the level over its limit: at least
    // SWAP_CLUSTER_MAX pages.
    const Reclaimed rc =
        reclaim(static_cast<uint32_t>(over), std::max(mm::kSwapClusterMax, nr_pages), cpu);
    r.ns += rc.ns;
    if (margin(static_cast<uint32_t>(over)) >= nr_pages) continue;
    if (!drained) {  // drain_all_stock: the precharges of every CPU go back
      for (size_t c = 0; c < stock_.size(); ++c) {
        if (stock_[c].pages && is_ancestor(static_cast<uint32_t>(over), stock_[c].memcg))
          drain_stock(CpuId(static_cast<uint16_t>(c)));
      }
      drained = true;
      continue;
    }
    if (retry == mm::Retry::kNoRetry) break;  // __GFP_NORETRY: no more rounds
    // Reclaim that made progress retries at once; else up to
    // MAX_RECLAIM_RETRIES more times, then the charge fails (memcg OOM).
    if (rc.pages == 0 && retries-- == 0) break;
  }
  r.ok = false;
  return r;
}

uint64_t Controller::margin(uint32_t memcg) const {
  // mem_cgroup_margin: room left under the limit of memcg and its ancestors.
  uint64_t room = UINT64_MAX;
  for_each_ancestor(memcg, [&](const MemCgroup& g) {
    if (g.limit_pages == UINT64_MAX) return;
    room = std::min(room, g.usage >= g.limit_pages ? 0 : g.limit_pages - g.usage);
  });
  return room;
}

Controller::Reclaimed Controller::reclaim(uint32_t memcg, uint64_t pages, CpuId cpu) {
  // try_to_free_mem_cgroup_pages: the memcg's and its descendants' lruvecs
  // on every node, through the same reclaim as the machine's.
  const auto p = vmscan_.try_to_free_mem_cgroup_pages(memcg, pages, cpu);
  groups_[memcg].reclaimed += p.pages;
  return Reclaimed{p.pages, p.ns};
}

mm::ChargeResult Controller::charge(uint32_t memcg, Pfn pfn, CpuId cpu, mm::Retry retry) {
  if (!enabled()) return {};
  if (mm_.folios().folio(pfn).test(mm::Folio::kKernel) && !cfg_.kmem_pagetables) return {};
  const uint32_t pages = mm_.folios().folio(pfn).nr_pages();
  const auto nr = static_cast<int64_t>(pages);
  mm::ChargeResult r = try_charge(memcg, cpu, retry, pages);
  if (!r.ok) return r;
  // (Looked up after the reclaim, which may have grown the folio table.)
  mm::Folio& folio = mm_.folios().folio(pfn);
  // commit_charge: lock pc, set mem_cgroup and USED, count, unlock.
  r.ns += costs_.memcg_bitlock_ns + pc_lookup_ns(pfn, folio) + 2 * costs_.memcg_percpu_add_ns;
  folio.memcg = memcg;
  MemCgroup& g = groups_[memcg];
  if (folio.test(mm::Folio::kKernel)) {
    // Kernel memory (a page table, __GFP_ACCOUNT): in usage, not a page-in.
    if (mm_.pgtable_counted(folio)) g.pagetables += nr;
    return r;
  }
  if (folio.test(mm::Folio::kAnon)) {
    g.rss += nr;
  } else {
    g.cache += nr;
    if (folio.test(mm::Folio::kShmem)) g.shmem += nr;
  }
  ++g.pgpgin;  // one charging event, whatever its size
  return r;
}

void Controller::uncharge(Pfn, mm::Folio& folio) {
  if (!enabled()) return;
  MemCgroup& g = groups_[folio.memcg];
  const auto nr = static_cast<int64_t>(folio.nr_pages());
  if (folio.test(mm::Folio::kKernel)) {
    if (mm_.pgtable_counted(folio)) g.pagetables -= nr;
    res_uncharge(folio.memcg, folio.nr_pages());
    folio.memcg = 0;
    return;
  }
  if (folio.test(mm::Folio::kAnon)) {
    g.rss -= nr;
  } else {
    g.cache -= nr;
    if (folio.test(mm::Folio::kShmem)) g.shmem -= nr;
    if (folio.mapcount > 0) --g.mapped_file;
  }
  ++g.pgpgout;
  res_uncharge(folio.memcg, folio.nr_pages());
  folio.memcg = 0;
}

void Controller::count_fault(uint32_t memcg, bool major) {
  if (!enabled()) return;
  ++groups_[memcg].pgfault;
  if (major) ++groups_[memcg].pgmajfault;
}

void Controller::migrate(Pfn, Pfn to, mm::Folio& folio) {
  if (!enabled()) return;
  if (cfg_.migrate_charge == MigrateCharge::kRecharge) {
    // The new folio is force-charged (over the limit if need be) and counted
    // as a page-in; the old one, freed as the migration ends, is uncharged
    // and counted as a page-out.
    MemCgroup& g = groups_[folio.memcg];
    const uint64_t nr = folio.nr_pages();
    for_each_ancestor(folio.memcg, [nr](MemCgroup& a) {
      a.usage += nr;
      a.max_usage = std::max(a.max_usage, a.usage);
    });
    ++g.pgpgin;  // one event each, whatever the size
    res_uncharge(folio.memcg, nr);
    ++g.pgpgout;
  }
  // The charge went with the folio's copy, which mm puts on the LRU.
}

void Controller::flush_stats() {
  flushed_.resize(groups_.size());
  for (const MemCgroup& g : groups_) flushed_[g.id] = wb_state(g.id);
}

std::optional<mm::WbStats> Controller::wb_stats(uint32_t memcg) const {
  // Only cgroup v2 has cgroup writeback, and so a memcg dirty domain; the
  // root's is the global one.
  if (!enabled() || memcg == 0 || cfg_.hierarchy != Hierarchy::kV2) return std::nullopt;
  mm::WbStats s = cfg_.wb_stats_ratelimited
                      ? (memcg < flushed_.size() ? flushed_[memcg] : mm::WbStats{})
                      : wb_state(memcg);
  // The least room under the limits of the memcg and its ancestors below
  // the root (memory.high is not modelled): page counters, always exact.
  s.headroom = UINT64_MAX;
  for_each_ancestor(memcg, [&](const MemCgroup& g) {
    if (g.parent < 0) return;
    const uint64_t ceiling = g.limit_pages;
    s.headroom = std::min(s.headroom, ceiling - std::min(ceiling, g.usage));
  });
  return s;
}

mm::WbStats Controller::wb_state(uint32_t memcg) const {
  mm::WbStats s;
  const mm::LruSet& lru = mm_.lru();
  for (const auto& n : mm_.topology().nodes()) {
    s.filepages += lru.hier_size(memcg, n.id, mm::LruList::kInactiveFile) +
                   lru.hier_size(memcg, n.id, mm::LruList::kActiveFile);
  }
  for (const MemCgroup& g : groups_) {
    if (!is_ancestor(memcg, g.id)) continue;
    s.dirty += mm_.writeback().memcg_dirty(g.id);
    s.writeback += mm_.writeback().memcg_writeback(g.id);
  }
  return s;
}

double Controller::pc_lookup_ns(Pfn pfn, const mm::Folio& folio) {
  cost::CacheModel& cache = mm_.cache();
  const uint32_t bytes = cache.page_cgroup_bytes();
  const double miss =
      bytes == 0 ? cache.meta_miss_ns(cost::Meta::kStructPage, 0, pfn.v, cost::kStructPageBytes,
                                      folio.node)
                 : cache.meta_miss_ns(cost::Meta::kPageCgroup, 0, pfn.v, bytes, folio.node);
  return costs_.memcg_pc_lookup_ns + miss;
}

double Controller::file_rmap(Pfn pfn, mm::Folio& folio, bool add, bool transition) {
  MemCgroup& g = groups_[folio.memcg];
  double cost_ns = 0;
  const double rcu = costs_.memcg_rcu_ns;
  // The FILE_MAPPED update itself: pc lookup, then the per-CPU counter.
  auto stat_update = [&]() {
    cost_ns += pc_lookup_ns(pfn, folio) + costs_.memcg_percpu_add_ns;
    g.mapped_file += add ? 1 : -1;
  };
  // The slow path of the 3.4 bracket: pc->mem_cgroup, then move_lock if its
  // memcg is being moved from.
  auto slow = [&]() {
    cost_ns += pc_lookup_ns(pfn, folio) + costs_.memcg_atomic_read_ns;
    if (g.moving_account > 0) {
      cost_ns += costs_.memcg_spinlock_ns;
      ++g.move_lock_slowpath;
    }
  };
  switch (cfg_.stat_protocol) {
    case StatProtocol::kNone:
      return cost_ns;
    case StatProtocol::kPcgFlags:
      // 3.3: nothing unless the page becomes mapped or unmapped.
      if (!transition) return cost_ns;
      cost_ns += rcu + pc_lookup_ns(pfn, folio);
      if (g.moving_account > 0) {  // per-CPU ON_MOVE: take the page's MOVE_LOCK bit
        cost_ns += costs_.memcg_bitlock_ns;
        ++g.move_lock_slowpath;
      }
      cost_ns += costs_.memcg_bitlock_ns / 2;  // set or clear PCG_FILE_MAPPED (an atomic bitop)
      cost_ns += costs_.memcg_percpu_add_ns;
      g.mapped_file += add ? 1 : -1;
      return cost_ns;
    case StatProtocol::kBeginEnd:
      // 3.4: begin/end around every add and every non-anon remove.
      cost_ns += rcu + costs_.memcg_flag_read_ns;
      if (memcg_moving_ > 0) slow();
      if (transition) stat_update();
      return cost_ns;
    case StatProtocol::kBeginEndNoGlobal:
      // Without the global flag every bracket looks at the page's memcg.
      cost_ns += rcu;
      slow();
      if (transition) stat_update();
      return cost_ns;
  }
  return cost_ns;
}

double Controller::begin_move(mm::Mm& mm, uint32_t to) {
  const uint32_t from = mm.memcg;
  MemCgroup& dst = groups_[to];
  move_pages_.clear();
  double cost = 0;
  if (!enabled() || cfg_.hierarchy == Hierarchy::kV2 || from == to ||
      dst.move_charge_at_immigrate == 0) {
    return cost;
  }
  mm_.lru_add_drain_all();  // mem_cgroup_move_charge: every page on its LRU first
  // mem_cgroup_count_precharge: walk the mm's page tables for movable pages.
  for (const auto& vp : mm.vmas()) {
    const mm::Vma& vma = *vp;
    const bool anon_ok = dst.move_charge_at_immigrate & 1;
    const bool file_ok = dst.move_charge_at_immigrate & 2;
    if (vma.file && file_ok) {
      // Bit 2: the file's cached pages in the mapped range, mapped or not.
      for (uint64_t i = vma.pgoff; i < vma.pgoff + vma.pages() && i < vma.file->size_pages; ++i) {
        const uint32_t p = vma.file->lookup(i);
        cost += costs_.pagecache_lookup_ns;
        if (p == mm::AddressSpace::kNone) continue;
        if (mm_.folios().folio(Pfn(p)).memcg == from) move_pages_.push_back(p);
      }
    }
    if (anon_ok) {
      // Bit 1: anonymous pages mapped only by this mm.
      mm.pgtable().for_each(vma.start, vma.end, [&](Vpn, mm::PteTable& t, uint32_t i) {
        const mm::Pte pte = t.get(i);
        cost += costs_.pte_protect_ns;
        if (!pte.maps_folio()) return;
        const mm::Folio& f = mm_.folios().folio(Pfn(pte.pfn));
        // SIMPLIFICATION: huge pages are not moved (a PTE-mapped THP's are
        // not in the kernel either; a PMD-mapped one would be, whole).
        if (f.large() || f.test(mm::Folio::kTail)) return;
        if (f.test(mm::Folio::kAnon) && f.mapcount == 1 && f.memcg == from)
          move_pages_.push_back(pte.pfn);
      });
    }
  }
  std::sort(move_pages_.begin(), move_pages_.end());
  move_pages_.erase(std::unique(move_pages_.begin(), move_pages_.end()), move_pages_.end());
  // start_move: raise the flags, then wait for open brackets to close.
  ++memcg_moving_;
  ++groups_[from].moving_account;
  cost += costs_.synchronize_rcu_ns;
  // mem_cgroup_move_charge: each page isolated, its account moved under
  // from's move_lock, put back.
  const double per_page = 2 * costs_.lock_ns + costs_.memcg_bitlock_ns + costs_.memcg_spinlock_ns +
                          costs_.memcg_pc_lookup_ns + 4 * costs_.memcg_percpu_add_ns;
  cost += static_cast<double>(move_pages_.size()) * per_page;
  return cost;
}

void Controller::move_account(mm::Folio& folio, Pfn pfn, uint32_t from, uint32_t to) {
  MemCgroup& f = groups_[from];
  MemCgroup& t = groups_[to];
  const bool anon = folio.test(mm::Folio::kAnon);
  if (anon) {
    --f.rss;
    ++t.rss;
  } else {
    --f.cache;
    ++t.cache;
    if (folio.test(mm::Folio::kShmem)) {
      --f.shmem;
      ++t.shmem;
    }
    if (folio.mapcount > 0) {
      --f.mapped_file;
      ++t.mapped_file;
    }
  }
  // Its dirty or writeback state moves with it.
  mm_.writeback().move_account(folio, pfn, from, to);
  // Isolated from from's LRU, put back on to's (mem_cgroup_move_charge_pte_range).
  if (folio.test(mm::Folio::kLru)) {
    mm_.lru().relist(pfn, [&](mm::Folio& f) { f.memcg = to; });
  }
  res_uncharge(from, 1);
  // The precharge was taken at attach time in the kernel; the destination may
  // go over its limit here, as a move does not reclaim (SIMPLIFICATION).
  for_each_ancestor(to, [](MemCgroup& g) {
    g.usage += 1;
    g.max_usage = std::max(g.max_usage, g.usage);
  });
  folio.memcg = to;
}

void Controller::finish_move(mm::Mm& mm, uint32_t to) {
  const uint32_t from = mm.memcg;
  for (uint32_t p : move_pages_) {
    mm::Folio& f = mm_.folios().folio(Pfn(p));
    if (f.test(mm::Folio::kInUse) && f.memcg == from) move_account(f, Pfn(p), from, to);
  }
  if (!move_pages_.empty() ||
      (enabled() && cfg_.hierarchy == Hierarchy::kV1 && groups_[to].move_charge_at_immigrate)) {
    if (memcg_moving_ > 0 && groups_[from].moving_account > 0) {
      --memcg_moving_;
      --groups_[from].moving_account;
    }
  }
  move_pages_.clear();
  mm.memcg = to;
}

std::vector<std::string> Controller::check_invariants() const {
  std::vector<std::string> errors;
  if (!enabled()) return errors;
  std::vector<int64_t> cache(groups_.size(), 0), rss(groups_.size(), 0), mapped(groups_.size(), 0),
      shmem(groups_.size(), 0), pagetables(groups_.size(), 0);
  std::vector<uint64_t> charged(groups_.size(), 0);
  // (mm's checker verifies that each folio is on its memcg's LRU.)
  const auto& folios = mm_.folios();
  for (uint32_t p = 0; p < folios.table_size(); ++p) {
    const mm::Folio& f = folios.folio(Pfn(p));
    if (f.test(mm::Folio::kInUse) && f.is_pgtable()) {
      if (f.memcg >= groups_.size()) {
        errors.push_back("page table charged to an unknown memcg");
        continue;
      }
      if (f.memcg == 0) continue;  // the root's are not charged
      if (mm_.pgtable_counted(f)) pagetables[f.memcg] += f.nr_pages();
      for_each_ancestor(f.memcg, [&](const MemCgroup& g) { charged[g.id] += f.nr_pages(); });
      continue;
    }
    // A migration's new folio is charged only when it takes the old one's place.
    if (!f.test(mm::Folio::kInUse) || !f.test(mm::Folio::kUptodate) || f.test(mm::Folio::kTail))
      continue;
    if (f.memcg >= groups_.size()) {
      errors.push_back("folio charged to an unknown memcg");
      continue;
    }
    const auto nr = static_cast<int64_t>(f.nr_pages());
    if (f.test(mm::Folio::kAnon)) {
      rss[f.memcg] += nr;
    } else {
      cache[f.memcg] += nr;
      if (f.test(mm::Folio::kShmem)) shmem[f.memcg] += nr;
      if (f.mapcount > 0) ++mapped[f.memcg];
    }
    for_each_ancestor(f.memcg, [&](const MemCgroup& g) { charged[g.id] += f.nr_pages(); });
  }
  for (const auto& s : stock_) {
    if (s.pages) for_each_ancestor(s.memcg, [&](const MemCgroup& g) { charged[g.id] += s.pages; });
  }
  for (const auto& g : groups_) {
    if (g.cache != cache[g.id])
      errors.push_back("memcg " + g.path + ": cache stat disagrees with its folios");
    if (g.shmem != shmem[g.id])
      errors.push_back("memcg " + g.path + ": shmem stat disagrees with its folios");
    if (g.rss != rss[g.id])
      errors.push_back("memcg " + g.path + ": rss stat disagrees with its folios");
    if (g.pagetables != pagetables[g.id])
      errors.push_back("memcg " + g.path + ": pagetables stat disagrees with its page tables");
    if (g.mapped_file != mapped[g.id])
      errors.push_back("memcg " + g.path + ": mapped_file disagrees with its mapped folios");
    if (g.usage != charged[g.id])
      errors.push_back("memcg " + g.path + ": usage " + std::to_string(g.usage) + " but " +
                       std::to_string(charged[g.id]) + " pages charged");
  }
  return errors;
}

}  // namespace mmsim::memcg

// Memory cgroups, restated from spec part B in our own words.
#include "memcg/memcg.h"

#include <algorithm>

#include "sim/check.h"

namespace mmsim::memcg {

const char* protocol_name(StatProtocol p) {
  switch (p) {
    case StatProtocol::kNone: return "none";
    case StatProtocol::kPcgFlags: return "pcg-flags";
    case StatProtocol::kBeginEnd: return "begin-end";
    case StatProtocol::kBeginEndNoGlobal: return "begin-end-no-global";
  }
  return "?";
}

std::optional<StatProtocol> parse_protocol(const std::string& name) {
  for (auto p : {StatProtocol::kNone, StatProtocol::kPcgFlags, StatProtocol::kBeginEnd,
                 StatProtocol::kBeginEndNoGlobal}) {
    if (name == protocol_name(p)) return p;
  }
  return std::nullopt;
}

uint32_t page_cgroup_bytes(StatProtocol p, int major, int minor) {
  if (p == StatProtocol::kNone) return 0;  // cgroup_disable=memory: no page_cgroup
  const auto at_least = [&](int ma, int mi) { return major > ma || (major == ma && minor >= mi); };
  if (at_least(3, 19)) return 8;   // page->mem_cgroup in struct page's padding
  if (at_least(3, 3)) return 16;   // {flags, mem_cgroup}
  return 40;                       // + page back-pointer and an LRU list_head
}

Controller::Controller(const MemcgConfig& cfg, const cost::CostProfile& costs,
                       mm::MemoryManager& mm, size_t nr_cpus,
                       const std::vector<CgroupSpec>& cgroups)
    : cfg_(cfg), costs_(costs), mm_(mm), stock_(nr_cpus) {
  MemCgroup root;
  root.path.assign(1, '/');
  groups_.push_back(root);
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
      const bool below = o != "/" && spec.path.size() > o.size() &&
                         spec.path.compare(0, o.size(), o) == 0 && spec.path[o.size()] == '/';
      if (below) g.parent = static_cast<int>(other.id);
    }
    groups_.push_back(g);
  }
}

std::optional<uint32_t> Controller::find(const std::string& path) const {
  for (const auto& g : groups_) {
    if (g.path == path) return g.id;
  }
  return std::nullopt;
}

// res_counter: charge every level up to the root; fail if any level is full.
bool Controller::res_charge(uint32_t memcg, uint64_t pages) {
  for (int g = static_cast<int>(memcg); g >= 0; g = groups_[g].parent) {
    if (groups_[g].limit_pages != UINT64_MAX && groups_[g].usage + pages > groups_[g].limit_pages) {
      ++groups_[g].failcnt;
      return false;
    }
  }
  for (int g = static_cast<int>(memcg); g >= 0; g = groups_[g].parent) {
    groups_[g].usage += pages;
    groups_[g].max_usage = std::max(groups_[g].max_usage, groups_[g].usage);
  }
  return true;
}

void Controller::res_uncharge(uint32_t memcg, uint64_t pages) {
  for (int g = static_cast<int>(memcg); g >= 0; g = groups_[g].parent) groups_[g].usage -= pages;
}

void Controller::drain_stock(CpuId cpu) {
  Stock& s = stock_[cpu.v];
  if (s.pages) res_uncharge(s.memcg, s.pages);
  s.pages = 0;
}

bool Controller::try_charge(uint32_t memcg, CpuId cpu, double& cost_ns) {
  Stock& s = stock_[cpu.v];
  // consume_stock: a page from this CPU's precharge.
  if (s.memcg == memcg && s.pages > 0) {
    --s.pages;
    cost_ns += costs_.memcg_percpu_add_ns;
    return true;
  }
  // Charge a batch, refilling the stock with the rest; under pressure retry
  // with one page, then reclaim (up to 5 retries, as mem_cgroup_do_charge).
  const uint64_t levels = [&] {
    uint64_t n = 0;
    for (int g = static_cast<int>(memcg); g >= 0; g = groups_[g].parent) ++n;
    return n;
  }();
  for (int attempt = 0; attempt < 6; ++attempt) {
    cost_ns += static_cast<double>(levels) * costs_.lock_ns;  // res_counter spinlock per level
    if (res_charge(memcg, cfg_.charge_batch)) {
      drain_stock(cpu);
      s.memcg = memcg;
      s.pages = cfg_.charge_batch - 1;
      return true;
    }
    if (res_charge(memcg, 1)) return true;
    if (attempt == 5 || !reclaim(memcg, cfg_.charge_batch, cpu, cost_ns)) break;
  }
  return false;
}

bool Controller::reclaim(uint32_t memcg, uint64_t pages, CpuId cpu, double& cost_ns) {
  // Reclaim from the over-limit memcg and its descendants (hierarchical
  // reclaim, SIMPLIFICATION: one FIFO list of page-cache folios per memcg,
  // oldest first; anonymous memory has no swap to go to).
  uint64_t freed = 0;
  for (auto& g : groups_) {
    bool below = false;
    for (int a = static_cast<int>(g.id); a >= 0; a = groups_[a].parent) below |= (a == static_cast<int>(memcg));
    if (!below) continue;
    size_t scanned = 0;
    const size_t budget = g.lru.size();
    while (freed < pages && scanned < budget && !g.lru.empty()) {
      const uint32_t p = g.lru.front();
      g.lru.pop_front();
      ++scanned;
      mm_.vmstat().add(mm::Vm::pgscan_direct);
      mm::Folio& f = mm_.folios().folio(Pfn(p));
      if (!f.test(mm::Folio::kInUse) || f.test(mm::Folio::kAnon) || f.memcg != g.id) continue;
      if (mm_.evict_folio(Pfn(p), cpu, cost_ns)) {
        ++freed;
        ++g.reclaimed;
        mm_.vmstat().add(mm::Vm::pgsteal_direct);
      } else {
        g.lru.push_back(p);  // rotate what cannot go now
      }
    }
  }
  return freed > 0;
}

bool Controller::charge(uint32_t memcg, Pfn pfn, mm::Folio& folio, CpuId cpu, double& cost_ns) {
  if (!enabled()) return true;
  if (!try_charge(memcg, cpu, cost_ns)) return false;
  // commit_charge: lock pc, set mem_cgroup and USED, count, unlock.
  cost_ns += costs_.memcg_bitlock_ns + costs_.memcg_pc_lookup_ns + 2 * costs_.memcg_percpu_add_ns;
  folio.memcg = memcg;
  MemCgroup& g = groups_[memcg];
  if (folio.test(mm::Folio::kAnon)) {
    ++g.rss;
  } else {
    ++g.cache;
    g.lru.push_back(pfn.v);
  }
  ++g.pgpgin;
  return true;
}

void Controller::uncharge(Pfn, mm::Folio& folio) {
  if (!enabled()) return;
  MemCgroup& g = groups_[folio.memcg];
  if (folio.test(mm::Folio::kAnon)) {
    --g.rss;
  } else {
    --g.cache;
    if (folio.mapcount > 0) --g.mapped_file;
  }
  ++g.pgpgout;
  res_uncharge(folio.memcg, 1);
  folio.memcg = 0;
}

void Controller::count_fault(uint32_t memcg, bool major) {
  if (!enabled()) return;
  ++groups_[memcg].pgfault;
  if (major) ++groups_[memcg].pgmajfault;
}

void Controller::file_rmap(mm::Folio& folio, bool add, bool transition, double& cost_ns) {
  MemCgroup& g = groups_[folio.memcg];
  const double rcu = costs_.memcg_rcu_ns;
  // The FILE_MAPPED update itself: pc lookup, then the per-CPU counter.
  auto stat_update = [&]() {
    cost_ns += costs_.memcg_pc_lookup_ns + costs_.memcg_percpu_add_ns;
    g.mapped_file += add ? 1 : -1;
  };
  // The slow path of the 3.4 bracket: pc->mem_cgroup, then move_lock if its
  // memcg is being moved from.
  auto slow = [&]() {
    cost_ns += costs_.memcg_pc_lookup_ns + costs_.memcg_atomic_read_ns;
    if (g.moving_account > 0) {
      cost_ns += costs_.memcg_spinlock_ns;
      ++g.move_lock_slowpath;
    }
  };
  switch (cfg_.protocol) {
    case StatProtocol::kNone:
      return;
    case StatProtocol::kPcgFlags:
      // 3.3: nothing unless the page becomes mapped or unmapped.
      if (!transition) return;
      cost_ns += rcu + costs_.memcg_pc_lookup_ns;
      if (g.moving_account > 0) {  // per-CPU ON_MOVE: take the page's MOVE_LOCK bit
        cost_ns += costs_.memcg_bitlock_ns;
        ++g.move_lock_slowpath;
      }
      cost_ns += costs_.memcg_bitlock_ns / 2;  // set or clear PCG_FILE_MAPPED (an atomic bitop)
      cost_ns += costs_.memcg_percpu_add_ns;
      g.mapped_file += add ? 1 : -1;
      return;
    case StatProtocol::kBeginEnd:
      // 3.4: begin/end around every add and every non-anon remove.
      cost_ns += rcu + costs_.memcg_flag_read_ns;
      if (memcg_moving_ > 0) slow();
      if (transition) stat_update();
      return;
    case StatProtocol::kBeginEndNoGlobal:
      // Without the global flag every bracket looks at the page's memcg.
      cost_ns += rcu;
      slow();
      if (transition) stat_update();
      return;
  }
}

double Controller::begin_move(mm::Mm& mm, uint32_t to) {
  const uint32_t from = mm.memcg;
  MemCgroup& dst = groups_[to];
  move_pages_.clear();
  double cost = 0;
  if (!enabled() || from == to || dst.move_charge_at_immigrate == 0) return cost;
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
        if (f.test(mm::Folio::kAnon) && f.mapcount == 1 && f.memcg == from) move_pages_.push_back(pte.pfn);
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
    t.lru.push_back(pfn.v);
    if (folio.mapcount > 0) {
      --f.mapped_file;
      ++t.mapped_file;
    }
  }
  res_uncharge(from, 1);
  // The precharge was taken at attach time in the kernel; the destination may
  // go over its limit here, as a move does not reclaim (SIMPLIFICATION).
  for (int g = static_cast<int>(to); g >= 0; g = groups_[g].parent) {
    groups_[g].usage += 1;
    groups_[g].max_usage = std::max(groups_[g].max_usage, groups_[g].usage);
  }
  folio.memcg = to;
}

void Controller::finish_move(mm::Mm& mm, uint32_t to) {
  const uint32_t from = mm.memcg;
  for (uint32_t p : move_pages_) {
    mm::Folio& f = mm_.folios().folio(Pfn(p));
    if (f.test(mm::Folio::kInUse) && f.memcg == from) move_account(f, Pfn(p), from, to);
  }
  if (!move_pages_.empty() || (enabled() && groups_[to].move_charge_at_immigrate)) {
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
  std::vector<int64_t> cache(groups_.size(), 0), rss(groups_.size(), 0), mapped(groups_.size(), 0);
  std::vector<uint64_t> charged(groups_.size(), 0);
  const auto& folios = mm_.folios();
  for (uint32_t p = 0; p < folios.table_size(); ++p) {
    const mm::Folio& f = folios.folio(Pfn(p));
    if (!f.test(mm::Folio::kInUse)) continue;
    if (f.memcg >= groups_.size()) {
      errors.push_back("folio charged to an unknown memcg");
      continue;
    }
    if (f.test(mm::Folio::kAnon)) {
      ++rss[f.memcg];
    } else {
      ++cache[f.memcg];
      if (f.mapcount > 0) ++mapped[f.memcg];
    }
    for (int g = static_cast<int>(f.memcg); g >= 0; g = groups_[g].parent) ++charged[g];
  }
  for (const auto& s : stock_) {
    for (int g = static_cast<int>(s.memcg); g >= 0 && s.pages; g = groups_[g].parent) charged[g] += s.pages;
  }
  for (const auto& g : groups_) {
    if (g.cache != cache[g.id]) errors.push_back("memcg " + g.path + ": cache stat disagrees with its folios");
    if (g.rss != rss[g.id]) errors.push_back("memcg " + g.path + ": rss stat disagrees with its folios");
    if (g.mapped_file != mapped[g.id])
      errors.push_back("memcg " + g.path + ": mapped_file disagrees with its mapped folios");
    if (g.usage != charged[g.id])
      errors.push_back("memcg " + g.path + ": usage " + std::to_string(g.usage) + " but " +
                       std::to_string(charged[g.id]) + " pages charged");
  }
  return errors;
}

}  // namespace mmsim::memcg

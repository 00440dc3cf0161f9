#include "migrate/migrator.h"

#include "sim/check.h"

namespace mmsim::migrate {

Migrator::Migrator(sim::EventQueue& queue, mm::MemoryManager& mm, const topo::Topology& topo,
                   const cost::CostProfile& costs, MigrateConfig config, Executor& executor)
    : queue_(queue), mm_(mm), topo_(topo), costs_(costs), config_(config), executor_(executor) {}

uint32_t Migrator::start(Pfn folio, NodeId target, uint32_t pid, CpuId cpu, Tick at) {
  const uint32_t id = next_id_++;
  Migration& m = migrations_[id];
  m.id = id;
  m.folio = folio;
  m.target = target;
  m.pid = pid;
  m.cpu = cpu;
  m.cpu_node = topo_.cpu_to_node(cpu);
  m.begin = at;
  if (!spare_.empty()) {
    // A finished migration's vectors, with their capacity: no allocation.
    m.waiters = std::move(spare_.back().waiters);
    m.unmap_offset = std::move(spare_.back().unmap_offset);
    spare_.pop_back();
  }
  by_folio_[folio.v] = id;
  // isolate_lru_page: off its LRU list for the migration's time; locked.
  mm_.lru().del(folio);
  mm_.folios().folio(folio).flags |= mm::Folio::kLocked;
  // The PTEs stay as they are until migrate_pages has set up and locked the
  // folio: a NUMA hinting PTE stays PROT_NONE, and another task's hinting
  // fault on it meanwhile finds the folio isolated and gives up.
  pass_after(m, at, costs_.migrate_isolate_ns);
  return id;
}

void Migrator::pass_after(Migration& m, Tick at, double ns) {
  // Each pass allocates its destination before the unmap.
  ns += costs_.page_alloc_ns;
  if (ns > 0) {
    queue_.schedule(at + to_tick(ns), this, kUnmap, m.id, 0, 0);
  } else {
    start_pass(m, at);
  }
}

bool Migrator::task_migrating(uint32_t pid) const {
  for (const auto& [id, m] : migrations_) {
    if (m.pid == pid) return true;
  }
  return false;
}

void Migrator::start_pass(Migration& m, Tick at) {
  ++m.pass;
  m.pass_start = at;
  m.waiters.clear();
  // unmap_and_move takes the destination first (alloc_misplaced_dst_folio:
  // this node only, no reclaim, the fast path's low watermark; a THP's 512
  // pages at once, GFP_TRANSHUGE_LIGHT). None is ENOMEM, before any unmap.
  // (The allocation may grow the folio table: no reference across it.)
  const uint8_t order = mm_.folios().folio(m.folio).order();
  const std::optional<Pfn> fresh = mm_.folios().alloc_on(m.target, mm::Mark::kLow, order);
  if (!fresh) {
    m.nomem = true;
    m.success = false;
    m.mappings = 0;
    m.check = at;
    queue_.schedule(at, this, kEnd, m.id, 0, 0);
    return;
  }
  m.new_folio = *fresh;
  const auto step = mm_.migrate_unmap(m.folio, m.cpu);
  // The walk replaces one PTE after another: a task running ahead is caught
  // only if it reaches the page after its own PTE was replaced.
  m.unmap_offset.clear();
  for (const auto& u : step.unmapped) {
    m.unmap_offset.emplace_back(u.mm->id(), u.offset_ns);
    if (u.mm->runahead_tasks) executor_.on_unmapped(m, *u.mm, u.vpn, u.pages, u.offset_ns, at);
  }
  m.mappings = step.mappings;
  m.check = at + to_tick(step.cost_ns);
  queue_.schedule(m.check, this, kCheck, m.id, 0, 0);
}

void Migrator::check_pass(Migration& m) {
  // The reference count must be the expected one: up to 4.20 every task
  // sleeping on the migration entry holds a reference.
  bool pinned = false;
  if (config_.waiter_pins_page) {
    for (const Waiter& w : m.waiters) {
      if (w.since > m.check) continue;
      if (executor_.holds_reference(m, w)) pinned = true;
    }
  }
  const double remap = static_cast<double>(m.mappings) * costs_.pte_set_ns;
  Tick end = m.check + to_tick(remap + costs_.migrate_folio_ns);
  // A reference count that does not match gives the destination back
  // (EAGAIN); else the copy.
  const mm::Folio& old = mm_.folios().folio(m.folio);
  m.success = !pinned;
  if (pinned) {
    mm_.folios().free(m.new_folio);
  } else {
    end += to_tick(static_cast<double>(old.nr_pages()) *
                   mm_.cache().page_copy_ns(m.cpu_node, old.node, m.target));
  }
  queue_.schedule(end, this, kEnd, m.id, static_cast<uint64_t>(pinned), 0);
}

void Migrator::end_pass(Migration& m) {
  const Tick now = queue_.now();
  mm::Folio& src = mm_.folios().folio(m.folio);
  const auto nr = static_cast<int64_t>(src.nr_pages());
  // migrate_pages counts a THP's pages and, on its own path (5.13+), the THP.
  const bool thp_stats = src.large() && !config_.thp_legacy;
  auto count_migrated = [&] {
    mm_.vmstat().add(mm::Vm::pgmigrate_success, nr);
    mm_.vmstat().add(mm::Vm::numa_pages_migrated, nr);
    if (thp_stats) mm_.vmstat().add(mm::Vm::thp_migration_success);
  };
  if (src.test(mm::Folio::kAnon) && mm_.folio_mapcount(m.folio) == 0) {
    // Every mapping of the isolated anonymous folio went meanwhile (munmap,
    // MADV_DONTNEED, exit): migrate_folio_unmap finds it "freed from under
    // us" and the kernel counts it as migrated. Nothing is copied; the new
    // folio goes back unused.
    if (m.success) mm_.folios().free(m.new_folio);
    m.success = true;
    m.new_folio = m.folio;
    mm_.free_anon_folio(m.folio);
    count_migrated();
    finish(m, now, false);
    return;
  }
  if (m.success) {
    // A move from a slow tier to the top one is a promotion (5.18+).
    const NodeId from = src.node;
    const mm::MemoryTiers& tiers = mm_.tiers();
    if (mm_.config().promote_stats && !tiers.toptier(from) && tiers.toptier(m.target))
      mm_.vmstat().add(mm::Vm::pgpromote_success, nr);
    mm_.migrate_remap(m.folio, m.new_folio);
    mm_.migrate_folio_finish(m.folio, m.new_folio, m.cpu, true);  // mapped: see above
    count_migrated();
  } else {
    mm_.migrate_remap(m.folio, m.folio);
  }
  // A refcount that did not match (EAGAIN) is tried again, up to the passes;
  // no destination page (ENOMEM) ends it. migrate_misplaced_transhuge_page
  // (up to 5.12) tries once.
  const int64_t passes = src.large() && config_.thp_legacy ? 1 : config_.passes;
  const bool retry = !m.success && !m.nomem && m.pass < passes;
  finish(m, now, retry);
}

void Migrator::finish(Migration& m, Tick now, bool retry) {
  // Everyone who reached the migration entry goes on.
  for (const Waiter& w : m.waiters) executor_.release(m, w, now, retry);
  m.waiters.clear();
  if (retry) {
    pass_after(m, now, 0);
    return;
  }
  const Pfn page = m.success ? m.new_folio : m.folio;
  mm::Folio& f = mm_.folios().folio(page);
  f.flags &= static_cast<uint16_t>(~mm::Folio::kLocked);
  if (!m.success) {
    // putback_movable_pages (folio_putback_lru): back through the CPU's
    // lru_add batch, where it waits until that batch drains.
    mm_.folio_add_lru(m.folio, m.cpu);
    // migrate_misplaced_transhuge_page counts only a failed allocation here
    // (its refusals are the caller's; a lost race counts nothing).
    if (!f.large() || !config_.thp_legacy || m.nomem)
      mm_.vmstat().add(mm::Vm::pgmigrate_fail, f.nr_pages());
    if (f.large() && !config_.thp_legacy) mm_.vmstat().add(mm::Vm::thp_migration_fail);
  }
  by_folio_.erase(m.folio.v);
  Migration done = std::move(m);
  migrations_.erase(done.id);
  executor_.finished(done, now);
  if (spare_.size() < kSpareVectors) {
    done.waiters.clear();
    done.unmap_offset.clear();
    spare_.push_back(Spare{std::move(done.waiters), std::move(done.unmap_offset)});
  }
}

uint32_t Migrator::wait(uint32_t pid, uint32_t mm_id, Vpn vpn, Pfn folio, Tick at) {
  auto it = by_folio_.find(folio.v);
  if (it == by_folio_.end()) return 0;
  Migration& m = migrations_.at(it->second);
  double offset = 0;
  for (const auto& [id, off] : m.unmap_offset) {
    if (id == mm_id) offset = off;
  }
  m.waiters.push_back(Waiter{pid, at, false, 0, vpn, offset});
  return m.id;
}

void Migrator::on_event(sim::EventQueue&, const sim::Event& e) {
  auto it = migrations_.find(static_cast<uint32_t>(e.arg0));
  if (it == migrations_.end()) return;
  if (e.kind == kUnmap) {
    start_pass(it->second, e.time);
  } else if (e.kind == kCheck) {
    check_pass(it->second);
  } else {
    end_pass(it->second);
  }
}

}  // namespace mmsim::migrate

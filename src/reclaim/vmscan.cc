// Models mm/vmscan.c's classic LRU reclaim, in our own words: see vmscan.h.
#include "reclaim/vmscan.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "sim/check.h"

namespace mmsim::reclaim {

using mm::Folio;
using mm::LruList;
using mm::Vm;

namespace {

constexpr std::array<LruList, 4> kEvictable = {LruList::kInactiveAnon, LruList::kActiveAnon,
                                               LruList::kInactiveFile, LruList::kActiveFile};
// kswapd naps this long once its node is balanced before sleeping for good
// (kswapd_try_to_sleep: HZ/10).
constexpr Tick kKswapdNap = milliseconds(100);

}  // namespace

Vmscan::Vmscan(mm::MemoryManager& mm, ReclaimConfig config)
    : mm_(mm), config_(config), kswapd_(mm.topology().nr_nodes()) {}

bool Vmscan::balanced(NodeId node) const {
  // In memory-tiering mode kswapd frees up to the promo watermark, making
  // room for promotions (pgdat_balanced).
  return mm_.folios().above(node, mm_.config().numa_tiering ? mm::Mark::kPromo : mm::Mark::kHigh);
}

std::vector<uint32_t> Vmscan::memcgs_under(uint32_t target) const {
  std::vector<uint32_t> out;
  const mm::LruSet& lru = mm_.lru();
  for (uint32_t m = 0; m < lru.nr_memcgs(); ++m) {
    if (lru.is_ancestor(target, m)) out.push_back(m);
  }
  return out;
}

bool Vmscan::can_demote(NodeId node, const ScanControl& sc) const {
  return mm_.can_demote(node) && (!sc.cgroup_reclaim() || config_.memcg_reclaim_demotes);
}

bool Vmscan::can_reclaim_anon(NodeId node, const ScanControl& sc) const {
  const mm::SwapSpace* swap = mm_.swap();
  return (swap && swap->nr_free() > 0) || can_demote(node, sc);
}

bool Vmscan::can_age_anon(NodeId node, const ScanControl& sc) const {
  const mm::SwapSpace* swap = mm_.swap();
  return (swap && swap->total() > 0) || can_demote(node, sc);
}

bool Vmscan::inactive_is_low(uint32_t memcg, NodeId node, bool file) const {
  // The inactive list is low when smaller than the active one divided by
  // sqrt(10 x its type's size in GiB) (1 below 1 GiB).
  const mm::LruSet& lru = mm_.lru();
  const uint64_t inactive =
      lru.hier_size(memcg, node, file ? LruList::kInactiveFile : LruList::kInactiveAnon);
  const uint64_t active =
      lru.hier_size(memcg, node, file ? LruList::kActiveFile : LruList::kActiveAnon);
  const uint64_t gb = (inactive + active) >> (30 - kPageShift);
  const uint64_t ratio = gb ? static_cast<uint64_t>(std::sqrt(static_cast<double>(10 * gb))) : 1;
  return inactive * ratio < active;
}

void Vmscan::snapshot_refaults(uint32_t memcg, NodeId node) {
  const size_t nodes = mm_.topology().nr_nodes();
  const size_t i = static_cast<size_t>(memcg) * nodes + node.v;
  if (refaults_snapshot_.size() <= i) refaults_snapshot_.resize(i + 1, 0);
  refaults_snapshot_[i] = mm_.lru().lruvec(memcg, node).activate_file;
}

void Vmscan::prepare_scan_count(NodeId node, ScanControl& sc) {
  mm::LruSet& lru = mm_.lru();
  const mm::Lruvec& target = lru.lruvec(sc.target_memcg, node);
  sc.anon_cost = target.anon_cost;
  sc.file_cost = target.file_cost;
  const size_t i = static_cast<size_t>(sc.target_memcg) * mm_.topology().nr_nodes() + node.v;
  const uint64_t snap = i < refaults_snapshot_.size() ? refaults_snapshot_[i] : 0;
  // Deactivate a type's active pages when its refaults activated pages since
  // the last run (the workingset grows), or its inactive list is low.
  sc.may_deactivate_file =
      target.activate_file != snap || inactive_is_low(sc.target_memcg, node, true);
  sc.may_deactivate_anon = can_age_anon(node, sc) && inactive_is_low(sc.target_memcg, node, false);
  const uint64_t inactive_file = lru.hier_size(sc.target_memcg, node, LruList::kInactiveFile);
  sc.cache_trim_mode = (inactive_file >> sc.priority) != 0 && !sc.may_deactivate_file;
  // file_is_tiny (global reclaim): the file cache and free pages together
  // fall short of the high watermark, so anon must go.
  sc.file_is_tiny = false;
  if (!sc.cgroup_reclaim()) {
    const uint64_t file = inactive_file + lru.node_size(node, LruList::kActiveFile);
    const uint64_t anon_inactive = lru.node_size(node, LruList::kInactiveAnon);
    sc.file_is_tiny = file + mm_.folios().free_pages(node) <= mm_.folios().watermarks(node).high &&
                      !sc.may_deactivate_anon && (anon_inactive >> sc.priority) != 0;
  }
}

std::array<uint64_t, 4> Vmscan::get_scan_count(const mm::Lruvec& vec, NodeId node,
                                               const ScanControl& sc) const {
  enum { kFract, kEqual, kAnon, kFile } balance;
  const int64_t swappiness = config_.swappiness;
  if (!can_reclaim_anon(node, sc)) {
    balance = kFile;
  } else if (sc.cgroup_reclaim() && swappiness == 0) {
    balance = kFile;
  } else if (sc.priority == 0 && swappiness != 0) {
    balance = kEqual;
  } else if (sc.file_is_tiny) {
    balance = kAnon;
  } else if (sc.cache_trim_mode) {
    balance = kFile;
  } else {
    balance = kFract;
  }
  // SCAN_FRACT: anon and file shares by swappiness and recent costs.
  double ap = 0, fp = 0;
  if (balance == kFract) {
    const double total = sc.anon_cost + sc.file_cost;
    const double a = total + sc.anon_cost;
    const double f = total + sc.file_cost;
    const double t2 = a + f;
    ap = static_cast<double>(swappiness) * (t2 + 1) / (a + 1);
    fp = static_cast<double>(200 - swappiness) * (t2 + 1) / (f + 1);
  }
  std::array<uint64_t, 4> nr{};
  for (size_t k = 0; k < kEvictable.size(); ++k) {
    const LruList l = kEvictable[k];
    const bool file = mm::is_file_lru(l);
    const uint64_t scan = vec.size(l) >> sc.priority;
    switch (balance) {
      case kEqual:
        nr[k] = scan;
        break;
      case kFile:
        nr[k] = file ? scan : 0;
        break;
      case kAnon:
        nr[k] = file ? 0 : scan;
        break;
      case kFract:
        nr[k] = static_cast<uint64_t>(static_cast<double>(scan) * (file ? fp : ap) / (ap + fp));
        break;
    }
  }
  return nr;
}

std::vector<Pfn> Vmscan::isolate(LruList l, uint64_t n, uint32_t memcg, NodeId node,
                                 uint64_t* pages) {
  mm::LruSet& lru = mm_.lru();
  mm::Lruvec& vec = lru.lruvec(memcg, node);
  std::vector<Pfn> taken;
  taken.reserve(std::min<uint64_t>(n, vec.size(l)));
  *pages = 0;
  while (*pages < n) {
    const auto t = lru.tail(vec, l);
    if (!t) break;
    *pages += mm_.folios().folio(*t).nr_pages();
    lru.del(*t);
    taken.push_back(*t);
  }
  return taken;
}

void Vmscan::shrink_active_list(LruList l, uint64_t n, uint32_t memcg, NodeId node,
                                ScanControl& sc) {
  mm::LruSet& lru = mm_.lru();
  mm::VmStat& vm = mm_.vmstat();
  uint64_t pages = 0;
  const std::vector<Pfn> taken = isolate(l, n, memcg, node, &pages);
  sc.ns += 2 * mm_.costs().lock_ns;  // the lru_lock to isolate, and to put back
  if (!sc.cgroup_reclaim()) vm.add(Vm::pgrefill, static_cast<int64_t>(pages));
  uint64_t deactivated = 0;
  for (Pfn pfn : taken) {
    Folio& f = mm_.folios().folio(pfn);
    sc.ns +=
        mm_.cache().meta_miss_ns(cost::Meta::kStructPage, 0, pfn.v, cost::kStructPageBytes, f.node);
    if (f.test(Folio::kMlocked)) {  // culled to the unevictable list
      lru.add(pfn);
      continue;
    }
    const auto ref = mm_.folio_referenced(pfn);
    sc.ns += ref.cost_ns;
    if (ref.mappings > 0 && ref.exec && mm::is_file_lru(l)) {
      lru.add(pfn);  // referenced executable code stays active
      continue;
    }
    // Everything else goes to the inactive list, remembered as workingset.
    f.flags = static_cast<uint16_t>((f.flags & ~Folio::kActive) | Folio::kWorkingset);
    lru.add(pfn);
    deactivated += f.nr_pages();
  }
  vm.add(Vm::pgdeactivate, static_cast<int64_t>(deactivated));
}

uint64_t Vmscan::shrink_inactive_list(LruList l, uint64_t n, uint32_t memcg, NodeId node,
                                      ScanControl& sc) {
  mm::LruSet& lru = mm_.lru();
  mm::VmStat& vm = mm_.vmstat();
  const bool file = mm::is_file_lru(l);
  uint64_t pages = 0;
  std::vector<Pfn> taken = isolate(l, n, memcg, node, &pages);
  sc.ns += 2 * mm_.costs().lock_ns;
  const auto scanned = static_cast<int64_t>(pages);
  sc.nr_scanned += pages;
  if (sc.who == Reclaimer::kKswapd) vm.add(Vm::pgscan_kswapd, scanned);
  if (sc.who == Reclaimer::kDirect) vm.add(Vm::pgscan_direct, scanned);
  vm.add(file ? Vm::pgscan_file : Vm::pgscan_anon, scanned);
  uint64_t reclaimed = 0, activated = 0, written = 0, demoted = 0, unqueued_dirty = 0;
  // The demote pass: folios to be reclaimed move to the next tier down
  // instead; those that cannot are reclaimed as usual.
  const bool demote = can_demote(node, sc);
  mm_.set_evicting_memcg(sc.target_memcg);
  // (Indexed: a THP split here adds its other pages to the list.)
  for (size_t k = 0; k < taken.size(); ++k) {
    const Pfn pfn = taken[k];
    Folio& f = mm_.folios().folio(pfn);
    sc.ns +=
        mm_.cache().meta_miss_ns(cost::Meta::kStructPage, 0, pfn.v, cost::kStructPageBytes, f.node);
    if (f.test(Folio::kLocked)) {  // folio_trylock fails (a read, a migration): kept as it is
      lru.add(pfn);
      continue;
    }
    if (f.test(Folio::kMlocked)) {  // not evictable: culled to the unevictable list
      lru.add(pfn);
      continue;
    }
    // folio_check_dirty_writeback: dirty page cache not yet queued for
    // writeback tells that the flusher is behind.
    const bool writeback = file && mm_.writeback().under_writeback(pfn);
    if (file && !writeback && f.test(Folio::kDirty) && !f.test(Folio::kShmem))
      unqueued_dirty += f.nr_pages();
    if (writeback) {
      // Under writeback: marked PG_reclaim, so that the write's end rotates
      // it to the tail, and activated meanwhile (cases 1 and 2 of
      // shrink_folio_list). SIMPLIFICATION: cgroup v1's limit reclaim, which
      // waits for the write of a folio it finds marked (case 3), does the
      // same.
      f.flags |= Folio::kReclaim;
      f.flags |= Folio::kActive;
      activated += f.nr_pages();
      lru.add(pfn);
      continue;
    }
    // folio_check_references.
    const auto ref = mm_.folio_referenced(pfn);
    sc.ns += ref.cost_ns;
    const bool was_referenced = f.test(Folio::kReferenced);
    f.flags &= static_cast<uint16_t>(~Folio::kReferenced);
    enum { kActivate, kKeep, kReclaim, kReclaimClean } verdict;
    if (ref.locked) {
      verdict = kActivate;
    } else if (ref.mappings > 0) {
      f.flags |= Folio::kReferenced;
      if (was_referenced || ref.mappings > 1 || (ref.exec && file)) {
        verdict = kActivate;
      } else {
        verdict = kKeep;  // one more trip round the inactive list
      }
    } else if (was_referenced && file) {
      verdict = kReclaimClean;
    } else {
      verdict = kReclaim;
    }
    const bool reclaim = verdict == kReclaim || verdict == kReclaimClean;
    const uint32_t nr = f.nr_pages();
    if (reclaim && demote) {
      // A THP goes down whole if the lower tier has 2 MiB for it.
      if (auto ns = mm_.demote_folio(pfn, sc.cpu)) {
        sc.ns += *ns;
        reclaimed += nr;
        demoted += nr;
        continue;
      }
    }
    if (reclaim && f.large()) {
      // A THP to reclaim (or that found no room below) is split, its pages
      // reclaimed, or demoted, one by one.
      mm_.split_huge_folio(pfn, &taken);
      if (demote) {
        // Its head: demoted now if a page below is free.
        if (auto ns = mm_.demote_folio(pfn, sc.cpu)) {
          sc.ns += *ns;
          ++reclaimed;
          ++demoted;
          continue;
        }
      }
    }
    if ((verdict == kReclaim || verdict == kReclaimClean) && f.test(Folio::kAnon)) {
      // To swap: unmapped and written, to be freed at a later scan once
      // clean (put back at the tail, as writeback's end rotates it); freed
      // now if it already was. No slot free: activated.
      const auto out = mm_.swap_out_folio(pfn, sc.cpu);
      sc.ns += out.ns;
      if (out.what == mm::MemoryManager::SwapOut::kFreed) {
        ++reclaimed;
        continue;
      }
      if (out.what == mm::MemoryManager::SwapOut::kWritten) {
        ++written;
        lru.add_tail(pfn);
        continue;
      }
      verdict = kActivate;
    } else if (verdict == kReclaim || verdict == kReclaimClean) {
      if (auto ns = mm_.evict_folio(pfn, sc.cpu)) {
        sc.ns += *ns;
        ++reclaimed;
        continue;
      }
      if (f.test(Folio::kDirty) && !f.test(Folio::kShmem)) {
        // Dirty page cache is not written from here (SIMPLIFICATION: nor
        // by kswapd, whose pageout the kernel allows once a node's file
        // pages are all dirty): unmapped, marked for immediate reclaim once
        // the flusher has written it, and activated meanwhile.
        sc.ns += mm_.unmap_file_folio(pfn, sc.cpu);
        vm.add(Vm::nr_vmscan_immediate_reclaim, f.nr_pages());
        f.flags |= Folio::kReclaim;
        verdict = kActivate;
      } else {
        // shmem is not swapped (SIMPLIFICATION) and goes active as if no
        // slot were free; anything else that cannot go (locked) is kept.
        verdict = f.test(Folio::kShmem) ? kActivate : kKeep;
      }
    }
    if (verdict == kActivate) {
      f.flags |= Folio::kActive;
      activated += f.nr_pages();
    }
    lru.add(pfn);
  }
  mm_.set_evicting_memcg(0);
  // Every folio taken dirty and not queued: the flusher is woken to write
  // everything dirty.
  if (pages > 0 && unqueued_dirty == pages) {
    mm_.writeback().wakeup_flusher_threads();
    // Legacy (cgroup v1) limit reclaim, which balance_dirty_pages does not
    // hold back per memcg, then throttles itself on writeback
    // (reclaim_throttle, VMSCAN_THROTTLE_WRITEBACK) until the flusher has
    // written SWAP_CLUSTER_MAX pages (__acct_reclaim_writeback), and goes
    // on while the flusher writes the rest. SIMPLIFICATION: those first
    // pages are written within the reclaimer's wait, which the disk's time
    // is.
    if (sc.cgroup_reclaim() && config_.legacy_memcg)
      sc.ns += mm_.writeback().write_and_wait(sc.cpu, mm::kSwapClusterMax);
  }
  // Put back on the active list: aged as activations (move_folios_to_lru).
  if (activated) {
    lru.age_nonresident(memcg, node, activated);
    vm.add(Vm::pgactivate, static_cast<int64_t>(activated));
  }
  // lru_note_cost (6.1): pages written by this pass cost their type.
  if (written) lru.note_cost(memcg, node, file, written);
  if (demoted) {
    vm.add(sc.who == Reclaimer::kKswapd ? Vm::pgdemote_kswapd : Vm::pgdemote_direct,
           static_cast<int64_t>(demoted));
  }
  if (sc.who == Reclaimer::kKswapd) vm.add(Vm::pgsteal_kswapd, static_cast<int64_t>(reclaimed));
  if (sc.who == Reclaimer::kDirect) vm.add(Vm::pgsteal_direct, static_cast<int64_t>(reclaimed));
  vm.add(file ? Vm::pgsteal_file : Vm::pgsteal_anon, static_cast<int64_t>(reclaimed));
  return reclaimed;
}

uint64_t Vmscan::shrink_list(LruList l, uint64_t n, uint32_t memcg, NodeId node, ScanControl& sc) {
  if (mm::is_active_lru(l)) {
    const bool may = mm::is_file_lru(l) ? sc.may_deactivate_file : sc.may_deactivate_anon;
    if (may) shrink_active_list(l, n, memcg, node, sc);
    return 0;
  }
  return shrink_inactive_list(l, n, memcg, node, sc);
}

void Vmscan::shrink_lruvec(uint32_t memcg, NodeId node, ScanControl& sc) {
  mm_.lru_add_drain(sc.cpu);  // shrink_{active,inactive}_list: this CPU's batch first
  mm::Lruvec& vec = mm_.lru().lruvec(memcg, node);
  std::array<uint64_t, 4> nr = get_scan_count(vec, node, sc);
  const std::array<uint64_t, 4> targets = nr;
  // Global direct reclaim at the first priority scans everything it set out
  // to, for a fair pressure on every list.
  const bool proportional = sc.who == Reclaimer::kDirect && sc.priority == mm::kDefPriority;
  const uint64_t reclaimed_before = sc.nr_reclaimed;
  bool scan_adjusted = false;
  auto left = [&](size_t k) { return nr[k]; };
  while (left(0) || left(2) || left(3)) {
    for (size_t k = 0; k < kEvictable.size(); ++k) {
      if (!nr[k]) continue;
      const uint64_t n = std::min(nr[k], mm::kSwapClusterMax);
      nr[k] -= n;
      sc.nr_reclaimed += shrink_list(kEvictable[k], n, memcg, node, sc);
    }
    if (sc.nr_reclaimed - reclaimed_before < sc.nr_to_reclaim || proportional || scan_adjusted)
      continue;
    // Enough reclaimed: stop the type with less left to scan, and cut the
    // other one's remaining scan to the share of its target the stopped
    // type had reached.
    uint64_t nr_anon = nr[0] + nr[1];
    uint64_t nr_file = nr[2] + nr[3];
    if (!nr_anon || !nr_file) break;
    const bool stop_anon = nr_anon <= nr_file;
    const size_t s0 = stop_anon ? 0 : 2, o0 = stop_anon ? 2 : 0;
    const uint64_t stopped_target = targets[s0] + targets[s0 + 1] + 1;
    const uint64_t stopped_left = stop_anon ? nr_anon : nr_file;
    const double pct =
        100.0 * static_cast<double>(stopped_left) / static_cast<double>(stopped_target);
    nr[s0] = nr[s0 + 1] = 0;
    for (size_t k = o0; k < o0 + 2; ++k) {
      const auto scanned = targets[k] - nr[k];
      const auto want = static_cast<uint64_t>(static_cast<double>(targets[k]) * (100 - pct) / 100);
      nr[k] = want > scanned ? want - scanned : 0;
    }
    scan_adjusted = true;
  }
  // Old anon pages are deactivated even when anon was not scanned, if there
  // is swap to reclaim them to.
  if (can_age_anon(node, sc) && inactive_is_low(memcg, node, false))
    shrink_active_list(LruList::kActiveAnon, mm::kSwapClusterMax, memcg, node, sc);
}

void Vmscan::shrink_node(NodeId node, ScanControl& sc) {
  // Nothing on the node's lists that reclaim could scan: no pass would do
  // anything (a shortcut of the model, not a kernel rule).
  const mm::LruSet& lru = mm_.lru();
  uint64_t scannable =
      lru.node_size(node, LruList::kInactiveFile) + lru.node_size(node, LruList::kActiveFile);
  if (can_age_anon(node, sc))
    scannable +=
        lru.node_size(node, LruList::kInactiveAnon) + lru.node_size(node, LruList::kActiveAnon);
  if (scannable == 0) return;
  const uint64_t before = sc.nr_reclaimed;
  prepare_scan_count(node, sc);
  for (uint32_t memcg : memcgs_under(sc.target_memcg)) shrink_lruvec(memcg, node, sc);
  // Any reclaim that frees pages on a node gives its kswapd hope again.
  if (sc.nr_reclaimed > before) kswapd_[node.v].failures = 0;
}

// kswapd ---------------------------------------------------------------------

void Vmscan::wake_kswapd(NodeId node) {
  Kswapd& k = kswapd_[node.v];
  // A hopeless node is left to direct reclaim; a balanced one needs nothing.
  if (k.failures >= mm::kMaxReclaimRetries || balanced(node)) return;
  if (k.state == Kswapd::State::kRunning) return;
  if (std::find(wakeups_.begin(), wakeups_.end(), node) == wakeups_.end()) wakeups_.push_back(node);
}

bool Vmscan::kswapd_wake(NodeId node, Tick now) {
  Kswapd& k = kswapd_[node.v];
  if (k.state == Kswapd::State::kRunning) return false;
  if (k.state == Kswapd::State::kNapping && now < k.nap_end) {
    // Woken during its nap: the low watermark was hit quickly.
    mm_.vmstat().add(Vm::kswapd_low_wmark_hit_quickly);
  }
  begin_balance(k);
  return true;
}

void Vmscan::begin_balance(Kswapd& k) {
  k.state = Kswapd::State::kRunning;
  k.priority = mm::kDefPriority;
  k.reclaimed = 0;
  mm_.vmstat().add(Vm::pageoutrun);
}

Vmscan::Step Vmscan::kswapd_step(NodeId node, Tick now) {
  Kswapd& k = kswapd_[node.v];
  Step step;
  if (k.state == Kswapd::State::kSleeping) return step;
  if (k.state == Kswapd::State::kNapping) {
    if (now < k.nap_end) return step;  // stale: it was woken since
    if (balanced(node) || k.failures >= mm::kMaxReclaimRetries) {
      k.state = Kswapd::State::kSleeping;  // sleeps until woken
      return step;
    }
    // Not balanced after its nap: the high watermark was hit quickly.
    mm_.vmstat().add(Vm::kswapd_high_wmark_hit_quickly);
    begin_balance(k);
  }
  // balance_pgdat: one shrink_node per priority level, until balanced.
  if (!balanced(node) && k.priority >= 1) {
    ScanControl sc;
    sc.who = Reclaimer::kKswapd;
    sc.priority = k.priority;
    sc.cpu = k.cpu                                    ? *k.cpu
             : mm_.topology().node(node).cpus.empty() ? CpuId(0)
                                                      : mm_.topology().node(node).cpus.front();
    // kswapd_shrink_node: reclaim up to the high watermark (at least
    // SWAP_CLUSTER_MAX); a pass that scanned less, or freed nothing, raises
    // the priority for the next.
    sc.nr_to_reclaim = std::max(mm_.folios().watermarks(node).high, mm::kSwapClusterMax);
    shrink_node(node, sc);
    k.reclaimed += sc.nr_reclaimed;
    if (sc.nr_scanned < sc.nr_to_reclaim || sc.nr_reclaimed == 0) --k.priority;
    k.cpu_ns += sc.ns;
    step.run = true;
    step.ns = sc.ns;
    return step;
  }
  // The run is over: balanced, or every priority tried.
  if (k.reclaimed == 0) ++k.failures;
  for (uint32_t memcg = 0; memcg < mm_.lru().nr_memcgs(); ++memcg) snapshot_refaults(memcg, node);
  if (!balanced(node) && k.failures < mm::kMaxReclaimRetries) {
    // Still short: another run at once.
    mm_.vmstat().add(Vm::kswapd_high_wmark_hit_quickly);
    begin_balance(k);
    step.run = true;
    return step;
  }
  k.state = Kswapd::State::kNapping;
  k.nap_end = now + kKswapdNap;
  step.nap = true;
  return step;
}

// Direct and memcg reclaim --------------------------------------------------

mm::ReclaimHooks::Progress Vmscan::try_to_free_pages(std::span<const NodeId> nodes, CpuId cpu) {
  mm_.vmstat().add(Vm::allocstall_movable);
  ScanControl sc;
  sc.who = Reclaimer::kDirect;
  sc.cpu = cpu;
  sc.nr_to_reclaim = mm::kSwapClusterMax;
  for (sc.priority = mm::kDefPriority; sc.priority >= 0; --sc.priority) {
    for (NodeId n : nodes) shrink_node(n, sc);
    if (sc.nr_reclaimed >= sc.nr_to_reclaim) break;
  }
  for (NodeId n : nodes) snapshot_refaults(0, n);
  return {sc.nr_reclaimed, sc.ns};
}

mm::ReclaimHooks::Progress Vmscan::try_to_free_mem_cgroup_pages(uint32_t memcg, uint64_t pages,
                                                                CpuId cpu) {
  ScanControl sc;
  sc.who = Reclaimer::kMemcg;
  sc.cpu = cpu;
  sc.target_memcg = memcg;
  sc.nr_to_reclaim = std::max(pages, mm::kSwapClusterMax);
  const std::vector<NodeId>& order = mm_.topology().fallback_order(mm_.topology().cpu_to_node(cpu));
  for (sc.priority = mm::kDefPriority; sc.priority >= 0; --sc.priority) {
    for (NodeId n : order) shrink_node(n, sc);
    if (sc.nr_reclaimed >= sc.nr_to_reclaim) break;
  }
  for (NodeId n : order) snapshot_refaults(memcg, n);
  return {sc.nr_reclaimed, sc.ns};
}

}  // namespace mmsim::reclaim

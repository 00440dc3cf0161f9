// Models page reclaim with the two-list LRU of mm/vmscan.c (the classic LRU;
// Debian's 6.1 runs it, its 6.12 runs the multi-generational LRU instead):
// shrink_node over the memcgs' lruvecs, get_scan_count's split between anon
// and file, shrink_active_list's deactivation, shrink_inactive_list and
// folio_check_references' verdicts, kswapd's balance_pgdat between the low
// and high watermarks, direct reclaim (try_to_free_pages) and memcg limit
// reclaim (try_to_free_mem_cgroup_pages) on the same lists.
//
// Anonymous folios go to the swap device ([swap] size), if there is one with
// free slots (else get_scan_count scans page cache only); shmem is not
// swapped. With demotion on (demotion_enabled), what a node would reclaim
// moves to the next memory tier down instead, anonymous or not, and counts
// as reclaimed (pgdemote_kswapd, pgdemote_direct). Dirty page cache is not
// written back by reclaim: it is unmapped and activated with PG_reclaim, as
// direct reclaim does, for the flusher to write (mm/writeback.h), whose
// end of writeback rotates it to the inactive tail; a pass that took only
// unqueued dirty pages wakes the flusher (wakeup_flusher_threads).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "mm/memory_manager.h"
#include "reclaim/config.h"
#include "sim/types.h"

namespace mmsim::reclaim {

// Who reclaims: the counters differ (pgscan_kswapd vs pgscan_direct; memcg
// limit reclaim is cgroup reclaim and counts in neither).
enum class Reclaimer : uint8_t { kKswapd, kDirect, kMemcg };

// One reclaim request (struct scan_control).
struct ScanControl {
  Reclaimer who = Reclaimer::kDirect;
  uint64_t nr_to_reclaim = mm::kSwapClusterMax;
  int priority = mm::kDefPriority;
  // Memcg reclaim: the memcg whose subtree is reclaimed (global: the root).
  uint32_t target_memcg = 0;
  CpuId cpu;
  uint64_t nr_scanned = 0;
  uint64_t nr_reclaimed = 0;
  double ns = 0;  // the reclaimer's CPU time
  // prepare_scan_count's verdicts for this node.
  bool may_deactivate_anon = false;
  bool may_deactivate_file = false;
  bool cache_trim_mode = false;
  bool file_is_tiny = false;
  // The target lruvec's recent reclaim costs (lru_note_cost).
  double anon_cost = 0;
  double file_cost = 0;
  bool cgroup_reclaim() const { return who == Reclaimer::kMemcg; }
};

// One node's kswapd (kswapd(), balance_pgdat, kswapd_try_to_sleep).
struct Kswapd {
  enum class State : uint8_t { kSleeping, kRunning, kNapping };
  State state = State::kSleeping;
  int priority = mm::kDefPriority;
  uint64_t reclaimed = 0;  // in this balance_pgdat run
  int failures = 0;        // kswapd_failures: runs that reclaimed nothing
  Tick nap_end;            // kNapping: when the 100 ms nap ends
  double cpu_ns = 0;       // its CPU time so far
  // Where it runs (its flushes leave from there): set by the caller at its
  // wakeup; none: its node's first CPU.
  std::optional<CpuId> cpu;
};

class Vmscan final : public mm::ReclaimHooks {
 public:
  Vmscan(mm::MemoryManager& mm, ReclaimConfig config);

  // What a kswapd step asks of its caller (who owns time).
  struct Step {
    bool run = false;  // run the next step after `ns`
    double ns = 0;     // the CPU time of this step
    bool nap = false;  // napping: check again at nap_end
  };
  // wakeup_kswapd: returns true if the node's kswapd was idle and should run
  // now (the caller schedules kswapd_step).
  bool kswapd_wake(NodeId node, Tick now);
  // One pass of balance_pgdat (one shrink_node at the current priority), or
  // the end of a nap.
  Step kswapd_step(NodeId node, Tick now);
  const Kswapd& kswapd(NodeId node) const { return kswapd_[node.v]; }
  void set_kswapd_cpu(NodeId node, CpuId cpu) { kswapd_[node.v].cpu = cpu; }
  // A wakeup_kswapd the allocator asked for since the last call (nodes to
  // start); the caller (the World) schedules them.
  bool wakeups_pending() const { return !wakeups_.empty(); }
  std::vector<NodeId> take_wakeups() { return std::exchange(wakeups_, {}); }

  // mm::ReclaimHooks
  void wake_kswapd(NodeId node) override;
  Progress try_to_free_pages(std::span<const NodeId> nodes, CpuId cpu) override;

  // try_to_free_mem_cgroup_pages: reclaims at least `pages` from memcg and
  // its descendants on every node, from the CPU's node outwards.
  Progress try_to_free_mem_cgroup_pages(uint32_t memcg, uint64_t pages, CpuId cpu);

  // pgdat_balanced: free pages above the high watermark (the promo one in
  // memory-tiering mode).
  bool balanced(NodeId node) const;

 private:
  // A balance_pgdat run starts: from DEF_PRIORITY, pageoutrun counted.
  void begin_balance(Kswapd& k);
  void shrink_node(NodeId node, ScanControl& sc);
  void prepare_scan_count(NodeId node, ScanControl& sc);
  void shrink_lruvec(uint32_t memcg, NodeId node, ScanControl& sc);
  // get_scan_count: pages to scan on each evictable list.
  std::array<uint64_t, 4> get_scan_count(const mm::Lruvec& vec, NodeId node,
                                         const ScanControl& sc) const;
  uint64_t shrink_list(mm::LruList l, uint64_t n, uint32_t memcg, NodeId node, ScanControl& sc);
  void shrink_active_list(mm::LruList l, uint64_t n, uint32_t memcg, NodeId node, ScanControl& sc);
  uint64_t shrink_inactive_list(mm::LruList l, uint64_t n, uint32_t memcg, NodeId node,
                                ScanControl& sc);
  // isolate_lru_folios: folios off the tail of list l until n pages are
  // taken (a THP counts 512); *pages gets how many.
  std::vector<Pfn> isolate(mm::LruList l, uint64_t n, uint32_t memcg, NodeId node, uint64_t* pages);
  bool inactive_is_low(uint32_t memcg, NodeId node, bool file) const;
  // Whether the node's anon folios can be reclaimed (a swap device with
  // free space, or demotion to a lower tier), and aged (a swap device at
  // all, or demotion).
  bool can_reclaim_anon(NodeId node, const ScanControl& sc) const;
  bool can_age_anon(NodeId node, const ScanControl& sc) const;
  // can_demote: the node has a tier below and this reclaim may use it.
  bool can_demote(NodeId node, const ScanControl& sc) const;
  // The memcgs reclaim visits for a target (its subtree), by id.
  std::vector<uint32_t> memcgs_under(uint32_t target) const;
  void snapshot_refaults(uint32_t memcg, NodeId node);

  mm::MemoryManager& mm_;
  ReclaimConfig config_;
  std::vector<Kswapd> kswapd_;
  std::vector<NodeId> wakeups_;
  // WORKINGSET_ACTIVATE_FILE of each (memcg, node) lruvec at the end of the
  // last reclaim run there (snapshot_refaults), by memcg * nodes + node.
  std::vector<uint64_t> refaults_snapshot_;
};

}  // namespace mmsim::reclaim

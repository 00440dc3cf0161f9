// Models memory cgroups as in Linux 3.3/3.4 (mm/memcontrol.c,
// include/linux/page_cgroup.h): a cgroup tree with res_counter limits,
// charge and uncharge with per-CPU stock batching, memory.stat counters,
// reclaim from the memcg's LRU, charge moving, and the page-stat update
// protocols of 3.3 (PCG flags) and 3.4 (begin/end brackets).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cost/cost_profile.h"
#include "memcg/config.h"
#include "mm/memory_manager.h"
#include "reclaim/vmscan.h"
#include "sim/types.h"

namespace mmsim::memcg {

// Whether cgroup `path` lies below `ancestor` ("/a/b" below "/a", not "/ab").
inline bool path_is_below(std::string_view path, std::string_view ancestor) {
  return path.size() > ancestor.size() && path.substr(0, ancestor.size()) == ancestor &&
         path[ancestor.size()] == '/';
}

struct CgroupSpec {
  std::string path;
  uint64_t limit_bytes = UINT64_MAX;
  uint32_t move_charge_at_immigrate = 0;  // bit 1 anon, bit 2 file
};

// One memcg: its res_counter and its (local) memory.stat counters.
struct MemCgroup {
  uint32_t id = 0;
  std::string path;
  int parent = -1;
  uint64_t limit_pages = UINT64_MAX;
  uint64_t usage = 0;  // pages charged here or below, stock included
  uint64_t max_usage = 0;
  uint64_t failcnt = 0;  // v1 memory.failcnt; v2 memory.events max
  uint32_t move_charge_at_immigrate = 0;
  // cache: page-cache pages, shmem's included (v1 cache, v2 file); shmem:
  // those of shmem/tmpfs (memory.stat shmem, NR_SHMEM).
  int64_t cache = 0, rss = 0, mapped_file = 0, shmem = 0;
  // Page-table pages charged here that NR_PAGETABLE counts (memory.stat
  // pagetables, v2 only).
  int64_t pagetables = 0;
  // Its dirty and under-writeback page-cache pages (memory.stat file_dirty
  // and file_writeback; v1's dirty and writeback), filled in by file_view
  // from the writeback state.
  int64_t dirty = 0, writeback = 0;
  int64_t pgpgin = 0, pgpgout = 0, pgfault = 0, pgmajfault = 0;
  int moving_account = 0;
  uint64_t move_lock_slowpath = 0;  // page-stat updates that took move_lock
  uint64_t reclaimed = 0;
};

class Controller final : public mm::MemcgHooks {
 public:
  Controller(const MemcgConfig& cfg, const cost::CostProfile& costs, mm::MemoryManager& mm,
             reclaim::Vmscan& vmscan, size_t nr_cpus, const std::vector<CgroupSpec>& cgroups);

  bool enabled() const { return cfg_.enabled(); }
  const MemcgConfig& config() const { return cfg_; }
  // The memcg of a path ("/" is the root, id 0); nullopt if unknown.
  std::optional<uint32_t> find(const std::string& path) const;
  // The memcg outside the run's: what the host charged before the run
  // began (a guest's initramfs, unpacked at boot into the real root memcg,
  // holds mmsim-exec's file). mmsim's "/" stands for the run's own cgroup,
  // which the real root lies above; this memcg is neither "/" nor below it,
  // has no path and no files, and is never reported. Reclaim reaches its
  // pages as the machine's (its lruvecs hang below the root's).
  uint32_t outside() const { return static_cast<uint32_t>(groups_.size() - 1); }
  // The run's cgroups, "/" first (the outside memcg is not among them).
  std::span<const MemCgroup> cgroups() const { return {groups_.data(), groups_.size() - 1}; }
  // The cgroups as their files read. Under v1 memory.stat's counters are a
  // group's own (its total_* lines, not reported here, sum the subtree).
  // Under v2 they sum the group's subtree (memcg_page_state and
  // memcg_events read the rstat-flushed hierarchical state), as does
  // memory.events (memcg_memory_event counts at each ancestor below the
  // root; mmsim's "/" stands for the run's own cgroup, which counts them).
  // Usage is hierarchical in both. SIMPLIFICATION: v2's stats as if flushed
  // at the read; the kernel may skip a flush of fewer than
  // MEMCG_CHARGE_BATCH updates a CPU.
  MemCgroup file_view(uint32_t id) const;
  std::vector<MemCgroup> files_view() const;

  // MemcgHooks
  mm::ChargeResult charge(uint32_t memcg, Pfn pfn, CpuId cpu,
                          mm::Retry retry = mm::Retry::kUntilOom) override;
  void uncharge(Pfn pfn, mm::Folio& folio) override;
  double file_rmap(Pfn pfn, mm::Folio& folio, bool add, bool transition) override;
  void count_fault(uint32_t memcg, bool major) override;
  void migrate(Pfn from, Pfn to, mm::Folio& folio) override;
  std::optional<mm::WbStats> wb_stats(uint32_t memcg) const override;
  // The periodic rstat flush (flush_memcg_stats_dwork, every kStatsFlushTime):
  // what wb_stats reads under wb_stats_ratelimited. Whether it is needed:
  bool periodic_stats_flush() const {
    return enabled() && cfg_.hierarchy == Hierarchy::kV2 && cfg_.wb_stats_ratelimited;
  }
  void flush_stats();
  static constexpr Tick kStatsFlushTime = milliseconds(2000);  // FLUSH_TIME, 2 * HZ

  // Charge moving (v1 mem_cgroup_move_task): begins the move of `mm`'s
  // charges from its memcg to `to` (start_move: moving_account raised, then
  // synchronize_rcu). Returns the time the whole move takes; call
  // finish_move at its end. Under v2 charges never move: only the task does.
  double begin_move(mm::Mm& mm, uint32_t to);
  void finish_move(mm::Mm& mm, uint32_t to);

  // Charges against usage, stats against folios (for the checker).
  std::vector<std::string> check_invariants() const;

 private:
  // Calls f(MemCgroup&) for memcg and each of its ancestors up to the root.
  template <class F>
  void for_each_ancestor(uint32_t memcg, F&& f) {
    for (int g = static_cast<int>(memcg); g >= 0; g = groups_[g].parent) f(groups_[g]);
  }
  template <class F>
  void for_each_ancestor(uint32_t memcg, F&& f) const {
    for (int g = static_cast<int>(memcg); g >= 0; g = groups_[g].parent) f(groups_[g]);
  }
  bool is_ancestor(uint32_t ancestor, uint32_t memcg) const;
  // A memcg's file LRU, dirty and writeback pages now (its subtree's).
  mm::WbStats wb_state(uint32_t memcg) const;
  std::vector<mm::WbStats> flushed_;  // by memcg: wb_state at the last periodic flush
  mm::ChargeResult try_charge(uint32_t memcg, CpuId cpu, mm::Retry retry, uint64_t nr_pages);
  // The level that went over its limit (its failcnt counted), or -1.
  int res_charge(uint32_t memcg, uint64_t pages);
  // mem_cgroup_margin: pages memcg and its ancestors can still take.
  uint64_t margin(uint32_t memcg) const;
  void res_uncharge(uint32_t memcg, uint64_t pages);
  // Reclaims up to `pages` from memcg and below; the pages freed and the time.
  struct Reclaimed {
    uint64_t pages = 0;
    double ns = 0;
  };
  Reclaimed reclaim(uint32_t memcg, uint64_t pages, CpuId cpu);
  void drain_stock(CpuId cpu);
  void move_account(mm::Folio& folio, Pfn pfn, uint32_t from, uint32_t to);

  MemcgConfig cfg_;
  const cost::CostProfile& costs_;
  // lookup_page_cgroup: the lookup's own work and, by the cache model, a miss
  // on the entry's line (in struct page from 3.19, whose line the rmap has
  // just touched).
  double pc_lookup_ns(Pfn pfn, const mm::Folio& folio);
  mm::MemoryManager& mm_;
  reclaim::Vmscan& vmscan_;
  std::vector<MemCgroup> groups_;
  struct Stock {
    uint32_t memcg = 0;
    uint32_t pages = 0;
  };
  std::vector<Stock> stock_;  // per CPU
  int memcg_moving_ = 0;      // the global fast-path flag of 3.4
  // Pending move: the pages to move (collected at begin_move).
  std::vector<uint32_t> move_pages_;
};

}  // namespace mmsim::memcg

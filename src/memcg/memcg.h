// Models memory cgroups as in Linux 3.3/3.4 (mm/memcontrol.c,
// include/linux/page_cgroup.h): a cgroup tree with res_counter limits,
// charge and uncharge with per-CPU stock batching, memory.stat counters,
// reclaim from the memcg's LRU, charge moving, and the page-stat update
// protocols of 3.3 (PCG flags) and 3.4 (begin/end brackets).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "cost/cost_profile.h"
#include "mm/memory_manager.h"
#include "sim/types.h"

namespace mmsim::memcg {

// How FILE_MAPPED is kept (spec B3).
enum class StatProtocol : uint8_t {
  kNone,              // memcg off (cgroup_disable=memory): no accounting at all
  kPcgFlags,          // 3.3: per-page FILE_MAPPED/MOVE_LOCK bits, only at 0<->1
  kBeginEnd,          // 3.4: a bracket around every file rmap, global fast-path flag
  kBeginEndNoGlobal,  // the diet's intermediate version, without the global flag
};
const char* protocol_name(StatProtocol p);
std::optional<StatProtocol> parse_protocol(const std::string& name);
// struct page_cgroup (or its successor) per 4 KiB page for a kernel version.
uint32_t page_cgroup_bytes(StatProtocol p, int major, int minor);

struct MemcgConfig {
  StatProtocol protocol = StatProtocol::kBeginEnd;
  bool v2 = false;  // report cgroup v2 names (memory.max, anon, file, file_mapped)
  uint32_t charge_batch = 32;  // CHARGE_BATCH
  uint32_t page_cgroup_bytes = 16;
};

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
  uint64_t usage = 0;      // pages charged here or below, stock included
  uint64_t max_usage = 0;
  uint64_t failcnt = 0;
  uint32_t move_charge_at_immigrate = 0;
  int64_t cache = 0, rss = 0, mapped_file = 0;
  int64_t pgpgin = 0, pgpgout = 0, pgfault = 0, pgmajfault = 0;
  int moving_account = 0;
  uint64_t move_lock_slowpath = 0;  // page-stat updates that took move_lock
  uint64_t reclaimed = 0;
  std::deque<uint32_t> lru;  // page-cache folios charged here, oldest first
};

class Controller final : public mm::MemcgHooks {
 public:
  Controller(const MemcgConfig& cfg, const cost::CostProfile& costs, mm::MemoryManager& mm,
             size_t nr_cpus, const std::vector<CgroupSpec>& cgroups);

  bool enabled() const { return cfg_.protocol != StatProtocol::kNone; }
  const MemcgConfig& config() const { return cfg_; }
  // The memcg of a path ("/" is the root, id 0); nullopt if unknown.
  std::optional<uint32_t> find(const std::string& path) const;
  const std::vector<MemCgroup>& cgroups() const { return groups_; }

  // MemcgHooks
  bool charge(uint32_t memcg, Pfn pfn, mm::Folio& folio, CpuId cpu, double& cost_ns) override;
  void uncharge(Pfn pfn, mm::Folio& folio) override;
  void file_rmap(mm::Folio& folio, bool add, bool transition, double& cost_ns) override;
  void count_fault(uint32_t memcg, bool major) override;

  // Charge moving (mem_cgroup_move_task): begins the move of `mm`'s charges
  // from its memcg to `to` (start_move: moving_account raised, then
  // synchronize_rcu). Returns the time the whole move takes; call
  // finish_move at its end.
  double begin_move(mm::Mm& mm, uint32_t to);
  void finish_move(mm::Mm& mm, uint32_t to);

  // Charges against usage, stats against folios (for the checker).
  std::vector<std::string> check_invariants() const;

 private:
  bool try_charge(uint32_t memcg, CpuId cpu, double& cost_ns);
  bool res_charge(uint32_t memcg, uint64_t pages);
  void res_uncharge(uint32_t memcg, uint64_t pages);
  bool reclaim(uint32_t memcg, uint64_t pages, CpuId cpu, double& cost_ns);
  void drain_stock(CpuId cpu);
  void move_account(mm::Folio& folio, Pfn pfn, uint32_t from, uint32_t to);

  MemcgConfig cfg_;
  const cost::CostProfile& costs_;
  mm::MemoryManager& mm_;
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

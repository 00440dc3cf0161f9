// Memory cgroups' switches ([memcg] keys of a scenario) and constants, by
// their kernel names (mm/memcontrol.c).
#pragma once

#include <cstdint>
#include <span>

#include "sim/switches.h"

namespace mmsim::memcg {

// CHARGE_BATCH (MEMCG_CHARGE_BATCH): pages a per-CPU stock holds; 32 until
// 6.0, 64 from 6.1 (the charge_batch switch's presets).
inline constexpr int64_t kChargeBatch = 32;
inline constexpr int kMaxReclaimRetries = 5;  // MEM_CGROUP_RECLAIM_RETRIES (3.x)

// How FILE_MAPPED is kept up to date around file rmap changes.
enum class StatProtocol : int64_t {
  kNone,              // memcg off (cgroup_disable=memory): no accounting at all
  kPcgFlags,          // up to 3.3: per-page FILE_MAPPED/MOVE_LOCK bits, only at 0<->1
  kBeginEnd,          // 3.4+: a bracket around every file rmap, global fast-path flag
  kBeginEndNoGlobal,  // the "page cgroup diet" series without its global flag
};

enum class Hierarchy : int64_t {
  kV1,  // memory.usage_in_bytes, memory.limit_in_bytes, failcnt, charge moving
  kV2,  // memory.current, memory.max, memory.events; charges never move
};

// What page migration does to the folio's charge (mem_cgroup_migrate).
enum class MigrateCharge : int64_t {
  kTransfer,  // 3.17-4.4, 6.7+: the charge moves to the new folio; no counter moves
  kRecharge,  // up to 3.16, 4.5-6.6: the new folio is charged (pgpgin, usage +1 over
              // the limit) and the old one uncharged when freed (pgpgout)
};

struct MemcgConfig {
  StatProtocol stat_protocol = StatProtocol::kBeginEnd;
  Hierarchy hierarchy = Hierarchy::kV1;
  int64_t charge_batch = kChargeBatch;
  MigrateCharge migrate_charge = MigrateCharge::kTransfer;
  // mem_cgroup_wb_stats reads the stats of the last periodic flush.
  bool wb_stats_ratelimited = true;
  // Page tables are charged to the allocating task's memcg as kernel
  // memory (GFP_PGTABLE_USER's __GFP_ACCOUNT, 4.6+).
  bool kmem_pagetables = true;

  bool enabled() const { return stat_protocol != StatProtocol::kNone; }
};

const char* protocol_name(StatProtocol p);
// Bytes of struct page_cgroup (or its successor) per 4 KiB page under this
// protocol on this kernel: 40 in 2.6 (32 from 2.6.39, which the version's
// two numbers cannot tell apart), 32 in 3.0-3.2, 16 in 3.3-3.18, 8 from 3.19
// (a pointer in struct page), 0 off (J. Weiner's 2.6.39 and 3.3 page_cgroup
// patches and 3.19's 'mm: embed the memcg pointer directly into struct page').
uint32_t page_cgroup_bytes(StatProtocol p, KernelVersion v);

std::span<const Switch<MemcgConfig>> memcg_switches();

}  // namespace mmsim::memcg

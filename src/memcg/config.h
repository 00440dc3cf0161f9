// Memory cgroups' switches ([memcg] keys of a scenario) and constants, by
// their kernel names (mm/memcontrol.c).
#pragma once

#include <cstdint>
#include <span>

#include "sim/switches.h"

namespace mmsim::memcg {

inline constexpr int64_t kChargeBatch = 32;         // CHARGE_BATCH: pages a per-CPU stock holds
inline constexpr int kMemCgroupReclaimRetries = 5;  // MEM_CGROUP_RECLAIM_RETRIES

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

struct MemcgConfig {
  StatProtocol stat_protocol = StatProtocol::kBeginEnd;
  Hierarchy hierarchy = Hierarchy::kV1;
  int64_t charge_batch = kChargeBatch;

  bool enabled() const { return stat_protocol != StatProtocol::kNone; }
};

const char* protocol_name(StatProtocol p);
// Bytes of struct page_cgroup (or its successor) per 4 KiB page under this
// protocol on this kernel: 40 up to 3.2, 16 in 3.3-3.18, 8 from 3.19, 0 off.
uint32_t page_cgroup_bytes(StatProtocol p, KernelVersion v);

std::span<const Switch<MemcgConfig>> memcg_switches();

}  // namespace mmsim::memcg

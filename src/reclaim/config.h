// The reclaim layer's kernel switches ([kernel] keys of a scenario).
#pragma once

#include <cstdint>
#include <span>

#include "sim/switches.h"

namespace mmsim::reclaim {

struct ReclaimConfig {
  int64_t swappiness = 60;  // vm.swappiness
  // can_demote holds for memcg limit reclaim too (5.19+).
  bool memcg_reclaim_demotes = true;
  // Memcg limit reclaim is cgroup v1's (legacy: no cgroup writeback, so no
  // dirty throttling of a memcg's own; writeback_throttling_sane is false).
  // Set from the memcg hierarchy, not a switch of its own.
  bool legacy_memcg = false;
};

std::span<const Switch<ReclaimConfig>> reclaim_switches();

}  // namespace mmsim::reclaim

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
};

std::span<const Switch<ReclaimConfig>> reclaim_switches();

}  // namespace mmsim::reclaim

// The reclaim layer's kernel switches ([kernel] keys of a scenario).
#pragma once

#include <cstdint>
#include <span>

#include "sim/switches.h"

namespace mmsim::reclaim {

struct ReclaimConfig {
  int64_t swappiness = 60;  // vm.swappiness
};

std::span<const Switch<ReclaimConfig>> reclaim_switches();

}  // namespace mmsim::reclaim

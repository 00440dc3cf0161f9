#include "reclaim/config.h"

#include <vector>

namespace mmsim::reclaim {

std::span<const Switch<ReclaimConfig>> reclaim_switches() {
  static const std::vector<Switch<ReclaimConfig>> table = {
      {{.section = "kernel",
        .key = "swappiness",
        .kind = SwitchKind::kInt,
        .doc = "vm.swappiness: reclaim's weight of anonymous pages against page cache "
               "(mm/vmscan.c get_scan_count); no swap device is modelled, so anonymous pages "
               "are never scanned whatever its value",
        .default_value = 60,
        .lo = 0,
        .hi = 200},
       [](const ReclaimConfig& c) { return c.swappiness; },
       [](ReclaimConfig& c, int64_t v) { c.swappiness = v; }},
  };
  return table;
}

}  // namespace mmsim::reclaim

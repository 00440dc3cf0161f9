#include "reclaim/config.h"

#include <vector>

namespace mmsim::reclaim {

std::span<const Switch<ReclaimConfig>> reclaim_switches() {
  static const std::vector<Switch<ReclaimConfig>> table = {
      {{.section = "kernel",
        .key = "swappiness",
        .kind = SwitchKind::kInt,
        .doc = "vm.swappiness: reclaim's weight of anonymous pages against page cache "
               "(mm/vmscan.c get_scan_count); anonymous pages are scanned only with a swap "
               "device ([swap]) or a lower memory tier to demote them to",
        .default_value = 60,
        .lo = 0,
        .hi = 200},
       [](const ReclaimConfig& c) { return c.swappiness; },
       [](ReclaimConfig& c, int64_t v) { c.swappiness = v; }},
      {{.section = "kernel",
        .key = "memcg_reclaim_demotes",
        .kind = SwitchKind::kBool,
        .doc = "memcg limit reclaim demotes to a lower tier as global reclaim does (mm/vmscan.c "
               "can_demote: 5.15 refused it for cgroup reclaim, 3f1509c57b1b allowed it in 5.19)",
        .default_value = 1,
        .presets = {{.until = {5, 18}, .value = 0}}},
       [](const ReclaimConfig& c) -> int64_t { return c.memcg_reclaim_demotes; },
       [](ReclaimConfig& c, int64_t v) { c.memcg_reclaim_demotes = v != 0; }},
  };
  return table;
}

}  // namespace mmsim::reclaim

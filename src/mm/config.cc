#include "mm/config.h"

#include <vector>

namespace mmsim::mm {

std::span<const Switch<MmConfig>> mm_switches() {
  static const std::vector<Switch<MmConfig>> table = {
      {{.section = "kernel",
        .key = "fault_around_kb",
        .kind = SwitchKind::kInt,
        .doc = "fault_around_bytes / 1024: cached pages mapped around a read fault on a file "
               "(mm/memory.c do_fault_around)",
        .default_value = 0,
        .presets = {{.from = {3, 15}, .value = 64}},
        .lo = 0,
        .hi = 2048,
        .multiple_of = 4,
        .unit = "KiB"},
       [](const MmConfig& c) { return c.fault_around_kb; },
       [](MmConfig& c, int64_t v) { c.fault_around_kb = v; }},
      {{.section = "kernel",
        .key = "read_ahead_kb",
        .kind = SwitchKind::kInt,
        .doc = "readahead window of a major fault on a file (mm/readahead.c, the block "
               "device's read_ahead_kb)",
        .default_value = 128,
        .lo = 4,
        .hi = 65536,
        .multiple_of = 4,
        .unit = "KiB"},
       [](const MmConfig& c) { return c.read_ahead_kb; },
       [](MmConfig& c, int64_t v) { c.read_ahead_kb = v; }},
      {{.section = "kernel",
        .key = "pagecache_folio_kb",
        .kind = SwitchKind::kInt,
        .doc = "page-cache folios a read fault maps whole (large folios: mm/filemap.c "
               "filemap_map_pages); read_ahead_kb: as large as readahead makes them",
        .default_value = 0,
        .presets = {{.from = {6, 16}, .value = kFolioFollowsReadahead}},
        .lo = 0,
        .hi = 2048,
        .multiple_of = 4,
        .power_of_two = true,
        .words = {{"read_ahead_kb", kFolioFollowsReadahead}},
        .unit = "KiB"},
       [](const MmConfig& c) { return c.pagecache_folio_kb; },
       [](MmConfig& c, int64_t v) { c.pagecache_folio_kb = v; }},
  };
  return table;
}

}  // namespace mmsim::mm

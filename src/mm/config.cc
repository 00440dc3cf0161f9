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
      {{.section = "kernel",
        .key = "workingset_refault_stat",
        .kind = SwitchKind::kChoice,
        .doc = "/proc/vmstat's count of refaulted page-cache pages: none (no shadow entries), "
               "workingset_refault (3.15), or workingset_refault_anon and _file (5.9) "
               "(mm/workingset.c workingset_refault, mm/vmstat.c)",
        .default_value = static_cast<int64_t>(RefaultStat::kSplit),
        .presets = {{.until = {3, 14}, .value = static_cast<int64_t>(RefaultStat::kNone)},
                    {.from = {3, 15},
                     .until = {5, 8},
                     .value = static_cast<int64_t>(RefaultStat::kCombined)}},
        .words = {{"none", static_cast<int64_t>(RefaultStat::kNone)},
                  {"combined", static_cast<int64_t>(RefaultStat::kCombined)},
                  {"split", static_cast<int64_t>(RefaultStat::kSplit)}}},
       [](const MmConfig& c) { return static_cast<int64_t>(c.workingset_refault_stat); },
       [](MmConfig& c, int64_t v) { c.workingset_refault_stat = static_cast<RefaultStat>(v); }},
      {{.section = "kernel",
        .key = "reclaim_lru_type_stats",
        .kind = SwitchKind::kBool,
        .doc = "/proc/vmstat has pgscan_anon/_file and pgsteal_anon/_file, counted by every "
               "reclaim, memcg limit reclaim included (mm/vmscan.c shrink_inactive_list)",
        .default_value = 1,
        .presets = {{.until = {5, 7}, .value = 0}}},
       [](const MmConfig& c) { return static_cast<int64_t>(c.reclaim_lru_type_stats); },
       [](MmConfig& c, int64_t v) { c.reclaim_lru_type_stats = v != 0; }},
      {{.section = "kernel",
        .key = "retried_fault_is_major",
        .kind = SwitchKind::kBool,
        .doc = "a fault retried after the mmap lock was dropped for I/O (a readahead mark, a "
               "page under I/O) counts in the task's maj_flt, not in vmstat pgmajfault "
               "(mm/memory.c mm_account_fault, 5.9); from 6.7 file faults start under the "
               "per-VMA lock and their retry under the mmap lock is not FAULT_FLAG_TRIED "
               "(measured: Debian 6.12.117 counts 1 maj_flt where 6.1.192 counts 257)",
        .default_value = 0,
        .presets = {{.from = {5, 9}, .until = {6, 6}, .value = 1}}},
       [](const MmConfig& c) { return static_cast<int64_t>(c.retried_fault_is_major); },
       [](MmConfig& c, int64_t v) { c.retried_fault_is_major = v != 0; }},
      {{.section = "kernel",
        .key = "pgfault_per_attempt",
        .kind = SwitchKind::kBool,
        .doc = "vmstat's and memcg's pgfault count each attempt of a fault (handle_mm_fault "
               "@6.1), so a fault retried after dropping the mmap lock for I/O counts twice; "
               "from 6.5 a fault counts once, when it completes (mm_account_fault @6.12; \"mm: "
               "do not increment pgfault stats when page fault handler retries\", S. "
               "Baghdasaryan, April 2023: the 6.5 release from memory)",
        .default_value = 0,
        .presets = {{.until = {6, 4}, .value = 1}}},
       [](const MmConfig& c) { return static_cast<int64_t>(c.pgfault_per_attempt); },
       [](MmConfig& c, int64_t v) { c.pgfault_per_attempt = v != 0; }},
      {{.section = "kernel",
        .key = "prot_numa_savedwrite",
        .kind = SwitchKind::kBool,
        .doc = "a NUMA hinting PTE or PMD keeps its write bit (change_pte_range's "
               "pte_mk_savedwrite, x86's generic fallback pte_mkwrite @6.1), so the migration "
               "that a hinting fault starts makes a writable migration entry and the moved page "
               "stays writable. From 6.2 (6a56ccbcf6c6 \"mm/autonuma: use "
               "can_change_(pte|pmd)_writable() to replace savedwrite\": absent from 6.1.192, "
               "in 6.2.12) PAGE_NONE drops the write bit: the migration entry is read-only "
               "(readable-exclusive), remove_migration_pte maps the new page read-only and the "
               "next write faults and reuses it (do_wp_page, do_huge_pmd_wp_page @6.12); a "
               "hinting fault whose migration fails after isolating the folio maps it "
               "read-only too (do_numa_page out_map)",
        .default_value = 0,
        .presets = {{.until = {6, 1}, .value = 1}}},
       [](const MmConfig& c) { return static_cast<int64_t>(c.prot_numa_savedwrite); },
       [](MmConfig& c, int64_t v) { c.prot_numa_savedwrite = v != 0; }},
      {{.section = "kernel",
        .key = "workingset_restore_stat",
        .kind = SwitchKind::kBool,
        .doc = "/proc/vmstat counts refaults of pages that had been active, workingset_restore "
               "(mm/workingset.c workingset_refault; 4.20, from memory)",
        .default_value = 1,
        .presets = {{.until = {4, 19}, .value = 0}}},
       [](const MmConfig& c) { return static_cast<int64_t>(c.workingset_restore_stat); },
       [](MmConfig& c, int64_t v) { c.workingset_restore_stat = v != 0; }},
      {{.section = "kernel",
        .key = "pagetable_stat",
        .kind = SwitchKind::kChoice,
        .doc = "which page-table pages /proc/vmstat nr_page_table_pages and memory.stat "
               "pagetables count (NR_PAGETABLE, by the table's constructor): pte tables only, "
               "pmd tables too (\"mm: account PMD tables like PTE tables\", 4.20, from memory; "
               "include/linux/mm.h @6.1), or pud tables too (pagetable_pud_ctor, 6.7: absent "
               "from 6.1, in 6.12). PGDs never",
        .default_value = static_cast<int64_t>(PagetableStat::kPud),
        .presets = {{.until = {4, 19}, .value = static_cast<int64_t>(PagetableStat::kPte)},
                    {.from = {4, 20},
                     .until = {6, 6},
                     .value = static_cast<int64_t>(PagetableStat::kPmd)}},
        .words = {{"pte", static_cast<int64_t>(PagetableStat::kPte)},
                  {"pmd", static_cast<int64_t>(PagetableStat::kPmd)},
                  {"pud", static_cast<int64_t>(PagetableStat::kPud)}}},
       [](const MmConfig& c) { return static_cast<int64_t>(c.pagetable_stat); },
       [](MmConfig& c, int64_t v) { c.pagetable_stat = static_cast<PagetableStat>(v); }},
      {{.section = "kernel",
        .key = "page_table_isolation",
        .kind = SwitchKind::kBool,
        .doc = "CONFIG_PAGE_TABLE_ISOLATION (4.15, on in Debian's x86-64 kernels): a process's "
               "PGD is an order-1 allocation, the kernel's half and the user copy "
               "(arch/x86/include/asm/pgalloc.h PGD_ALLOCATION_ORDER @6.1, @6.12)",
        .default_value = 1,
        .presets = {{.until = {4, 14}, .value = 0}}},
       [](const MmConfig& c) { return static_cast<int64_t>(c.page_table_isolation); },
       [](MmConfig& c, int64_t v) { c.page_table_isolation = v != 0; }},
      {{.section = "kernel",
        .key = "min_free_kbytes",
        .kind = SwitchKind::kInt,
        .doc = "vm.min_free_kbytes: the min watermark of all nodes together, shared out by node "
               "size; auto: 4 x sqrt(memory in KiB) within [128, 262144] "
               "(mm/page_alloc.c calculate_min_free_kbytes), raised when THP is on to 11 "
               "pageblocks (22 MiB) per zone, at most 5% of memory, as khugepaged does at boot "
               "(mm/khugepaged.c set_recommended_min_free_kbytes, read in 6.1); a value given "
               "here is taken as set after boot and kept",
        .default_value = kAutoMinFree,
        .lo = kAutoMinFree,
        .hi = int64_t{1} << 40,
        .words = {{"auto", kAutoMinFree}},
        .unit = "KiB"},
       [](const MmConfig& c) { return c.min_free_kbytes; },
       [](MmConfig& c, int64_t v) { c.min_free_kbytes = v; }},
      {{.section = "kernel",
        .key = "watermark_scale_factor",
        .kind = SwitchKind::kInt,
        .doc = "vm.watermark_scale_factor: low = min + gap, high = low + gap, gap = "
               "max(min/4, node pages x factor / 10000) (mm/page_alloc.c __setup_per_zone_wmarks, "
               "4.6); 0: the fixed min/4 of older kernels",
        .default_value = 10,
        .presets = {{.until = {4, 5}, .value = 0}},
        .lo = 0,
        .hi = 3000},
       [](const MmConfig& c) { return c.watermark_scale_factor; },
       [](MmConfig& c, int64_t v) { c.watermark_scale_factor = v; }},
      {{.section = "kernel",
        .key = "dirty_ratio",
        .kind = SwitchKind::kInt,
        .doc = "vm.dirty_ratio: a dirty domain's limit, in % of its dirtyable memory (free "
               "pages above the reserves and the file LRUs; for a cgroup v2 memcg its file pages "
               "and its room left), past which balance_dirty_pages holds a dirtier back hardest "
               "(mm/page-writeback.c domain_dirty_limits)",
        .default_value = 20,
        .lo = 0,
        .hi = 100,
        .unit = "%"},
       [](const MmConfig& c) { return c.dirty_ratio; },
       [](MmConfig& c, int64_t v) { c.dirty_ratio = v; }},
      {{.section = "kernel",
        .key = "dirty_background_ratio",
        .kind = SwitchKind::kInt,
        .doc = "vm.dirty_background_ratio: the background threshold, in % of a domain's "
               "dirtyable memory, over which the flusher writes dirty page cache; half the limit "
               "if not below it",
        .default_value = 10,
        .lo = 0,
        .hi = 100,
        .unit = "%"},
       [](const MmConfig& c) { return c.dirty_background_ratio; },
       [](MmConfig& c, int64_t v) { c.dirty_background_ratio = v; }},
      {{.section = "kernel",
        .key = "dirty_expire_centisecs",
        .kind = SwitchKind::kInt,
        .doc = "vm.dirty_expire_centisecs: the periodic (kupdate) writeback writes inodes "
               "dirty for longer than this",
        .default_value = 3000,
        .lo = 0,
        .hi = int64_t{1} << 31},
       [](const MmConfig& c) { return c.dirty_expire_centisecs; },
       [](MmConfig& c, int64_t v) { c.dirty_expire_centisecs = v; }},
      {{.section = "kernel",
        .key = "dirty_writeback_centisecs",
        .kind = SwitchKind::kInt,
        .doc = "vm.dirty_writeback_centisecs: the flusher's period while anything is dirty "
               "(0: no periodic writeback)",
        .default_value = 500,
        .lo = 0,
        .hi = int64_t{1} << 31},
       [](const MmConfig& c) { return c.dirty_writeback_centisecs; },
       [](MmConfig& c, int64_t v) { c.dirty_writeback_centisecs = v; }},
      {{.section = "kernel",
        .key = "anon_fault_active",
        .kind = SwitchKind::kBool,
        .doc = "a new anonymous folio starts on the active LRU list (before 5.9: "
               "lru_cache_add_active_or_unevictable) rather than the inactive one (5.9, from "
               "memory; absent in 5.8, present in 5.11)",
        .default_value = 0,
        .presets = {{.until = {5, 8}, .value = 1}}},
       [](const MmConfig& c) { return static_cast<int64_t>(c.anon_fault_active); },
       [](MmConfig& c, int64_t v) { c.anon_fault_active = v != 0; }},
      {{.section = "kernel",
        .key = "lru_add_batch",
        .kind = SwitchKind::kInt,
        .doc = "folios in a CPU's lru_add batch (PAGEVEC_SIZE, mm/swap.c folio_add_lru): a new "
               "small folio waits there, off the LRU (so NUMA balancing cannot isolate it) and "
               "with the batch's reference (so 5.17-6.9's change_prot_numa skips it), until the "
               "batch fills, a large folio is added, or lru_add_drain runs on that CPU (munmap, "
               "MADV_DONTNEED, exit, reclaim) or on all (khugepaged's scan): 14 up to 4.15, 15 "
               "from 4.16 (include/linux/pagevec.h), 31 in 6.12 (the change came after 6.6; its "
               "release is not checked); 0: each folio goes on its LRU at once",
        .default_value = 31,
        .presets = {{.until = {4, 15}, .value = 14},
                    {.from = {4, 16}, .until = {6, 11}, .value = 15}},
        .lo = 0,
        .hi = 255},
       [](const MmConfig& c) { return c.lru_add_batch; },
       [](MmConfig& c, int64_t v) { c.lru_add_batch = v; }},
      {{.section = "kernel",
        .key = "migrate_lru_drain",
        .kind = SwitchKind::kChoice,
        .doc = "which page migrations drain the migrating CPU's lru_add batch after putting the "
               "new folio in it, so that the folio is on its LRU (and can be isolated again by "
               "the next hinting fault) at once: never (up to 5.17, __unmap_and_move's "
               "putback_lru_page leaves it in the batch); mapped, when the old folio was mapped "
               "(5.18: c3096e6782b7 \"mm/migrate: __unmap_and_move() push good newpage to "
               "LRU\"; migrate_folio_move @6.1); mlocked, only when it was mlocked (6.7: "
               "eebb3dabbb5c \"mm: migrate: record the mlocked page status to remove unnecessary "
               "lru drain\"; migrate_folio_move @6.12)",
        .default_value = static_cast<int64_t>(MigrateDrain::kMlocked),
        .presets = {{.until = {5, 17}, .value = static_cast<int64_t>(MigrateDrain::kNever)},
                    {.from = {5, 18},
                     .until = {6, 6},
                     .value = static_cast<int64_t>(MigrateDrain::kMapped)}},
        .words = {{"never", static_cast<int64_t>(MigrateDrain::kNever)},
                  {"mapped", static_cast<int64_t>(MigrateDrain::kMapped)},
                  {"mlocked", static_cast<int64_t>(MigrateDrain::kMlocked)}}},
       [](const MmConfig& c) { return static_cast<int64_t>(c.migrate_lru_drain); },
       [](MmConfig& c, int64_t v) { c.migrate_lru_drain = static_cast<MigrateDrain>(v); }},
      {{.section = "kernel",
        .key = "memory_tiers",
        .kind = SwitchKind::kChoice,
        .doc = "how nodes form memory tiers: none; cpu-nodes (CPU-less nodes below nodes with "
               "CPUs, mm/migrate.c node_demotion, 5.15); kmem (mm/memory-tiers.c: boot memory "
               "is DRAM, dax/kmem memory a slow tier, 6.1); kmem-hmat (dax/kmem memory placed by "
               "HMAT latency and bandwidth, mt_calc_adistance, 6.7); hmat (CPU-less boot nodes "
               "too, memory_tier_late_init, 6.10)",
        .default_value = static_cast<int64_t>(TierRule::kHmat),
        .presets =
            {{.until = {5, 14}, .value = static_cast<int64_t>(TierRule::kNone)},
             {.from = {5, 15}, .until = {6, 0}, .value = static_cast<int64_t>(TierRule::kCpuNodes)},
             {.from = {6, 1}, .until = {6, 6}, .value = static_cast<int64_t>(TierRule::kKmem)},
             {.from = {6, 7}, .until = {6, 9}, .value = static_cast<int64_t>(TierRule::kKmemHmat)}},
        .words = {{"none", static_cast<int64_t>(TierRule::kNone)},
                  {"cpu-nodes", static_cast<int64_t>(TierRule::kCpuNodes)},
                  {"kmem", static_cast<int64_t>(TierRule::kKmem)},
                  {"kmem-hmat", static_cast<int64_t>(TierRule::kKmemHmat)},
                  {"hmat", static_cast<int64_t>(TierRule::kHmat)}}},
       [](const MmConfig& c) { return static_cast<int64_t>(c.memory_tiers); },
       [](MmConfig& c, int64_t v) { c.memory_tiers = static_cast<TierRule>(v); }},
      {{.section = "kernel",
        .key = "demotion_enabled",
        .kind = SwitchKind::kBool,
        .doc = "/sys/kernel/mm/numa/demotion_enabled: reclaim migrates a node's cold pages to "
               "its demotion target in the next tier instead of evicting them "
               "(mm/vmscan.c can_demote, 5.15; off by default)",
        .default_value = 0},
       [](const MmConfig& c) { return static_cast<int64_t>(c.demotion_enabled); },
       [](MmConfig& c, int64_t v) { c.demotion_enabled = v != 0; }},
      {{.section = "kernel",
        .key = "transparent_hugepage",
        .kind = SwitchKind::kChoice,
        .doc = "/sys/kernel/mm/transparent_hugepage/enabled: which private anonymous VMAs "
               "fault 2 MiB folios: always, madvise (MADV_HUGEPAGE ones) or never "
               "(mm/huge_memory.c hugepage_vma_check, do_huge_pmd_anonymous_page). always "
               "is mm/Kconfig's default (TRANSPARENT_HUGEPAGE_ALWAYS) and Debian's build "
               "(config-6.1 and config-6.12). Off on machines under 512 MiB (hugepage_init)",
        .default_value = static_cast<int64_t>(ThpEnabled::kAlways),
        .words = {{"never", static_cast<int64_t>(ThpEnabled::kNever)},
                  {"madvise", static_cast<int64_t>(ThpEnabled::kMadvise)},
                  {"always", static_cast<int64_t>(ThpEnabled::kAlways)}}},
       [](const MmConfig& c) { return static_cast<int64_t>(c.thp_enabled); },
       [](MmConfig& c, int64_t v) { c.thp_enabled = static_cast<ThpEnabled>(v); }},
      {{.section = "kernel",
        .key = "transparent_hugepage_defrag",
        .kind = SwitchKind::kChoice,
        .doc = "/sys/kernel/mm/transparent_hugepage/defrag: whether a THP fault may reclaim "
               "(mm/huge_memory.c vma_thp_gfp_mask): always; defer and defer+madvise wake "
               "kswapd instead (defer+madvise, and madvise, reclaim for MADV_HUGEPAGE VMAs); "
               "never. madvise in every version. SIMPLIFICATION: no compaction, reclaim only",
        .default_value = static_cast<int64_t>(ThpDefrag::kMadvise),
        .words = {{"never", static_cast<int64_t>(ThpDefrag::kNever)},
                  {"madvise", static_cast<int64_t>(ThpDefrag::kMadvise)},
                  {"defer+madvise", static_cast<int64_t>(ThpDefrag::kDeferMadvise)},
                  {"defer", static_cast<int64_t>(ThpDefrag::kDefer)},
                  {"always", static_cast<int64_t>(ThpDefrag::kAlways)}}},
       [](const MmConfig& c) { return static_cast<int64_t>(c.thp_defrag); },
       [](MmConfig& c, int64_t v) { c.thp_defrag = static_cast<ThpDefrag>(v); }},
      {{.section = "kernel",
        .key = "thp_use_zero_page",
        .kind = SwitchKind::kBool,
        .doc = "/sys/kernel/mm/transparent_hugepage/use_zero_page: a read fault on a THP VMA "
               "maps the huge zero page (mm/huge_memory.c do_huge_pmd_anonymous_page); on by "
               "default in every version",
        .default_value = 1},
       [](const MmConfig& c) { return static_cast<int64_t>(c.thp_use_zero_page); },
       [](MmConfig& c, int64_t v) { c.thp_use_zero_page = v != 0; }},
      {{.section = "kernel",
        .key = "khugepaged_scan_sleep_millisecs",
        .kind = SwitchKind::kInt,
        .doc = "/sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs: khugepaged "
               "sleeps this long between passes while an mm is registered (mm/khugepaged.c "
               "khugepaged_wait_work, read in 6.1 and 6.12); it sleeps without a timeout while "
               "none is, and the first registration wakes it at once. SIMPLIFICATION: 0 (passes "
               "back to back) is taken as one scheduler tick",
        .default_value = 10000,
        .lo = 0,
        .hi = 3600000},
       [](const MmConfig& c) { return c.khugepaged_scan_sleep_ms; },
       [](MmConfig& c, int64_t v) { c.khugepaged_scan_sleep_ms = v; }},
      {{.section = "kernel",
        .key = "khugepaged_alloc_sleep_millisecs",
        .kind = SwitchKind::kInt,
        .doc = "/sys/kernel/mm/transparent_hugepage/khugepaged/alloc_sleep_millisecs: after a "
               "failed huge-page allocation khugepaged sleeps this long, then goes on with its "
               "pass; a second failure ends the pass (khugepaged_do_scan, read in 6.1)",
        .default_value = 60000,
        .lo = 0,
        .hi = 3600000},
       [](const MmConfig& c) { return c.khugepaged_alloc_sleep_ms; },
       [](MmConfig& c, int64_t v) { c.khugepaged_alloc_sleep_ms = v; }},
      {{.section = "kernel",
        .key = "khugepaged_pages_to_scan",
        .kind = SwitchKind::kInt,
        .doc = "/sys/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan: a pass's budget, "
               "512 per PMD range scanned and 1 per mm and per VMA skipped (khugepaged_init: "
               "HPAGE_PMD_NR x 8; khugepaged_scan_mm_slot, read in 6.1 and 6.12)",
        .default_value = 4096,
        .lo = 1,
        .hi = 1 << 30},
       [](const MmConfig& c) { return c.khugepaged_pages_to_scan; },
       [](MmConfig& c, int64_t v) { c.khugepaged_pages_to_scan = v; }},
      {{.section = "kernel",
        .key = "khugepaged_max_ptes_none",
        .kind = SwitchKind::kInt,
        .doc = "/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none: empty (or zero "
               "page) PTEs a range may have and still be collapsed, each becoming a zeroed page "
               "of the THP (hpage_collapse_scan_pmd; default HPAGE_PMD_NR - 1)",
        .default_value = 511,
        .lo = 0,
        .hi = 511},
       [](const MmConfig& c) { return c.khugepaged_max_ptes_none; },
       [](MmConfig& c, int64_t v) { c.khugepaged_max_ptes_none = v; }},
      {{.section = "kernel",
        .key = "khugepaged_max_ptes_shared",
        .kind = SwitchKind::kInt,
        .doc = "/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_shared: pages mapped "
               "more than once (after fork) a range may have and still be collapsed "
               "(hpage_collapse_scan_pmd; default HPAGE_PMD_NR / 2, 5.8 from memory; before, a "
               "shared page refused the range: 0)",
        .default_value = 256,
        .presets = {{.until = {5, 7}, .value = 0}},
        .lo = 0,
        .hi = 512},
       [](const MmConfig& c) { return c.khugepaged_max_ptes_shared; },
       [](MmConfig& c, int64_t v) { c.khugepaged_max_ptes_shared = v; }},
      {{.section = "kernel",
        .key = "khugepaged_defrag",
        .kind = SwitchKind::kBool,
        .doc = "/sys/kernel/mm/transparent_hugepage/khugepaged/defrag: khugepaged's huge-page "
               "allocation may reclaim (GFP_TRANSHUGE) rather than only take free pages "
               "(alloc_hugepage_khugepaged_gfpmask); on by default",
        .default_value = 1},
       [](const MmConfig& c) { return static_cast<int64_t>(c.khugepaged_defrag); },
       [](MmConfig& c, int64_t v) { c.khugepaged_defrag = v != 0; }},
      {{.section = "kernel",
        .key = "thp_anon_align",
        .kind = SwitchKind::kChoice,
        .doc = "which private anonymous mmaps start on a 2 MiB boundary, so that all of their "
               "2 MiB ranges can be THPs (mm/mmap.c __get_unmapped_area, "
               "thp_get_unmapped_area): none, the mmap base being randomised at page "
               "granularity (a 2 MiB-multiple mapping then holds one THP fewer than it could; "
               "read in 6.1); large, 2 MiB or more (6.7, \"mm: align larger anonymous mappings "
               "on THP boundaries\", from memory); pmd-multiple, lengths that are multiples of "
               "2 MiB (read in 6.12; the restriction's first release not checked)",
        .default_value = static_cast<int64_t>(AnonAlign::kPmdMultiple),
        .presets =
            {{.until = {6, 6}, .value = static_cast<int64_t>(AnonAlign::kNone)},
             {.from = {6, 7}, .until = {6, 11}, .value = static_cast<int64_t>(AnonAlign::kLarge)}},
        .words = {{"none", static_cast<int64_t>(AnonAlign::kNone)},
                  {"large", static_cast<int64_t>(AnonAlign::kLarge)},
                  {"pmd-multiple", static_cast<int64_t>(AnonAlign::kPmdMultiple)}}},
       [](const MmConfig& c) { return static_cast<int64_t>(c.thp_anon_align); },
       [](MmConfig& c, int64_t v) { c.thp_anon_align = static_cast<AnonAlign>(v); }},
      {{.section = "kernel",
        .key = "file_thp_align",
        .kind = SwitchKind::kBool,
        .doc = "a disk file's mmap covering a whole aligned 2 MiB of the file starts at an "
               "address congruent to its offset modulo 2 MiB (ext4's get_unmapped_area, "
               "thp_get_unmapped_area @6.1, 6.12), so fault-around's blocks line up with the "
               "readahead windows; before, only DAX files (\"mm: Align THP mappings for "
               "non-DAX\": 5.18, from memory). Whatever the THP setting; tmpfs does not",
        .default_value = 1,
        .presets = {{.until = {5, 17}, .value = 0}}},
       [](const MmConfig& c) { return static_cast<int64_t>(c.file_thp_align); },
       [](MmConfig& c, int64_t v) { c.file_thp_align = v != 0; }},
      {{.section = "kernel",
        .key = "map_stack_nohugepage",
        .kind = SwitchKind::kBool,
        .doc = "mmap's MAP_STACK (glibc's thread stacks) sets VM_NOHUGEPAGE, so a thread "
               "stack never faults THPs and never merges with a mapping that may "
               "(include/linux/mman.h calc_vm_flag_bits: read in 6.12, absent in 6.1; "
               "\"mm: mmap: map MAP_STACK to VM_NOHUGEPAGE\", 6.7, from memory)",
        .default_value = 1,
        .presets = {{.until = {6, 6}, .value = 0}}},
       [](const MmConfig& c) { return static_cast<int64_t>(c.map_stack_nohugepage); },
       [](MmConfig& c, int64_t v) { c.map_stack_nohugepage = v != 0; }},
      {{.section = "kernel",
        .key = "randomize_va_space",
        .kind = SwitchKind::kInt,
        .doc = "kernel.randomize_va_space: 0 keeps the mmap base where x86-64 puts it "
               "without randomisation, 0x7ffff7fff000 (TASK_SIZE less the 128 MiB gap above "
               "it: mmap_base, arch/x86/mm/mmap.c), a page below a 2 MiB boundary, as "
               "`mmsim native` then runs mmsim-exec (personality ADDR_NO_RANDOMIZE); 1 or 2 "
               "(the default) randomise it at page granularity from the run's seed "
               "(arch_mmap_rnd), which decides where unaligned mappings meet the THP grid",
        .default_value = 2,
        .lo = 0,
        .hi = 2},
       [](const MmConfig& c) { return c.randomize_va_space; },
       [](MmConfig& c, int64_t v) { c.randomize_va_space = v; }},
      {{.section = "kernel",
        .key = "vdso_in_mmap_area",
        .kind = SwitchKind::kBool,
        .doc = "exec maps the vDSO ([vvar], 4 pages, then [vdso], 2) where get_unmapped_area "
               "puts it, as the first mappings below the mmap base, which moves every later "
               "mapping 6 pages down; before, beside the stack (vdso_addr), unless "
               "randomize_va_space is 0. Guest kprobe traces of map_vdso and mmap_region: "
               "near the stack on 6.1, at the mmap base on 6.1 without randomisation and on "
               "6.12; Kees Cook's \"x86/vdso: Move vDSO to mmap region\" (2024, 6.9 from "
               "memory)",
        .default_value = 1,
        .presets = {{.until = {6, 8}, .value = 0}}},
       [](const MmConfig& c) { return static_cast<int64_t>(c.vdso_in_mmap_area); },
       [](MmConfig& c, int64_t v) { c.vdso_in_mmap_area = v != 0; }},
  };
  return table;
}

}  // namespace mmsim::mm

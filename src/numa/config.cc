#include "numa/config.h"

#include <vector>

namespace mmsim::numa {

namespace {

// A boolean rule that holds for the kernels in [from, until].
SwitchInfo rule(std::string_view key, std::string_view doc, KernelVersion from,
                KernelVersion until = kNewestKernel) {
  return {.section = "numa",
          .key = key,
          .kind = SwitchKind::kBool,
          .doc = doc,
          .default_value = 0,
          .presets = {{.from = from, .until = until, .value = 1}}};
}

// A numa_balancing_* sysctl in milliseconds or megabytes.
SwitchInfo sysctl(std::string_view key, std::string_view doc, int64_t def, int64_t hi,
                  std::string_view unit) {
  return {.section = "kernel",
          .key = key,
          .kind = SwitchKind::kInt,
          .doc = doc,
          .default_value = def,
          .lo = 1,
          .hi = hi,
          .unit = unit};
}

}  // namespace

bool has_numa_balancing(KernelVersion v) { return v >= KernelVersion{3, 8}; }
bool has_tiering_mode(KernelVersion v) { return v >= KernelVersion{5, 18}; }

std::span<const Switch<NumaConfig>> numa_switches() {
  using C = NumaConfig;
  static const std::vector<Switch<C>> table = {
      {{.section = "kernel",
        .key = "numa_balancing",
        .kind = SwitchKind::kInt,
        .doc = "kernel.numa_balancing: automatic NUMA balancing off (0), on (1), memory "
               "tiering only (2: promote hot pages of slow tiers, 5.18+) or both (3); auto: 1 "
               "with more than one node (kernel/sched/fair.c, 3.8+)",
        .default_value = -1,
        .lo = 0,
        .hi = 3,
        .words = {{"auto", -1}}},
       [](const C& c) { return c.numa_balancing; },
       [](C& c, int64_t v) { c.numa_balancing = v; }},
      {sysctl("numa_balancing_scan_delay_ms", "delay before a new mm's first scan", 1000, 3600000,
              "ms"),
       [](const C& c) { return c.numa_balancing_scan_delay_ms; },
       [](C& c, int64_t v) { c.numa_balancing_scan_delay_ms = v; }},
      {sysctl("numa_balancing_scan_period_min_ms", "shortest scan period (task_scan_min)", 1000,
              3600000, "ms"),
       [](const C& c) { return c.numa_balancing_scan_period_min_ms; },
       [](C& c, int64_t v) { c.numa_balancing_scan_period_min_ms = v; }},
      {sysctl("numa_balancing_scan_period_max_ms", "longest scan period (task_scan_max)", 60000,
              3600000, "ms"),
       [](const C& c) { return c.numa_balancing_scan_period_max_ms; },
       [](C& c, int64_t v) { c.numa_balancing_scan_period_max_ms = v; }},
      {sysctl("numa_balancing_scan_size_mb", "address space marked per scan pass", 256, 1 << 20,
              "MB"),
       [](const C& c) { return c.numa_balancing_scan_size_mb; },
       [](C& c, int64_t v) { c.numa_balancing_scan_size_mb = v; }},
      {sysctl("numa_balancing_promote_rate_limit_MBps",
              "memory tiering: promotion candidates a node takes per second (6.1+)", 65536,
              int64_t{1} << 30, "MB/s"),
       [](const C& c) { return c.numa_balancing_promote_rate_limit_mbps; },
       [](C& c, int64_t v) { c.numa_balancing_promote_rate_limit_mbps = v; }},
      {sysctl("numa_balancing_hot_threshold_ms",
              "memory tiering: a slow-tier page whose hinting fault comes this soon after its "
              "scan is hot (debugfs sched/numa_balancing/hot_threshold_ms, 6.1+)",
              1000, 3600000, "ms"),
       [](const C& c) { return c.numa_balancing_hot_threshold_ms; },
       [](C& c, int64_t v) { c.numa_balancing_hot_threshold_ms = v; }},
      {rule("promote_hot_threshold",
            "memory tiering picks hot slow-tier pages by hint-fault latency (the scan time "
            "kept in the folio's cpupid field), limits promotion candidates per second, "
            "adjusts the threshold each scan_period_max, and keeps no task statistics of "
            "slow-tier faults (kernel/sched/fair.c should_numa_migrate_memory, 6.1); 5.18-6.0 "
            "decide as for any page",
            {6, 1}),
       [](const C& c) -> int64_t { return c.promote_hot_threshold; },
       [](C& c, int64_t v) { c.promote_hot_threshold = v != 0; }},
      {rule("skip_shared",
            "pages mapped by more than one mm are neither marked nor migrated, whatever the "
            "mapping (mm/mprotect.c change_pte_range, mm/migrate.c migrate_misplaced_page)",
            {3, 8}, {3, 12}),
       [](const C& c) -> int64_t { return c.skip_shared; },
       [](C& c, int64_t v) { c.skip_shared = v != 0; }},
      {rule("skip_shared_cow",
            "change_prot_numa leaves COW pages mapped by more than one mm alone (mm/mprotect.c "
            "change_pte_range, commit 859d4adc3415)",
            {4, 16}),
       [](const C& c) -> int64_t { return c.skip_shared_cow; },
       [](C& c, int64_t v) { c.skip_shared_cow = v != 0; }},
      {rule("shared_cow_refcount",
            "the shared-COW skip tests the reference count (page_count != 1) rather than the "
            "mapcount, so page cache in a private writable mapping is never marked "
            "(mm/mprotect.c change_pte_range: read in 5.17-rc5 to 6.9; 5.15 has the mapcount, "
            "5.16 was not read; 6.10 tests folio_likely_mapped_shared, the mapcount again)",
            {5, 17}, {6, 9}),
       [](const C& c) -> int64_t { return c.shared_cow_refcount; },
       [](C& c, int64_t v) { c.shared_cow_refcount = v != 0; }},
      {{.section = "numa",
        .key = "skip_shmem_default_policy",
        .kind = SwitchKind::kBool,
        .doc = "task_numa_work skips a shmem VMA (tmpfs, memfd, shared anonymous) that has no "
               "policy of its own: vma_policy_mof took the shared policy's absence for no "
               "MPOL_F_MOF (mm/mempolicy.c, since fc3147245d19 in 3.13; fixed by \"mm: "
               "mempolicy: fix automatic numa balancing for shmem\", d230991493b5, 2026, "
               "which Debian's 6.12.117 carries and 6.1.192 does not; the mainline release "
               "that has it is not known, so 6.13 on keep the skip, unverified)",
        .default_value = 0,
        .presets = {{.from = {3, 13}, .until = {6, 11}, .value = 1},
                    {.from = {6, 13}, .value = 1}}},
       [](const C& c) -> int64_t { return c.skip_shmem_default_policy; },
       [](C& c, int64_t v) { c.skip_shmem_default_policy = v != 0; }},
      {rule("skip_dirty_file",
            "change_prot_numa skips dirty page-cache pages and migrate_misplaced_page refuses "
            "them (mm/mprotect.c change_pte_range, mm/migrate.c)",
            {4, 17}),
       [](const C& c) -> int64_t { return c.skip_dirty_file; },
       [](C& c, int64_t v) { c.skip_dirty_file = v != 0; }},
      {rule("skip_target_node",
            "a single-threaded task's private pages already on its node are not marked "
            "(mm/mprotect.c change_pte_range, target_node)",
            {4, 10}),
       [](const C& c) -> int64_t { return c.skip_target_node; },
       [](C& c, int64_t v) { c.skip_target_node = v != 0; }},
      {rule("migrate_rate_limit",
            "migrate_misplaced_page refuses pages beyond ratelimit_pages per 100 ms per node "
            "(mm/migrate.c numamigrate_update_ratelimit; removed by efaffc5e40ae)",
            {3, 8}, {4, 18}),
       [](const C& c) -> int64_t { return c.migrate_rate_limit; },
       [](C& c, int64_t v) { c.migrate_rate_limit = v != 0; }},
      {{.section = "numa",
        .key = "ratelimit_pages",
        .kind = SwitchKind::kInt,
        .doc = "pages migrate_rate_limit lets through per node per 100 ms (128 MB)",
        .default_value = 32768,
        .lo = 1,
        .hi = INT64_MAX,
        .unit = "pages"},
       [](const C& c) { return c.ratelimit_pages; },
       [](C& c, int64_t v) { c.ratelimit_pages = v; }},
      {rule("scan_start_group_scaled",
            "the period task_tick_numa sets at a task's first tick is task_scan_start, "
            "task_scan_min scaled up by the numa group's sharing (kernel/sched/fair.c, "
            "b5dd77c8bdad in 4.14); before, task_scan_min itself (3.13-4.13; 3.8-3.12 used "
            "the sysctl minimum, which task_scan_min approximates); the first scan waits "
            "scan_delay in every version",
            {4, 14}),
       [](const C& c) -> int64_t { return c.scan_start_group_scaled; },
       [](C& c, int64_t v) { c.scan_start_group_scaled = v != 0; }},
      {rule("thread_scan_stagger",
            "init_numa_balancing staggers a new thread's first scan: node_stamp starts at "
            "min(task_scan_max, period x mm_users) ns + 2 ticks, so the thread keeps "
            "scan_delay as its period instead of taking task_scan_start's at its first tick "
            "(kernel/sched/fair.c, 137844759843 in 4.19)",
            {4, 19}),
       [](const C& c) -> int64_t { return c.thread_scan_stagger; },
       [](C& c, int64_t v) { c.thread_scan_stagger = v != 0; }},
      {{.section = "numa",
        .key = "scan_period_update",
        .kind = SwitchKind::kChoice,
        .doc = "the arithmetic of update_task_scan_period (kernel/sched/fair.c)",
        .default_value = static_cast<int64_t>(ScanPeriodUpdate::k313),
        .presets = {{.from = {4, 14}, .value = static_cast<int64_t>(ScanPeriodUpdate::k414)}},
        .words = {{"3.13", static_cast<int64_t>(ScanPeriodUpdate::k313)},
                  {"4.14", static_cast<int64_t>(ScanPeriodUpdate::k414)}}},
       [](const C& c) { return static_cast<int64_t>(c.scan_period_update); },
       [](C& c, int64_t v) { c.scan_period_update = static_cast<ScanPeriodUpdate>(v); }},
      {{.section = "numa",
        .key = "numa_imbalance",
        .kind = SwitchKind::kChoice,
        .doc = "the NUMA imbalance the scheduler allows (kernel/sched/fair.c): load: a new task "
               "goes to the least-loaded node and balancing moves a task to an idle CPU only "
               "within imbalance_pct (3.8-5.4); 5.10: a new task stays on its parent's node "
               "while it has an idle CPU (find_idlest_group, 5.5), and a task moves to an "
               "idle CPU if at most 2 tasks then run there (adjust_numa_imbalance, 5.7; "
               "destination count, 233e7aca4c8a, 5.10); 6.0: both allow an imbalance of 2 "
               "while the destination runs at most imb_numa_nr tasks (read in 6.1 and 6.12). "
               "5.11-5.19 changed the threshold in steps and are given the nearest rule",
        .default_value = static_cast<int64_t>(sched::NumaImbalance::kLoad),
        .presets = {{.from = {5, 5},
                     .until = {5, 15},
                     .value = static_cast<int64_t>(sched::NumaImbalance::k510)},
                    {.from = {5, 16}, .value = static_cast<int64_t>(sched::NumaImbalance::k60)}},
        .words = {{"load", static_cast<int64_t>(sched::NumaImbalance::kLoad)},
                  {"5.10", static_cast<int64_t>(sched::NumaImbalance::k510)},
                  {"6.0", static_cast<int64_t>(sched::NumaImbalance::k60)}}},
       [](const C& c) { return static_cast<int64_t>(c.numa_imbalance); },
       [](C& c, int64_t v) { c.numa_imbalance = static_cast<sched::NumaImbalance>(v); }},
      {rule("backoff_resets_locality",
            "update_task_scan_period's back-off (no useful faults, or a failed migration) "
            "clears numa_faults_locality as its normal path does (kernel/sched/fair.c: "
            "return in 5.15 to 6.11, goto out in 6.12; read in single-release trees and "
            "Debian's 6.1 and 6.12)",
            {6, 12}),
       [](const C& c) -> int64_t { return c.backoff_resets_locality; },
       [](C& c, int64_t v) { c.backoff_resets_locality = v != 0; }},
      {rule("placement_every_fault",
            "task_numa_placement is tried on every hinting fault, not only after "
            "numa_migrate_retry (kernel/sched/fair.c task_numa_fault)",
            kOldestKernel, {4, 18}),
       [](const C& c) -> int64_t { return c.placement_every_fault; },
       [](C& c, int64_t v) { c.placement_every_fault = v != 0; }},
      {rule("waiter_pins_page",
            "a task sleeping on a migration entry holds a page reference, failing the "
            "migration's refcount check (mm/migrate.c migration_entry_wait; put_and_wait in 5.0)",
            kOldestKernel, {4, 20}),
       [](const C& c) -> int64_t { return c.waiter_pins_page; },
       [](C& c, int64_t v) { c.waiter_pins_page = v != 0; }},
      {rule("thp_migrate_legacy",
            "a THP that a hinting fault finds misplaced moves by "
            "migrate_misplaced_transhuge_page (mm/migrate.c): one try with no migration "
            "entries' retries, no thp_migration_* counts, and pgmigrate_fail +512 for a "
            "refusal or a failed allocation but not for a lost race (3.8 to 5.12; replaced by "
            "migrate_misplaced_page's migrate_pages in 5.13, which 5.15 has)",
            kOldestKernel, {5, 12}),
       [](const C& c) -> int64_t { return c.thp_migrate_legacy; },
       [](C& c, int64_t v) { c.thp_migrate_legacy = v != 0; }},
      {rule("hint_pte_kept_for_migration",
            "do_numa_page leaves a misplaced page's hinting PTE PROT_NONE while it migrates "
            "the page, and ptep_clear_flush flushes only an accessible entry, so a base "
            "page's NUMA migration sends no TLB shootdown (mm/memory.c do_numa_page, "
            "mm/pgtable-generic.c ptep_clear_flush @6.1, 6.12; b99a342d4f11 \"NUMA "
            "balancing: reduce TLB flush via delaying mapping on hint page fault\", 5.13); "
            "before, the PTE was made present first and the migration flushed it",
            {5, 13}),
       [](const C& c) -> int64_t { return c.hint_pte_kept_for_migration; },
       [](C& c, int64_t v) { c.hint_pte_kept_for_migration = v != 0; }},
      {rule("thp_migrate_refuse_mapped",
            "numamigrate_isolate_page refuses a THP mapped more than once (mm/migrate.c: "
            "page_count != 3 up to 5.12, total_mapcount > 1 in 5.15 and 6.1; gone in 6.12's "
            "migrate_misplaced_folio_prepare; removed in 6.7 by \"mm: migrate: remove THP "
            "mapcount check in numamigrate_isolate_page()\", from memory, unverified)",
            kOldestKernel, {6, 6}),
       [](const C& c) -> int64_t { return c.thp_migrate_refuse_mapped; },
       [](C& c, int64_t v) { c.thp_migrate_refuse_mapped = v != 0; }},
      {{.section = "numa",
        .key = "vma_scan_filter",
        .kind = SwitchKind::kChoice,
        .doc = "task_numa_work's per-VMA filter (kernel/sched/fair.c vma_is_accessed): none; "
               "pids (6.4-6.6): a VMA waits scan_delay after its first scan, and after the mm's "
               "first two sequences only tasks that took a hinting fault in it within the last "
               "4-8 scan delays scan it; pids-seq (6.7 on, from memory; read in 6.8.1 and 6.12): "
               "the VMA's own first two sequences, once a sequence, a scan already past its "
               "start or not done for more sequences than the mm has threads goes on, and one "
               "VMA is forced when pids skipped them all",
        .default_value = static_cast<int64_t>(VmaScanFilter::kNone),
        .presets =
            {{.from = {6, 4}, .until = {6, 6}, .value = static_cast<int64_t>(VmaScanFilter::kPids)},
             {.from = {6, 7}, .value = static_cast<int64_t>(VmaScanFilter::kPidsSeq)}},
        .words = {{"none", static_cast<int64_t>(VmaScanFilter::kNone)},
                  {"pids", static_cast<int64_t>(VmaScanFilter::kPids)},
                  {"pids-seq", static_cast<int64_t>(VmaScanFilter::kPidsSeq)}}},
       [](const C& c) { return static_cast<int64_t>(c.vma_scan_filter); },
       [](C& c, int64_t v) { c.vma_scan_filter = static_cast<VmaScanFilter>(v); }},
      {rule("pte_mapped_thp_hinting",
            "a hinting fault on a page of a PTE-mapped THP counts the folio's pages "
            "(task_numa_fault), may migrate it whole, and rebuilds its other hinting PTEs in "
            "that page table (mm/memory.c do_numa_page, numa_rebuild_large_mapping @6.12); "
            "before, do_numa_page only made that page present (\"TODO: handle PTE-mapped THP\" "
            "@6.1); 6.10 from memory (\"mm: support multi-size THP numa balancing\")",
            {6, 10}),
       [](const C& c) -> int64_t { return c.pte_mapped_thp_hinting; },
       [](C& c, int64_t v) { c.pte_mapped_thp_hinting = v != 0; }},
      {{.section = "numa",
        .key = "migrate_passes",
        .kind = SwitchKind::kInt,
        .doc = "passes migrate_pages makes over a page that fails with EAGAIN (mm/migrate.c)",
        .default_value = 10,
        .lo = 1,
        .hi = 100},
       [](const C& c) { return c.migrate_passes; },
       [](C& c, int64_t v) { c.migrate_passes = v; }},
      {{.section = "numa",
        .key = "tick_hz",
        .kind = SwitchKind::kInt,
        .doc = "CONFIG_HZ: the scheduler tick that drives task_tick_numa",
        .default_value = 250,
        .lo = 100,
        .hi = 1000,
        .unit = "Hz"},
       [](const C& c) { return c.tick_hz; },
       [](C& c, int64_t v) { c.tick_hz = v; }},
      {{.section = "kernel",
        .key = "skew_tick",
        .kind = SwitchKind::kBool,
        .doc = "the skew_tick boot parameter: each CPU's tick is offset by cpu x half a tick / "
               "CPUs (kernel/time/tick-sched.c tick_setup_sched_timer); off, every CPU's tick "
               "fires at the same instant",
        .default_value = 0},
       [](const C& c) -> int64_t { return c.skew_tick; },
       [](C& c, int64_t v) { c.skew_tick = v != 0; }},
  };
  return table;
}

}  // namespace mmsim::numa

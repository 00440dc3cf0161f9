// Automatic NUMA balancing's switches (the numa_balancing sysctls under
// [kernel], the version rules under [numa]) and its constants, by their
// kernel names (kernel/sched/fair.c, mm/migrate.c).
#pragma once

#include <cstdint>
#include <span>

#include "sched/domains.h"
#include "sim/switches.h"

namespace mmsim::numa {

// kernel/sched/fair.c
inline constexpr int64_t kMaxScanWindow = 2560;      // MAX_SCAN_WINDOW, MB/s
inline constexpr int64_t kNumaPeriodSlots = 10;      // NUMA_PERIOD_SLOTS
inline constexpr int64_t kNumaPeriodThreshold = 7;   // NUMA_PERIOD_THRESHOLD
inline constexpr int64_t kActiveNodeFraction = 3;    // ACTIVE_NODE_FRACTION
inline constexpr int64_t kSmallImp = 30;             // SMALLIMP (task_numa_compare)
inline constexpr int64_t kImbalancePct = 112;        // sd->imbalance_pct of a NUMA domain
inline constexpr int64_t kVirtpagesPerPage = 8;      // task_numa_work: virtpages = pages * 8
inline constexpr int64_t kScanOverheadFactor = 32;   // node_stamp += 32 * scan time
inline constexpr int64_t kNumaScanSeqEarly = 4;      // should_numa_migrate_memory: seq <= 4
inline constexpr uint64_t kScanChunkPages = 512;     // task_numa_work walks 2 MiB (HPAGE) steps
inline constexpr int64_t kMigrateRetryMaxMs = 1000;  // numa_migrate_preferred: at most 1 s
// mm/migrate.c (3.8-4.18): the rate-limit window of migrate_misplaced_page.
inline constexpr int64_t kRatelimitWindowMs = 100;  // migrate_interval_millisecs

enum class ScanPeriodUpdate : int64_t {
  k313 = 0,  // 3.13-4.13: local/remote ratio, scaled by the private share
  k414 = 1,  // 4.14+: private share first, then the local ratio
};

// kernel.numa_balancing's bits (NUMA_BALANCING_NORMAL, _MEMORY_TIERING).
inline constexpr int64_t kNumaBalancingNormal = 1;
inline constexpr int64_t kNumaBalancingTiering = 2;
// The memory-tiering mode's access time: milliseconds in the folio's cpupid
// field, modulo its width (LAST_CPUPID_SHIFT = 21 with NR_CPUS 8192).
inline constexpr uint32_t kAccessTimeMask = (1u << 21) - 1;

enum class VmaScanFilter : uint8_t { kNone, kPids, kPidsSeq };

struct NumaConfig {
  // kernel.numa_balancing: -1 (the default) is on when the machine has more
  // than one node, as the kernel decides at boot.
  int64_t numa_balancing = -1;
  int64_t numa_balancing_scan_delay_ms = 1000;
  int64_t numa_balancing_scan_period_min_ms = 1000;
  int64_t numa_balancing_scan_period_max_ms = 60000;
  int64_t numa_balancing_scan_size_mb = 256;
  // Memory tiering (6.1+): promotion candidates per second, and the
  // hint-fault latency under which a slow-tier page is hot.
  int64_t numa_balancing_promote_rate_limit_mbps = 65536;
  int64_t numa_balancing_hot_threshold_ms = 1000;
  // The tiering mode selects hot slow-tier pages by hint-fault latency,
  // rate-limits promotion and adjusts its threshold (6.1). Before (5.18-6.0)
  // a slow-tier page is decided on as any other.
  bool promote_hot_threshold = false;
  bool skip_shared = false;
  bool skip_shared_cow = false;
  // The shared-COW skip tests the folio's reference count, not its mapcount
  // (5.17-6.9): a page-cache page (the cache holds a reference) or a
  // swap-cache page in a COW mapping is always left alone.
  bool shared_cow_refcount = false;
  bool skip_dirty_file = false;
  // task_numa_work's vma_policy_mof: a shmem VMA (tmpfs, memfd,
  // MAP_SHARED|MAP_ANONYMOUS) with no policy of its own is not scanned: the
  // shared policy's absence was taken for "no MPOL_F_MOF" (3.13 on; fixed
  // in 2026 and in the 6.12 stable series Debian ships).
  bool skip_shmem_default_policy = false;
  bool skip_target_node = false;
  bool migrate_rate_limit = false;
  int64_t ratelimit_pages = 32768;
  bool scan_start_group_scaled = false;
  // init_numa_balancing staggers a new thread's first scan: its node_stamp
  // starts past 0 (137844759843, 4.19), so it keeps scan_delay as its
  // period rather than taking task_scan_start's at its first tick.
  bool thread_scan_stagger = false;
  // update_task_scan_period's back-off clears the locality counts (6.12).
  bool backoff_resets_locality = false;
  ScanPeriodUpdate scan_period_update = ScanPeriodUpdate::k313;
  bool placement_every_fault = false;
  bool waiter_pins_page = false;
  // A THP's hinting fault migrates it by migrate_misplaced_transhuge_page
  // (up to 5.12), not migrate_pages; and numamigrate_isolate_page refuses a
  // THP mapped more than once (up to 6.1).
  bool thp_migrate_legacy = false;
  bool thp_migrate_refuse_mapped = false;
  // do_numa_page keeps a misplaced page's hinting PTE PROT_NONE until the
  // migration replaces it, so the migration's ptep_clear_flush sends no IPI
  // (5.13); before, it made the PTE present first and the migration flushed
  // it.
  bool hint_pte_kept_for_migration = false;
  // task_numa_work's per-VMA filter (vma_numab_state): none; from 6.4 a
  // VMA's scan waits scan_delay after its first, and after the mm's first two
  // sequences only a task that took a hinting fault in it lately scans it;
  // from 6.7 the grace is the VMA's own two sequences, a VMA is scanned once
  // a sequence, a scan begun or long undone goes on, and with nothing else
  // left one VMA is scanned whatever its pids.
  VmaScanFilter vma_scan_filter = VmaScanFilter::kNone;
  // A hinting fault on a page of a PTE-mapped THP counts its 512 pages, may
  // move it whole, and makes its other marked pages in that page table
  // accessible too (6.10); before, it only made that page accessible.
  bool pte_mapped_thp_hinting = false;
  // How much NUMA imbalance the scheduler allows when it places a new task
  // and when balancing moves a task to an idle CPU of its preferred node.
  sched::NumaImbalance numa_imbalance = sched::NumaImbalance::kLoad;
  int64_t migrate_passes = 10;
  int64_t tick_hz = 250;
  bool skew_tick = false;  // the skew_tick boot parameter

  // Resolved for a machine (not a switch): the mode's bits, and whether
  // balancing is on at all.
  int64_t mode = 0;
  bool enabled = false;
  // Tiering only (mode 2): scans leave top-tier pages alone (5.18).
  bool skip_top_tier = false;
  bool normal() const { return mode & kNumaBalancingNormal; }
  bool tiering() const { return mode & kNumaBalancingTiering; }
  // The tiering mode's hot-page selection (6.1+): a slow-tier folio's
  // cpupid field holds the time it was scanned, not a cpupid.
  bool hot_page_selection() const { return tiering() && promote_hot_threshold; }

  int64_t tick_ns() const { return 1000000000 / tick_hz; }
  int64_t scan_size_pages() const { return numa_balancing_scan_size_mb << (20 - 12); }
};

// Whether this kernel has automatic NUMA balancing at all (3.8+), and its
// memory-tiering mode (5.18+).
bool has_numa_balancing(KernelVersion v);
bool has_tiering_mode(KernelVersion v);

std::span<const Switch<NumaConfig>> numa_switches();

}  // namespace mmsim::numa

// The mm core's kernel switches ([kernel] keys of a scenario) and its
// constants, by their kernel names.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>

#include "mm/tiers.h"
#include "sim/switches.h"

namespace mmsim::mm {

// flush_tlb_mm_range(): a range of more than this many pages flushes the
// whole TLB (tlb_single_page_flush_ceiling).
inline constexpr uint64_t kTlbSinglePageFlushCeiling = 33;
// Reclaim's constants (mm/internal.h, include/linux/swap.h, mmzone.h).
inline constexpr int kMaxReclaimRetries = 16;    // MAX_RECLAIM_RETRIES
inline constexpr uint64_t kSwapClusterMax = 32;  // SWAP_CLUSTER_MAX
inline constexpr int kDefPriority = 12;          // DEF_PRIORITY

// pagecache_folio_kb's special value: folios as large as readahead makes them.
inline constexpr int64_t kFolioFollowsReadahead = -1;

// min_free_kbytes's "auto": 4 x sqrt(memory in KiB), within [128, 262144].
inline constexpr int64_t kAutoMinFree = -1;

// How /proc/vmstat counts refaults of evicted page-cache pages
// (mm/workingset.c workingset_refault).
enum class RefaultStat : int64_t {
  kNone,      // before 3.15: no shadow entries, no counter
  kCombined,  // 3.15-5.8: workingset_refault
  kSplit,     // 5.9+: workingset_refault_anon and workingset_refault_file
};

// Which page-table pages /proc/vmstat's nr_page_table_pages (and memcg's
// pagetables) counts: those whose constructor counts NR_PAGETABLE.
enum class PagetableStat : int64_t {
  kPte,  // PTE tables only (pgtable_page_ctor)
  kPmd,  // and PMD tables (pgtable_pmd_page_ctor, 4.20)
  kPud,  // and PUD tables (pagetable_pud_ctor, 6.7)
};

// /sys/kernel/mm/transparent_hugepage/enabled and defrag.
enum class ThpEnabled : int64_t { kNever, kMadvise, kAlways };
enum class ThpDefrag : int64_t { kNever, kMadvise, kDeferMadvise, kDefer, kAlways };
// When a migration drains the migrating CPU's lru_add batch after adding the
// new folio to it (migrate_folio_move): never (up to 5.17 the new page is
// put back with putback_lru_page), when the old folio was mapped (5.18), or
// only when it was mlocked (6.7).
enum class MigrateDrain : int64_t { kNever, kMapped, kMlocked };
// Which private anonymous mmaps get_unmapped_area puts on a 2 MiB boundary
// (thp_get_unmapped_area): none (up to 6.6: the randomised mmap base leaves
// them anywhere), those of 2 MiB or more (6.7), or those whose length is a
// multiple of 2 MiB (6.12).
enum class AnonAlign : int64_t { kNone, kLarge, kPmdMultiple };
// hugepage_init: a machine with less memory than this has THP off.
inline constexpr uint64_t kThpMinMemBytes = uint64_t{512} << 20;
// Their words, as sysfs shows and takes them.
inline const char* thp_word(ThpEnabled e) {
  static constexpr const char* kWords[] = {"never", "madvise", "always"};
  return kWords[static_cast<int>(e)];
}
inline const char* thp_word(ThpDefrag d) {
  static constexpr const char* kWords[] = {"never", "madvise", "defer+madvise", "defer", "always"};
  return kWords[static_cast<int>(d)];
}

struct MmConfig {
  // fault_around_bytes / 1024: cached pages mapped around a read fault on a
  // file (do_fault_around); 0 before 3.15.
  int64_t fault_around_kb = 0;
  // The readahead window of a major fault (the block device's read_ahead_kb).
  int64_t read_ahead_kb = 128;
  // Page-cache folios a read fault maps whole (large folios, 6.16 on ext4);
  // 0: base pages; kFolioFollowsReadahead: read_ahead_kb.
  int64_t pagecache_folio_kb = 0;
  RefaultStat workingset_refault_stat = RefaultStat::kSplit;
  // pgscan_anon/pgscan_file/pgsteal_anon/pgsteal_file: reclaim counted by
  // LRU type, whoever reclaims (5.8+).
  bool reclaim_lru_type_stats = true;
  // A fault retried after dropping the mmap lock for I/O (FAULT_FLAG_TRIED)
  // is a major fault for the task (maj_flt), though not in vmstat (5.9+:
  // mm_account_fault). Before, only a fault some attempt of which read from
  // storage (VM_FAULT_MAJOR) was.
  bool retried_fault_is_major = true;
  // PGFAULT (vmstat and memcg) is counted by each attempt of a fault
  // (handle_mm_fault's entry), so a retried fault counts twice; from 6.5 once
  // the fault completes (mm_account_fault).
  bool pgfault_per_attempt = false;
  // A NUMA hinting entry (PROT_NONE PTE or PMD) keeps the write bit
  // (pte_mk_savedwrite, on x86 the write bit itself), so a migration from it
  // leaves the page writable. Without it (6.2+) the entry has no write bit:
  // the migration entry is read-only and the first write after the move
  // takes a fault that reuses the page; a hinting fault whose migration
  // fails after isolating the folio maps it read-only too.
  bool prot_numa_savedwrite = false;
  // workingset_restore (_anon/_file as the refault counter is split): a
  // refault of a page that had been active (4.20+).
  bool workingset_restore_stat = true;
  // The page-table levels NR_PAGETABLE counts.
  PagetableStat pagetable_stat = PagetableStat::kPud;
  // CONFIG_PAGE_TABLE_ISOLATION (4.15+, Debian's): a PGD is two pages, the
  // kernel's half and the user copy (PGD_ALLOCATION_ORDER 1).
  bool page_table_isolation = true;
  // vm.min_free_kbytes; kAutoMinFree: the kernel's default for the
  // machine's memory (calculate_min_free_kbytes).
  int64_t min_free_kbytes = kAutoMinFree;
  // vm.watermark_scale_factor: the low and high watermarks' distance above
  // min, in 1/10000 of a node's memory, if more than min/4 (4.6+; 0 gives
  // the older fixed min/4).
  int64_t watermark_scale_factor = 10;
  // vm.dirty_ratio and vm.dirty_background_ratio: a dirty domain's limit
  // and background threshold, in % of its dirtyable memory;
  // vm.dirty_expire_centisecs: how old dirty data kupdate writes;
  // vm.dirty_writeback_centisecs: how often it runs (0: never).
  int64_t dirty_ratio = 20;
  int64_t dirty_background_ratio = 10;
  int64_t dirty_expire_centisecs = 3000;
  int64_t dirty_writeback_centisecs = 500;
  // New anonymous folios start on the active list (before 5.9) or the
  // inactive one (lru_cache_add_inactive_or_unevictable).
  bool anon_fault_active = false;
  // The per-CPU lru_add folio batch (PAGEVEC_SIZE): a new small folio waits
  // there, off the LRU and with a reference of the batch's, until the batch
  // fills, a large folio comes, or an lru_add_drain; 0 puts each on its LRU
  // at once.
  int64_t lru_add_batch = 31;
  // Which migrations drain the migrating CPU's batch, whose new folio waits
  // there (off the LRU, so not isolatable) until it drains.
  MigrateDrain migrate_lru_drain = MigrateDrain::kMlocked;
  // How nodes form memory tiers, and whether reclaim demotes to the next.
  TierRule memory_tiers = TierRule::kHmat;
  bool demotion_enabled = false;
  // Anonymous transparent huge pages: which VMAs fault 2 MiB folios, how
  // hard the allocation tries, and whether a read maps the huge zero page.
  ThpEnabled thp_enabled = ThpEnabled::kAlways;
  ThpDefrag thp_defrag = ThpDefrag::kMadvise;
  bool thp_use_zero_page = true;
  AnonAlign thp_anon_align = AnonAlign::kPmdMultiple;
  // A disk file's mmap lies at an address congruent to its file offset
  // modulo 2 MiB when it covers a whole aligned 2 MiB of the file (ext4's
  // thp_get_unmapped_area, no longer only for DAX: 5.18).
  bool file_thp_align = true;
  // MAP_STACK sets VM_NOHUGEPAGE (6.7): a thread stack glibc maps never
  // faults THPs, and never merges with a neighbour that may.
  bool map_stack_nohugepage = true;
  // kernel.randomize_va_space: 0 leaves the mmap base where x86-64 puts it
  // without randomisation (TASK_SIZE less the 128 MiB stack gap, a page below
  // a 2 MiB boundary); 1 or 2 randomise it (page granularity, from the seed).
  int64_t randomize_va_space = 2;
  // The vDSO and its data pages ([vvar]) are the mm's first mappings below
  // the mmap base, where get_unmapped_area puts them, not beside the stack
  // (before 6.9 they are only without randomisation).
  bool vdso_in_mmap_area = true;
  // khugepaged (/sys/kernel/mm/transparent_hugepage/khugepaged/*): its pace
  // and what it collapses.
  int64_t khugepaged_scan_sleep_ms = 10000;
  int64_t khugepaged_alloc_sleep_ms = 60000;
  int64_t khugepaged_pages_to_scan = 4096;
  int64_t khugepaged_max_ptes_none = 511;
  int64_t khugepaged_max_ptes_shared = 256;
  bool khugepaged_defrag = true;
  // khugepaged collapses pages of a PTE-mapped THP (5.8; before, such a
  // range was refused). Set from the version; not a switch.
  bool khugepaged_collapse_large = true;
  // Seeds each mm's randomised mmap base (the run's seed); none: mappings
  // are laid out from a fixed base (unit tests). Not a switch.
  std::optional<uint64_t> aslr_seed;
  // The swap device's size in pages ([swap] size; 0: no swap). Not a switch.
  uint64_t swap_pages = 0;
  // vm.max_map_count: an mmap fails with ENOMEM once the mm has more VMAs
  // than this (do_mmap). The kernel's default, DEFAULT_MAX_MAP_COUNT
  // (USHRT_MAX less the ELF core dump margin of 5). Not a switch.
  uint64_t max_map_count = 65530;
  // kernel.numa_balancing has its memory-tiering bit (2): kswapd balances
  // to the promo watermark (5.18); and (6.1) slow-tier folios keep an
  // access time, which a migration across the top tier's boundary forgets.
  // Set from the numa switches; not switches themselves.
  bool numa_tiering = false;
  bool tiering_access_time = false;
  // /proc/vmstat has pgpromote_success (with the tiering mode) and
  // pgpromote_candidate (with the hot threshold). Set from the numa
  // switches.
  bool promote_stats = false;
  bool promote_candidate_stat = false;
  // /proc/vmstat has numa_huge_pte_updates (3.13, 72403b4a0fbd; from
  // memory) and thp_migration_success/_fail/_split (5.9: absent in 5.8,
  // present in 5.10). Set from the version.
  bool numa_huge_pte_stat = true;
  bool thp_migration_stats = true;

  int64_t folio_kb() const {
    return pagecache_folio_kb == kFolioFollowsReadahead ? read_ahead_kb : pagecache_folio_kb;
  }
  // Pages a read fault maps: fault-around's window, or whole folios.
  uint32_t fault_around_pages() const {
    return static_cast<uint32_t>(std::max(fault_around_kb, folio_kb()) / 4);
  }
  uint32_t read_ahead_pages() const { return static_cast<uint32_t>(read_ahead_kb / 4); }
};

std::span<const Switch<MmConfig>> mm_switches();

}  // namespace mmsim::mm

// Machine-wide counters named as in /proc/vmstat. Event counters only grow;
// nr_* entries are gauges (current values). Which counters a kernel has
// depends on its version (kernel switches): a counter it lacks is hidden, so
// reports list only the names that kernel's /proc/vmstat has.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace mmsim::mm {

enum class Vm : uint8_t {
  // gauges
  nr_free_pages,
  nr_inactive_anon,
  nr_active_anon,
  nr_inactive_file,
  nr_active_file,
  nr_unevictable,
  nr_file_pages,
  nr_anon_pages,
  nr_mapped,
  nr_shmem,
  nr_mlock,
  nr_dirty,
  // events
  pgpgin,
  pswpin,
  pswpout,
  pgfault,
  pgmajfault,
  pgalloc_normal,
  pgfree,
  numa_hit,
  numa_miss,
  numa_foreign,
  numa_interleave,
  numa_local,
  numa_other,
  nr_tlb_local_flush_all,
  nr_tlb_local_flush_one,
  nr_tlb_remote_flush,
  nr_tlb_remote_flush_received,
  unevictable_pgs_mlocked,
  unevictable_pgs_munlocked,
  numa_pte_updates,
  numa_huge_pte_updates,
  numa_hint_faults,
  numa_hint_faults_local,
  numa_pages_migrated,
  pgmigrate_success,
  pgmigrate_fail,
  pgscan_direct,
  pgsteal_direct,
  pgscan_anon,
  pgscan_file,
  pgsteal_anon,
  pgsteal_file,
  pgactivate,
  pgdeactivate,
  pgrefill,
  pgscan_kswapd,
  pgsteal_kswapd,
  allocstall_movable,
  pageoutrun,
  kswapd_low_wmark_hit_quickly,
  kswapd_high_wmark_hit_quickly,
  workingset_refault,
  workingset_refault_anon,
  workingset_refault_file,
  workingset_activate,
  workingset_activate_anon,
  workingset_activate_file,
  workingset_restore,
  workingset_restore_anon,
  workingset_restore_file,
  pgpromote_success,
  pgpromote_candidate,
  pgdemote_kswapd,
  pgdemote_direct,
  nr_anon_transparent_hugepages,
  thp_fault_alloc,
  thp_fault_fallback,
  thp_fault_fallback_charge,
  thp_split_pmd,
  thp_split_page,
  thp_collapse_alloc,
  thp_collapse_alloc_failed,
  thp_zero_page_alloc,
  thp_zero_page_alloc_failed,
  thp_migration_success,
  thp_migration_fail,
  thp_migration_split,
  kCount
};

inline constexpr std::array<std::string_view, static_cast<size_t>(Vm::kCount)> kVmNames = {
    "nr_free_pages",
    "nr_inactive_anon",
    "nr_active_anon",
    "nr_inactive_file",
    "nr_active_file",
    "nr_unevictable",
    "nr_file_pages",
    "nr_anon_pages",
    "nr_mapped",
    "nr_shmem",
    "nr_mlock",
    "nr_dirty",
    "pgpgin",
    "pswpin",
    "pswpout",
    "pgfault",
    "pgmajfault",
    "pgalloc_normal",
    "pgfree",
    "numa_hit",
    "numa_miss",
    "numa_foreign",
    "numa_interleave",
    "numa_local",
    "numa_other",
    "nr_tlb_local_flush_all",
    "nr_tlb_local_flush_one",
    "nr_tlb_remote_flush",
    "nr_tlb_remote_flush_received",
    "unevictable_pgs_mlocked",
    "unevictable_pgs_munlocked",
    "numa_pte_updates",
    "numa_huge_pte_updates",
    "numa_hint_faults",
    "numa_hint_faults_local",
    "numa_pages_migrated",
    "pgmigrate_success",
    "pgmigrate_fail",
    "pgscan_direct",
    "pgsteal_direct",
    "pgscan_anon",
    "pgscan_file",
    "pgsteal_anon",
    "pgsteal_file",
    "pgactivate",
    "pgdeactivate",
    "pgrefill",
    "pgscan_kswapd",
    "pgsteal_kswapd",
    "allocstall_movable",
    "pageoutrun",
    "kswapd_low_wmark_hit_quickly",
    "kswapd_high_wmark_hit_quickly",
    "workingset_refault",
    "workingset_refault_anon",
    "workingset_refault_file",
    "workingset_activate",
    "workingset_activate_anon",
    "workingset_activate_file",
    "workingset_restore",
    "workingset_restore_anon",
    "workingset_restore_file",
    "pgpromote_success",
    "pgpromote_candidate",
    "pgdemote_kswapd",
    "pgdemote_direct",
    "nr_anon_transparent_hugepages",
    "thp_fault_alloc",
    "thp_fault_fallback",
    "thp_fault_fallback_charge",
    "thp_split_pmd",
    "thp_split_page",
    "thp_collapse_alloc",
    "thp_collapse_alloc_failed",
    "thp_zero_page_alloc",
    "thp_zero_page_alloc_failed",
    "thp_migration_success",
    "thp_migration_fail",
    "thp_migration_split",
};

class VmStat {
 public:
  int64_t& operator[](Vm v) { return values_[static_cast<size_t>(v)]; }
  int64_t operator[](Vm v) const { return values_[static_cast<size_t>(v)]; }
  void add(Vm v, int64_t n = 1) { values_[static_cast<size_t>(v)] += n; }
  static constexpr size_t size() { return static_cast<size_t>(Vm::kCount); }
  static std::string_view name(size_t i) { return kVmNames[i]; }
  int64_t at(size_t i) const { return values_[i]; }
  // Whether this kernel's /proc/vmstat has the counter (all do by default).
  bool shown(size_t i) const { return !hidden_[i]; }
  void set_shown(Vm v, bool shown) { hidden_[static_cast<size_t>(v)] = !shown; }

 private:
  std::array<int64_t, static_cast<size_t>(Vm::kCount)> values_{};
  std::array<bool, static_cast<size_t>(Vm::kCount)> hidden_{};
};

}  // namespace mmsim::mm

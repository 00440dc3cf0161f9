// The time each modelled operation takes. A profile is data: every field has a
// default with its source (see cost_profile.cc), and a TOML file or --set can
// override any of them by name.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mmsim::cost {

struct CostProfile {
  // Compute per element of a summing sweep over cache-resident data.
  double sweep_elem_ns = 0;
  // Extra time per 64-byte line streamed from local DRAM (beyond cache-resident);
  // a remote node costs this times SLIT distance / 10.
  double dram_line_ns = 0;
  // Load-to-use latency of one uncached access (touch of a page), local node.
  double mem_latency_ns = 0;
  // Exception entry and exit plus handle_mm_fault's walk, per fault.
  double fault_entry_ns = 0;
  // Finding a folio in the page cache (xarray walk, reference).
  double pagecache_lookup_ns = 0;
  // Installing one PTE, with its rmap update (page_add_*_rmap).
  double pte_set_ns = 0;
  // Clearing one PTE in a zap, with its rmap update (page_remove_rmap).
  double pte_clear_ns = 0;
  // Changing protection of one present PTE (mprotect, change_prot_numa).
  double pte_protect_ns = 0;
  // Copying one PTE at fork (copy_pte_range), with the rmap dup.
  double pte_copy_ns = 0;
  // Flushing this CPU's TLB for a range.
  double tlb_flush_local_ns = 0;
  // Extra time per remote CPU that must be sent a TLB-shootdown IPI.
  double tlb_flush_ipi_ns = 0;
  // Zeroing a 4 KiB page on the local node.
  double page_zero_ns = 0;
  // Copying a 4 KiB page between local-node pages; remote copies scale by SLIT.
  double page_copy_ns = 0;
  // Allocating and freeing one page (buddy/pcp lists).
  double page_alloc_ns = 0;
  double page_free_ns = 0;
  // Entering and leaving the kernel for a system call.
  double syscall_ns = 0;
  // Creating, splitting or removing a VMA (mmap/munmap bookkeeping).
  double vma_op_ns = 0;
  // Fork's fixed part (task_struct, mm, files, wake-up), without page tables.
  double fork_base_ns = 0;
  // Process exit's fixed part, without unmapping.
  double exit_base_ns = 0;
  // Switching a CPU from one task to another.
  double context_switch_ns = 0;
  // Taking an uncontended lock.
  double lock_ns = 0;
  // Reading one readahead window (read_ahead_kb) from storage, as a latency.
  double storage_read_ns = 0;
  // memcg page-stat pieces (mm/memcontrol.c mem_cgroup_begin_update_page_stat):
  // rcu_read_lock+unlock (preempt_count inc/dec), a read of a global flag, a page_cgroup lookup by
  // pfn, a per-CPU counter add, a bit spinlock lock+unlock, a spin_lock_irqsave+unlock, an atomic
  // read.
  double memcg_rcu_ns = 0;
  double memcg_flag_read_ns = 0;
  double memcg_pc_lookup_ns = 0;
  double memcg_percpu_add_ns = 0;
  double memcg_bitlock_ns = 0;
  double memcg_spinlock_ns = 0;
  double memcg_atomic_read_ns = 0;
  // synchronize_rcu: a grace period.
  double synchronize_rcu_ns = 0;
};

struct CostParam {
  std::string_view name;
  double CostProfile::*field;
  double default_value;
  std::string_view unit;
  std::string_view source;
};

// Every parameter with its default and source, in a fixed order.
std::span<const CostParam> cost_params();
const CostParam* find_cost_param(std::string_view name);
CostProfile default_costs();

}  // namespace mmsim::cost

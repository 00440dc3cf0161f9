// The time each modelled operation takes, and the hardware it runs on. A
// profile is data: each machine preset has its own values, every one with its
// source (cost_profile.cc; `mmsim costs --machine NAME` lists them), and a
// TOML file or --set can override any of them by name.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mmsim::cost {

struct CostProfile {
  // The core: its clock, and what the memory hierarchy (cost::CacheModel)
  // needs. Sizes are per core; the LLC's size is the machine's
  // (llc_per_socket). Latencies are load-to-use, idle, for a dependent load.
  double core_ghz = 0;
  double l1d_bytes = 0;
  double l2_bytes = 0;
  double l1_ns = 0;
  double l2_ns = 0;
  double llc_ns = 0;
  // DRAM: local, one interconnect hop and two hops away.
  double mem_latency_ns = 0;
  double mem_latency_1hop_ns = 0;
  double mem_latency_2hop_ns = 0;
  // Memory-level parallelism: L1 misses one core can have outstanding (line
  // fill buffers), and requests its L2 streamer keeps in flight to memory.
  double lfb_entries = 1;
  double l2_outstanding = 1;
  // Sustained bandwidth of one node's memory (all its channels), and of one
  // socket's interconnect links in one direction, in GB/s (bytes per ns),
  // for many cores streaming at once (cost::Bandwidth). 0: not limited.
  double mem_bandwidth_gbps = 0;
  double interconnect_gbps = 0;
  // 1: the LLC's replacement keeps part of a working set larger than itself
  // (adaptive insertion); 0: LRU-like, a cyclic overflow misses every time.
  double llc_adaptive = 0;
  // How much slower one thread runs when its SMT sibling is busy, for code
  // bound by latency (dependency chains) and by throughput (issue, ports).
  double smt_latency_factor = 1;
  double smt_throughput_factor = 1;
  // Compute per element of a summing sweep over cache-resident data: the
  // optimised loop (-O2, vectorised), and the loop built without
  // optimisation (-O0: i and s live in memory, a store-forwarding chain).
  double sweep_elem_ns = 0;
  double sweep_elem_O0_ns = 0;
  // A memset's own time per 64-byte line, the lines in L1 or L2: the pace
  // at which the core issues its stores. A memset over memory takes the
  // longer of this and the memory's streaming time (cost::CacheModel).
  double memset_line_ns = 0;
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
  // A NUMA migration's steps besides its PTEs, allocation and copy: the
  // folio's isolation from its LRU and migrate_pages' set-up before the
  // unmap (numamigrate_isolate_page, the folio lock), and a pass's own work
  // on the folio (the rmap walks, the reference freeze, the mapping and
  // flags moved to the new folio).
  double migrate_isolate_ns = 0;
  double migrate_folio_ns = 0;
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
  // Writing 128 KiB to storage in a stream of writes (the flusher's), as the
  // disk's time: its write bandwidth.
  double storage_write_ns = 0;
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

// One parameter: its name (as a TOML key), its field, its unit.
struct CostParam {
  std::string_view name;
  double CostProfile::*field;
  std::string_view unit;
};

// One machine's value of a parameter, and where the value comes from.
struct CostValue {
  std::string_view name;
  double value;
  std::string_view source;
};

// The cost profile of a machine preset: a value with a source for every
// parameter.
struct MachineCosts {
  std::string_view machine;   // the preset's name
  std::string_view hardware;  // what it models, in a line
  std::span<const CostValue> values;
};

// Every parameter, in a fixed order.
std::span<const CostParam> cost_params();
const CostParam* find_cost_param(std::string_view name);
// The preset machines that carry their own profile.
std::span<const MachineCosts> machine_profiles();
// nullptr when `machine` has no profile of its own.
const MachineCosts* find_machine_costs(std::string_view machine);
// The machine a scenario's costs come from when its machine has no profile
// of its own (a custom machine); the report names it.
inline constexpr std::string_view kDefaultCostMachine = "xeon-8s-144c";
// The profile of `machine`, or of kDefaultCostMachine.
CostProfile default_costs(std::string_view machine = kDefaultCostMachine);

}  // namespace mmsim::cost

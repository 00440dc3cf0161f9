// Default costs, each with its source. The model machine is a 2015-2018 Xeon,
// so kernel-entry and hardware costs come from published bare-metal figures;
// user-mode work comes from tools/calibrate/ on the development host
// (costs/host-calibration*.toml), and so do the kernel paths for which no
// published figure was found, marked as measured in a PVM guest.
#include "cost/cost_profile.h"

#include <array>

namespace mmsim::cost {

namespace {

constexpr std::array kParams = {
    // User-mode work: measured on the development host, where it runs natively.
    CostParam{"sweep_elem_ns", &CostProfile::sweep_elem_ns, 0.310, "ns",
              "dev host calibration: sweep_elem_llc_ns, `s += a[i]` over an 8 MiB int array "
              "(costs/host-calibration.toml)"},
    CostParam{"dram_line_ns", &CostProfile::dram_line_ns, 0.16, "ns",
              "dev host calibration: (sweep_elem_dram_ns 0.320 - sweep_elem_llc_ns 0.310) x 16 "
              "elements per line"},
    CostParam{"page_zero_ns", &CostProfile::page_zero_ns, 358.5, "ns",
              "dev host calibration: page_zero_ns, memset of 4 KiB over a 256 MiB ring"},
    CostParam{"page_copy_ns", &CostProfile::page_copy_ns, 463.2, "ns",
              "dev host calibration: page_copy_ns, memcpy of 4 KiB, DRAM to DRAM"},
    CostParam{"lock_ns", &CostProfile::lock_ns, 5.62, "ns",
              "dev host calibration: lock_uncontended_ns, atomic_flag set+clear "
              "(costs/host-calibration-paths.toml)"},
    // Hardware and kernel-entry costs: published bare-metal figures. Cycle
    // counts are converted at 2.3 GHz, the base clock of the Xeon E7-8880 v3.
    CostParam{"mem_latency_ns", &CostProfile::mem_latency_ns, 135.0, "ns",
              "T. Willhalm, Intel blog 'Memory Latencies on Intel Xeon E5-4600 and E7-4800 "
              "product families' (2014): MLC local latency"},
    CostParam{"fault_entry_ns", &CostProfile::fault_entry_ns, 456.0, "ns",
              "L. Torvalds, page-fault microbenchmark post (30 Apr 2014), Haswell: exception "
              "entry 715 + iret 330 cycles"},
    CostParam{"pte_set_ns", &CostProfile::pte_set_ns, 109.0, "ns",
              "same post: the rest of a zero-page fault, 1300 - 1050 cycles (handle_mm_fault "
              "walk and one PTE)"},
    CostParam{"tlb_flush_local_ns", &CostProfile::tlb_flush_local_ns, 94.0, "ns",
              "D. Hansen, linux-mm 'Re: TLB flush multiple pages per IPI v5' (9 Jun 2015), "
              "Haswell Xeon: INVLPG 216 cycles"},
    CostParam{
        "tlb_flush_ipi_ns", &CostProfile::tlb_flush_ipi_ns, 632.0, "ns",
        "derived from the sources above: a remote interrupt's entry and exit (456) + a "
        "remote INVLPG (94) + request and ack cache-line hand-offs (2 x 41: J. McCalpin, Intel "
        "forum 'Core-to-Core Communication Latency in Skylake/Kaby Lake', Xeon E5-2660 v4 "
        "modified-line transfer, 40.3-42.3 ns)"},
    CostParam{"syscall_ns", &CostProfile::syscall_ns, 237.0, "ns",
              "A. Lutomirski, 'x86/pti/64: Remove the SYSCALL64 entry trampoline' (2018), "
              "Skylake with PTI and retpolines"},
    CostParam{"page_alloc_ns", &CostProfile::page_alloc_ns, 96.0, "ns",
              "M. Cracauer, 'Microbenchmarking the page table isolation patches' (2018), Xeon "
              "W3580: anonymous fault 1020 ns, minus fault_entry, page_zero and pte_set"},
    CostParam{"storage_read_ns", &CostProfile::storage_read_ns, 66800.0, "ns",
              "Intel SSD DC P3700 product specification (330566): 20 us latency + 128 KiB at "
              "2800 MB/s sequential read"},
    // No bare-metal source found: measured on the development host, a PVM
    // (shadow-paging) guest, so these are likely above bare metal.
    CostParam{"pagecache_lookup_ns", &CostProfile::pagecache_lookup_ns, 616.7, "ns",
              "dev host calibration (PVM guest): pread of 1 byte per cached page 1636.4 minus "
              "syscall 1019.7"},
    CostParam{"pte_clear_ns", &CostProfile::pte_clear_ns, 118.6, "ns",
              "dev host calibration (PVM guest): zap_pte_ns, MADV_DONTNEED per file page"},
    CostParam{"pte_protect_ns", &CostProfile::pte_protect_ns, 170.7, "ns",
              "dev host calibration (PVM guest): mprotect_pte_ns, per present PTE"},
    CostParam{"pte_copy_ns", &CostProfile::pte_copy_ns, 156.0, "ns",
              "dev host calibration (PVM guest): back-to-back fork of a 64 MiB populated mapping, "
              "per PTE"},
    CostParam{"page_free_ns", &CostProfile::page_free_ns, 200.7, "ns",
              "dev host calibration (PVM guest): zap_anon_pte_ns 319.3 minus zap_pte_ns 118.6"},
    CostParam{"vma_op_ns", &CostProfile::vma_op_ns, 949.0, "ns",
              "dev host calibration (PVM guest): (mmap+munmap of one page 3937 - 2 syscalls "
              "2039) / 2"},
    CostParam{"fork_base_ns", &CostProfile::fork_base_ns, 896701.0, "ns",
              "dev host calibration (PVM guest): fork_exit_wait_ns of a small process"},
    CostParam{"exit_base_ns", &CostProfile::exit_base_ns, 0.0, "ns",
              "included in fork_base_ns, whose measurement covers fork, exit and wait"},
    CostParam{"context_switch_ns", &CostProfile::context_switch_ns, 3474.0, "ns",
              "dev host calibration (PVM guest): pipe ping-pong between two threads on one CPU, "
              "per switch"},
    // memcg page-stat pieces: user-mode operations measured natively on the
    // development host by tools/calibrate/calibrate_memcg.cc
    // (costs/host-calibration-memcg.toml).
    CostParam{"memcg_rcu_ns", &CostProfile::memcg_rcu_ns, 0.613, "ns",
              "dev host calibration: preempt_toggle_ns, preempt_count inc+dec (rcu_read_lock "
              "and unlock of a non-preemptible kernel)"},
    CostParam{"memcg_flag_read_ns", &CostProfile::memcg_flag_read_ns, 0.115, "ns",
              "dev host calibration: global_flag_read_ns, memcg_moving read and branch"},
    CostParam{"memcg_pc_lookup_ns", &CostProfile::memcg_pc_lookup_ns, 0.421, "ns",
              "dev host calibration: page_cgroup_lookup_seq_ns, 16-byte entries in pfn order"},
    CostParam{"memcg_percpu_add_ns", &CostProfile::memcg_percpu_add_ns, 0.308, "ns",
              "dev host calibration: percpu_add_ns, a non-atomic add to a hot counter"},
    CostParam{"memcg_bitlock_ns", &CostProfile::memcg_bitlock_ns, 13.71, "ns",
              "dev host calibration: bit_spinlock_ns, atomic set and clear of a flag bit"},
    CostParam{"memcg_spinlock_ns", &CostProfile::memcg_spinlock_ns, 6.67, "ns",
              "dev host calibration: spin_lock_irqsave_ns, uncontended (interrupt masking "
              "cannot be measured in user space)"},
    CostParam{"memcg_atomic_read_ns", &CostProfile::memcg_atomic_read_ns, 0.078, "ns",
              "dev host calibration: atomic_read_ns, moving_account read"},
    CostParam{"synchronize_rcu_ns", &CostProfile::synchronize_rcu_ns, 8000000.0, "ns",
              "derived: quiescent states are seen at scheduler ticks, so a grace period spans at "
              "least two jiffies; 2 x 4 ms at HZ=250 (Documentation/RCU)"},
};

}  // namespace

std::span<const CostParam> cost_params() { return kParams; }

const CostParam* find_cost_param(std::string_view name) {
  for (const auto& p : kParams) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

CostProfile default_costs() {
  CostProfile c;
  for (const auto& p : kParams) c.*(p.field) = p.default_value;
  return c;
}

}  // namespace mmsim::cost

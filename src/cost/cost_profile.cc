// The cost profiles of the machine presets, every value with its source.
// Hardware numbers come from datasheets, published measurements of the same
// processor generation and the vendor's optimisation manual; kernel-path
// costs from published bare-metal measurements where they exist, and
// otherwise are derived from those hardware numbers (the source says how).
// Nothing here is measured on the development host (a PVM guest) or fitted
// to a result we reproduce. Cycle counts are converted at the profile's
// core_ghz.
#include "cost/cost_profile.h"

#include <array>

namespace mmsim::cost {

namespace {

#define MMSIM_COST_PARAM(n, unit) \
  CostParam { #n, &CostProfile::n, unit }

constexpr std::array kParams = {
    MMSIM_COST_PARAM(core_ghz, "GHz"),
    MMSIM_COST_PARAM(l1d_bytes, "B"),
    MMSIM_COST_PARAM(l2_bytes, "B"),
    MMSIM_COST_PARAM(l1_ns, "ns"),
    MMSIM_COST_PARAM(l2_ns, "ns"),
    MMSIM_COST_PARAM(llc_ns, "ns"),
    MMSIM_COST_PARAM(mem_latency_ns, "ns"),
    MMSIM_COST_PARAM(mem_latency_1hop_ns, "ns"),
    MMSIM_COST_PARAM(mem_latency_2hop_ns, "ns"),
    MMSIM_COST_PARAM(lfb_entries, ""),
    MMSIM_COST_PARAM(l2_outstanding, ""),
    MMSIM_COST_PARAM(mem_bandwidth_gbps, "GB/s"),
    MMSIM_COST_PARAM(interconnect_gbps, "GB/s"),
    MMSIM_COST_PARAM(llc_adaptive, ""),
    MMSIM_COST_PARAM(smt_latency_factor, ""),
    MMSIM_COST_PARAM(smt_throughput_factor, ""),
    MMSIM_COST_PARAM(sweep_elem_ns, "ns"),
    MMSIM_COST_PARAM(sweep_elem_O0_ns, "ns"),
    MMSIM_COST_PARAM(memset_line_ns, "ns"),
    MMSIM_COST_PARAM(fault_entry_ns, "ns"),
    MMSIM_COST_PARAM(pagecache_lookup_ns, "ns"),
    MMSIM_COST_PARAM(pte_set_ns, "ns"),
    MMSIM_COST_PARAM(pte_clear_ns, "ns"),
    MMSIM_COST_PARAM(pte_protect_ns, "ns"),
    MMSIM_COST_PARAM(pte_copy_ns, "ns"),
    MMSIM_COST_PARAM(tlb_flush_local_ns, "ns"),
    MMSIM_COST_PARAM(tlb_flush_ipi_ns, "ns"),
    MMSIM_COST_PARAM(page_zero_ns, "ns"),
    MMSIM_COST_PARAM(page_copy_ns, "ns"),
    MMSIM_COST_PARAM(page_alloc_ns, "ns"),
    MMSIM_COST_PARAM(page_free_ns, "ns"),
    MMSIM_COST_PARAM(migrate_isolate_ns, "ns"),
    MMSIM_COST_PARAM(migrate_folio_ns, "ns"),
    MMSIM_COST_PARAM(syscall_ns, "ns"),
    MMSIM_COST_PARAM(vma_op_ns, "ns"),
    MMSIM_COST_PARAM(fork_base_ns, "ns"),
    MMSIM_COST_PARAM(exit_base_ns, "ns"),
    MMSIM_COST_PARAM(context_switch_ns, "ns"),
    MMSIM_COST_PARAM(lock_ns, "ns"),
    MMSIM_COST_PARAM(storage_read_ns, "ns"),
    MMSIM_COST_PARAM(storage_write_ns, "ns"),
    MMSIM_COST_PARAM(memcg_rcu_ns, "ns"),
    MMSIM_COST_PARAM(memcg_flag_read_ns, "ns"),
    MMSIM_COST_PARAM(memcg_pc_lookup_ns, "ns"),
    MMSIM_COST_PARAM(memcg_percpu_add_ns, "ns"),
    MMSIM_COST_PARAM(memcg_bitlock_ns, "ns"),
    MMSIM_COST_PARAM(memcg_spinlock_ns, "ns"),
    MMSIM_COST_PARAM(memcg_atomic_read_ns, "ns"),
    MMSIM_COST_PARAM(synchronize_rcu_ns, "ns"),
};

#undef MMSIM_COST_PARAM

// Sources shared by both profiles.
constexpr std::string_view kOrm =
    "Intel 64 and IA-32 Architectures Optimization Reference Manual (248966), the "
    "microarchitecture's cache and buffer tables";
constexpr std::string_view kAgnerLock =
    "~20 cycles: a locked read-modify-write on Sandy Bridge and Haswell (A. Fog, Instruction "
    "tables: LOCK ADD/XADD/BTS latency ~19-20)";

// 8 x Xeon E7-8895 v3 (Haswell-EX): Oracle Server X5-8, the class of machine
// of the shared-COW report. 1 cycle = 1 / 2.6 ns.
constexpr std::array kXeon8s = {
    CostValue{"core_ghz", 2.6,
              "E7-8895 v3 base clock: Oracle Server X5-8 System Architecture white paper (2016) "
              "p.1; '/proc/cpuinfo: E7-8895 v3 @ 2.60GHz' in S. Sistare, LKML 2018 (an X5-8)"},
    CostValue{"l1d_bytes", 32768, kOrm},
    CostValue{"l2_bytes", 262144, kOrm},
    CostValue{"l1_ns", 1.54,
              "4 cycles: Haswell L1 load-to-use (7-cpu.com/cpu/Haswell.html; P. Cordes, Stack "
              "Overflow q/10274355)"},
    CostValue{"l2_ns", 4.62, "12 cycles: Haswell L2 load-to-use (7-cpu.com/cpu/Haswell.html)"},
    CostValue{"llc_ns", 20.0,
              "~52 cycles: L3 hit on the 18-core two-ring Haswell die (Molka et al., 'Cache "
              "coherence protocol and memory performance of the Intel Haswell-EP architecture', "
              "ICPP 2015: ~21 ns on Haswell-EP; value recalled, tables not re-read)"},
    CostValue{"mem_latency_ns", 135.0,
              "T. Willhalm, Intel blog 'Memory latencies on Intel Xeon E5-4600 and E7-4800 "
              "product families' (2014): MLC idle latency, local, E7 with buffered (SMB) memory"},
    CostValue{"mem_latency_1hop_ns", 200.0,
              "same blog: MLC idle latency to a socket one QPI hop away, 194-202 ns"},
    CostValue{"mem_latency_2hop_ns", 265.0,
              "derived: a second QPI hop adds what the first did (200 - 135 = 65 ns); no "
              "measurement of a two-hop E7 v3 access was found"},
    CostValue{"lfb_entries", 10,
              "10 L1D line fill buffers per core (Intel ORM; 7-cpu.com lists 10 for Westmere)"},
    CostValue{"l2_outstanding", 16, "the L2's 16-entry superqueue (Intel ORM, Haswell)"},
    CostValue{"mem_bandwidth_gbps", 62.5,
              "the same Haswell die's sustained read bandwidth per socket on Haswell-EP, 62-63 "
              "GB/s (J. McCalpin, Intel community 'How to saturate the QPI link', Intel MLC); "
              "E7 v3's buffered channels offer more raw (8 x DDR4-1600 = 102.4 GB/s in "
              "performance mode: AnandTech, 'The Intel Xeon E7-8800 v3 Review', 2015, p.3), but "
              "no E7 v3 measurement was found"},
    CostValue{"interconnect_gbps", 46.1,
              "derived: 3 QPI links a socket at 9.6 GT/s x 2 B = 19.2 GB/s each way, at the 80% "
              "of raw two such links sustained in McCalpin's MLC measurement (30.6 of 38.4 GB/s, "
              "same thread as mem_bandwidth_gbps)"},
    CostValue{"llc_adaptive", 1,
              "H. Wong, 'Intel Ivy Bridge cache replacement policy' (blog.stuffedcow.net, 2013): "
              "from Ivy Bridge on, the L3 adapts its insertion so a thrashing working set keeps "
              "part of itself; Haswell keeps it"},
    CostValue{"smt_latency_factor", 1.0,
              "derived: the -O0 summing loop needs per element ~10 fused uops, 5 loads and 2 "
              "stores in its 6-cycle chain; two threads use 20 of 24 issue slots, 10 of 12 load "
              "and 4 of 6 store-port slots (4-wide, 2 load + 1 store port: Intel ORM), so the "
              "sibling costs it nothing"},
    CostValue{"smt_throughput_factor", 2.0,
              "derived: the optimised loop issues ~4 uops an element (load, add, counter, "
              "branch) at 1 element a cycle, filling the 4-wide issue (Intel ORM) alone; with its "
              "sibling doing the same each gets half"},
    CostValue{"sweep_elem_ns", 0.385,
              "derived, 1 cycle: the optimised loop as mmsim-exec runs it keeps one load per "
              "element (no vectorising), so the sum's 1-cycle add chain sets the pace (A. Fog, "
              "Instruction tables: ADD latency 1; 2 loads a cycle)"},
    CostValue{"sweep_elem_O0_ns", 2.31,
              "derived: at -O0 gcc keeps j and b on the stack, so every element is two memory "
              "read-modify-writes whose store-forwarding chain takes ~6 cycles (P. Cordes, Stack "
              "Overflow q/10274355: Haswell store-reload 5 cycles, inc [mem] ~6)"},
    CostValue{"memset_line_ns", 0.77,
              "derived, 2 cycles: Haswell's L1 takes one 32-byte store a cycle (Intel ORM, the "
              "L1 data cache's peak bandwidth: 64 B load + 32 B store a cycle)"},
    CostValue{"fault_entry_ns", 404.0,
              "1050 cycles: exception delivery 715 + iret 330 on Haswell (L. Torvalds, "
              "page-fault microbenchmark post, 30 Apr 2014)"},
    CostValue{"pagecache_lookup_ns", 25.4,
              "derived, 66 cycles: three dependent tree-node loads from L2 (3 x 12) and the "
              "speculative page reference, one locked cmpxchg (~20), plus ~10 of checks"},
    CostValue{"pte_set_ns", 96.2,
              "250 cycles: the rest of a zero-page fault, 1300 - 1050 (same Torvalds post)"},
    CostValue{"pte_clear_ns", 96.2,
              "derived: the same PTE write and mapcount atomic as pte_set_ns, undone"},
    CostValue{"pte_protect_ns", 11.5,
              "derived, 30 cycles: ptep_modify_prot_start's locked exchange of the PTE (~20) and "
              "the store of the new value"},
    CostValue{"pte_copy_ns", 19.2,
              "derived, 50 cycles: a PTE read and write and two atomics (page reference and "
              "mapcount, ~20 each)"},
    CostValue{"tlb_flush_local_ns", 83.1,
              "216 cycles: INVLPG on a Haswell Xeon (D. Hansen, linux-mm 'Re: TLB flush multiple "
              "pages per IPI v5', 9 Jun 2015)"},
    CostValue{"tlb_flush_ipi_ns", 567.0,
              "derived: the remote CPU's interrupt entry and exit (fault_entry_ns 404) + its "
              "INVLPG (83) + request and acknowledgement line hand-offs (2 x 40: "
              "core-to-core 29-45 ns on Haswell-EP, github.com/nviennot/core-to-core-latency)"},
    CostValue{"page_zero_ns", 540.0,
              "derived: 64 lines written at the per-core streaming rate, mem_latency_ns / "
              "l2_outstanding = 8.4 ns a line (Little's law)"},
    CostValue{"page_copy_ns", 1080.0,
              "derived: 64 lines read and 64 written at 8.4 ns a line (as page_zero_ns)"},
    CostValue{"page_alloc_ns", 96.0,
              "M. Cracauer, 'Microbenchmarking the page table isolation patches' (2018), Xeon "
              "W3580: anonymous fault 1020 ns, minus fault entry, zeroing and PTE"},
    CostValue{"page_free_ns", 96.0, "derived: page_alloc_ns's per-CPU list operation, reversed"},
    CostValue{"migrate_isolate_ns", 38.5,
              "derived, ~100 cycles: isolate_lru_page's lruvec lock, reference and isolated-page "
              "count (two atomics, ~20 cycles each), the list deletion, and migrate_pages' "
              "trylock of the folio (another atomic)"},
    CostValue{"migrate_folio_ns", 96.2,
              "derived, ~250 cycles: two rmap walks (anon_vma lock and one interval-tree "
              "lookup each, ~80 cycles), the reference freeze (a cmpxchg, ~20) and the flags "
              "and memcg moved to the new folio (~70)"},
    CostValue{"syscall_ns", 237.0,
              "A. Lutomirski, 'x86/pti/64: Remove the SYSCALL64 entry trampoline' (2018): "
              "Skylake with PTI and retpolines, as a 2018 kernel runs"},
    CostValue{"vma_op_ns", 115.0,
              "derived, ~300 cycles: a slab allocation, a VMA-tree insertion of ~5 dependent L2 "
              "loads and the merge checks"},
    CostValue{"fork_base_ns", 10000.0,
              "derived lower bound: ~32 KiB of task_struct, kernel stack, pgd and mm copied or "
              "zeroed, 8 x page_copy_ns, plus two system calls; no bare-metal fork+exit figure of "
              "the era was found"},
    CostValue{"exit_base_ns", 0.0, "included in fork_base_ns"},
    CostValue{"context_switch_ns", 452.0,
              "derived lower bound, 1174 cycles: a kernel entry and exit (1050, as "
              "fault_entry_ns) and switch_mm's CR3 write (124: D. Hansen, 2015, as above)"},
    CostValue{"lock_ns", 7.7, kAgnerLock},
    CostValue{"storage_read_ns", 66800.0,
              "Intel SSD DC P3700 product specification (330566): 20 us latency + 128 KiB at "
              "2800 MB/s sequential read"},
    CostValue{"storage_write_ns", 69000.0,
              "Intel SSD DC P3700 product specification (330566), 800 GB model: 128 KiB at "
              "1900 MB/s sequential write"},
    CostValue{"memcg_rcu_ns", 0.0,
              "rcu_read_lock/unlock compile to compiler barriers without CONFIG_PREEMPT "
              "(distribution kernels use PREEMPT_VOLUNTARY)"},
    CostValue{"memcg_flag_read_ns", 0.385,
              "1 cycle: a load that hits L1 and a predicted branch, overlapped"},
    CostValue{"memcg_pc_lookup_ns", 3.08,
              "derived, 8 cycles: lookup_page_cgroup's two dependent L1 loads (the section's "
              "array base, then the entry); a miss on the entry's line is the cache model's"},
    CostValue{"memcg_percpu_add_ns", 0.385, "1 cycle: one non-atomic add to a per-CPU counter"},
    CostValue{"memcg_bitlock_ns", 15.4,
              "two locked bit operations (lock and unlock), ~20 cycles each"},
    CostValue{"memcg_spinlock_ns", 19.2,
              "derived, ~50 cycles: pushf/cli, a locked add (~20) and the unlock store, popf"},
    CostValue{"memcg_atomic_read_ns", 0.385, "1 cycle: a plain load that hits L1"},
    CostValue{"synchronize_rcu_ns", 8000000.0,
              "derived: quiescent states are seen at scheduler ticks, so a grace period spans at "
              "least two jiffies; 2 x 4 ms at HZ=250 (Documentation/RCU)"},
};

// 2 x Xeon E5-2670 (Sandy Bridge-EP, 2012), the class of machine of the
// memcg page-stat benchmark. 1 cycle = 1 / 2.6 ns. Kernel paths take the
// cycle counts of the Haswell profile where the microarchitectures agree.
constexpr std::array kSnb2s = {
    CostValue{"core_ghz", 2.6, "Xeon E5-2670 base clock (Intel ARK)"},
    CostValue{"l1d_bytes", 32768, kOrm},
    CostValue{"l2_bytes", 262144, kOrm},
    CostValue{"l1_ns", 1.54,
              "4 cycles: Sandy Bridge L1 load-to-use (TechReport, Sandy Bridge-E review, 2011; "
              "Intel ORM)"},
    CostValue{"l2_ns", 4.62,
              "12 cycles: Sandy Bridge L2 load-to-use (7-cpu.com; Intel ORM: 11-12)"},
    CostValue{"llc_ns", 14.6,
              "38 cycles: L3 hit on the 8-core ring (M. Thompson, 'CPU cache flushing fallacy' "
              "notes on Sandy Bridge-E servers: up to 38 cycles)"},
    CostValue{"mem_latency_ns", 80.0,
              "D. Molka, D. Hackenberg, R. Schoene, 'Main memory and cache performance of Intel "
              "Sandy Bridge and AMD Bulldozer', MSPC 2014: local DRAM ~80 ns on a 2-socket "
              "Sandy Bridge-EP (value recalled, tables not re-read)"},
    CostValue{"mem_latency_1hop_ns", 130.0,
              "same paper: remote DRAM over one QPI hop, ~1.6x local (recalled); Intel's MLC "
              "blog (Willhalm 2014) gives 1.45-1.5x on E7"},
    CostValue{"mem_latency_2hop_ns", 130.0, "a 2-socket machine has no two-hop pair"},
    CostValue{"lfb_entries", 10, "10 L1D line fill buffers per core (Intel ORM, Sandy Bridge)"},
    CostValue{"l2_outstanding", 16,
              "the L2's 16-entry superqueue (Intel ORM); with mem_latency_ns it gives 12.8 GB/s "
              "a core, against 11.8 GB/s of traffic in a measured single-thread copy of 5.9 GB/s "
              "(Intel community, 'Single-threaded memory performance for dual socket Xeon E5-*')"},
    CostValue{"mem_bandwidth_gbps", 37.5,
              "STREAM Triad 75 GB/s on 2 x E5-2695 v2 with the same 4 channels of DDR3-1600 a "
              "socket (D. Kinghorn, Puget Systems, 'Memory Performance for Intel Xeon Haswell-EP "
              "DDR4', 2014), halved; peak is 51.2 GB/s (AnandTech, 'The Xeon E5-2600', 2012, p.2)"},
    CostValue{"interconnect_gbps", 25.6,
              "derived: 2 QPI links at 8 GT/s, 16 GB/s each way each (Dell, Dandapanthula and "
              "Kochhar 2012, p.9: 32 GB/s a link both ways), at the 80% of raw that two QPI links "
              "sustained in J. McCalpin's MLC measurement (Intel community, 'How to saturate the "
              "QPI link': 30.6 of 38.4 GB/s)"},
    CostValue{"llc_adaptive", 0,
              "H. Wong, 'Intel Ivy Bridge cache replacement policy' (2013): Sandy Bridge's L3 "
              "is LRU-like, a cyclic working set larger than it misses every time"},
    CostValue{"smt_latency_factor", 1.17,
              "derived: Sandy Bridge's loads and store addresses share two AGUs; the -O0 loop's "
              "5 loads and 2 stores per 6-cycle element take 14 of 12 AGU slots for two threads "
              "(Intel ORM; G. Hager, blogs.fau.de/hager, SNB ports)"},
    CostValue{"smt_throughput_factor", 2.0,
              "derived: the optimised loop issues ~4 uops an element (load, add, counter, "
              "branch) at 1 element a cycle, filling the 4-wide issue (Intel ORM) alone; with its "
              "sibling doing the same each gets half"},
    CostValue{"sweep_elem_ns", 0.385,
              "derived, 1 cycle: one load per element, the sum's 1-cycle add chain (A. Fog, "
              "Instruction tables), as the Haswell profile"},
    CostValue{"sweep_elem_O0_ns", 2.31,
              "derived: two memory read-modify-writes per element through store forwarding, "
              "~6 cycles (A. Fog, microarchitecture manual: Sandy Bridge store forwarding ~5 "
              "cycles, as Haswell)"},
    CostValue{"memset_line_ns", 1.54,
              "derived, 4 cycles: Sandy Bridge's L1 takes 16 bytes of stores a cycle (Intel ORM, "
              "the L1 data cache's peak bandwidth: 32 B load + 16 B store a cycle)"},
    CostValue{"fault_entry_ns", 404.0,
              "1050 cycles, Haswell's exception delivery and iret (L. Torvalds, 30 Apr 2014), "
              "taken for Sandy Bridge"},
    CostValue{"pagecache_lookup_ns", 25.4, "derived, 66 cycles, as the Haswell profile"},
    CostValue{"pte_set_ns", 96.2, "250 cycles (L. Torvalds, 30 Apr 2014), as the Haswell profile"},
    CostValue{"pte_clear_ns", 96.2, "derived: as pte_set_ns"},
    CostValue{"pte_protect_ns", 11.5, "derived, 30 cycles, as the Haswell profile"},
    CostValue{"pte_copy_ns", 19.2, "derived, 50 cycles, as the Haswell profile"},
    CostValue{"tlb_flush_local_ns", 83.1, "216 cycles (D. Hansen, 2015), as the Haswell profile"},
    CostValue{"tlb_flush_ipi_ns", 567.0, "derived as in the Haswell profile"},
    CostValue{"page_zero_ns", 320.0,
              "derived: 64 lines at mem_latency_ns / l2_outstanding = 5 ns a line"},
    CostValue{"page_copy_ns", 640.0,
              "derived: 128 lines at 5 ns; a measured single-thread copy of 5.9 GB/s "
              "(Intel community thread above) gives 694 ns"},
    CostValue{"page_alloc_ns", 96.0, "M. Cracauer (2018), Xeon W3580 (Nehalem), as above"},
    CostValue{"page_free_ns", 96.0, "derived: page_alloc_ns, reversed"},
    CostValue{"migrate_isolate_ns", 38.5, "derived, ~100 cycles, as the Haswell profile"},
    CostValue{"migrate_folio_ns", 96.2, "derived, ~250 cycles, as the Haswell profile"},
    CostValue{"syscall_ns", 142.0,
              "derived: 237 ns with PTI (A. Lutomirski, 2018) less its two CR3 writes "
              "(2 x 124 cycles, D. Hansen, 2015); a 3.x kernel has no PTI"},
    CostValue{"vma_op_ns", 115.0, "derived, ~300 cycles, as the Haswell profile"},
    CostValue{"fork_base_ns", 10000.0, "derived lower bound, as the Haswell profile"},
    CostValue{"exit_base_ns", 0.0, "included in fork_base_ns"},
    CostValue{"context_switch_ns", 452.0, "derived lower bound, as the Haswell profile"},
    CostValue{"lock_ns", 7.7, kAgnerLock},
    CostValue{"storage_read_ns", 66800.0, "Intel SSD DC P3700 (330566), as the Haswell profile"},
    CostValue{"storage_write_ns", 69000.0, "Intel SSD DC P3700 (330566), as the Haswell profile"},
    CostValue{"memcg_rcu_ns", 0.0,
              "rcu_read_lock/unlock compile to barriers without CONFIG_PREEMPT"},
    CostValue{"memcg_flag_read_ns", 0.385, "1 cycle, as the Haswell profile"},
    CostValue{"memcg_pc_lookup_ns", 3.08,
              "derived, 8 cycles: two dependent L1 loads; the entry's line miss is the cache "
              "model's"},
    CostValue{"memcg_percpu_add_ns", 0.385, "1 cycle"},
    CostValue{"memcg_bitlock_ns", 15.4, "two locked bit operations, ~20 cycles each"},
    CostValue{"memcg_spinlock_ns", 19.2, "derived, ~50 cycles, as the Haswell profile"},
    CostValue{"memcg_atomic_read_ns", 0.385, "1 cycle"},
    CostValue{"synchronize_rcu_ns", 8000000.0, "2 jiffies at HZ=250, as the Haswell profile"},
};

constexpr std::array kMachines = {
    MachineCosts{"xeon-8s-144c", "8 x Xeon E7-8895 v3 (Haswell-EX), 2.6 GHz, 45 MB L3 a socket",
                 kXeon8s},
    MachineCosts{"2s-16c", "2 x Xeon E5-2670 (Sandy Bridge-EP), 2.6 GHz, 20 MB L3 a socket",
                 kSnb2s},
};

}  // namespace

std::span<const CostParam> cost_params() { return kParams; }

const CostParam* find_cost_param(std::string_view name) {
  for (const auto& p : kParams) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::span<const MachineCosts> machine_profiles() { return kMachines; }

const MachineCosts* find_machine_costs(std::string_view machine) {
  for (const auto& m : kMachines) {
    if (m.machine == machine) return &m;
  }
  return nullptr;
}

CostProfile default_costs(std::string_view machine) {
  const MachineCosts* m = find_machine_costs(machine);
  if (!m) m = find_machine_costs(kDefaultCostMachine);
  CostProfile c;
  for (const auto& v : m->values) {
    if (const CostParam* p = find_cost_param(v.name)) c.*(p->field) = v.value;
  }
  return c;
}

}  // namespace mmsim::cost

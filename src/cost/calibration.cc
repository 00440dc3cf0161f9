#include "cost/calibration.h"

#include <cmath>
#include <cstdio>

namespace mmsim::cost {

HostProfile derive_host_profile(const Measurements& m) {
  HostProfile p;
  auto get = [&](const std::string& k) -> std::optional<double> {
    auto it = m.find(k);
    if (it == m.end()) {
      p.missing.push_back(k);
      return std::nullopt;
    }
    return it->second;
  };
  auto put = [&](const std::string& name, double v, const std::string& method) {
    p.costs.push_back(DerivedCost{name, v, method});
  };
  // User-mode work, taken as measured.
  if (auto v = get("bench_sweep_elem_ns")) {
    put("sweep_elem_ns", *v,
        "mmsim-numa-shared-cow's own summing loop, one process per CPU: CPU time / (passes x "
        "elements)");
  } else if (auto w = get("sweep_elem_llc_ns")) {
    put("sweep_elem_ns", *w, "sweep_elem_llc_ns: `s += a[i]` over an 8 MiB int array");
  }
  auto llc = get("sweep_elem_llc_ns"), dram = get("sweep_elem_dram_ns");
  if (llc && dram)
    put("dram_line_ns", std::max(0.0, (*dram - *llc) * 16),
        "(sweep_elem_dram_ns - sweep_elem_llc_ns) x 16 elements per line");
  if (auto v = get("page_zero_ns")) put("page_zero_ns", *v, "memset of 4 KiB over a 256 MiB ring");
  if (auto v = get("page_copy_ns")) put("page_copy_ns", *v, "memcpy of 4 KiB, DRAM to DRAM");
  if (auto v = get("lock_uncontended_ns")) put("lock_ns", *v, "atomic_flag set+clear, one thread");
  const auto mem = get("mem_latency_local_ns");
  if (mem) put("mem_latency_ns", *mem, "pointer chase over 512 MiB");
  // Kernel paths.
  const auto sys = get("syscall_ns");
  if (sys) put("syscall_ns", *sys, "syscall(SYS_getppid) round trip");
  std::optional<double> lookup;
  if (auto pr = get("pagecache_lookup_ns"); pr && sys) {
    lookup = std::max(0.0, *pr - *sys);
    put("pagecache_lookup_ns", *lookup, "pread of 1 byte per cached page minus syscall_ns");
  }
  // Two read faults on cached pages: a shmem fault that maps one PTE (F1, one fault =
  // entry + lookup + one PTE + the user's access) and the file loop, where one
  // fault maps N pages and each is then read (T per page = (entry + lookup) /
  // N + PTE + access). Together they give the PTE and the fixed part.
  auto one = get("shmem_fault_1pte_ns"), per_page = get("minor_fault_file_ns"),
       n = get("fault_around_pages");
  if (one && per_page && n && *n > 1 && mem && lookup) {
    const double pte_and_access = (*per_page - *one / *n) / (1 - 1 / *n);
    const double pte = std::max(0.0, pte_and_access - *mem);
    put("pte_set_ns", pte,
        "(minor_fault_file_ns - shmem_fault_1pte_ns / N) / (1 - 1/N) - mem_latency_ns, N = pages "
        "per file fault");
    put("fault_entry_ns", std::max(0.0, *one - pte - *mem - *lookup),
        "shmem_fault_1pte_ns - pte_set_ns - mem_latency_ns - pagecache_lookup_ns");
  }
  if (auto v = get("zap_pte_ns"))
    put("pte_clear_ns", *v, "MADV_DONTNEED of a mapped file range, per page");
  if (auto v = get("mprotect_pte_ns"))
    put("pte_protect_ns", *v, "mprotect of a populated range, per PTE");
  if (auto v = get("fork_pte_copy_ns"))
    put("pte_copy_ns", *v, "fork of a populated 64 MiB mapping, per PTE");
  if (auto za = get("zap_anon_pte_ns"), zf = get("zap_pte_ns"); za && zf)
    put("page_free_ns", std::max(0.0, *za - *zf),
        "munmap of written anon pages minus a file zap, per page");
  if (auto az = get("anon_fault_zero_ns"), z = get("page_zero_ns"); az && z && one && lookup) {
    // An anonymous write fault = the fixed fault part + a page + zeroing + a PTE.
    double fixed = 0, pte = 0;
    for (const auto& c : p.costs) {
      if (c.name == "fault_entry_ns") fixed = c.value;
      if (c.name == "pte_set_ns") pte = c.value;
    }
    put("page_alloc_ns", std::max(0.0, *az - fixed - *z - pte),
        "anon_fault_zero_ns - fault_entry_ns - page_zero_ns - pte_set_ns");
  }
  if (auto mm = get("mmap_munmap_ns"); mm && sys)
    put("vma_op_ns", std::max(0.0, (*mm - 2 * *sys) / 2),
        "(mmap+munmap of one page - 2 syscalls) / 2");
  if (auto v = get("fork_exit_wait_ns"))
    put("fork_base_ns", *v, "fork+exit+wait of a small process");
  put("exit_base_ns", 0, "included in fork_base_ns, whose measurement covers exit");
  if (auto v = get("context_switch_ns"))
    put("context_switch_ns", *v, "pipe ping-pong on one CPU, per switch");
  if (auto call = get("mprotect_call_ns"); call && sys) {
    double prot = 0;
    for (const auto& c : p.costs)
      if (c.name == "pte_protect_ns") prot = c.value;
    put("tlb_flush_local_ns", std::max(0.0, *call - *sys - prot),
        "1-page mprotect minus syscall and one PTE");
  }
  if (auto v = get("tlb_flush_remote_ipi_ns"))
    put("tlb_flush_ipi_ns", *v, "1-page mprotect with a spinning sibling thread, minus alone");
  if (auto v = get("storage_read_128k_ns")) put("storage_read_ns", *v, "O_DIRECT read of 128 KiB");
  // memcg pieces.
  const std::pair<const char*, const char*> memcg[] = {
      {"memcg_rcu_ns", "preempt_toggle_ns"},
      {"memcg_flag_read_ns", "global_flag_read_ns"},
      {"memcg_pc_lookup_ns", "page_cgroup_lookup_seq_ns"},
      {"memcg_percpu_add_ns", "percpu_add_ns"},
      {"memcg_bitlock_ns", "bit_spinlock_ns"},
      {"memcg_spinlock_ns", "spin_lock_irqsave_ns"},
      {"memcg_atomic_read_ns", "atomic_read_ns"}};
  for (const auto& [param, key] : memcg) {
    if (auto v = get(key)) put(param, *v, key);
  }
  // How many pages one read fault on a cached file maps on this kernel
  // (fault-around, or whole large folios).
  if (auto v = get("fault_around_pages"))
    p.measured.push_back(DerivedCost{"file_fault_pages", *v,
                                     "pages touched / minor faults over a cached 64 MiB file"});
  return p;
}

std::string host_profile_toml(const HostProfile& p, const std::string& header) {
  std::string out = header;
  out += "[costs]\n";
  char buf[512];
  for (const auto& c : p.costs) {
    std::snprintf(buf, sizeof buf, "%s = %.6g   # %s\n", c.name.c_str(), c.value, c.method.c_str());
    out += buf;
  }
  out += "\n[measured]\n";
  for (const auto& c : p.measured) {
    std::snprintf(buf, sizeof buf, "%s = %.6g   # %s\n", c.name.c_str(), c.value, c.method.c_str());
    out += buf;
  }
  return out;
}

}  // namespace mmsim::cost

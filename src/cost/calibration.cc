#include "cost/calibration.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <limits>
#include <optional>

#include "cost/cost_profile.h"

namespace mmsim::cost {

namespace {

// printf-style formatting (the cost layer links no formatting library).
__attribute__((format(printf, 1, 2))) std::string format(const char* f, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

double relative_width(double median, double min, double max) {
  if (max == min) return 0;
  if (median == 0) return std::numeric_limits<double>::infinity();
  return (max - min) / std::abs(median);
}

// A value with the range it takes over its inputs' runs.
struct Ranged {
  double mid = 0, lo = 0, hi = 0;
};

Ranged operator-(Ranged a, Ranged b) { return {a.mid - b.mid, a.lo - b.hi, a.hi - b.lo}; }
// REQUIRES: k > 0.
Ranged operator*(Ranged a, double k) { return {a.mid * k, a.lo * k, a.hi * k}; }
// REQUIRES: both ranges at or above 0.
Ranged times(Ranged a, Ranged b) { return {a.mid * b.mid, a.lo * b.lo, a.hi * b.hi}; }
// REQUIRES: b above 0.
Ranged over(Ranged a, Ranged b) {
  return {a.mid / b.mid, a.lo < 0 ? a.lo / b.lo : a.lo / b.hi,
          a.hi > 0 ? a.hi / b.lo : a.hi / b.hi};
}

// Reads measurements (noting which were missing) and collects the costs.
class Deriver {
 public:
  Deriver(const Measurements& m, double max_spread, HostProfile& p)
      : m_(m), max_spread_(max_spread), p_(p) {}

  bool has(const std::string& key) const { return m_.contains(key); }

  // The measurement, marked as an input of the profile; nullopt (and named
  // as missing) when the calibrators did not report it.
  std::optional<Ranged> get(const std::string& key) {
    const auto it = m_.find(key);
    if (it == m_.end()) {
      p_.missing.push_back(key);
      return std::nullopt;
    }
    const Measurement& v = it->second;
    if (v.spread() > max_spread_ && !seen_unstable(key)) p_.unstable.push_back({key, v});
    return Ranged{v.median, v.min, v.max};
  }

  // A cost, if its value is above 0; else named as failed, with `formula`.
  void put(const std::string& name, Ranged v, const std::string& method,
           const std::string& formula = "") {
    if (!(v.mid > 0)) {
      p_.failed.push_back(
          {name, format("%s came out %.4g%s: not written (its default stays)", name.c_str(), v.mid,
                        formula.empty() ? "" : (" = " + formula).c_str())});
      return;
    }
    DerivedCost c{name, v.mid, v.lo, v.hi, method};
    if (find_cost_param(name)) {
      p_.costs.push_back(c);
    } else {
      c.method += " (no cost parameter of this build has this name)";
      p_.measured.push_back(c);
    }
  }

  // A cost taken as measured.
  void copy(const std::string& name, const std::string& key, const std::string& method) {
    if (auto v = get(key)) put(name, *v, method);
  }

 private:
  bool seen_unstable(const std::string& key) const {
    for (const auto& u : p_.unstable)
      if (u.name == key) return true;
    return false;
  }
  const Measurements& m_;
  double max_spread_;
  HostProfile& p_;
};

}  // namespace

double Measurement::spread() const { return relative_width(median, min, max); }
double DerivedCost::spread() const { return relative_width(value, min, max); }

std::string spread_text(double spread, double min, double max) {
  return format("%.1f%% [min %.4g, max %.4g]", spread * 100, min, max);
}

HostProfile derive_host_profile(const Measurements& m, double max_spread) {
  HostProfile p;
  Deriver d(m, max_spread, p);

  // The core and its memory hierarchy (mmsim-calibrate-hw).
  d.copy("core_ghz", "core_ghz", "a dependent chain of register adds, 1 cycle each: adds per ns");
  d.copy("l1d_bytes", "l1d_bytes", "sysfs cpu0/cache: the level-1 data cache");
  d.copy("l2_bytes", "l2_bytes", "sysfs cpu0/cache: the level-2 cache");
  d.copy("l1_ns", "l1_ns", "pointer chase (random cyclic permutation of 64 B lines), half the L1d");
  d.copy("l2_ns", "l2_ns", "the same chase over half the L2");
  d.copy("llc_ns", "llc_ns", "the same chase over half the LLC");
  if (d.has("mem_latency_ns") || !d.has("mem_latency_local_ns")) {
    d.copy("mem_latency_ns", "mem_latency_ns", "the same chase over 512 MiB (local DRAM)");
  } else {
    d.copy("mem_latency_ns", "mem_latency_local_ns", "pointer chase over 512 MiB (calibrate.cc)");
  }
  d.copy("lfb_entries", "lfb_entries",
         "memory-level parallelism: the 512 MiB chase's latency / the least time per load of K "
         "interleaved independent chases");
  const char* lat_key = d.has("mem_latency_ns") ? "mem_latency_ns" : "mem_latency_local_ns";
  if (auto bw = d.get("stream_read_gbps"), lat = d.get(lat_key); bw && lat) {
    d.put("l2_outstanding", times(*bw, *lat) * (1.0 / 64),
          "Little's law: single-thread sequential read bandwidth (stream_read_gbps, B/ns) x "
          "mem_latency_ns / 64 B");
  }
  d.copy("mem_bandwidth_gbps", "stream_all_read_gbps",
         "one thread per online CPU reading its own slice of 512 MiB at once: bytes / time until "
         "the last ends (its memory is one node's)");

  // User-mode work: the benchmark's own summing loop, both builds, one
  // process alone (the [measured] ratios give every CPU busy).
  if (d.has("bench_sweep_O2_alone_ns") || !d.has("sweep_elem_llc_ns")) {
    d.copy("sweep_elem_ns", "bench_sweep_O2_alone_ns",
           "mmsim-numa-shared-cow --loop O2 (the summing loop built -O2) alone: CPU time / "
           "(passes x elements)");
  } else {
    d.copy("sweep_elem_ns", "sweep_elem_llc_ns", "`s += a[i]` at -O2 over an LLC-sized int array");
  }
  d.copy("sweep_elem_O0_ns", "bench_sweep_O0_alone_ns",
         "mmsim-numa-shared-cow --loop O0 (the seed write-up's loop built as its author built it: "
         "gcc, no optimisation flags) alone: CPU time / (passes x elements)");
  for (const char* loop : {"O0", "O2"}) {
    const std::string all = format("bench_sweep_%s_all_ns", loop);
    const std::string alone = format("bench_sweep_%s_alone_ns", loop);
    if (d.has(all) && d.has(alone)) {
      const Ranged r = over(*d.get(all), *d.get(alone));
      p.measured.push_back({format("sweep_%s_all_cpus_ratio", loop), r.mid, r.lo, r.hi,
                            format("%s / %s: one process per online CPU vs one alone (the SMT "
                                   "and shared-cache effect)",
                                   all.c_str(), alone.c_str())});
    }
  }
  d.copy("page_zero_ns", "page_zero_ns", "memset of 4 KiB over a 256 MiB ring");
  if (auto hot = d.get("page_zero_cached_ns")) {
    constexpr double kPerLine = 1.0 / 64;
    d.put("memset_line_ns", times(*hot, {kPerLine, kPerLine, kPerLine}),
          "glibc memset of a hot 4 KiB (page_zero_cached_ns) over its 64 lines");
  }
  d.copy("page_copy_ns", "page_copy_ns", "memcpy of 4 KiB, DRAM to DRAM");
  d.copy("lock_ns", "lock_uncontended_ns", "atomic_flag set+clear, one thread");

  // Kernel paths, each measured directly where a workload isolates it.
  const auto sys = d.get("syscall_ns");
  if (sys) d.put("syscall_ns", *sys, "syscall(SYS_getppid) round trip");
  d.copy("pagecache_lookup_ns", "pagecache_mincore_ns",
         "mincore() of a never-faulted mapping of a cached 64 MiB file, per page (one page-cache "
         "lookup each, one system call for all)");
  // The PTE of one more page in a fault-around batch: a read fault on the
  // cached file maps N pages (file_fault_entry_ns, the touches of its N
  // pages included); one on a sparse tmpfs file maps a single PTE. Their
  // difference per extra page is that page's PTE and the user's read of it
  // (MADV_POPULATE_READ, populate_file_pte_ns in [measured], is dominated by
  // get_user_pages' walk on recent kernels, so it is not used).
  std::optional<Ranged> pte;
  if (auto batch = d.get("file_fault_entry_ns"), one = d.get("shmem_fault_1pte_ns"),
      n = d.get("fault_around_pages");
      batch && one && n) {
    if (n->lo > 1) {
      pte = over(*batch - *one, *n - Ranged{1, 1, 1});
      d.put("pte_set_ns", *pte,
            "one more page of a fault-around batch: (a read fault of a cached file mapping N "
            "pages - a tmpfs read fault mapping 1) / (N - 1); the user's read of the page "
            "included",
            "(file_fault_entry_ns - shmem_fault_1pte_ns) / (fault_around_pages - 1)");
    } else {
      p.failed.push_back({"pte_set_ns",
                          "pte_set_ns: a read fault mapped 1 page "
                          "(fault_around_pages = 1): no batch to measure a PTE in"});
    }
  }
  const auto zero_fault = d.get("zero_page_fault_ns");
  if (zero_fault && pte && pte->mid > 0) {
    d.put("fault_entry_ns", *zero_fault - *pte,
          "a read fault that maps the shared zero page (zero_page_fault_ns: entry + one PTE) "
          "minus pte_set_ns",
          "zero_page_fault_ns - pte_set_ns");
  }
  d.copy("pte_clear_ns", "zap_pte_ns", "MADV_DONTNEED of a mapped file range, per page");
  d.copy("pte_protect_ns", "mprotect_pte_ns", "mprotect of a populated range, per PTE");
  d.copy("pte_copy_ns", "fork_pte_copy_ns", "fork of a populated 64 MiB mapping, per PTE");
  if (auto anon = d.get("zap_anon_pte_ns"), file = d.get("zap_pte_ns"); anon && file) {
    d.put("page_free_ns", *anon - *file,
          "munmap of written anon pages minus MADV_DONTNEED of file pages, per page",
          "zap_anon_pte_ns - zap_pte_ns");
  }
  if (auto anon = d.get("anon_fault_zero_ns"), zero = d.get("page_zero_ns");
      anon && zero && zero_fault) {
    d.put("page_alloc_ns", *anon - *zero_fault - *zero,
          "an anonymous write fault (entry, page, zeroing, PTE) minus a zero-page read fault "
          "(entry, PTE) minus page_zero_ns",
          "anon_fault_zero_ns - zero_page_fault_ns - page_zero_ns");
  }
  if (auto mm = d.get("mmap_munmap_ns"); mm && sys) {
    d.put("vma_op_ns", (*mm - *sys * 2) * 0.5, "(mmap+munmap of one page - 2 syscalls) / 2",
          "(mmap_munmap_ns - 2 x syscall_ns) / 2");
  }
  d.copy("fork_base_ns", "fork_exit_wait_ns", "fork+exit+wait of a small process");
  p.costs.push_back(
      {"exit_base_ns", 0, 0, 0, "included in fork_base_ns, whose measurement covers exit", true});
  d.copy("context_switch_ns", "context_switch_ns", "pipe ping-pong on one CPU, per switch");
  if (auto call = d.get("mprotect_call_ns"), prot = d.get("mprotect_pte_ns"); call && sys && prot) {
    d.put("tlb_flush_local_ns", *call - *sys - *prot, "1-page mprotect minus syscall and one PTE",
          "mprotect_call_ns - syscall_ns - mprotect_pte_ns");
  }
  d.copy("tlb_flush_ipi_ns", "tlb_flush_remote_ipi_ns",
         "1-page mprotect with a spinning sibling thread, minus alone");
  d.copy("storage_read_ns", "storage_read_128k_ns", "O_DIRECT read of 128 KiB");
  d.copy("storage_write_ns", "storage_write_128k_ns", "O_DIRECT sequential write, per 128 KiB");
  const std::pair<const char*, const char*> memcg[] = {
      {"memcg_rcu_ns", "preempt_toggle_ns"},
      {"memcg_flag_read_ns", "global_flag_read_ns"},
      {"memcg_pc_lookup_ns", "page_cgroup_lookup_seq_ns"},
      {"memcg_percpu_add_ns", "percpu_add_ns"},
      {"memcg_bitlock_ns", "bit_spinlock_ns"},
      {"memcg_spinlock_ns", "spin_lock_irqsave_ns"},
      {"memcg_atomic_read_ns", "atomic_read_ns"}};
  for (const auto& [param, key] : memcg) d.copy(param, key, key);

  // How many pages one read fault on a cached file maps on this kernel
  // (fault-around, or whole large folios).
  if (auto v = d.get("fault_around_pages")) {
    p.measured.push_back({"file_fault_pages", v->mid, v->lo, v->hi,
                          "pages touched / minor faults over a cached 64 MiB file"});
  }
  // Every raw measurement, for `mmsim calibrate --check`.
  for (const auto& [key, v] : m) {
    bool taken = false;
    for (const auto& c : p.measured) taken = taken || c.name == key;
    if (!taken) p.measured.push_back({key, v.median, v.min, v.max, "median of the runs"});
  }
  return p;
}

std::string host_profile_toml(const HostProfile& p, const std::string& header) {
  std::string out = header;
  auto line = [&](const DerivedCost& c) {
    out += format("%s = %.6g   # spread ", c.name.c_str(), c.value) +
           spread_text(c.spread(), c.min, c.max) + "; " + c.method + "\n";
  };
  out += "[costs]\n";
  for (const auto& c : p.costs) line(c);
  for (const auto& f : p.failed) out += "# FAILED: " + f.why + "\n";
  out += "\n[measured]\n";
  for (const auto& c : p.measured) line(c);
  return out;
}

}  // namespace mmsim::cost

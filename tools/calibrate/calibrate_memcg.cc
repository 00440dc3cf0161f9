// calibrate_memcg.cc - user-mode building blocks of the memcg page-stat update
// protocols of Linux 3.3/3.4 (mm/memcontrol.c mem_cgroup_begin_update_page_stat and its 3.3
// predecessor).
//
// The per-operation costs mmsim charges for mem_cgroup_update_page_stat (3.3)
// and the begin/end bracket of the 3.4 "page cgroup diet" are sums of a few
// tiny pieces: a per-CPU counter add, rcu_read_lock/unlock (preempt_count
// inc/dec in a non-preemptible kernel), the global memcg_moving check, the
// page_cgroup lookup, the PCG_LOCK/MOVE_LOCK bit spinlock, the memcg
// move_lock spinlock and the moving_account read.  Each piece is a plain
// user-mode instruction sequence, so it runs natively even inside a VM; this
// program times each one in a loop of millions of operations.
//
// Linux/x86-64 with GCC or Clang.  Built by CMake as mmsim-calibrate-memcg
// (it links mmsim_util, the project's statistics and timing helpers); `mmsim
// calibrate` runs it.  By hand, from the repository root:
//   cmake --build build/release --target mmsim-calibrate-memcg
//   build/release/tools/calibrate/mmsim-calibrate-memcg [--runs N] [--out FILE]
// (or compile it with -O2 -pthread -Isrc together with src/util/*.cc).
//
// Every value is the median over N timed runs (default 9, at least 9) taken
// after one discarded warm-up run; the minimum and maximum are reported too.
// A run is one call of a noinline loop function; its time / operations is the
// sample.  Loops are unrolled 8x so loop control is a small fraction of each
// sample (the empty loop is measured and reported as a note; it is NOT
// subtracted).  Compiler barriers (asm volatile with a "memory" clobber, or an
// asm that claims to read/modify a register) keep each operation in the loop.
//
// Output: TOML on stdout or FILE ([host], [costs] with a method comment per
// value, # notes, [spread]); progress on stderr.  The process pins itself to
// CPU 0 and needs ~100 MiB of memory.

#include <sched.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "util/stats.h"

#if !defined(__x86_64__)
#error "calibrate_memcg measures x86-64 instruction sequences"
#endif

// clang-format off
#define COMPILER_BARRIER() asm volatile("" ::: "memory")
#define UNROLL8(stmt) {stmt} {stmt} {stmt} {stmt} {stmt} {stmt} {stmt} {stmt}
// clang-format on

namespace {

namespace util = mmsim::util;
using util::now_ns;  // steady clock, integer ns; timings below are done in double

int g_runs = 9;
volatile std::uint64_t g_sink;  // results of loops land here

// ------------------------------------------------------------------ timing

// A chain of dependent register adds: 1 cycle each on current x86 cores, so
// ns per add = the core's cycle time while it runs.
__attribute__((noinline)) std::uint64_t loop_add_chain(long iters) {
  std::uint64_t x = 0;
  for (long i = 0; i < iters; ++i)
    asm volatile(
        "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
        "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
        : "+r"(x));
  return x;
}

double cycle_ns_now() {  // ~1 ms probe
  constexpr long iters = 250'000;
  const double t0 = now_ns();
  g_sink = loop_add_chain(iters);
  return (now_ns() - t0) / (8.0 * iters);
}

struct Samples {
  std::vector<double> ns;      // ns per operation, one per timed run
  std::vector<double> cycles;  // the same divided by the cycle time probed just before
};

// Calls body() once to warm up, then g_runs times; each call performs `ops`
// operations.  Before each timed call a 1 ms add-chain probe estimates the
// current cycle time (the VM's clock frequency wanders), giving a cycle count.
template <class Body>
Samples time_runs(double ops, Body body) {
  Samples s;
  for (int r = -1; r < g_runs; ++r) {
    const double cyc = cycle_ns_now();
    const double t0 = now_ns();
    body();
    const double t1 = now_ns();
    if (r < 0) continue;
    s.ns.push_back((t1 - t0) / ops);
    s.cycles.push_back((t1 - t0) / ops / cyc);
  }
  return s;
}

struct Entry {
  std::string key;
  util::Summary st;
  util::Summary cyc;
  std::string method;
};

std::vector<Entry> g_entries;
std::vector<std::string> g_notes;

void record(const std::string& key, const Samples& s, const std::string& method) {
  Entry e{key, util::summarize(s.ns), util::summarize(s.cycles), method};
  std::fprintf(stderr, "  %-38s %9.3f ns   (min %.3f, max %.3f)   ~%.1f cycles\n", key.c_str(),
               e.st.median, e.st.min, e.st.max, e.cyc.median);
  g_entries.push_back(e);
}

void add_note(const std::string& s) {
  std::fprintf(stderr, "  note: %s\n", s.c_str());
  g_notes.push_back(s);
}

std::string fmt(double v, int digits = 3) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// ------------------------------------------------------------------ host facts

std::string first_line(const char* path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

std::string selected_choice(const std::string& s) {  // "a [b] c" -> "b"
  const auto l = s.find('['), r = s.find(']');
  return (l == std::string::npos || r == std::string::npos || r < l) ? s
                                                                     : s.substr(l + 1, r - l - 1);
}

struct Host {
  std::string kernel, cpu, cpu_sig, date, thp, l2, l3;
  bool hypervisor = false;
  long ncpu = 0;
};

Host read_host() {
  Host h;
  utsname un{};
  if (uname(&un) == 0) h.kernel = un.release;
  std::ifstream ci("/proc/cpuinfo");
  std::string line, family, model, stepping;
  while (std::getline(ci, line)) {
    if (line.empty()) break;  // first processor block is enough
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(name.find_last_not_of(" \t") + 1);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (name == "model name")
      h.cpu = value;
    else if (name == "cpu family")
      family = value;
    else if (name == "model")
      model = value;
    else if (name == "stepping")
      stepping = value;
    else if (name == "flags")
      h.hypervisor = (" " + value + " ").find(" hypervisor ") != std::string::npos;
  }
  h.cpu_sig = "family " + family + " model " + model + " stepping " + stepping;
  h.ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  const std::time_t t = std::time(nullptr);
  char d[16];
  std::strftime(d, sizeof d, "%Y-%m-%d", std::gmtime(&t));
  h.date = d;
  h.thp = selected_choice(first_line("/sys/kernel/mm/transparent_hugepage/enabled"));
  for (int i = 0; i < 8; ++i) {
    const std::string base = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    const std::string level = first_line((base + "level").c_str());
    const std::string type = first_line((base + "type").c_str());
    const std::string size = first_line((base + "size").c_str());
    if (level == "2" && type == "Unified") h.l2 = size;
    if (level == "3" && type == "Unified") h.l3 = size;
  }
  if (h.l2.empty() && sysconf(_SC_LEVEL2_CACHE_SIZE) > 0)
    h.l2 = std::to_string(sysconf(_SC_LEVEL2_CACHE_SIZE) >> 10) + "K (glibc sysconf/cpuid)";
  if (h.l3.empty() && sysconf(_SC_LEVEL3_CACHE_SIZE) > 0)
    h.l3 = std::to_string(sysconf(_SC_LEVEL3_CACHE_SIZE) >> 10) +
           "K (glibc sysconf/cpuid; in a VM this may be a whole socket, not this core's slice)";
  return h;
}

bool pin_cpu0() {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(0, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

// ------------------------------------------------------------------ the hot variables

// Per-thread variables are addressed %fs-relative, as per-CPU data is
// %gs-relative in the kernel (this_cpu_add is `add %reg, %gs:off`).
alignas(64) thread_local long tl_stat[8];       // memcg->stat->count[] of this CPU
alignas(64) thread_local int tl_preempt_count;  // preempt_count

alignas(64) volatile int g_memcg_moving = 0;           // global, read-only during the test
alignas(64) std::atomic<int> g_moving_account{0};      // memcg->moving_account
alignas(64) std::atomic<std::uint64_t> g_pc_flags{0};  // page_cgroup->flags
alignas(64) std::atomic<int> g_move_lock{0};           // memcg->move_lock (test-and-set style)
alignas(64) std::uint32_t g_ticket_lock = 0;  // 3.3 x86 ticket lock: head low 16, tail high 16

using u16_alias = std::uint16_t __attribute__((may_alias));

constexpr std::uint64_t kLockBit = 0;  // PCG_LOCK is bit 0 of page_cgroup->flags

// ------------------------------------------------------------------ loops (iters x 8 ops)
// The loop bodies are laid out by hand (one timed operation per line).
// clang-format off

__attribute__((noinline)) void loop_empty(long iters) {
  for (long i = 0; i < iters; ++i) {
    UNROLL8(COMPILER_BARRIER();)
  }
}

// 1. this_cpu_add(): one non-atomic add to memory, same counter every time.
__attribute__((noinline)) void loop_percpu_add(long iters, long delta) {
  for (long i = 0; i < iters; ++i) {
    UNROLL8(tl_stat[0] += delta; COMPILER_BARRIER();)
  }
}

// Variant: the add goes to 8 different counters of the same line in turn, so
// consecutive adds do not depend on each other through memory.
__attribute__((noinline)) void loop_percpu_add_spread(long iters, long delta) {
  for (long i = 0; i < iters; ++i) {
    tl_stat[0] += delta; COMPILER_BARRIER();
    tl_stat[1] += delta; COMPILER_BARRIER();
    tl_stat[2] += delta; COMPILER_BARRIER();
    tl_stat[3] += delta; COMPILER_BARRIER();
    tl_stat[4] += delta; COMPILER_BARRIER();
    tl_stat[5] += delta; COMPILER_BARRIER();
    tl_stat[6] += delta; COMPILER_BARRIER();
    tl_stat[7] += delta; COMPILER_BARRIER();
  }
}

// 2. rcu_read_lock + rcu_read_unlock, !CONFIG_PREEMPT: preempt_count++ then --.
// In 3.3/3.4 preempt_count lives in thread_info, reached through a register
// (current_thread_info() = kernel_stack - offset), so the counter is
// addressed as `off(%reg)` here too.
__attribute__((noinline)) void loop_preempt_toggle(long iters) {
  int* pc = &tl_preempt_count;
  asm("" : "+r"(pc));  // address stays in a register
  for (long i = 0; i < iters; ++i) {
    UNROLL8(++*pc; COMPILER_BARRIER(); --*pc; COMPILER_BARRIER();)
  }
}

// Variant: the counter addressed as `%fs:absolute` with no base register (the
// form of the per-CPU __preempt_count of 3.15+ kernels).
__attribute__((noinline)) void loop_preempt_toggle_abs(long iters) {
  for (long i = 0; i < iters; ++i) {
    UNROLL8(++tl_preempt_count; COMPILER_BARRIER(); --tl_preempt_count; COMPILER_BARRIER();)
  }
}

// The slow path of the memcg_moving check; never reached (the flag stays 0).
// Being an out-of-line call it keeps the check a real conditional branch
// (GCC would otherwise turn `if (flag) ++n` into setcc + add).
__attribute__((noinline, cold)) void memcg_moving_slow_path() { g_sink = g_sink + 1; }

// 3. if (atomic_read(&memcg_moving) > 0) slow path; never taken.
__attribute__((noinline)) void loop_global_flag(long iters) {
  for (long i = 0; i < iters; ++i) {
    UNROLL8(if (__builtin_expect(g_memcg_moving > 0, 0)) memcg_moving_slow_path();)
  }
}

// 8. atomic_read(&memcg->moving_account): relaxed load, value consumed.
__attribute__((noinline)) void loop_atomic_read(long iters) {
  for (long i = 0; i < iters; ++i) {
    UNROLL8(int v = g_moving_account.load(std::memory_order_relaxed); asm volatile("" ::"r"(v));)
  }
}

// 6. bit_spin_lock(PCG_LOCK, &pc->flags) + bit_spin_unlock: lock bts + lock and.
__attribute__((noinline)) void loop_bit_spinlock(long iters) {
  constexpr std::uint64_t mask = std::uint64_t{1} << kLockBit;
  for (long i = 0; i < iters; ++i) {
    UNROLL8(
        while (g_pc_flags.fetch_or(mask, std::memory_order_acquire) & mask) {
          while (g_pc_flags.load(std::memory_order_relaxed) & mask) asm volatile("pause");
        }
        g_pc_flags.fetch_and(~mask, std::memory_order_release);)
  }
}

// 7. spin_lock + spin_unlock: cmpxchg 0->1 (acquire), store 0 (release).
__attribute__((noinline)) void loop_spinlock_cmpxchg(long iters) {
  for (long i = 0; i < iters; ++i) {
    UNROLL8(
        int expect = 0;
        while (!g_move_lock.compare_exchange_weak(expect, 1, std::memory_order_acquire,
                                                  std::memory_order_relaxed)) {
          expect = 0;
          asm volatile("pause");
        }
        g_move_lock.store(0, std::memory_order_release);)
  }
}

// 7b. The x86 ticket lock of 3.3/3.4: lock xadd on the tail, wait for the
// head, unlock by a plain (non-locked) increment of the head.
__attribute__((noinline)) void loop_spinlock_ticket(long iters) {
  u16_alias* head = reinterpret_cast<u16_alias*>(&g_ticket_lock);  // little endian: low half
  for (long i = 0; i < iters; ++i) {
    UNROLL8(
        std::uint32_t v = __atomic_fetch_add(&g_ticket_lock, 1u << 16, __ATOMIC_ACQUIRE);
        const std::uint16_t mine = static_cast<std::uint16_t>(v >> 16);
        while (static_cast<std::uint16_t>(v) != mine) {
          asm volatile("pause");
          v = __atomic_load_n(&g_ticket_lock, __ATOMIC_ACQUIRE);
        }
        __atomic_store_n(head, static_cast<std::uint16_t>(mine + 1), __ATOMIC_RELEASE);)
  }
}

// 7c. The flags half of local_irq_save/restore: pushf;pop and push;popf
// (without cli, which is privileged).  The stack pointer is moved past the
// 128-byte red zone first, since this leaf function may keep data there.
__attribute__((noinline)) void loop_pushf_popf(long iters) {
  for (long i = 0; i < iters; ++i) {
    UNROLL8(
        unsigned long fl;
        asm volatile("lea -128(%%rsp), %%rsp\n\tpushfq\n\tpopq %0\n\tlea 128(%%rsp), %%rsp"
                     : "=r"(fl) : : "memory");
        asm volatile("lea -128(%%rsp), %%rsp\n\tpushq %0\n\tpopfq\n\tlea 128(%%rsp), %%rsp"
                     : : "r"(fl) : "memory", "cc");)
  }
}
// clang-format on

// ------------------------------------------------------------------ page_cgroup

struct PageCgroup {  // 3.3-3.18 layout: 16 bytes per 4 KiB page
  std::uint64_t flags;
  void* mem_cgroup;
};
static_assert(sizeof(PageCgroup) == 16);

constexpr std::uint64_t kPcgUsed = std::uint64_t{1} << 1;   // PCG_USED
constexpr std::uint64_t kPcgCache = std::uint64_t{1} << 2;  // PCG_CACHE
constexpr std::uint64_t kStartPfn = 0x100000;               // node starts at 4 GiB

// The per-entry work: pc = base + (pfn - start_pfn); read flags and
// mem_cgroup; if USED, use the pointer.  Returns the flags word so the caller
// can optionally make the next lookup depend on it.
inline __attribute__((always_inline)) std::uint64_t pc_visit(const PageCgroup* base,
                                                             std::uint64_t pfn,
                                                             std::uint64_t& acc) {
  asm("" : "+r"(pfn));  // the index is computed per entry, not strength-reduced
  const PageCgroup* pc = base + (pfn - kStartPfn);
  const std::uint64_t f = pc->flags;
  void* memcg = pc->mem_cgroup;
  if (f & kPcgUsed) acc += reinterpret_cast<std::uintptr_t>(memcg);
  asm volatile("" : "+r"(acc));  // keeps every visit, blocks vectorisation
  return f;
}

__attribute__((noinline)) std::uint64_t pc_walk_seq(const PageCgroup* base, std::uint64_t n,
                                                    int passes) {
  std::uint64_t acc = 0;
  for (int p = 0; p < passes; ++p)
    for (std::uint64_t pfn = kStartPfn; pfn < kStartPfn + n; ++pfn) pc_visit(base, pfn, acc);
  return acc;
}

// Independent lookups in permutation order (the CPU may overlap misses).
__attribute__((noinline)) std::uint64_t pc_walk_perm(const PageCgroup* base,
                                                     const std::uint32_t* perm, std::uint64_t n,
                                                     int passes) {
  std::uint64_t acc = 0;
  for (int p = 0; p < passes; ++p)
    for (std::uint64_t i = 0; i < n; ++i) pc_visit(base, kStartPfn + perm[i], acc);
  return acc;
}

// Same order, but each lookup's address depends on the previous entry's flags
// (bit 63 is never set, so the order is unchanged): one miss at a time.
__attribute__((noinline)) std::uint64_t pc_walk_perm_dep(const PageCgroup* base,
                                                         const std::uint32_t* perm, std::uint64_t n,
                                                         int passes) {
  std::uint64_t acc = 0, f = 0;
  for (int p = 0; p < passes; ++p)
    for (std::uint64_t i = 0; i < n; ++i) f = pc_visit(base, kStartPfn + perm[i] + (f >> 63), acc);
  return acc;
}

struct HugeArray {
  void* map = nullptr;
  std::size_t map_len = 0;
  PageCgroup* pcs = nullptr;
  long thp_kb = -1;
};

// AnonHugePages of the mapping that contains addr, from /proc/self/smaps.
long anon_huge_kb(const void* addr) {
  std::ifstream f("/proc/self/smaps");
  std::string line;
  const auto a = reinterpret_cast<std::uintptr_t>(addr);
  bool inside = false;
  while (std::getline(f, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find('-') < 17) {
      inside = a >= lo && a < hi;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) return std::atol(line.c_str() + 14);
  }
  return -1;
}

// n page_cgroup entries in a 2 MiB-aligned MADV_HUGEPAGE mapping (the kernel
// reaches page_cgroup through its huge-page direct map), filled like a node
// where every page is charged to one of 4 memcgs.
bool make_page_cgroups(std::uint64_t n, HugeArray& out) {
  constexpr std::size_t k2M = 2u << 20;
  const std::size_t bytes = n * sizeof(PageCgroup);
  out.map_len = bytes + k2M;
  out.map = mmap(nullptr, out.map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (out.map == MAP_FAILED) {
    out.map = nullptr;
    return false;
  }
  const auto aligned = (reinterpret_cast<std::uintptr_t>(out.map) + k2M - 1) & ~(k2M - 1);
  out.pcs = reinterpret_cast<PageCgroup*>(aligned);
  madvise(out.pcs, bytes, MADV_HUGEPAGE);
  static long fake_memcg[4][64];
  for (std::uint64_t i = 0; i < n; ++i) {
    out.pcs[i].flags = kPcgUsed | ((i % 3 == 0) ? kPcgCache : 0);
    out.pcs[i].mem_cgroup = fake_memcg[i % 4];
  }
  out.thp_kb = anon_huge_kb(out.pcs);
  return true;
}

std::vector<std::uint32_t> permutation(std::uint64_t n, std::uint64_t seed) {
  std::vector<std::uint32_t> p(n);
  std::iota(p.begin(), p.end(), 0u);
  std::mt19937_64 rng(seed);
  std::shuffle(p.begin(), p.end(), rng);
  return p;
}

// ------------------------------------------------------------------ tests

constexpr long kIters = 4'000'000;  // x8 = 32 M operations per run
constexpr double kOps = 8.0 * kIters;

void basic_ops(double& cycle_ns) {
  std::fprintf(stderr, "[basic] %.0f M operations per run\n", kOps / 1e6);
  volatile long delta_src = 1;
  const long delta = delta_src;

  const util::Summary chain =
      util::summarize(time_runs(kOps, [] { g_sink = loop_add_chain(kIters); }).ns);
  cycle_ns = chain.median;
  add_note("core clock: a chain of dependent register adds (1 cycle each) takes " +
           fmt(chain.median, 4) + " ns per add (min " + fmt(chain.min, 4) + ", max " +
           fmt(chain.max, 4) + "), i.e. ~" + fmt(1.0 / chain.median, 2) +
           " GHz while running; ns / this = cycles");
  const util::Summary empty = util::summarize(time_runs(kOps, [] { loop_empty(kIters); }).ns);
  add_note("loop overhead: the 8x-unrolled empty loop costs " + fmt(empty.median, 4) +
           " ns per slot (min " + fmt(empty.min, 4) + ", max " + fmt(empty.max, 4) +
           "); it is included in, not subtracted from, the per-operation values");

  record("percpu_add_ns", time_runs(kOps, [delta] { loop_percpu_add(kIters, delta); }),
         "this_cpu_add analogue: `add %reg, %fs:off` (non-atomic add to a thread_local long in "
         "an L1-hot line, address in a register as for memcg->stat) with an asm memory barrier "
         "after each add, the same counter every time (so consecutive adds are chained through "
         "memory); per add");
  const util::Summary spread =
      util::summarize(time_runs(kOps, [delta] { loop_percpu_add_spread(kIters, delta); }).ns);
  add_note(
      "percpu_add to 8 different counters of the same line in turn (no memory dependency "
      "between consecutive adds): " +
      fmt(spread.median) + " ns per add (min " + fmt(spread.min) + ", max " + fmt(spread.max) +
      ")");

  record("preempt_toggle_ns", time_runs(kOps, [] { loop_preempt_toggle(kIters); }),
         "rcu_read_lock+rcu_read_unlock in a non-preemptible kernel = preempt_count inc + dec: "
         "`addl $1, (%reg)` then `subl $1, (%reg)` on a thread_local int whose address is in a "
         "register (as 3.3's thread_info->preempt_count), L1-hot, an asm memory barrier after "
         "each; two dependent non-atomic RMWs; per inc+dec pair");
  const Samples abs_form = time_runs(kOps, [] { loop_preempt_toggle_abs(kIters); });
  const util::Summary abs_st = util::summarize(abs_form.ns);
  add_note(
      "preempt_toggle with the counter addressed `%fs:absolute` (no base register; the "
      "3.15+ per-CPU __preempt_count form): " +
      fmt(abs_st.median) + " ns per pair (min " + fmt(abs_st.min) + ", max " + fmt(abs_st.max) +
      ", ~" + fmt(util::median(abs_form.cycles), 1) +
      " cycles).  This CPU short-cuts chains of "
      "RMWs to one address when it is base-register addressed (memory renaming); without "
      "that, or on older cores without it, each dependent RMW waits for store-to-load "
      "forwarding, which is what the absolute form shows");

  record("global_flag_read_ns", time_runs(kOps, [] { loop_global_flag(kIters); }),
         "memcg_moving fast-path check: load of a volatile global int (value 0, no thread "
         "writes it, L1-hot) + `test` + never-taken (perfectly predicted) conditional branch to an "
         "out-of-line slow path; loads are independent, so this is the throughput cost inside "
         "surrounding code; per check");

  record("atomic_read_ns", time_runs(kOps, [] { loop_atomic_read(kIters); }),
         "atomic_read(&memcg->moving_account): std::atomic<int>::load(relaxed) of an L1-hot "
         "line (a plain mov on x86), value consumed by an empty asm; per load");

  record("bit_spinlock_ns", time_runs(kOps, [] { loop_bit_spinlock(kIters); }),
         "bit_spin_lock+bit_spin_unlock of PCG_LOCK in pc->flags, uncontended, L1-hot: "
         "fetch_or(acquire) compiled to `lock bts` + branch on the old bit, then "
         "fetch_and(release) compiled to `lock and`; per lock+unlock pair; excludes the "
         "preempt_disable/enable that bit_spin_lock also does (see preempt_toggle_ns)");

  record("spin_lock_irqsave_ns", time_runs(kOps, [] { loop_spinlock_cmpxchg(kIters); }),
         "memcg->move_lock taken and released uncontended, L1-hot: `lock cmpxchg` 0->1 "
         "(acquire) + plain release store of 0; per lock+unlock pair.  User space cannot "
         "disable interrupts (cli/sti are privileged), so the irqsave/irqrestore part "
         "(pushf;pop;cli ... push;popf) is NOT included; see pushf_popf_ns");

  record("spin_lock_ticket_ns", time_runs(kOps, [] { loop_spinlock_ticket(kIters); }),
         "the 3.3/3.4 x86 ticket spinlock shape, uncontended, L1-hot: `lock xadd` on the tail "
         "(acquire) + compare with the head, unlock by a plain 16-bit store of head+1 "
         "(release); per lock+unlock pair; interrupts not disabled (user space)");

  record("pushf_popf_ns", time_runs(kOps, [] { loop_pushf_popf(kIters); }),
         "flags save/restore half of local_irq_save/restore: `pushfq; pop` + `push; popfq` "
         "(each wrapped in two lea that step over the red zone), per pair; cli is privileged "
         "and omitted, and user-mode popf leaves IF unchanged, so this only approximates the "
         "kernel's irqsave/irqrestore overhead");
}

void page_cgroup_lookups() {
  constexpr std::uint64_t kSmall = (std::uint64_t{1} << 30) / 4096;  // 1 GiB of pages
  constexpr std::uint64_t kBig = (std::uint64_t{16} << 30) / 4096;   // 16 GiB of pages
  std::fprintf(stderr, "[page_cgroup] 16 B entries: %llu (4 MiB) and %llu (64 MiB)\n",
               static_cast<unsigned long long>(kSmall), static_cast<unsigned long long>(kBig));
  HugeArray small, big;
  if (!make_page_cgroups(kSmall, small) || !make_page_cgroups(kBig, big)) {
    for (const char* k : {"page_cgroup_lookup_seq_ns", "page_cgroup_lookup_rand_ns",
                          "page_cgroup_lookup_rand_big_ns"})
      std::fprintf(stderr, "  %s skipped: mmap: %s\n", k, std::strerror(errno));
    add_note("page_cgroup tests skipped: mmap failed");
    return;
  }
  add_note("page_cgroup arrays: AnonHugePages " + std::to_string(small.thp_kb) +
           " kB of 4096 kB (4 MiB array), " + std::to_string(big.thp_kb) +
           " kB of 65536 kB (64 MiB array); full = backed by 2 MiB pages like the kernel direct "
           "map");
  const auto perm_small = permutation(kSmall, 0x6d656d6367ull);
  const auto perm_big = permutation(kBig, 0x70616765ull);

  const int seq_passes = 16;  // 4.2 M lookups per run
  const std::string common =
      "struct {u64 flags; void *mem_cgroup} (16 B) per 4 KiB page, pc = base + (pfn - "
      "start_pfn) computed per entry, load flags and mem_cgroup, test PCG_USED (always set, "
      "predictable), use the pointer; 2 MiB-aligned MADV_HUGEPAGE array (as under the kernel "
      "direct map); flat lookup (the SPARSEMEM mem_section step is not included)";
  record("page_cgroup_lookup_seq_ns",
         time_runs(double(kSmall) * seq_passes,
                   [&] { g_sink = pc_walk_seq(small.pcs, kSmall, seq_passes); }),
         "4 MiB array (1 GiB of memory) visited in pfn order, 16 passes per run (4 entries "
         "per 64 B line, hardware prefetch works); " +
             common + "; per entry");

  const int rand_passes = 16;
  record(
      "page_cgroup_lookup_rand_ns",
      time_runs(double(kSmall) * rand_passes,
                [&] { g_sink = pc_walk_perm(small.pcs, perm_small.data(), kSmall, rand_passes); }),
      "4 MiB array (1 GiB of memory) visited in a fixed random permutation (read "
      "sequentially from a u32 array), 16 passes per run; the array stays warm in L3 "
      "(larger than L2); lookups are independent so the core overlaps several misses; " +
          common + "; per entry");

  const int big_passes = 1;  // 4.2 M lookups per run
  record("page_cgroup_lookup_rand_big_ns",
         time_runs(double(kBig) * big_passes,
                   [&] { g_sink = pc_walk_perm(big.pcs, perm_big.data(), kBig, big_passes); }),
         "64 MiB array (16 GiB of memory) visited in a fixed random permutation, 1 pass per "
         "run; mostly misses L3 and goes to DRAM; lookups independent (overlapped misses); " +
             common + "; per entry");

  record("page_cgroup_lookup_rand_dep_ns",
         time_runs(
             double(kSmall) * rand_passes,
             [&] { g_sink = pc_walk_perm_dep(small.pcs, perm_small.data(), kSmall, rand_passes); }),
         "as page_cgroup_lookup_rand_ns but each lookup's address depends on the previous "
         "entry's flags (no overlap): the latency of one isolated lookup in a 4 MiB "
         "L3-resident array; per entry");

  record("page_cgroup_lookup_rand_big_dep_ns",
         time_runs(double(kBig) * big_passes,
                   [&] { g_sink = pc_walk_perm_dep(big.pcs, perm_big.data(), kBig, big_passes); }),
         "as page_cgroup_lookup_rand_big_ns but dependent (no overlap): the latency of one "
         "isolated lookup in a 64 MiB array, mostly a DRAM miss; per entry");

  munmap(small.map, small.map_len);
  munmap(big.map, big.map_len);
}

// ------------------------------------------------------------------ output

void write_toml(std::FILE* f, const Host& h, const std::string& command, double cycle_ns,
                double secs) {
  std::fprintf(f,
               "# memcg page-stat building blocks (mm/memcontrol.c, 3.3/3.4), measured by "
               "tools/calibrate/calibrate_memcg.cc\n");
  std::fprintf(f, "# date %s; kernel %s; CPU %s (%s)%s, %ld CPUs\n", h.date.c_str(),
               h.kernel.c_str(), h.cpu.c_str(), h.cpu_sig.c_str(),
               h.hypervisor ? ", virtual machine (user-mode code runs natively)" : "", h.ncpu);
  std::fprintf(f,
               "# command: g++ -std=c++20 -O2 -pthread tools/calibrate/calibrate_memcg.cc -o "
               "/tmp/calibrate_memcg && %s\n",
               command.c_str());
  std::fprintf(f, "# compiler %s; whole run %.1f s; pinned to CPU 0\n", __VERSION__, secs);
  std::fprintf(
      f,
      "# each value: median of %d timed runs after 1 discarded warm-up run, ns per "
      "operation (loop control included, see notes); min/max in the comment and in "
      "[spread]\n# cycles: each run's ns divided by the cycle time of a 1 ms dependent-add "
      "probe run just before it (the VM's clock frequency varies between runs)\n\n",
      g_runs);
  std::fprintf(f, "[host]\n");
  std::fprintf(f, "date = \"%s\"\n", h.date.c_str());
  std::fprintf(f, "kernel = \"%s\"\n", h.kernel.c_str());
  std::fprintf(f, "cpu_model = \"%s\"\n", h.cpu.c_str());
  std::fprintf(f, "cpu_id = \"%s\"\n", h.cpu_sig.c_str());
  std::fprintf(f, "virtualized = %s   # 'hypervisor' in /proc/cpuinfo flags\n",
               h.hypervisor ? "true" : "false");
  std::fprintf(f, "cpus = %ld\n", h.ncpu);
  std::fprintf(f, "l2 = \"%s\"\n", h.l2.c_str());
  std::fprintf(f, "l3 = \"%s\"\n", h.l3.c_str());
  std::fprintf(f, "thp_enabled = \"%s\"\n", h.thp.c_str());
  std::fprintf(
      f, "cycle_ns = %.4f   # dependent register add chain, median over the runs; ~%.2f GHz\n\n",
      cycle_ns, cycle_ns > 0 ? 1.0 / cycle_ns : 0.0);
  std::fprintf(f, "[costs]\n");
  for (const Entry& e : g_entries)
    std::fprintf(
        f, "%s = %.3f   # min %.3f, max %.3f; ~%.1f cycles (min %.1f, max %.1f); method: %s\n",
        e.key.c_str(), e.st.median, e.st.min, e.st.max, e.cyc.median, e.cyc.min, e.cyc.max,
        e.method.c_str());
  std::fprintf(f, "\n# notes\n");
  for (const std::string& n : g_notes) std::fprintf(f, "# %s\n", n.c_str());
  std::fprintf(f, "\n[spread]   # [min, max] ns over the timed runs\n");
  for (const Entry& e : g_entries)
    std::fprintf(f, "%s = [%.4g, %.4g]\n", e.key.c_str(), e.st.min, e.st.max);
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path;
  std::string command = "/tmp/calibrate_memcg";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--runs" && i + 1 < argc) {
      g_runs = std::max(9, std::atoi(argv[++i]));
      command += " --runs " + std::to_string(g_runs);
    } else if (arg == "--out" && i + 1 < argc) {
      out_path = argv[++i];
      command += " --out " + out_path;
    } else {
      std::fprintf(stderr, "usage: %s [--runs N>=9] [--out FILE]\n", argv[0]);
      return 2;
    }
  }
  const Host h = read_host();
  std::fprintf(stderr, "host: %s | kernel %s | %s (%s)%s | %ld CPUs | L2 %s L3 %s\n",
               h.date.c_str(), h.kernel.c_str(), h.cpu.c_str(), h.cpu_sig.c_str(),
               h.hypervisor ? " | VM" : "", h.ncpu, h.l2.c_str(), h.l3.c_str());
  if (!pin_cpu0()) std::fprintf(stderr, "calibrate_memcg: warning: could not pin to CPU 0\n");

  const double t0 = now_ns();
  double cycle_ns = 0;
  basic_ops(cycle_ns);
  page_cgroup_lookups();
  const double secs = (now_ns() - t0) / 1e9;
  std::fprintf(stderr, "total %.1f s\n", secs);

  std::FILE* f = stdout;
  if (!out_path.empty()) {
    f = std::fopen(out_path.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "calibrate_memcg: %s: %s\n", out_path.c_str(), std::strerror(errno));
      return 1;
    }
  }
  write_toml(f, h, command, cycle_ns, secs);
  if (f != stdout) std::fclose(f);
  return 0;
}

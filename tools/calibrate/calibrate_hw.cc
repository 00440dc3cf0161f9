// calibrate_hw.cc - measure the core and memory hierarchy mmsim's cache model
// needs: the core clock, per-core cache sizes, load-to-use latencies of L1,
// L2, LLC and DRAM, and the memory-level parallelism of one core. (The
// single-thread stream bandwidth is calibrate.cc's stream_read_gbps.)
//
// Linux only.  Built by CMake as mmsim-calibrate-hw (it links mmsim_util, the
// project's statistics and timing helpers); `mmsim calibrate` runs it.  By
// hand:
//   build/release/tools/calibrate/mmsim-calibrate-hw [--runs N] [--out FILE]
//
// Every value is the median of N runs (default 5) after one discarded warm-up
// run; [min, max] over the runs is in the comment and in [spread].  Output is
// TOML in the other calibrators' form; progress goes to stderr.  A
// measurement that cannot run is a "# <key> skipped: ..." comment.  The
// process pins itself to CPU 0.

#include <sched.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "rows.h"
#include "util/stats.h"
#include "util/units.h"

namespace {

namespace util = mmsim::util;
namespace calibrate = mmsim::calibrate;

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kMiB = 1024 * kKiB;
constexpr std::size_t kLine = 64;
constexpr std::size_t kDramBytes = 512 * kMiB;
int g_runs = 5;
volatile std::uint64_t g_sink;

calibrate::Rows g_results(22);

void put(const std::string& key, const std::vector<double>& samples, const std::string& method) {
  g_results.put(key, samples, method);
}
void skip(const std::string& key, const std::string& why) { g_results.skip(key, why); }
void note(const std::string& text) { g_results.note(text); }

std::string num(double v, int prec = 2) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

std::string size_text(std::size_t bytes) {
  return bytes >= kMiB ? std::to_string(bytes / kMiB) + " MiB"
                       : std::to_string(bytes / kKiB) + " KiB";
}

// Runs fn once as a warm-up, then g_runs times.
std::vector<double> repeat(const std::function<double()>& fn) {
  fn();
  std::vector<double> v;
  for (int i = 0; i < g_runs; ++i) v.push_back(fn());
  return v;
}

std::string first_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

// An anonymous THP-backed buffer (few TLB misses, as the kernel's direct map),
// written once; unmapped on destruction.
struct Buffer {
  unsigned char* p = nullptr;
  std::size_t len = 0;
  explicit Buffer(std::size_t bytes) {
    void* q = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED) return;
    madvise(q, bytes, MADV_HUGEPAGE);  // advisory
    p = static_cast<unsigned char*>(q);
    len = bytes;
    std::memset(p, 1, len);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (p) munmap(p, len);
  }
};

// ------------------------------------------------------------------ the core clock

// A dependent chain of register adds: one cycle each on every x86 core since
// the P6, so adds per ns is the clock in GHz.
__attribute__((noinline)) std::uint64_t add_chain(std::uint64_t x, long blocks) {
  for (long i = 0; i < blocks; ++i) {
#if defined(__x86_64__)
    asm volatile(".rept 1000\n\tadd $1, %0\n\t.endr" : "+r"(x));
#else
    for (int k = 0; k < 1000; ++k) asm volatile("" : "+r"(x));
#endif
  }
  return x;
}

void measure_clock() {
  std::fprintf(stderr, "[clock] dependent add chain\n");
#if !defined(__x86_64__)
  skip("core_ghz", "the add chain is x86-64 assembly");
  return;
#else
  // Each run times 10 chains of 1e7 adds (~4 ms each) and keeps the fastest:
  // an interrupt or a descheduled vCPU only ever adds time to a chain.
  constexpr long kBlocks = 10000;
  put("core_ghz", repeat([] {
        double best = 0;
        for (int i = 0; i < 10; ++i) {
          const double t0 = static_cast<double>(util::now_ns());
          g_sink = add_chain(g_sink, kBlocks);
          best = std::max(best, kBlocks * 1000.0 / (static_cast<double>(util::now_ns()) - t0));
        }
        return best;
      }),
      "a dependent chain of 1e7 register adds (1 cycle each), adds per ns, the fastest of 10 "
      "chains per run");
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("cpu MHz", 0) == 0) {
      note("/proc/cpuinfo cpu MHz of the first CPU: " + line.substr(line.find(':') + 2) +
           " (core_ghz cross-check; a VM may report its host's nominal clock)");
      break;
    }
  }
#endif
}

// ------------------------------------------------------------------ cache sizes

struct Caches {
  long l1d = 0, l2 = 0, llc = 0;
};

long parse_sysfs_size(const std::string& s) {
  const auto v = util::parse_size(s);  // "32K": K = 1024
  return v ? static_cast<long>(*v) : 0;
}

Caches cache_sizes() {
  Caches c;
  const std::string base = "/sys/devices/system/cpu/cpu0/cache/index";
  for (int i = 0; i < 8; ++i) {
    const std::string dir = base + std::to_string(i) + "/";
    const std::string level = first_line(dir + "level"), type = first_line(dir + "type");
    const long size = parse_sysfs_size(first_line(dir + "size"));
    if (level.empty() || size <= 0 || type == "Instruction") continue;
    if (level == "1") c.l1d = size;
    if (level == "2") c.l2 = size;
    if (std::atoi(level.c_str()) >= 3) c.llc = size;
  }
  const std::string how = "/sys/devices/system/cpu/cpu0/cache/index*/size (level, type)";
  if (c.l1d)
    put("l1d_bytes", {static_cast<double>(c.l1d)}, "L1 data cache of CPU 0: " + how);
  else
    skip("l1d_bytes", "no level-1 data cache in " + how);
  if (c.l2)
    put("l2_bytes", {static_cast<double>(c.l2)}, "L2 cache of CPU 0: " + how);
  else
    skip("l2_bytes", "no level-2 cache in " + how);
  if (c.llc) note("LLC of CPU 0: " + std::to_string(c.llc / kKiB) + " KiB (" + how + ")");
  return c;
}

// ------------------------------------------------------------------ pointer chases

// Links the 64-byte lines of buf into one random cycle (Sattolo); returns a
// start, and in *order the cycle.
void** build_cycle(unsigned char* buf, std::size_t bytes, std::vector<std::uint32_t>* order) {
  const std::size_t lines = bytes / kLine;
  order->resize(lines);
  std::iota(order->begin(), order->end(), 0u);
  std::mt19937_64 rng(bytes);
  for (std::size_t i = lines - 1; i > 0; --i) {
    const std::size_t j = std::uniform_int_distribution<std::size_t>(0, i - 1)(rng);
    std::swap((*order)[i], (*order)[j]);
  }
  for (std::size_t i = 0; i < lines; ++i) {
    auto** cur = reinterpret_cast<void**>(buf + std::size_t{(*order)[i]} * kLine);
    *cur = buf + std::size_t{(*order)[(i + 1) % lines]} * kLine;
  }
  return reinterpret_cast<void**>(buf + std::size_t{(*order)[0]} * kLine);
}

// K independent chases through one cycle, interleaved: K loads in flight.
template <int K>
__attribute__((noinline)) void chase(void** p[K], std::size_t steps) {
  void** q[K];
  for (int k = 0; k < K; ++k) q[k] = p[k];
  for (std::size_t i = 0; i < steps; ++i) {
    for (int k = 0; k < K; ++k) q[k] = static_cast<void**>(*q[k]);
  }
  for (int k = 0; k < K; ++k) p[k] = q[k];
}

void run_chase(int k, void*** p, std::size_t steps) {
  switch (k) {
    case 1:
      return chase<1>(p, steps);
    case 2:
      return chase<2>(p, steps);
    case 4:
      return chase<4>(p, steps);
    case 6:
      return chase<6>(p, steps);
    case 8:
      return chase<8>(p, steps);
    case 10:
      return chase<10>(p, steps);
    case 12:
      return chase<12>(p, steps);
    case 16:
      return chase<16>(p, steps);
    case 20:
      return chase<20>(p, steps);
    case 24:
      return chase<24>(p, steps);
    case 32:
      return chase<32>(p, steps);
    default:
      std::abort();
  }
}
constexpr int kChains[] = {1, 2, 4, 6, 8, 10, 12, 16, 20, 24, 32};
constexpr int kMaxChains = 32;

// ns per load of K chases over `bytes`, each starting lines/K apart on the
// cycle so they never meet.
struct Chase {
  Buffer buf;
  std::vector<std::uint32_t> order;
  explicit Chase(std::size_t bytes) : buf(bytes) {
    if (buf.p) build_cycle(buf.p, bytes, &order);
  }
  double ns_per_load(int k, std::size_t loads) {
    void** p[kMaxChains];
    const std::size_t lines = order.size();
    for (int i = 0; i < k; ++i)
      p[i] = reinterpret_cast<void**>(buf.p + std::size_t{order[lines / k * i]} * kLine);
    const std::size_t steps = std::max<std::size_t>(1, loads / k);
    run_chase(k, p, std::min(steps, lines / k));  // warm the path
    const double t0 = util::now_ns();
    run_chase(k, p, steps);
    const double ns = (util::now_ns() - t0) / static_cast<double>(steps * k);
    g_sink = reinterpret_cast<std::uintptr_t>(p[0]);
    return ns;
  }
};

void latency(const char* key, std::size_t bytes, std::size_t loads, const std::string& where) {
  Chase c(bytes);
  if (!c.buf.p) {
    skip(key, std::string("mmap: ") + std::strerror(errno));
    return;
  }
  put(key, repeat([&] { return c.ns_per_load(1, loads); }),
      "dependent loads through a random cyclic permutation (Sattolo) of the 64 B lines of a " +
          size_text(bytes) + " THP buffer (" + where + "), per load");
}

void measure_latencies(const Caches& c) {
  std::fprintf(stderr, "[latency] pointer chases\n");
  const std::size_t l1 = c.l1d > 0 ? static_cast<std::size_t>(c.l1d) : 32 * kKiB;
  const std::size_t l2 = c.l2 > 0 ? static_cast<std::size_t>(c.l2) : 256 * kKiB;
  const std::size_t llc = c.llc > 0 ? static_cast<std::size_t>(c.llc) : 8 * kMiB;
  latency("l1_ns", l1 / 2, 20000000, "half the L1d");
  latency("l2_ns", l2 / 2, 10000000, "half the L2");
  latency("llc_ns", llc / 2, 4000000, "half the LLC");
}

// DRAM: one chase, then K interleaved chases for the memory-level parallelism.
void measure_dram() {
  std::fprintf(stderr, "[dram] pointer chases over 512 MiB, 1..32 at once\n");
  Chase c(kDramBytes);
  if (!c.buf.p) {
    for (const char* k : {"mem_latency_ns", "lfb_entries"})
      skip(k, std::string("mmap 512 MiB: ") + std::strerror(errno));
    return;
  }
  constexpr std::size_t kLoads = 2000000;
  std::vector<double> lat, mlp, best_k;
  std::vector<std::vector<double>> curve(std::size(kChains));
  c.ns_per_load(1, kLoads);  // warm-up run
  for (int r = 0; r < g_runs; ++r) {
    const double one = c.ns_per_load(1, kLoads);
    double best = one;
    int at = 1;
    for (std::size_t i = 1; i < std::size(kChains); ++i) {
      const double t = c.ns_per_load(kChains[i], kLoads);
      curve[i].push_back(t);
      if (t < best) {
        best = t;
        at = kChains[i];
      }
    }
    curve[0].push_back(one);
    lat.push_back(one);
    mlp.push_back(one / best);
    best_k.push_back(at);
  }
  put("mem_latency_ns", lat,
      "dependent loads through a random cyclic permutation of the 64 B lines of a 512 MiB THP "
      "buffer (local DRAM), per load");
  put("lfb_entries", mlp,
      "memory-level parallelism of one core: mem_latency_ns / the least time per load of K "
      "interleaved independent chases over the same 512 MiB, K = 1..32 (a ratio of two positive "
      "times)");
  std::string s = "dram: ns per load with K chases at once (median over the runs):";
  for (std::size_t i = 0; i < std::size(kChains); ++i)
    s += " " + std::to_string(kChains[i]) + "=" + num(util::median(curve[i]));
  note(s + "; the least at K = " + num(util::median(best_k), 0));
}

// ------------------------------------------------------------------ output

void emit(std::FILE* out, const std::string& cmd, double seconds) {
  utsname u{};
  uname(&u);
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  std::string cpu;
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line) && cpu.empty())
    if (line.rfind("model name", 0) == 0) cpu = line.substr(line.find(':') + 2);
  std::fprintf(out, "# measured by tools/calibrate/calibrate_hw.cc on %s, %s, %s\n", u.release,
               cpu.c_str(), date);
  std::fprintf(out, "# command: %s\n# compiler: %s; run took %.0f s\n", cmd.c_str(), __VERSION__,
               seconds);
  std::fprintf(out,
               "# each value: median of %d runs after 1 discarded warm-up; min and max over the "
               "runs are in the comment and in [spread].\n\n",
               g_runs);
  std::fprintf(out, "[host]\nkernel = \"%s\"\ncpu_model = \"%s\"\ndate = \"%s\"\n\n", u.release,
               cpu.c_str(), date);
  std::fprintf(out, "[costs]\n");
  for (const auto& r : g_results.rows()) {
    if (r.skipped) {
      std::fprintf(out, "# %s skipped: %s\n", r.key.c_str(), r.method.c_str());
      continue;
    }
    std::fprintf(out, "%s = %.6g   # min %.6g, max %.6g; method: %s\n", r.key.c_str(), r.s.median,
                 r.s.min, r.s.max, r.method.c_str());
  }
  std::fprintf(out, "\n# notes\n");
  for (const auto& n : g_results.notes()) std::fprintf(out, "# %s\n", n.c_str());
  std::fprintf(out, "\n[spread]  # [min, max] over the runs\n");
  for (const auto& r : g_results.rows())
    if (!r.skipped) std::fprintf(out, "%s = [%.6g, %.6g]\n", r.key.c_str(), r.s.min, r.s.max);
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path, cmd;
  if (!calibrate::parse_args(argc, argv, g_runs, out_path, cmd)) return 2;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(0, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    std::fprintf(stderr, "calibrate_hw: warning: cannot pin to CPU 0\n");
  const double start = util::now_ns();
  measure_clock();
  const Caches c = cache_sizes();
  measure_latencies(c);
  measure_dram();
  const double seconds = (util::now_ns() - start) / 1e9;
  std::fprintf(stderr, "total %.1f s\n", seconds);
  std::FILE* out = stdout;
  if (!out_path.empty() && !(out = std::fopen(out_path.c_str(), "w"))) {
    std::fprintf(stderr, "calibrate_hw: %s: %s\n", out_path.c_str(), std::strerror(errno));
    return 1;
  }
  emit(out, cmd, seconds);
  if (out != stdout) std::fclose(out);
  return 0;
}
